package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// A mutation edits, in memory, the documents of one package of a catalog as
// opm's loader returns them. It reports false when it does not apply to that
// package (e.g. it needs a channel with two entries). The mutated catalog is then
// written with opm's own writer and validated from disk by both implementations.
type mutation struct {
	name string
	// opmAccepts/ourAccepts: nil when the two must simply agree; else the
	// expected verdict of each side, for a documented difference
	// (docs/conformance.md).
	diff *knownDiff
	fn   func(p *pkgDocs) bool
}

// knownDiff is the expected verdict of each side where they are known to differ:
// opm validate, airlock's Validate on a catalog loaded with property values, and
// airlock as the CLI runs it (heavy values elided at load). bug marks a
// difference that is a defect of airlock, reported and waiting for a fix (the
// test then fails as soon as the defect is fixed, so that the entry is removed);
// the others are deliberate (docs/conformance.md).
type knownDiff struct {
	opmAccepts, ourAccepts, cliAccepts bool
	bug                                bool
	why                                string
}

// pkgDocs are the documents of one package (plus documents a mutation adds).
type pkgDocs struct {
	cfg  declcfg.DeclarativeConfig
	name string
}

func (p *pkgDocs) pkg() *declcfg.Package {
	for i := range p.cfg.Packages {
		if p.cfg.Packages[i].Name == p.name {
			return &p.cfg.Packages[i]
		}
	}
	return nil
}

func (p *pkgDocs) channel(name string) *declcfg.Channel {
	for i := range p.cfg.Channels {
		if p.cfg.Channels[i].Name == name {
			return &p.cfg.Channels[i]
		}
	}
	return nil
}

func (p *pkgDocs) bundle(name string) *declcfg.Bundle {
	for i := range p.cfg.Bundles {
		if p.cfg.Bundles[i].Name == name {
			return &p.cfg.Bundles[i]
		}
	}
	return nil
}

// defaultChannel returns the package's default channel document, nil if none.
func (p *pkgDocs) defaultChannel() *declcfg.Channel {
	pk := p.pkg()
	if pk == nil {
		return nil
	}
	return p.channel(pk.DefaultChannel)
}

// head returns the head entry name of ch (opm's rule), "" if it has none or several.
func head(ch *declcfg.Channel) string {
	h, err := opmChannelHead(*ch)
	if err != nil {
		return ""
	}
	return h
}

// chainOf returns the entries of ch on the replaces chain from its head, head first.
func chainOf(ch *declcfg.Channel) []string {
	by := map[string]declcfg.ChannelEntry{}
	for _, e := range ch.Entries {
		by[e.Name] = e
	}
	h := head(ch)
	if h == "" {
		return nil
	}
	out := []string{h}
	seen := map[string]bool{h: true}
	for cur := by[h]; cur.Replaces != ""; cur = by[cur.Replaces] {
		if _, ok := by[cur.Replaces]; !ok || seen[cur.Replaces] {
			break
		}
		seen[cur.Replaces] = true
		out = append(out, cur.Replaces)
	}
	return out
}

// newBundle adds a bundle document cloned from an existing one under a new name
// and version; it returns the new name.
func (p *pkgDocs) newBundle(from *declcfg.Bundle, suffix, version string) string {
	nb := cloneBundle(*from)
	nb.Name = from.Name + suffix
	for i, pr := range nb.Properties {
		if pr.Type == property.TypePackage {
			var v map[string]any
			if json.Unmarshal(pr.Value, &v) == nil {
				v["version"] = version
				nb.Properties[i].Value = mustRaw(v)
			}
		}
	}
	p.cfg.Bundles = append(p.cfg.Bundles, nb)
	return nb.Name
}

func mustRaw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func cloneBundle(b declcfg.Bundle) declcfg.Bundle {
	b.Properties = slices.Clone(b.Properties)
	b.RelatedImages = slices.Clone(b.RelatedImages)
	b.Objects = slices.Clone(b.Objects)
	return b
}

