package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestReportAlteredAndResumed: the page lists every altered manifest revision
// a destination keeps (repository, digest) with the garbage collection that
// removes them, and the bytes resumed from an interrupted run on the card of
// what was sent; a run with neither shows neither.
func TestReportAlteredAndResumed(t *testing.T) {
	r := bigRun(t, 3)
	r.BytesResumed = 12 << 20
	r.Altered = []Altered{{Repository: "mirror.example.com/ns/app", Digest: "sha256:" + strings.Repeat("ab", 32)}}
	r.GC = "the registry's garbage collection removes them (registry garbage-collect)"
	var page bytes.Buffer
	if err := Write(&page, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"12.0 MiB of it resumed from an interrupted run, not fetched again",
		`id="altered"`, "<code>mirror.example.com/ns/app</code>", "<code>sha256:" + strings.Repeat("ab", 32) + "</code>",
		"the registry&#39;s garbage collection removes them (registry garbage-collect)",
	} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	r.BytesResumed, r.Altered = 0, nil
	page.Reset()
	if err := Write(&page, r); err != nil {
		t.Fatal(err)
	}
	if s := page.String(); strings.Contains(s, "resumed") || strings.Contains(s, `id="altered"`) {
		t.Errorf("a run with nothing resumed or altered shows them")
	}
}
