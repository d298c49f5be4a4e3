package conformance

import (
	"encoding/json"
	"strings"

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
	// fixed; their mutations below agree (docs/conformance.md, "Defects found").
)

// mutations is the table applied to every package of the catalogs.
var mutations = []mutation{
	{name: "unchanged", fn: func(p *pkgDocs) bool { return p.pkg() != nil }},
	{name: "drop-middle-entry", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		chain := chainOf(ch)
		if len(chain) < 3 {
			return false
		}
		drop := chain[1]
		ch.Entries = removeEntry(ch.Entries, drop)
		return true
	}},
	{name: "drop-head-entry", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) < 2 {
			return false
		}
		h := head(ch)
		if h == "" {
			return false
		}
		ch.Entries = removeEntry(ch.Entries, h)
		return true
	}},
	{name: "drop-bundle", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 {
			return false
		}
		name := ch.Entries[len(ch.Entries)/2].Name
		n := len(p.cfg.Bundles)
		p.cfg.Bundles = filter(p.cfg.Bundles, func(b declcfg.Bundle) bool { return b.Name != name })
		return len(p.cfg.Bundles) < n
	}},
	{name: "second-head", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		b := p.bundle(head(ch))
		if b == nil {
			return false
		}
		n := p.newBundle(b, "-second-head", "999.0.0")
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: n})
		return true
	}},
	{name: "new-head-replaces-head", fn: func(p *pkgDocs) bool { // valid
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		b := p.bundle(h)
		if b == nil {
			return false
		}
		n := p.newBundle(b, "-next", "999.0.0")
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: n, Replaces: h})
		return true
	}},
	{name: "new-head-skips-head", fn: func(p *pkgDocs) bool { // valid
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		b := p.bundle(h)
		if b == nil {
			return false
		}
		n := p.newBundle(b, "-skipper", "999.0.0")
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: n, Skips: []string{h}, SkipRange: "<999.0.0"})
		return true
	}},
	{name: "cycle", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		chain := chainOf(ch)
		if len(chain) < 2 {
			return false
		}
		tail := chain[len(chain)-1]
		for i := range ch.Entries {
			if ch.Entries[i].Name == tail {
				ch.Entries[i].Replaces = chain[0]
			}
		}
		return true
	}},
	{name: "self-replace-head", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		for i := range ch.Entries {
			if ch.Entries[i].Name == h {
				ch.Entries[i].Replaces = h
				return true
			}
		}
		return false
	}},
	{name: "stranded", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		b := p.bundle(h)
		if b == nil {
			return false
		}
		x := p.newBundle(b, "-stranded-x", "998.0.0")
		y := p.newBundle(b, "-stranded-y", "998.0.1")
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: x}, declcfg.ChannelEntry{Name: y, Replaces: x})
		for i := range ch.Entries {
			if ch.Entries[i].Name == h {
				ch.Entries[i].Skips = append(ch.Entries[i].Skips, y)
			}
		}
		return true
	}},
	{name: "tail-replaces-missing", fn: func(p *pkgDocs) bool { // valid
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		chain := chainOf(ch)
		if len(chain) == 0 {
			return false
		}
		tail := chain[len(chain)-1]
		for i := range ch.Entries {
			if ch.Entries[i].Name == tail {
				ch.Entries[i].Replaces = "not-in-this-catalog.v0.0.1"
			}
		}
		return true
	}},
	{name: "duplicate-bundle", fn: func(p *pkgDocs) bool {
		if len(p.cfg.Bundles) == 0 {
			return false
		}
		p.cfg.Bundles = append(p.cfg.Bundles, cloneBundle(p.cfg.Bundles[0]))
		return true
	}},
	{name: "duplicate-entry", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 {
			return false
		}
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: ch.Entries[0].Name})
		return true
	}},
	{name: "duplicate-channel", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		p.cfg.Channels = append(p.cfg.Channels, cloneChannel(*ch))
		return true
	}},
	{name: "duplicate-package", fn: func(p *pkgDocs) bool {
		pk := p.pkg()
		if pk == nil {
			return false
		}
		p.cfg.Packages = append(p.cfg.Packages, *pk)
		return true
	}},
	{name: "duplicate-version", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		b := p.bundle(h)
		if b == nil {
			return false
		}
		v := packageValue(b)
		if v == nil {
			return false
		}
		ver, _ := v["version"].(string)
		n := p.newBundle(b, "-same-version", ver)
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: n, Replaces: h})
		return true
	}},
	{name: "version-not-semver", fn: func(p *pkgDocs) bool {
		return setPackageField(p, "version", "v1.2")
	}},
	{name: "version-number", fn: func(p *pkgDocs) bool {
		return setPackageField(p, "version", 1.2)
	}},
	{name: "version-build-metadata", fn: func(p *pkgDocs) bool { // valid
		return setPackageField(p, "version", "1.2.3+build.7")
	}},
	{name: "release-not-normalized", fn: func(p *pkgDocs) bool {
		return setPackageField(p, "release", "2")
	}},
	{name: "release-invalid", fn: func(p *pkgDocs) bool {
		return setPackageField(p, "release", "01")
	}},
	{name: "package-property-mismatch", fn: func(p *pkgDocs) bool {
		return setPackageField(p, "packageName", "some-other-package")
	}},
	{name: "no-package-property", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = filter(b.Properties, func(pr property.Property) bool { return pr.Type != property.TypePackage })
		return true
	}},
	{name: "two-package-properties", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		for _, pr := range b.Properties {
			if pr.Type == property.TypePackage {
				b.Properties = append(b.Properties, pr)
				return true
			}
		}
		return false
	}},
	{name: "bad-skiprange", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 {
			return false
		}
		ch.Entries[0].SkipRange = ">=1.0.0 <<2"
		return true
	}},
	{name: "skiprange-v-prefix", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 {
			return false
		}
		ch.Entries[0].SkipRange = ">=v1.0.0 <v2.0.0"
		return true
	}},
	{name: "empty-skip", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 {
			return false
		}
		ch.Entries[0].Skips = append(ch.Entries[0].Skips, "")
		return true
	}},
	{name: "skip-unknown", fn: func(p *pkgDocs) bool { // valid
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 {
			return false
		}
		ch.Entries[0].Skips = append(ch.Entries[0].Skips, "not-in-this-catalog.v0.0.1")
		return true
	}},
	{name: "remove-default-channel", fn: func(p *pkgDocs) bool {
		pk := p.pkg()
		if pk == nil || p.channel(pk.DefaultChannel) == nil {
			return false
		}
		p.cfg.Channels = filter(p.cfg.Channels, func(c declcfg.Channel) bool { return c.Name != pk.DefaultChannel })
		return true
	}},
	{name: "empty-default-channel", fn: func(p *pkgDocs) bool {
		pk := p.pkg()
		if pk == nil {
			return false
		}
		pk.DefaultChannel = ""
		return true
	}},
	{name: "unknown-default-channel", fn: func(p *pkgDocs) bool {
		pk := p.pkg()
		if pk == nil {
			return false
		}
		pk.DefaultChannel = "no-such-channel"
		return true
	}},
	{name: "channel-without-entries", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		ch.Entries = nil
		return true
	}},
	{name: "entry-without-bundle", fn: func(p *pkgDocs) bool {
		ch := p.defaultChannel()
		if ch == nil {
			return false
		}
		h := head(ch)
		ch.Entries = append(ch.Entries, declcfg.ChannelEntry{Name: "ghost.v999.0.0", Replaces: h})
		return true
	}},
	{name: "bundle-in-no-channel", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		p.newBundle(b, "-orphan", "997.0.0")
		return true
	}},
	{name: "drop-package-document", fn: func(p *pkgDocs) bool {
		n := len(p.cfg.Packages)
		p.cfg.Packages = nil
		return n > 0
	}},
	{name: "package-name-not-dns1123", fn: func(p *pkgDocs) bool {
		return renamePackage(p, "Bad_Package")
	}},
	{name: "package-name-64-chars", fn: func(p *pkgDocs) bool {
		return renamePackage(p, strings.Repeat("a", 64))
	}},
	{name: "package-name-63-chars", fn: func(p *pkgDocs) bool { // valid
		return renamePackage(p, strings.Repeat("b", 63))
	}},
	{name: "bad-bundle-image", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Image = "quay.io/Upper/Case:1.0"
		return true
	}},
	{name: "bad-related-image", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.RelatedImages = append(b.RelatedImages, declcfg.RelatedImage{Name: "x", Image: "quay.io/foo/bar:tag@sha256:abc"})
		return true
	}},
	{name: "empty-related-image", fn: func(p *pkgDocs) bool { // valid
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.RelatedImages = append(b.RelatedImages, declcfg.RelatedImage{Name: "empty"})
		return true
	}},
	{name: "no-bundle-image", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Image = ""
		return true
	}},
	{name: "bad-gvk-value", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Type: property.TypeGVK, Value: json.RawMessage(`["not","an","object"]`)})
		return true
	}},
	{name: "null-gvk-value", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Type: property.TypeGVK, Value: json.RawMessage(`null`)})
		return true
	}},
	{name: "property-without-type", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Value: json.RawMessage(`{"a":1}`)})
		return true
	}},
	{name: "csv-metadata-wrong-field-type", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = filter(b.Properties, func(pr property.Property) bool { return pr.Type != property.TypeCSVMetadata })
		b.Properties = append(b.Properties, property.Property{Type: property.TypeCSVMetadata, Value: json.RawMessage(`{"displayName":5,"annotations":{"a":1}}`)})
		return true
	}},
	{name: "bundle-object-not-base64", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Type: property.TypeBundleObject, Value: json.RawMessage(`{"data":"%%%not base64"}`)})
		return true
	}},
	{name: "bundle-object-not-yaml", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Type: property.TypeBundleObject, Value: mustRaw(map[string]any{"data": []byte("kind: [unclosed")})})
		return true
	}},
	{name: "null-unknown-property-value", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Type: "example.com.thing", Value: json.RawMessage(`null`)})
		return true
	}},
	{name: "null-csv-metadata", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = filter(b.Properties, func(pr property.Property) bool { return pr.Type != property.TypeCSVMetadata })
		b.Properties = append(b.Properties, property.Property{Type: property.TypeCSVMetadata, Value: json.RawMessage(`null`)})
		return true
	}},
	{name: "csv-metadata-nested-wrong-type", fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = filter(b.Properties, func(pr property.Property) bool { return pr.Type != property.TypeCSVMetadata })
		b.Properties = append(b.Properties, property.Property{Type: property.TypeCSVMetadata, Value: json.RawMessage(`{"displayName":"x","installModes":[{"type":"OwnNamespace","supported":"yes"}]}`)})
		return true
	}},
	{name: "bundle-object-yaml", fn: func(p *pkgDocs) bool { // valid
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Type: property.TypeBundleObject, Value: mustRaw(map[string]any{"data": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")})})
		return true
	}},
	{name: "null-bundle-object", fn: func(p *pkgDocs) bool { // valid
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Type: property.TypeBundleObject, Value: json.RawMessage(`null`)})
		return true
	}},
	{name: "skips-property-not-a-string", fn: func(p *pkgDocs) bool { // valid
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = append(b.Properties, property.Property{Type: "olm.skips", Value: json.RawMessage(`{"not":"a string"}`)}, property.Property{Type: "olm.skipRange", Value: json.RawMessage(`[1]`)})
		return true
	}},
	{name: "two-csv-metadata", diff: diffCSVMetadataCount, fn: func(p *pkgDocs) bool {
		b := firstBundle(p)
		if b == nil {
			return false
		}
		b.Properties = filter(b.Properties, func(pr property.Property) bool { return pr.Type != property.TypeCSVMetadata })
		m := property.Property{Type: property.TypeCSVMetadata, Value: json.RawMessage(`{"displayName":"x"}`)}
		b.Properties = append(b.Properties, m, m)
		return true
	}},
	{name: "custom-blob", fn: func(p *pkgDocs) bool { // valid
		p.cfg.Others = append(p.cfg.Others, declcfg.Meta{Schema: "example.com.custom", Package: p.name, Blob: json.RawMessage(`{"schema":"example.com.custom","package":"` + p.name + `","data":{"n":12345678901234567890}}`)})
		return true
	}},
	{name: "custom-blob-bad-schema-name", diff: diffCustomSchemaName, fn: func(p *pkgDocs) bool {
		p.cfg.Others = append(p.cfg.Others, declcfg.Meta{Schema: "bad schema!", Package: p.name, Blob: json.RawMessage(`{"schema":"bad schema!","package":"` + p.name + `"}`)})
		return true
	}},
	{name: "deprecate-everything", fn: func(p *pkgDocs) bool { // valid
		ch := p.defaultChannel()
		if ch == nil || len(ch.Entries) == 0 || len(p.cfg.Deprecations) > 0 {
			return false
		}
		p.cfg.Deprecations = append(p.cfg.Deprecations, declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: p.name, Entries: []declcfg.DeprecationEntry{
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: "gone"},
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaChannel, Name: ch.Name}, Message: "gone"},
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: ch.Entries[0].Name}, Message: "gone"},
		}})
		return true
	}},
	{name: "deprecation-unknown-bundle", fn: func(p *pkgDocs) bool {
		p.cfg.Deprecations = append(p.cfg.Deprecations, declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: p.name, Entries: []declcfg.DeprecationEntry{
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaBundle, Name: "nope.v0.0.0"}, Message: "gone"},
		}})
		return true
	}},
	{name: "deprecation-no-message", fn: func(p *pkgDocs) bool {
		if p.pkg() == nil || len(p.cfg.Deprecations) > 0 {
			return false
		}
		p.cfg.Deprecations = append(p.cfg.Deprecations, declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: p.name, Entries: []declcfg.DeprecationEntry{
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}},
		}})
		return true
	}},
	{name: "two-deprecations", fn: func(p *pkgDocs) bool {
		if p.pkg() == nil {
			return false
		}
		d := declcfg.Deprecation{Schema: declcfg.SchemaDeprecation, Package: p.name, Entries: []declcfg.DeprecationEntry{
			{Reference: declcfg.PackageScopedReference{Schema: declcfg.SchemaPackage}, Message: "x"},
		}}
		p.cfg.Deprecations = append(p.cfg.Deprecations, d, d)
		return true
	}},
}

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
