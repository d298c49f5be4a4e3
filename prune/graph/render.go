package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/goccy/go-graphviz"
)

// Formats Write knows.
const (
	FormatDOT     = "dot"
	FormatMermaid = "mmd"
	FormatSVG     = "svg"
	FormatPNG     = "png"
)

// FormatOf returns the format a file name asks for by its extension.
func FormatOf(path string) (string, error) {
	switch ext := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), ".")); ext {
	case "dot", "gv":
		return FormatDOT, nil
	case "mmd", "mermaid":
		return FormatMermaid, nil
	case "svg":
		return FormatSVG, nil
	case "png":
		return "", errPNG
	default:
		return "", fmt.Errorf("cannot tell the format of %q from its extension: use .svg, .png, .dot or .mmd", path)
	}
}

// errPNG: the PNG renderer bundled with go-graphviz v0.2.10 fills curves instead
// of stroking them and loses straight edges, so a PNG would be wrong.
var errPNG = errors.New("PNG output is not available (the bundled Graphviz renderer draws edges wrongly): write .svg, which every browser shows, or .dot for your own Graphviz")

// Write writes p in format: DOT and Mermaid as text, SVG and PNG laid out by
// Graphviz (dot layout).
func (p *Package) Write(ctx context.Context, w io.Writer, format string) error {
	switch format {
	case FormatDOT:
		return p.WriteDOT(w)
	case FormatMermaid:
		return p.WriteMermaid(w)
	case FormatPNG:
		return errPNG
	case FormatSVG:
		var dot bytes.Buffer
		if err := p.WriteDOT(&dot); err != nil {
			return err
		}
		return layout(ctx, dot.Bytes(), w)
	default:
		return fmt.Errorf("unknown graph format %q: use svg, png, dot or mmd", format)
	}
}

// layout lays the DOT text out with Graphviz and writes it as SVG.
func layout(ctx context.Context, dot []byte, w io.Writer) error {
	gv, err := graphviz.New(ctx)
	if err != nil {
		return fmt.Errorf("start graphviz: %w", err)
	}
	defer gv.Close()
	g, err := graphviz.ParseBytes(dot)
	if err != nil {
		return fmt.Errorf("graphviz could not read the graph (a bug in airlock): %w", err)
	}
	defer g.Close()
	if err := gv.Render(ctx, g, graphviz.SVG, w); err != nil {
		return fmt.Errorf("graphviz layout: %w", err)
	}
	return nil
}
