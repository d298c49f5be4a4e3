package conformance

// The selection oracle: a deliberately simple and slow model of which bundles a
// configuration keeps, written from docs/catalog-prune.md. It shares no code with
// airlock's filter (package prune) nor with its catalog engine (package fbc): it
// reads catalogs itself (encoding/json, and sigs.k8s.io/yaml for YAML files),
// keeps them in the types of this file, walks channel graphs with the functions below and parses versions and
// ranges with blang/semver directly. See docs/conformance.md, "Which bundles are
// kept".

import (
	"encoding/json"
	"sort"

	"github.com/blang/semver/v4"
)

// oCatalog is the oracle's view of a catalog: only what selection reads.
type oCatalog struct {
	pkgs  map[string]*oPkg
	names []string // package names, sorted
}

type oPkg struct {
	name, defaultChannel string
	chans                map[string]*oChan
	chanNames            []string // sorted
	bundles              map[string]*oBundle
	bundleNames          []string // sorted
}

type oChan struct {
	name    string
	entries map[string]*oEntry
	order   []string // entry names in file order
}

type oEntry struct {
	name, replaces string
	skips          []string
}

type oGVK struct{ group, version, kind string }

// oReq is an olm.package.required (pkg, rng) or an olm.gvk.required (gvk).
type oReq struct {
	pkg, rng string
	gvk      *oGVK
}

type oBundle struct {
	name, pkg string
	version   semver.Version
	verOK     bool
	release   string // olm.package release, "" when none
	gvks      []oGVK
	reqs      []oReq // in the order of the properties
}

// oDoc is one document of a file-based catalog: the fields selection reads.
type oDoc struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	Package        string `json:"package"`
	DefaultChannel string `json:"defaultChannel"`
	Entries        []struct {
		Name     string   `json:"name"`
		Replaces string   `json:"replaces"`
		Skips    []string `json:"skips"`
	} `json:"entries"`
	Properties []struct {
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	} `json:"properties"`
}

// oracleCatalog builds the oracle's view of the documents of a catalog.
func oracleCatalog(docs []oDoc) *oCatalog {
	c := &oCatalog{pkgs: map[string]*oPkg{}}
	pkg := func(name string) *oPkg {
		p := c.pkgs[name]
		if p == nil {
			p = &oPkg{name: name, chans: map[string]*oChan{}, bundles: map[string]*oBundle{}}
			c.pkgs[name] = p
			c.names = append(c.names, name)
		}
		return p
	}
	for _, d := range docs {
		switch d.Schema {
		case "olm.package":
			pkg(d.Name).defaultChannel = d.DefaultChannel
		case "olm.channel":
			p := pkg(d.Package)
			oc := &oChan{name: d.Name, entries: map[string]*oEntry{}}
			for _, e := range d.Entries {
				oc.entries[e.Name] = &oEntry{name: e.Name, replaces: e.Replaces, skips: e.Skips}
				oc.order = append(oc.order, e.Name)
			}
			p.chans[d.Name] = oc
			p.chanNames = append(p.chanNames, d.Name)
		case "olm.bundle":
			p := pkg(d.Package)
			b := oracleBundle(d)
			p.bundles[b.name] = b
			p.bundleNames = append(p.bundleNames, b.name)
		}
	}
	sort.Strings(c.names)
	for _, p := range c.pkgs {
		sort.Strings(p.chanNames)
		sort.Strings(p.bundleNames)
	}
	return c
}

// oracleBundle reads what selection needs of a bundle: its version (and
// release), the GVKs it provides and what it requires.
func oracleBundle(d oDoc) *oBundle {
	ob := &oBundle{name: d.Name, pkg: d.Package}
	for _, prop := range d.Properties {
		switch prop.Type {
		case "olm.package":
			var v struct {
				Version string `json:"version"`
				Release string `json:"release"`
			}
			if json.Unmarshal(prop.Value, &v) == nil {
				if sv, err := semver.Parse(v.Version); err == nil {
					ob.version, ob.verOK, ob.release = sv, true, v.Release
				}
			}
		case "olm.gvk", "olm.gvk.required":
			var g struct{ Group, Version, Kind string }
			if json.Unmarshal(prop.Value, &g) != nil {
				continue
			}
			if prop.Type == "olm.gvk" {
				ob.gvks = append(ob.gvks, oGVK{g.Group, g.Version, g.Kind})
			} else if g.Kind != "" && g.Version != "" {
				ob.reqs = append(ob.reqs, oReq{gvk: &oGVK{g.Group, g.Version, g.Kind}})
			}
		case "olm.package.required":
			var r struct {
				PackageName  string `json:"packageName"`
				VersionRange string `json:"versionRange"`
			}
			if json.Unmarshal(prop.Value, &r) == nil && r.PackageName != "" {
				ob.reqs = append(ob.reqs, oReq{pkg: r.PackageName, rng: r.VersionRange})
			}
		}
	}
	return ob
}

// The channel graph, as docs/catalog-prune.md and reference/fbc-opm.md §3.1
// describe it: an edge from an entry to the entry it replaces and to each entry
// it skips; skipRange makes no edge.

// oHeads returns the entries of ch (restricted to keep when keep is not nil)
// that no other entry of that set replaces or skips, sorted.
func oHeads(ch *oChan, keep map[string]bool) []string {
	in := map[string]int{}
	for n, e := range ch.entries {
		if keep != nil && !keep[n] {
			continue
		}
		in[e.replaces]++
		for _, s := range e.skips {
			in[s]++
		}
	}
	var heads []string
	for n := range ch.entries {
		if (keep == nil || keep[n]) && in[n] == 0 {
			heads = append(heads, n)
		}
	}
	sort.Strings(heads)
	return heads
}

