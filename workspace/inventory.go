package workspace

import (
	"fmt"
	"slices"
	"sort"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror"
)

// Inventory is what the history says of one destination: what airlock put
// there and did not delete since, why every run selected it, what the current
// selections want and which tags airlock pushed. The delete planner counts
// references over it. Manifests are keyed by ImageKey.
type Inventory struct {
	Dest string
	// Present are the manifests airlock put there and did not delete since.
	Present map[string]*InventoryEntry
	// Wants are every reason any run selected each manifest.
	Wants map[string][]RunWant
	// Current are the wants of the current selections: the latest run of each
	// configuration file at this destination, unless it was retired since
	// (Retire, CountSelections).
	Current     map[string][]RunWant
	CurrentRuns []HistoryRun
	// NotCounted are the latest runs of configuration files that are not
	// current selections, and why.
	NotCounted []NotCounted
	// Tags are the tags airlock put in each repository.
	Tags map[string]map[string]bool
	// LastSeq is the last run at the destination; Runs counts its mirror runs.
	LastSeq int
	Runs    int

	byRepo map[string][]string // PresentIn's index
}

// InventoryEntry is a manifest airlock put at the destination.
type InventoryEntry struct {
	Repo      string
	Digest    digest.Digest
	MediaType string
	Source    string
	Kind      mirror.ImageKind
	// LastRun is the last run that selected it.
	LastRun int
}

// RunWant is a reason run Seq selected a manifest.
type RunWant struct {
	Seq  int
	Want Want
}

// Inventory returns what the history says of the destination dest.
func (h *History) Inventory(dest string) *Inventory {
	inv := &Inventory{Dest: dest, Present: map[string]*InventoryEntry{}, Wants: map[string][]RunWant{}, Current: map[string][]RunWant{}, Tags: map[string]map[string]bool{}}
	latest := map[string]int{} // config path → index of its latest run
	for i, run := range h.Runs {
		if run.Destination != dest {
			continue
		}
		inv.LastSeq = run.Seq
		switch run.Kind {
		case RunDelete:
			for _, d := range run.Deleted {
				delete(inv.Present, ImageKey(d.Repository, d.Digest))
			}
		case RunRetire:
			if j, ok := latest[run.ConfigPath]; ok {
				inv.NotCounted = append(inv.NotCounted, NotCounted{Run: h.Runs[j], Why: fmt.Sprintf("retired by run %d", run.Seq)})
				delete(latest, run.ConfigPath)
			}
		case RunMirror:
			inv.Runs++
			latest[run.ConfigPath] = i
			inv.NotCounted = slices.DeleteFunc(inv.NotCounted, func(n NotCounted) bool { return n.Run.ConfigPath == run.ConfigPath })
			for _, im := range run.Images {
				k := ImageKey(im.Repository, im.Digest)
				for _, w := range im.WantedBy {
					inv.Wants[k] = append(inv.Wants[k], RunWant{run.Seq, w})
				}
				if inv.Tags[im.Repository] == nil {
					inv.Tags[im.Repository] = map[string]bool{}
				}
				for _, t := range im.Tags {
					inv.Tags[im.Repository][t] = true
				}
				if im.Mirrored() {
					inv.Present[k] = &InventoryEntry{Repo: im.Repository, Digest: im.Digest, MediaType: im.MediaType, Source: im.Source, Kind: im.Kind, LastRun: run.Seq}
				} else if e := inv.Present[k]; e != nil {
					e.LastRun = run.Seq
				}
			}
		}
	}
	var idx []int
	for _, i := range latest {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	var runs []HistoryRun
	for _, i := range idx {
		runs = append(runs, h.Runs[i])
	}
	inv.countOnly(runs)
	return inv
}

// Keys returns the keys of the present manifests, sorted.
func (inv *Inventory) Keys() []string {
	out := make([]string, 0, len(inv.Present))
	for k := range inv.Present {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// PresentIn returns the keys of the present manifests of repository repo,
// sorted. The index behind it is built by the first call, in one pass over
// Present (which must not change after it): asking it for every repository
// of a destination costs one pass in all, not one per repository.
func (inv *Inventory) PresentIn(repo string) []string {
	if inv.byRepo == nil {
		inv.byRepo = map[string][]string{}
		for _, k := range inv.Keys() {
			e := inv.Present[k]
			inv.byRepo[e.Repo] = append(inv.byRepo[e.Repo], k)
		}
	}
	return inv.byRepo[repo]
}
