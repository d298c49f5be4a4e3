package conformance

import (
	"encoding/json"
	"slices"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// Known, documented differences (docs/conformance.md, "Deliberate differences").
var (
	diffCSVMetadataCount = &knownDiff{opmAccepts: true,
		why: "opm serve cannot build its cache with two olm.csv.metadata properties; opm validate does not check it"}
	diffCustomSchemaName = &knownDiff{opmAccepts: true,
		why: "opm serve refuses custom blobs whose schema is not a plain name; opm validate does not check it"}

	// No known defect of prune is left: the seven these tests found (null
	// values, empty types, olm.csv.metadata field types, bundle objects) are
	// fixed; their mutations (mutations_*_test.go) agree (docs/conformance.md,
	// "Defects found").
)

// mutations is the table applied to every package of the catalogs: the
// channel-graph mutations, then the field and property ones.
var mutations = append(slices.Clone(graphMutations), fieldMutations...)

func removeEntry(es []declcfg.ChannelEntry, name string) []declcfg.ChannelEntry {
	return filter(es, func(e declcfg.ChannelEntry) bool { return e.Name != name })
}

func filter[T any](s []T, keep func(T) bool) []T {
	var out []T
	for _, v := range s {
		if keep(v) {
			out = append(out, v)
		}
	}
	return out
}

// firstBundle returns the head bundle of the default channel, else the first bundle.
func firstBundle(p *pkgDocs) *declcfg.Bundle {
	if ch := p.defaultChannel(); ch != nil {
		if b := p.bundle(head(ch)); b != nil {
			return b
		}
	}
	if len(p.cfg.Bundles) == 0 {
		return nil
	}
	return &p.cfg.Bundles[0]
}

func packageValue(b *declcfg.Bundle) map[string]any {
	for _, pr := range b.Properties {
		if pr.Type == property.TypePackage {
			var v map[string]any
			if json.Unmarshal(pr.Value, &v) == nil {
				return v
			}
		}
	}
	return nil
}

// setPackageField sets one field of the olm.package property of the default
// channel's head bundle.
func setPackageField(p *pkgDocs, field string, val any) bool {
	b := firstBundle(p)
	if b == nil {
		return false
	}
	for i, pr := range b.Properties {
		if pr.Type != property.TypePackage {
			continue
		}
		var v map[string]any
		if json.Unmarshal(pr.Value, &v) != nil {
			return false
		}
		v[field] = val
		b.Properties[i].Value = mustRaw(v)
		return true
	}
	return false
}

// renamePackage renames the package in every document and property.
func renamePackage(p *pkgDocs, to string) bool {
	if p.pkg() == nil {
		return false
	}
	from := p.name
	for i := range p.cfg.Packages {
		p.cfg.Packages[i].Name = to
	}
	for i := range p.cfg.Channels {
		p.cfg.Channels[i].Package = to
	}
	for i := range p.cfg.Bundles {
		b := &p.cfg.Bundles[i]
		b.Package = to
		for j, pr := range b.Properties {
			if pr.Type == property.TypePackage {
				var v map[string]any
				if json.Unmarshal(pr.Value, &v) == nil && v["packageName"] == from {
					v["packageName"] = to
					b.Properties[j].Value = mustRaw(v)
				}
			}
		}
	}
	for i := range p.cfg.Deprecations {
		p.cfg.Deprecations[i].Package = to
	}
	// Blobs of other schemas keep naming the old package: they are opaque.
	p.name = to
	return true
}
