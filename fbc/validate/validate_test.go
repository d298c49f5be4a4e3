package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/airlock-mirror/airlock/fbc"
)

// pkgProp returns an olm.package property.
func pkgProp(pkg, version string) fbc.Property {
	return fbc.Property{Type: fbc.PropertyPackage, Value: json.RawMessage(fmt.Sprintf(`{"packageName":%q,"version":%q}`, pkg, version))}
}

func testBundle(pkg, name, version string) *fbc.Bundle {
	return &fbc.Bundle{
		Name:       name,
		Package:    pkg,
		Image:      "quay.io/example/bundles:v" + version,
		Properties: []fbc.Property{pkgProp(pkg, version)},
		RelatedImages: []fbc.RelatedImage{
			{Name: "", Image: "quay.io/example/bundles:v" + version},
			{Name: "operator", Image: "quay.io/example/operator@sha256:" + strings.Repeat("a", 64)},
		},
	}
}

// validTestCatalog is a small valid catalog: package foo with channels stable
// (replaces chain 1.2.0 -> 1.1.0 -> 1.0.0) and fast (1.2.0 only, with a dangling
// replaces), a deprecation and a custom blob; package bar with one bundle.
func validTestCatalog() *fbc.Catalog {
	foo := &fbc.Package{
		Name: "foo", DefaultChannel: "stable", Declared: 1,
		Channels: []*fbc.Channel{
			{Name: "fast", Package: "foo", Entries: []fbc.ChannelEntry{{Name: "foo.v1.2.0", Replaces: "foo.v1.1.0", SkipRange: ">=1.0.0 <1.2.0"}}},
			{Name: "stable", Package: "foo", Entries: []fbc.ChannelEntry{
				{Name: "foo.v1.0.0"},
				{Name: "foo.v1.1.0", Replaces: "foo.v1.0.0"},
				{Name: "foo.v1.2.0", Replaces: "foo.v1.1.0", Skips: []string{"foo.v0.9.0"}, SkipRange: "<1.2.0"},
			}},
		},
		Bundles: []*fbc.Bundle{
			testBundle("foo", "foo.v1.0.0", "1.0.0"),
			testBundle("foo", "foo.v1.1.0", "1.1.0"),
			testBundle("foo", "foo.v1.2.0", "1.2.0"),
		},
		Deprecations: []*fbc.Deprecations{{Package: "foo", Entries: []fbc.DeprecationEntry{
			{Reference: fbc.PackageScopedReference{Schema: fbc.SchemaBundle, Name: "foo.v1.0.0"}, Message: "use 1.2"},
			{Reference: fbc.PackageScopedReference{Schema: fbc.SchemaChannel, Name: "fast"}, Message: "use stable"},
		}}},
		Others: []*fbc.Meta{{Schema: "example.com.thing", Package: "foo", Blob: json.RawMessage(`{"schema":"example.com.thing","package":"foo"}`)}},
	}
	bar := &fbc.Package{
		Name: "bar", DefaultChannel: "alpha", Declared: 1,
		Channels: []*fbc.Channel{{Name: "alpha", Package: "bar", Entries: []fbc.ChannelEntry{{Name: "bar.v0.1.0", Replaces: "bar.v0.0.9"}}}},
		Bundles:  []*fbc.Bundle{testBundle("bar", "bar.v0.1.0", "0.1.0")},
	}
	return &fbc.Catalog{Packages: []*fbc.Package{bar, foo}}
}

func findPkg(c *fbc.Catalog, name string) *fbc.Package {
	for _, p := range c.Packages {
		if p.Name == name {
			return p
		}
	}
	panic("no package " + name)
}

func findChannel(p *fbc.Package, name string) *fbc.Channel {
	for _, c := range p.Channels {
		if c.Name == name {
			return c
		}
	}
	panic("no channel " + name)
}

