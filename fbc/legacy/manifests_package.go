package legacy

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// loadPackageFile adds the package of p when p's first document is a package
// manifest (it has a packageName).
func (m *manifestDB) loadPackageFile(p string) error {
	if doc, err := m.document(p); err == nil && cannotBePackage(doc) {
		return nil
	}
	pm, err := decodePackageManifest(p)
	if err != nil {
		return fmt.Errorf("%s: could not decode its contents into a package manifest: %v", p, err)
	}
	if pm.PackageName == "" {
		return nil
	}
	if err := m.addPackage(pm); err != nil {
		return fmt.Errorf("%s: package %s: %w", p, pm.PackageName, err)
	}
	return nil
}

// addPackage is opm's AddPackageChannels: the package replaces any earlier one
// of the same name; its channels are walked from their heads. Like opm's
// transaction, a package with a problem is not stored at all.
func (m *manifestDB) addPackage(pm *packageManifest) error {
	name := pm.PackageName
	// Remove the package, its channels and entries (opm's rmPackage).
	keep := func(pkg sql.NullString) bool { return pkg.String != name }
	packages := filterRows(m.packages, func(r pkgRow) bool { return keep(r.name) })
	channels := filterRows(m.channels, func(r channelRow) bool { return keep(r.pkg) })
	entries := filterRows(m.entries, func(r entryRow) bool { return keep(r.pkg) })
	var nextID int64 = 1
	for _, e := range entries {
		nextID = max(nextID, e.id+1)
	}
	addEntry := func(ch, bundle string, depth int64) *entryRow {
		entries = append(entries, entryRow{id: nextID, channel: str(ch), pkg: str(name), bundle: str(bundle), depth: sql.NullInt64{Int64: depth, Valid: true}})
		nextID++
		return &entries[len(entries)-1]
	}
	pkg := pkgRow{name: str(name)}
	var errs []error
	var chans []packageChannel
	hasDefault := false
	have := map[string]bool{}
	for _, c := range pm.Channels {
		if _, ok := m.bundles[c.CurrentCSV]; !ok {
			errs = append(errs, fmt.Errorf("channel %q: its currentCSV %q is not a CSV of the folder", c.Name, c.CurrentCSV))
			continue
		}
		if have[c.Name] {
			errs = append(errs, fmt.Errorf("channel %q is listed twice", c.Name))
			continue
		}
		have[c.Name] = true
		channels = append(channels, channelRow{name: str(c.Name), pkg: str(name), head: str(c.CurrentCSV)})
		if c.isDefault(pm) {
			hasDefault = true
			pkg.defaultChannel = str(c.Name)
		}
		chans = append(chans, c)
	}
	if !hasDefault {
		errs = append(errs, fmt.Errorf("no default channel specified (defaultChannel %q is not one of its channels)", pm.Default))
	}
	var props []struct {
		bundle string
		value  string
	}
	for _, c := range chans {
		// Entries are appended to a slice that may move: keep indexes.
		addEntry(c.Name, c.CurrentCSV, 0)
		current := len(entries) - 1
		cur := c.CurrentCSV
		depth := int64(1)
		seen := map[string]bool{cur: true}
		for {
			b, ok := m.bundles[cur]
			if !ok {
				errs = append(errs, fmt.Errorf("channel %q: no bundle found for CSV %s", c.Name, cur))
				break
			}
			v, _ := json.Marshal(struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
			}{name, b.version})
			props = append(props, struct{ bundle, value string }{cur, string(v)})
			for _, skip := range b.skips {
				skipped := addEntry(c.Name, skip, depth).id
				synth := addEntry(c.Name, cur, depth)
				synth.replaces = sql.NullInt64{Int64: skipped, Valid: true}
				depth++
			}
			if b.replaces == "" {
				break
			}
			replaced := addEntry(c.Name, b.replaces, depth).id
			if seen[b.replaces] {
				errs = append(errs, fmt.Errorf("channel %q: cycle detected, %s replaces %s", c.Name, cur, b.replaces))
				break
			}
			seen[b.replaces] = true
			entries[current].replaces = sql.NullInt64{Int64: replaced, Valid: true}
			if _, ok := m.bundles[b.replaces]; !ok {
				errs = append(errs, fmt.Errorf("channel %q: invalid bundle %s: %s replaces %s, which is not a CSV of the folder", c.Name, c.CurrentCSV, cur, b.replaces))
				break
			}
			current = len(entries) - 1
			cur = b.replaces
			depth++
		}
	}
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = e.Error()
		}
		return errors.New(strings.Join(msgs, "; "))
	}
	m.packages = append(packages, pkg)
	m.channels = channels
	m.entries = entries
	for _, p := range props {
		m.props[p.bundle] = append(m.props[p.bundle], kv{str("olm.package"), str(p.value)})
	}
	return nil
}

func filterRows[T any](in []T, keep func(T) bool) []T {
	out := make([]T, 0, len(in))
	for _, r := range in {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}
