package pipeline

import "github.com/airlock-mirror/airlock/report"

// Report adds the run's charts to the report: each chart's artifact and
// the images it names, with where in the chart and what became of them.
func (s *helmSource) Report(out *report.Run) {
	bySource := map[string]report.Image{}
	for _, im := range out.Images {
		bySource[im.Source] = im
	}
	for _, rec := range s.recs {
		c := report.Chart{Repository: rec.Repository, Chart: rec.Chart, Version: rec.Version, Status: "failed", Error: rec.Error}
		if im, ok := bySource[rec.Ref]; ok {
			c.Artifact, c.Status = im.Destination, im.Status
			if c.Error == "" {
				c.Error = im.Error
			}
		}
		for _, f := range rec.Images {
			ci := report.ChartImage{Image: f.Image, Where: f.Where, Status: "not planned (blockedImages)"}
			if im, ok := bySource[f.Image]; ok {
				ci.Destination, ci.Status = im.Destination, im.Status
			}
			c.Images = append(c.Images, ci)
		}
		out.Charts = append(out.Charts, c)
	}
}
