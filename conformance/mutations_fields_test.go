package conformance

import (
	"encoding/json"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"
)

// fieldMutations change fields and properties: versions, names, images,
// properties, blobs and deprecations.
var fieldMutations = []mutation{
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