func cloneChannel(c declcfg.Channel) declcfg.Channel {
	c.Entries = slices.Clone(c.Entries)
	for i := range c.Entries {
		c.Entries[i].Skips = slices.Clone(c.Entries[i].Skips)
	}
	c.Properties = slices.Clone(c.Properties)
	return c
}

// split groups a declarative config by package: documents of each package, and
// the documents that name no package (the "" key).
func split(cfg *declcfg.DeclarativeConfig) map[string]*declcfg.DeclarativeConfig {
	out := map[string]*declcfg.DeclarativeConfig{}
	get := func(n string) *declcfg.DeclarativeConfig {
		if out[n] == nil {
			out[n] = &declcfg.DeclarativeConfig{}
		}
		return out[n]
	}
	for _, p := range cfg.Packages {
		get(p.Name).Packages = append(get(p.Name).Packages, p)
	}
	for _, c := range cfg.Channels {
		get(c.Package).Channels = append(get(c.Package).Channels, cloneChannel(c))
	}
	for _, b := range cfg.Bundles {
		get(b.Package).Bundles = append(get(b.Package).Bundles, cloneBundle(b))
	}
	for _, d := range cfg.Deprecations {
		get(d.Package).Deprecations = append(get(d.Package).Deprecations, d)
	}
	for _, m := range cfg.Others {
		get(m.Package).Others = append(get(m.Package).Others, m)
	}
	return out
}

// writeCfg writes cfg as one JSON stream to file.
func writeCfg(cfg *declcfg.DeclarativeConfig, file string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if err := declcfg.WriteJSON(*cfg, f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// splitCatalog is a catalog written once, one file per package, so that each
// mutation writes only the package it changes and hard-links the others.
type splitCatalog struct {
	dir   string
	parts map[string]*declcfg.DeclarativeConfig
	names []string // package keys, sorted ("" for package-less documents)
}

func fileFor(pkg string) string {
	if pkg == "" {
		return "_root.json"
	}
	return filepath.Join(pkg, "catalog.json")
}

func newSplitCatalog(cfg *declcfg.DeclarativeConfig, dir string) (*splitCatalog, error) {
	sc := &splitCatalog{dir: dir, parts: split(cfg)}
	for n, part := range sc.parts {
		sc.names = append(sc.names, n)
		if err := writeCfg(part, filepath.Join(dir, fileFor(n))); err != nil {
			return nil, err
		}
	}
	sort.Strings(sc.names)
	return sc, nil
}

// packages returns the names of declared packages, sorted.
func (sc *splitCatalog) packages() []string {
	var out []string
	for _, n := range sc.names {
		if n != "" && len(sc.parts[n].Packages) > 0 {
			out = append(out, n)
		}
	}
	return out
}

// mutate applies m to package pkg and writes the result to dir; false if the
// mutation does not apply.
func (sc *splitCatalog) mutate(m mutation, pkg, dir string) (bool, error) {
	orig := sc.parts[pkg]
	p := &pkgDocs{name: pkg}
	p.cfg.Packages = slices.Clone(orig.Packages)
	for _, c := range orig.Channels {
		p.cfg.Channels = append(p.cfg.Channels, cloneChannel(c))
	}
	for _, b := range orig.Bundles {
		p.cfg.Bundles = append(p.cfg.Bundles, cloneBundle(b))
	}
	p.cfg.Deprecations = slices.Clone(orig.Deprecations)
	p.cfg.Others = slices.Clone(orig.Others)
	if !m.fn(p) {
		return false, nil
	}
	for _, n := range sc.names {
		dst := filepath.Join(dir, fileFor(n))
		if n == pkg {
			if err := writeCfg(&p.cfg, dst); err != nil {
				return false, err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return false, err
		}
		if err := os.Link(filepath.Join(sc.dir, fileFor(n)), dst); err != nil {
			return false, fmt.Errorf("link: %w", err)
		}
	}
	return true, nil
}
