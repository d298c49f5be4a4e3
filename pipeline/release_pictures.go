package pipeline

import (
	"bytes"
	"context"
	"fmt"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/release/graph"
	"github.com/airlock-mirror/airlock/report"
)

// pictures draws, for the run's report, each configured channel's update
// graph per architecture (graph.Draw: the chosen versions and path
// highlighted, conditional updates dashed with their risk names), as SVG.
// A picture that cannot be drawn is a warning: it never fails the run.
func (s *releaseSource) pictures(ctx context.Context, ch *graph.Chosen, p *imageset.Platform) ([]report.Picture, []string) {
	var out []report.Picture
	var warnings []string
	for _, c := range p.Channels {
		typ := c.Type
		if typ == "" {
			typ = graph.TypeOCP
		}
		for _, arch := range graph.Archs(p) {
			pic, err := graph.Draw(ch, typ, c.Name, arch, graph.DrawOptions{})
			var svg bytes.Buffer
			if err == nil {
				err = pic.Write(ctx, &svg, "svg")
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("the report has no picture of channel %s (%s): %v", c.Name, arch, err))
				continue
			}
			out = append(out, report.Picture{Title: fmt.Sprintf("Update graph of %s (%s, %s): the chosen versions and path", c.Name, arch, typ), SVG: svg.String()})
		}
	}
	return out, warnings
}