// oHead is the single head of the whole channel, or "" when it has none or several.
func oHead(ch *oChan) string {
	h := oHeads(ch, nil)
	if len(h) != 1 {
		return ""
	}
	return h[0]
}

// oChain follows replaces from head while the replaced name is an entry of ch.
// ok is false on a cycle.
func oChain(ch *oChan, head string) (chain []string, ok bool) {
	seen := map[string]bool{}
	for n := head; n != ""; {
		if seen[n] {
			return chain, false
		}
		seen[n] = true
		chain = append(chain, n)
		next := ch.entries[n].replaces
		if _, isEntry := ch.entries[next]; !isEntry {
			break
		}
		n = next
	}
	return chain, true
}

// oValid reports whether the entries keep of ch form a valid channel by opm's
// rules: one head; from it, the replaces chain (stopping before a name any kept
// entry skips, and at a name that is not kept) has no cycle; every kept entry is
// on that chain or skipped by a kept entry.
func oValid(ch *oChan, keep map[string]bool) bool {
	heads := oHeads(ch, keep)
	if len(heads) != 1 {
		return false
	}
	skipped := map[string]bool{}
	for n := range keep {
		for _, s := range ch.entries[n].skips {
			skipped[s] = true
		}
	}
	onChain := map[string]bool{}
	for n := heads[0]; ; {
		onChain[n] = true
		next := ch.entries[n].replaces
		if next == "" || skipped[next] || !keep[next] {
			break
		}
		if onChain[next] {
			return false
		}
		n = next
	}
	for n := range keep {
		if !onChain[n] && !skipped[n] {
			return false
		}
	}
	return true
}

// oChainFrom is opm's replaces chain from root: follow replaces while the
// replaced name is an entry of ch that no entry of ch skips.
func oChainFrom(ch *oChan, root string) []string {
	skipped := map[string]bool{}
	for _, e := range ch.entries {
		for _, s := range e.skips {
			skipped[s] = true
		}
	}
	chain := []string{root}
	seen := map[string]bool{root: true}
	for n := root; ; {
		next := ch.entries[n].replaces
		if ch.entries[next] == nil || skipped[next] || seen[next] {
			return chain
		}
		seen[next] = true
		chain = append(chain, next)
		n = next
	}
}

// oPath is the upgrade path from root down to target, both included; nil when
// target cannot be reached. Along root's replaces chain when target is on it;
// otherwise through skips, breadth-first from the chain's nodes in chain order,
// then from the skipped entries reached.
func oPath(ch *oChan, root, target string) []string {
	if ch.entries[root] == nil {
		return nil
	}
	prev := map[string]string{}
	chain := oChainFrom(ch, root)
	seen := map[string]bool{}
	for i, n := range chain {
		seen[n] = true
		if i > 0 {
			prev[n] = chain[i-1]
		}
	}
	queue := append([]string(nil), chain...)
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, s := range ch.entries[n].skips {
			if ch.entries[s] == nil || seen[s] {
				continue
			}
			seen[s] = true
			prev[s] = n
			queue = append(queue, s)
		}
	}
	if !seen[target] {
		return nil
	}
	path := []string{target}
	for x := target; x != root; x = prev[x] {
		path = append(path, prev[x])
	}
	return path
}

// oRepair makes keep a valid channel if it is not: for each root in turn (then
// the channel head), the root and the path from it to every kept entry; the
// first root that reaches every kept entry and gives a valid channel wins.
// ok is false when none does.
func oRepair(ch *oChan, keep map[string]bool, roots ...string) (ok bool) {
	if oValid(ch, keep) {
		return true
	}
	for _, root := range append(roots, oHead(ch)) {
		if ch.entries[root] == nil {
			continue
		}
		trial := map[string]bool{root: true}
		reached := true
		for n := range keep {
			trial[n] = true
			path := oPath(ch, root, n)
			if path == nil {
				reached = false
				break
			}
			for _, x := range path {
				trial[x] = true
			}
		}
		if reached && oValid(ch, trial) {
			for n := range trial {
				keep[n] = true
			}
			return true
		}
	}
	return false
}

// oRange is a version range of the configuration: inclusive bounds, semver
// precedence (build metadata ignored, pre-releases before their release).
type oRange struct {
	min, max       semver.Version
	hasMin, hasMax bool
}

func (r oRange) set() bool { return r.hasMin || r.hasMax }

// exact: minVersion equal to maxVersion, which selects one bundle.
func (r oRange) exact() bool { return r.hasMin && r.hasMax && r.min.Compare(r.max) == 0 }

// newer orders bundles of one package by version, then release (as semver
// pre-release identifiers; none is the lowest).
func newer(a, b *oBundle) bool {
	if c := a.version.Compare(b.version); c != 0 {
		return c > 0
	}
	if a.release == b.release || a.release == "" {
		return false
	}
	if b.release == "" {
		return true
	}
	ra, erra := semver.Parse("0.0.0-" + a.release)
	rb, errb := semver.Parse("0.0.0-" + b.release)
	if erra != nil || errb != nil {
		return a.release > b.release
	}
	return ra.Compare(rb) > 0
}

func (r oRange) has(b *oBundle) bool {
	if b == nil || !b.verOK {
		return false
	}
	if r.hasMin && b.version.Compare(r.min) < 0 {
		return false
	}
	if r.hasMax && b.version.Compare(r.max) > 0 {
		return false
	}
	return true
}