func findBundle(p *fbc.Package, name string) *fbc.Bundle {
	for _, b := range p.Bundles {
		if b.Name == name {
			return b
		}
	}
	panic("no bundle " + name)
}

func TestValidateValid(t *testing.T) {
	if err := Catalog(validTestCatalog()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := Catalog(&fbc.Catalog{}); err != nil {
		t.Fatalf("Catalog(empty): %v", err)
	}
	if err := Catalog(nil); err != nil {
		t.Fatalf("Catalog(nil): %v", err)
	}
}

func TestValidateRules(t *testing.T) {
	type want struct {
		pkg, ch, bundle, msg string
	}
	tests := []struct {
		name   string
		mutate func(c *fbc.Catalog)
		want   []want // each must appear (msg as substring); no other problem may appear
	}{
		{"package name not DNS-1123", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			p.Name = "Bar_1"
			for _, ch := range p.Channels {
				ch.Package = "Bar_1"
			}
			p.Bundles = []*fbc.Bundle{testBundle("Bar_1", "bar.v0.1.0", "0.1.0")}
		}, []want{{"Bar_1", "", "", `invalid package name "Bar_1": [a lowercase RFC 1123 label`}}},
		{"package name too long", func(c *fbc.Catalog) {
			long := strings.Repeat("a", 64)
			p := findPkg(c, "bar")
			p.Name = long
			for _, ch := range p.Channels {
				ch.Package = long
			}
			p.Bundles = []*fbc.Bundle{testBundle(long, "bar.v0.1.0", "0.1.0")}
		}, []want{{strings.Repeat("a", 64), "", "", "must be no more than 63 characters"}}},
		{"duplicate package", func(c *fbc.Catalog) { findPkg(c, "bar").Declared = 2 },
			[]want{{"bar", "", "", `duplicate package "bar"`}}},
		{"package with no name", func(c *fbc.Catalog) {
			c.Packages = append(c.Packages, &fbc.Package{Name: "", Declared: 1})
		}, []want{
			{"", "", "", "config contains package with no name"},
			{"", "", "", "default channel must be set"},
			{"", "", "", "package must contain at least one channel"},
		}},
		{"unknown package", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			p.Declared = 0
			p.Deprecations = []*fbc.Deprecations{{Package: "bar", Entries: []fbc.DeprecationEntry{{Reference: fbc.PackageScopedReference{Schema: fbc.SchemaPackage}, Message: "gone"}}}}
		}, []want{
			{"bar", "alpha", "", `unknown package "bar" for channel "alpha"`},
			{"bar", "", "bar.v0.1.0", `unknown package "bar" for bundle "bar.v0.1.0"`},
			{"bar", "", "", `cannot apply deprecations to an unknown package "bar"`},
		}},
		{"default channel empty", func(c *fbc.Catalog) { findPkg(c, "bar").DefaultChannel = "" },
			[]want{{"bar", "", "", "default channel must be set"}}},
		{"default channel missing", func(c *fbc.Catalog) { findPkg(c, "bar").DefaultChannel = "beta" },
			[]want{{"bar", "beta", "", "channel must contain at least one bundle"}}},
		{"default channel empty channel", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			p.Channels = append(p.Channels, &fbc.Channel{Name: "beta", Package: "bar"})
			p.DefaultChannel = "beta"
		}, []want{{"bar", "beta", "", "channel must contain at least one bundle"}}},
		{"package without channels", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			p.Channels = nil
		}, []want{
			{"bar", "", "", "package must contain at least one channel"},
			{"bar", "alpha", "", "channel must contain at least one bundle"},
			{"bar", "", "bar.v0.1.0", "not found in any channel entries"},
		}},
		{"channel with no name", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			p.Channels = append(p.Channels, &fbc.Channel{Name: "", Package: "bar", Entries: []fbc.ChannelEntry{{Name: "bar.v0.1.0"}}})
		}, []want{{"bar", "", "", `package "bar" contains channel with no name`}}},
		{"duplicate channel", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			p.Channels = append(p.Channels, &fbc.Channel{Name: "alpha", Package: "bar", Entries: []fbc.ChannelEntry{{Name: "bar.v0.1.0"}}})
		}, []want{{"bar", "alpha", "", `package "bar" has duplicate channel "alpha"`}}},
		{"duplicate entry", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "bar"), "alpha")
			ch.Entries = append(ch.Entries, fbc.ChannelEntry{Name: "bar.v0.1.0"})
		}, []want{{"bar", "alpha", "", `invalid package "bar", channel "alpha": duplicate entry "bar.v0.1.0"`}}},
		{"entry without bundle", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "bar"), "alpha")
			ch.Entries = []fbc.ChannelEntry{{Name: "bar.v0.2.0", Replaces: "bar.v0.1.0"}, {Name: "bar.v0.1.0"}}
		}, []want{{"bar", "alpha", "", `no olm.bundle blobs found in package "bar" for olm.channel entries [bar.v0.2.0]`}}},
		{"entry with no name", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "bar"), "alpha")
			ch.Entries = []fbc.ChannelEntry{{Name: "", Replaces: "bar.v0.1.0"}, {Name: "bar.v0.1.0"}}
		}, []want{{"bar", "alpha", "", "entry [0] has no name"}}},
		{"two heads", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[1].Replaces = ""
		}, []want{{"foo", "stable", "", "multiple channel heads found in graph: foo.v1.0.0, foo.v1.2.0"}}},
		{"no head", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[0].Replaces = "foo.v1.2.0"
		}, []want{{"foo", "stable", "", "no channel head found in graph"}}},
		{"cycle below the head", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[0].Replaces = "foo.v1.1.0"
		}, []want{{"foo", "stable", "", "detected cycle in replaces chain of upgrade graph: foo.v1.2.0 -> foo.v1.1.0 -> foo.v1.0.0 -> foo.v1.1.0"}}},
		{"single entry replacing itself", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "bar"), "alpha")
			ch.Entries[0].Replaces = "bar.v0.1.0"
		}, []want{{"bar", "alpha", "", "no channel head found in graph"}}},
		{"stranded", func(c *fbc.Catalog) {
			// 1.2.0 replaces 1.1.0 and skips it: the walk stops at 1.1.0, so 1.0.0 is stranded.
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[2].Skips = []string{"foo.v1.1.0"}
		}, []want{{"foo", "stable", "", "channel contains one or more stranded bundles: foo.v1.0.0"}}},
		{"skipRange-only entry is an extra head", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[1].Replaces = ""
			ch.Entries[2].Replaces = ""
			ch.Entries[2].Skips = []string{"foo.v1.1.0"}
		}, []want{{"foo", "stable", "", "multiple channel heads found in graph: foo.v1.0.0, foo.v1.2.0"}}},
		{"empty skip", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[2].Skips = []string{"foo.v0.9.0", ""}
		}, []want{{"foo", "stable", "foo.v1.2.0", "skip[1] is empty"}}},
		{"bad skipRange", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "foo"), "fast")
			ch.Entries[0].SkipRange = ">=1.0 <1.2.0"
		}, []want{{"foo", "fast", "foo.v1.2.0", `invalid skipRange ">=1.0 <1.2.0"`}}},
		{"skipRange with comma", func(c *fbc.Catalog) {
			ch := findChannel(findPkg(c, "foo"), "fast")
			ch.Entries[0].SkipRange = ">=1.0.0, <1.2.0"
		}, []want{{"foo", "fast", "foo.v1.2.0", `invalid skipRange ">=1.0.0, <1.2.0"`}}},
		{"bundle name empty", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			b := testBundle("bar", "", "0.2.0")
			p.Bundles = append(p.Bundles, b)
		}, []want{{"bar", "", "", "name must be set"}}},
		{"bundle package empty", func(c *fbc.Catalog) {
			b := testBundle("", "x.v1.0.0", "1.0.0")
			c.Packages = append(c.Packages, &fbc.Package{Name: "", Bundles: []*fbc.Bundle{b}})
		}, []want{
			{"", "", "x.v1.0.0", `package name must be set for bundle "x.v1.0.0"`},
			{"", "", "x.v1.0.0", "not found in any channel entries"},
		}},
		{"duplicate bundle", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			p.Bundles = append(p.Bundles, testBundle("bar", "bar.v0.1.0", "0.1.0"))
		}, []want{{"bar", "", "bar.v0.1.0", `package "bar" has duplicate bundle "bar.v0.1.0"`}}},
		{"bundle in no channel", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			p.Bundles = append(p.Bundles, testBundle("bar", "bar.v0.2.0", "0.2.0"))
		}, []want{{"bar", "", "bar.v0.2.0", `package "bar", bundle "bar.v0.2.0" not found in any channel entries`}}},
		{"no olm.package property", func(c *fbc.Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = nil
		}, []want{{"bar", "", "bar.v0.1.0", `package "bar" bundle "bar.v0.1.0" must have exactly 1 "olm.package" property, found 0`}}},
		{"two olm.package properties", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, pkgProp("bar", "0.1.0"))
		}, []want{{"bar", "", "bar.v0.1.0", "must have exactly 1 \"olm.package\" property, found 2"}}},
		{"packageName mismatch", func(c *fbc.Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []fbc.Property{pkgProp("baz", "0.1.0")}
		}, []want{{"bar", "", "bar.v0.1.0", `package "bar" does not match "olm.package" property "baz"`}}},
		{"version not semver", func(c *fbc.Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []fbc.Property{pkgProp("bar", "v0.1")}
		}, []want{{"bar", "", "bar.v0.1.0", `error parsing bundle "bar.v0.1.0" version "v0.1"`}}},
		{"version with leading zero", func(c *fbc.Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []fbc.Property{pkgProp("bar", "0.01.0")}
		}, []want{{"bar", "", "bar.v0.1.0", `error parsing bundle "bar.v0.1.0" version "0.01.0"`}}},
		{"version is a number", func(c *fbc.Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []fbc.Property{{Type: fbc.PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":1.0}`)}}
		}, []want{{"bar", "", "bar.v0.1.0", `parse properties for bundle "bar.v0.1.0": parse property[0] of type "olm.package": json: cannot unmarshal number`}}},
		{"duplicate versions", func(c *fbc.Catalog) {
			p := findPkg(c, "foo")
			findBundle(p, "foo.v1.1.0").Properties = []fbc.Property{pkgProp("foo", "1.0.0")}
		}, []want{{"foo", "", "", "duplicate versions found in bundles: [{1.0.0: [foo.v1.0.0, foo.v1.1.0]}]"}}},
		{"same version different build metadata is fine", func(c *fbc.Catalog) {
			p := findPkg(c, "foo")
			findBundle(p, "foo.v1.0.0").Properties = []fbc.Property{pkgProp("foo", "1.0.0+a")}
			findBundle(p, "foo.v1.1.0").Properties = []fbc.Property{pkgProp("foo", "1.0.0+b")}
		}, nil},
		{"release valid", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			b := p.Bundles[0]
			b.Name = "bar-v0.1.0-1.rc.2"
			b.Properties = []fbc.Property{{Type: fbc.PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0","release":"1.rc.2"}`)}}
			p.Channels[0].Entries[0].Name = b.Name
		}, nil},
		{"release name mismatch", func(c *fbc.Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []fbc.Property{{Type: fbc.PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0","release":"2"}`)}}
		}, []want{{"bar", "", "bar.v0.1.0", `name "bar.v0.1.0" does not match normalized name "bar-v0.1.0-2"`}}},
		{"release invalid", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			b := p.Bundles[0]
			b.Name = "bar-v0.1.0-01"
			b.Properties = []fbc.Property{{Type: fbc.PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0","release":"01"}`)}}
			p.Channels[0].Entries[0].Name = b.Name
		}, []want{{"bar", "", "bar-v0.1.0-01", `error parsing bundle "bar-v0.1.0-01" release version "01"`}}},
		{"release too long", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			b := p.Bundles[0]
			rel := strings.Repeat("r", 21)
			b.Name = "bar-v0.1.0-" + rel
			b.Properties = []fbc.Property{{Type: fbc.PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0","release":"` + rel + `"}`)}}
			p.Channels[0].Entries[0].Name = b.Name
		}, []want{{"bar", "", "bar-v0.1.0-" + strings.Repeat("r", 21), "longer than 20 characters"}}},
		{"release with build metadata", func(c *fbc.Catalog) {
			p := findPkg(c, "bar")
			b := p.Bundles[0]
			b.Name = "bar-v0.1.0+b1-2"
			b.Properties = []fbc.Property{{Type: fbc.PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0+b1","release":"2"}`)}}
			p.Channels[0].Entries[0].Name = b.Name
		}, []want{{"bar", "", "bar-v0.1.0+b1-2", "cannot use build metadata in version with a release version"}}},
		{"image empty", func(c *fbc.Catalog) { findBundle(findPkg(c, "bar"), "bar.v0.1.0").Image = "" },
			[]want{{"bar", "", "bar.v0.1.0", "bundle image must be set"}}},
		{"heavy property without value", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, fbc.Property{Type: fbc.PropertyBundleObject}, fbc.Property{Type: fbc.PropertyCSVMetadata})
		}, []want{
			{"bar", "", "bar.v0.1.0", `read bundle objects: parse property at index 1 as bundle object: unexpected end of JSON input`},
			{"bar", "", "bar.v0.1.0", `parse property[2] of type "olm.csv.metadata": unexpected end of JSON input`},
		}},
		{"image uppercase", func(c *fbc.Catalog) { findBundle(findPkg(c, "bar"), "bar.v0.1.0").Image = "quay.io/Example/bar:v1" },
			[]want{{"bar", "", "bar.v0.1.0", `package "bar" bundle "bar.v0.1.0" image: invalid image pull spec "quay.io/Example/bar:v1"`}}},
		{"related image bad digest", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.RelatedImages = append(b.RelatedImages, fbc.RelatedImage{Name: "x", Image: "quay.io/example/x@sha256:abc"}, fbc.RelatedImage{Name: "empty"})
		}, []want{{"bar", "", "bar.v0.1.0", `relatedImages[2].image: invalid image pull spec "quay.io/example/x@sha256:abc"`}}},
		{"property without value", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, fbc.Property{Type: "example.com/thing"})
		}, []want{{"bar", "", "bar.v0.1.0", `parse property[1] of type "example.com/thing"`}}},
		{"property without type (opm does not check types)", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, fbc.Property{Value: json.RawMessage(`{}`)})
		}, nil},
		{"property without type nor value", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, fbc.Property{})
		}, []want{{"bar", "", "bar.v0.1.0", `parse property[1] of type "": unexpected end of JSON input`}}},
		{"null values decode as empty values", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			for _, typ := range []string{fbc.PropertyGVK, fbc.PropertyGVKRequired, fbc.PropertyPackageRequired, fbc.PropertyBundleObject, fbc.PropertyCSVMetadata, "olm.channel", "olm.skips", "example.com.thing"} {
				b.Properties = append(b.Properties, fbc.Property{Type: typ, Value: json.RawMessage(`null`)})
			}
		}, nil},
		{"olm.skips and olm.skipRange are opaque to opm", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, fbc.Property{Type: "olm.skips", Value: json.RawMessage(`{"a":1}`)}, fbc.Property{Type: "olm.skipRange", Value: json.RawMessage(`[1]`)})
		}, nil},
		{"gvk wrong shape", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, fbc.Property{Type: fbc.PropertyGVK, Value: json.RawMessage(`["a"]`)})
		}, []want{{"bar", "", "bar.v0.1.0", `parse property[1] of type "olm.gvk"`}}},
		{"gvk.required and package.required wrong shape", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties,
				fbc.Property{Type: fbc.PropertyGVKRequired, Value: json.RawMessage(`{"group":1}`)},
				fbc.Property{Type: fbc.PropertyPackageRequired, Value: json.RawMessage(`{"packageName":"x","versionRange":[]}`)},
				fbc.Property{Type: fbc.PropertyPackageRequired, Value: json.RawMessage(`null`)},
			)
		}, []want{
			{"bar", "", "bar.v0.1.0", `parse property[1] of type "olm.gvk.required"`},
			{"bar", "", "bar.v0.1.0", `parse property[2] of type "olm.package.required"`},
		}},
		{"bundle object bad base64", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, fbc.Property{Type: fbc.PropertyBundleObject, Value: json.RawMessage(`{"data":"%%%"}`)})
		}, []want{{"bar", "", "bar.v0.1.0", `read bundle objects: parse property at index 1 as bundle object: illegal base64 data at input byte 0`}}},
		{"two csv metadata", func(c *fbc.Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, fbc.Property{Type: fbc.PropertyCSVMetadata, Value: json.RawMessage(`{}`)}, fbc.Property{Type: fbc.PropertyCSVMetadata, Value: json.RawMessage(`{"displayName":"x"}`)})
		}, []want{{"bar", "", "bar.v0.1.0", `must have at most one "olm.csv.metadata" property, found 2`}}},
		{"two deprecations", func(c *fbc.Catalog) {
			p := findPkg(c, "foo")
			p.Deprecations = append(p.Deprecations, &fbc.Deprecations{Package: "foo"})
		}, []want{{"foo", "", "", `expected a maximum of one deprecation per package: "foo"`}}},
		{"deprecations pointing nowhere", func(c *fbc.Catalog) {
			p := findPkg(c, "foo")
			p.Deprecations[0].Entries = append(p.Deprecations[0].Entries,
				fbc.DeprecationEntry{Reference: fbc.PackageScopedReference{Schema: fbc.SchemaBundle, Name: "foo.v9.0.0"}, Message: "m"},
				fbc.DeprecationEntry{Reference: fbc.PackageScopedReference{Schema: fbc.SchemaChannel, Name: "nightly"}, Message: "m"},
				fbc.DeprecationEntry{Reference: fbc.PackageScopedReference{Schema: fbc.SchemaPackage, Name: "foo"}, Message: "m"},
				fbc.DeprecationEntry{Reference: fbc.PackageScopedReference{Schema: "olm.thing", Name: "x"}, Message: "m"},
				fbc.DeprecationEntry{Reference: fbc.PackageScopedReference{}, Message: "m"},
				fbc.DeprecationEntry{Reference: fbc.PackageScopedReference{Schema: fbc.SchemaBundle, Name: "foo.v1.0.0"}, Message: "again"},
				fbc.DeprecationEntry{Reference: fbc.PackageScopedReference{Schema: fbc.SchemaBundle, Name: "foo.v1.1.0"}},
			)
		}, []want{
			{"foo", "", "", `cannot deprecate bundle "foo.v9.0.0" for package "foo": bundle not found`},
			{"foo", "", "", `cannot deprecate channel "nightly" for package "foo": channel not found`},
			{"foo", "", "", `package name must be empty for deprecated package "foo" (specified "foo")`},
			{"foo", "", "", `cannot deprecate object {schema: olm.thing, name: "x"} referenced by entry 5 for package "foo": object schema unknown`},
			{"foo", "", "", `schema must be set for deprecation entry [6] for package "foo"`},
			{"foo", "", "", `duplicate deprecation entry {schema: olm.bundle, name: "foo.v1.0.0"} for package "foo"`},
			{"foo", "", "foo.v1.1.0", "invalid deprecation: message must be set"},
		}},
		{"deprecation without package", func(c *fbc.Catalog) {
			c.Packages = append(c.Packages, &fbc.Package{Name: "", Deprecations: []*fbc.Deprecations{{}}})
		}, []want{{"", "", "", "package name must be set for deprecation item 0"}}},
		{"custom schema name", func(c *fbc.Catalog) {
			c.Others = append(c.Others, &fbc.Meta{Schema: "my schema", Origin: fbc.Origin{File: "x.json", Index: 3}})
			findPkg(c, "foo").Others = append(findPkg(c, "foo").Others, &fbc.Meta{Schema: "-bad"})
		}, []want{
			{"", "", "", `invalid schema "my schema" of a custom blob (x.json, document 3)`},
			{"foo", "", "", `invalid schema "-bad" of a custom blob`},
		}},
		{"custom blob package name", func(c *fbc.Catalog) {
			c.Packages = append(c.Packages, &fbc.Package{Name: "a/b", Others: []*fbc.Meta{{Schema: "example.com", Package: "a/b"}}})
		}, []want{{"a/b", "", "", `invalid package "a/b" of a "example.com" blob`}}},
		{"many problems at once", func(c *fbc.Catalog) {
			findPkg(c, "bar").DefaultChannel = ""
			findBundle(findPkg(c, "foo"), "foo.v1.0.0").Image = ""
			findChannel(findPkg(c, "foo"), "fast").Entries[0].SkipRange = "bogus"
		}, []want{
			{"bar", "", "", "default channel must be set"},
			{"foo", "", "foo.v1.0.0", "bundle image must be set"},
			{"foo", "fast", "foo.v1.2.0", "invalid skipRange"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validTestCatalog()
			tt.mutate(c)
			err := Catalog(c)
			if len(tt.want) == 0 {
				if err != nil {
					t.Fatalf("want valid, got:\n%v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError, got %T %v", err, err)
			}
			if !errors.Is(err, ErrInvalidCatalog) {
				t.Errorf("errors.Is(err, ErrInvalidCatalog) = false")
			}
			matched := make([]bool, len(ve.Problems))
			for _, w := range tt.want {
				found := false
				for i, p := range ve.Problems {
					if p.Package == w.pkg && p.Channel == w.ch && p.Bundle == w.bundle && strings.Contains(p.Message, w.msg) {
						found, matched[i] = true, true
					}
				}
				if !found {
					t.Errorf("missing problem %+v in:\n%v", w, err)
				}
			}
			for i, ok := range matched {
				if !ok {
					t.Errorf("unexpected problem: %s", ve.Problems[i])
				}
			}
		})
	}
}

// TestValidateImageEmptyElidedBundleObjects: a bundle without an image is valid
// when it has bundle objects, also when Load elided their values.
func TestValidateImageEmptyElidedBundleObjects(t *testing.T) {
	const catalog = `{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","name":"stable","package":"foo","entries":[{"name":"foo.v1.0.0"}]}
{"schema":"olm.bundle","name":"foo.v1.0.0","package":"foo","properties":[` +
		`{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}},` +
		`{"type":"olm.bundle.object","value":{"data":"eyJraW5kIjoiQ29uZmlnTWFwIn0="}}]}
`
	c, err := fbc.Load(context.Background(), fstest.MapFS{"catalog.json": {Data: []byte(catalog)}}, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	if b := c.Packages[0].Bundles[0]; !b.Elided(1) {
		t.Fatalf("the bundle object was not elided: %+v", b.Properties)
	}
	if err := Catalog(c); err != nil {
		t.Fatalf("Catalog: %v", err)
	}
}
