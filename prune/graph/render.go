package graph

import (
	"context"
	"io"

	"github.com/airlock-mirror/airlock/internal/dotrender"
)

// Formats Write knows.
const (
	FormatDOT     = dotrender.FormatDOT
	FormatMermaid = dotrender.FormatMermaid
	FormatSVG     = dotrender.FormatSVG
	FormatPNG     = dotrender.FormatPNG
)

// FormatOf returns the format a file name asks for by its extension.
func FormatOf(path string) (string, error) { return dotrender.FormatOf(path) }

// Write writes p in format: DOT and Mermaid as text, SVG laid out by Graphviz
// (dot layout), PNG that SVG drawn by a headless Chromium (see dotrender).
func (p *Package) Write(ctx context.Context, w io.Writer, format string) error {
	return dotrender.Render(ctx, w, format, p.WriteDOT, p.WriteMermaid)
}
