package pipeline

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/report"
)

// A batch's report view is read back; a graph that is not a plain picture
// (the page inlines it) is dropped.
func TestArchivedReport(t *testing.T) {
	t.Parallel()
	plain := `<svg xmlns="http://www.w3.org/2000/svg"><g><text>v1.0.0</text></g></svg>`
	for _, tc := range []struct {
		graph string
		kept  bool
	}{
		{plain, true},
		{`<?xml version="1.0"?>` + plain, true},
		{`<svg><script>alert(1)</script></svg>`, false},
		{`<svg><g onload="x()"></g></svg>`, false},
		{`<svg><a xlink:href="https://example.com">x</a></svg>`, false},
		{`<svg><foreignObject><body/></foreignObject></svg>`, false},
		{`<div>not svg</div>`, false},
	} {
		data, _ := json.Marshal([]*report.Catalog{{Source: "quay.io/ns/index:v1", Packages: []*report.Package{{Name: "p", Graph: tc.graph}, nil}}})
		got := archivedReport(&archive.Manifest{Extras: []archive.ExtraRecord{{Source: reportExtraSource, Name: reportExtraName, Data: data}}})
		c := got["quay.io/ns/index:v1"]
		if c == nil || len(c.Packages) != 1 || c.Packages[0].Name != "p" {
			t.Fatalf("archived view %+v", c)
		}
		if (c.Packages[0].Graph != "") != tc.kept {
			t.Errorf("graph %.40q kept %v, want %v", tc.graph, c.Packages[0].Graph != "", tc.kept)
		}
	}
}

func FuzzArchivedReport(f *testing.F) {
	f.Add([]byte(`[{"source":"s","packages":[{"name":"p","graph":"<svg></svg>"}]}]`))
	f.Add([]byte(`[null,{"packages":[null]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got := archivedReport(&archive.Manifest{Extras: []archive.ExtraRecord{{Source: reportExtraSource, Name: reportExtraName, Data: data}}})
		for _, c := range got {
			for _, p := range c.Packages {
				if p == nil || strings.Contains(strings.ToLower(p.Graph), "<script") {
					t.Fatalf("archived view holds %+v", p)
				}
			}
		}
	})
}
