package mirror

import (
	"slices"
	"sort"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// Mapping returns the MappingLine of every plannable image, sorted, as
// oc-mirror's mapping.txt.
func (p *Plan) Mapping() []string {
	lines := make([]string, 0, len(p.Images))
	for _, im := range p.Images {
		if im.Error != "" {
			continue
		}
		lines = append(lines, p.MappingLine(im))
	}
	sort.Strings(lines)
	return lines
}

// MappingLine is im's line in mapping.txt and missing.txt, in oc-mirror's
// form: docker://SOURCE=docker://DESTINATION, naming the image as the
// configuration (or catalog) does and the destination as the copy leaves it
// (its tag, the sha256-<hex> tag of a digest-only image). An oci:// catalog
// keeps its oci:// reference; a mirror-to-disk destination is the image's
// repository in the archive, without scheme.
func (p *Plan) MappingLine(im PlanImage) string {
	src := im.Source
	if location.SchemeOf(src) == 0 {
		src = location.Docker(src).String()
	}
	dst := im.Destination()
	if p.Workflow != MirrorToDisk {
		dst = location.Docker(dst).String()
	}
	return src + "=" + dst
}

// MappingLines are the MappingLines of the plan's images whose copy job is
// one of jobs (a dry run's missing ones), sorted.
func (p *Plan) MappingLines(jobs []transfer.Job) []string {
	want := map[string]bool{}
	for _, j := range jobs {
		want[j.Key()] = true
	}
	var lines []string
	for _, im := range p.Images {
		if im.Error == "" && want[im.Job().Key()] {
			lines = append(lines, p.MappingLine(im))
		}
	}
	sort.Strings(lines)
	return slices.Compact(lines)
}
