// Package dotrender writes graphs drawn as Graphviz DOT or Mermaid text in the
// formats airlock offers: DOT and Mermaid as they are, SVG laid out by
// Graphviz (built in, WebAssembly), PNG that SVG drawn by a headless Chromium.
// The catalog upgrade graphs (prune/graph) and the OpenShift update graphs
// (release/graph) are drawn through it.
package dotrender

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"

	"github.com/goccy/go-graphviz"

	"github.com/airlock-mirror/airlock/internal/browser"
)

// Formats Render knows.
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
		return FormatPNG, nil
	default:
		return "", fmt.Errorf("cannot tell the format of %q from its extension: use .svg, .png, .dot or .mmd", path)
	}
}

// Render writes a graph in format: writeDOT's text for DOT, writeMermaid's for
// Mermaid, the DOT laid out by Graphviz for SVG, and that SVG drawn by a
// headless Chromium for PNG (the PNG renderer bundled with go-graphviz v0.2.10
// draws no node boxes and no curved edges).
func Render(ctx context.Context, w io.Writer, format string, writeDOT, writeMermaid func(io.Writer) error) error {
	switch format {
	case FormatDOT:
		return writeDOT(w)
	case FormatMermaid:
		return writeMermaid(w)
	case FormatSVG, FormatPNG:
		var dot bytes.Buffer
		if err := writeDOT(&dot); err != nil {
			return err
		}
		if format == FormatSVG {
			return layout(ctx, dot.Bytes(), w)
		}
		var svg bytes.Buffer
		if err := layout(ctx, dot.Bytes(), &svg); err != nil {
			return err
		}
		png, err := browser.SVGToPNG(ctx, "", svg.Bytes())
		if err != nil {
			return err
		}
		_, err = w.Write(png)
		return err
	default:
		return fmt.Errorf("unknown graph format %q: use svg, png, dot or mmd", format)
	}
}

// graphvizMu serialises Graphviz: go-graphviz keeps its WebAssembly module and
// its plugin tables in package variables, so two layouts at once (two mirror
// runs in one process) race.
var graphvizMu sync.Mutex

// layout lays the DOT text out with Graphviz and writes it as SVG.
func layout(ctx context.Context, dot []byte, w io.Writer) error {
	graphvizMu.Lock()
	defer graphvizMu.Unlock()
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
