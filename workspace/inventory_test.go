package workspace

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
)

// The inventory of a destination: what is still there after the deletes, why
// every run wanted it, and what the latest run of each configuration wants.
func TestInventory(t *testing.T) {
	d := func(c string) digest.Digest { return digest.Digest("sha256:" + strings.Repeat(c, 64)) }
	want := func(b string) Want { return Want{Kind: WantBundle, Catalog: "cat", Package: "p", Bundle: b} }
	img := func(c, b string) HistoryImage {
		return HistoryImage{Repository: "reg/ns/a", Digest: d(c), Tags: []string{c}, Status: "copied", WantedBy: []Want{want(b)}}
	}
	h := &History{Runs: []HistoryRun{
		{Seq: 1, Kind: RunMirror, Destination: "reg/ns", ConfigPath: "/isc.yaml", Images: []HistoryImage{img("a", "v1"), img("b", "v2")}},
		{Seq: 2, Kind: RunMirror, Destination: "other/ns", ConfigPath: "/isc.yaml", Images: []HistoryImage{img("c", "v3")}},
		{Seq: 3, Kind: RunMirror, Destination: "reg/ns", ConfigPath: "/isc.yaml", Images: []HistoryImage{img("b", "v2")}},
		{Seq: 4, Kind: RunDelete, Destination: "reg/ns", Deleted: []HistoryDelete{{Repository: "reg/ns/a", Digest: d("a")}}},
	}}
	inv := h.Inventory("reg/ns")
	if got, wantKeys := inv.Keys(), []string{ImageKey("reg/ns/a", d("b"))}; !reflect.DeepEqual(got, wantKeys) {
		t.Errorf("Keys() = %v, want %v", got, wantKeys)
	}
	k := ImageKey("reg/ns/a", d("b"))
	if e := inv.Present[k]; e == nil || e.LastRun != 3 {
		t.Errorf("Present[%s] = %+v, want last run 3", k, e)
	}
	if len(inv.Wants[k]) != 2 || len(inv.Current[k]) != 1 || inv.Current[k][0].Seq != 3 {
		t.Errorf("wants %+v, current %+v", inv.Wants[k], inv.Current[k])
	}
	if inv.LastSeq != 4 || inv.Runs != 2 || len(inv.CurrentRuns) != 1 || !inv.Tags["reg/ns/a"]["a"] {
		t.Errorf("last %d, runs %d, current runs %d, tags %v", inv.LastSeq, inv.Runs, len(inv.CurrentRuns), inv.Tags)
	}
}

// PresentIn answers for one repository from an index built once: asking it
// for every repository of a large destination allocates nothing per question
// (a scan of every present manifest for each repository made delete
// --generate quadratic: 5,400 repositories × 20,000 manifests).
func TestPresentInIsIndexed(t *testing.T) {
	const repos, per = 2000, 3
	var images []HistoryImage
	for r := range repos {
		for i := range per {
			images = append(images, HistoryImage{Repository: fmt.Sprintf("reg/ns/app-%04d", r), Digest: digest.FromString(fmt.Sprint(r, i)), Status: "copied"})
		}
	}
	h := &History{Runs: []HistoryRun{{Seq: 1, Kind: RunMirror, Destination: "reg/ns", ConfigPath: "/isc.yaml", Images: images}}}
	inv := h.Inventory("reg/ns")
	got := inv.PresentIn("reg/ns/app-0500")
	if len(got) != per || !sort.StringsAreSorted(got) {
		t.Fatalf("PresentIn = %v, want the %d manifests of the repository, sorted", got, per)
	}
	for _, k := range got {
		if e := inv.Present[k]; e == nil || e.Repo != "reg/ns/app-0500" {
			t.Errorf("%s: %+v is not of the repository", k, e)
		}
	}
	if n := len(inv.PresentIn("reg/ns/none")); n != 0 {
		t.Errorf("%d manifests in a repository the history never named", n)
	}
	r := 0
	if allocs := testing.AllocsPerRun(repos, func() {
		_ = inv.PresentIn(images[r%repos*per].Repository)
		r++
	}); allocs > 0 {
		t.Errorf("PresentIn allocates %.1f times per question, want none: it scans instead of indexing", allocs)
	}
}
