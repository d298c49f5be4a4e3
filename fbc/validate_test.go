package fbc

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/airlock-mirror/airlock/internal/fixtures"
)

// pkgProp returns an olm.package property.
func pkgProp(pkg, version string) Property {
	return Property{Type: PropertyPackage, Value: json.RawMessage(fmt.Sprintf(`{"packageName":%q,"version":%q}`, pkg, version))}
}

func testBundle(pkg, name, version string) *Bundle {
	return &Bundle{
		Name:       name,
		Package:    pkg,
		Image:      "quay.io/example/bundles:v" + version,
		Properties: []Property{pkgProp(pkg, version)},
		RelatedImages: []RelatedImage{
			{Name: "", Image: "quay.io/example/bundles:v" + version},
			{Name: "operator", Image: "quay.io/example/operator@sha256:" + strings.Repeat("a", 64)},
		},
	}
}

// validTestCatalog is a small valid catalog: package foo with channels stable
// (replaces chain 1.2.0 -> 1.1.0 -> 1.0.0) and fast (1.2.0 only, with a dangling
// replaces), a deprecation and a custom blob; package bar with one bundle.
func validTestCatalog() *Catalog {
	foo := &Package{
		Name: "foo", DefaultChannel: "stable", Declared: 1,
		Channels: []*Channel{
			{Name: "fast", Package: "foo", Entries: []ChannelEntry{{Name: "foo.v1.2.0", Replaces: "foo.v1.1.0", SkipRange: ">=1.0.0 <1.2.0"}}},
			{Name: "stable", Package: "foo", Entries: []ChannelEntry{
				{Name: "foo.v1.0.0"},
				{Name: "foo.v1.1.0", Replaces: "foo.v1.0.0"},
				{Name: "foo.v1.2.0", Replaces: "foo.v1.1.0", Skips: []string{"foo.v0.9.0"}, SkipRange: "<1.2.0"},
			}},
		},
		Bundles: []*Bundle{
			testBundle("foo", "foo.v1.0.0", "1.0.0"),
			testBundle("foo", "foo.v1.1.0", "1.1.0"),
			testBundle("foo", "foo.v1.2.0", "1.2.0"),
		},
		Deprecations: []*Deprecations{{Package: "foo", Entries: []DeprecationEntry{
			{Reference: PackageScopedReference{Schema: SchemaBundle, Name: "foo.v1.0.0"}, Message: "use 1.2"},
			{Reference: PackageScopedReference{Schema: SchemaChannel, Name: "fast"}, Message: "use stable"},
		}}},
		Others: []*Meta{{Schema: "example.com.thing", Package: "foo", Blob: json.RawMessage(`{"schema":"example.com.thing","package":"foo"}`)}},
	}
	bar := &Package{
		Name: "bar", DefaultChannel: "alpha", Declared: 1,
		Channels: []*Channel{{Name: "alpha", Package: "bar", Entries: []ChannelEntry{{Name: "bar.v0.1.0", Replaces: "bar.v0.0.9"}}}},
		Bundles:  []*Bundle{testBundle("bar", "bar.v0.1.0", "0.1.0")},
	}
	return &Catalog{Packages: []*Package{bar, foo}}
}

func findPkg(c *Catalog, name string) *Package {
	for _, p := range c.Packages {
		if p.Name == name {
			return p
		}
	}
	panic("no package " + name)
}

func findChannel(p *Package, name string) *Channel {
	for _, c := range p.Channels {
		if c.Name == name {
			return c
		}
	}
	panic("no channel " + name)
}

func findBundle(p *Package, name string) *Bundle {
	for _, b := range p.Bundles {
		if b.Name == name {
			return b
		}
	}
	panic("no bundle " + name)
}

func TestValidateValid(t *testing.T) {
	if err := Validate(validTestCatalog()); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if err := Validate(&Catalog{}); err != nil {
		t.Fatalf("Validate(empty): %v", err)
	}
	if err := Validate(nil); err != nil {
		t.Fatalf("Validate(nil): %v", err)
	}
}

func TestValidateRules(t *testing.T) {
	type want struct {
		pkg, ch, bundle, msg string
	}
	tests := []struct {
		name   string
		mutate func(c *Catalog)
		want   []want // each must appear (msg as substring); no other problem may appear
	}{
		{"package name not DNS-1123", func(c *Catalog) {
			p := findPkg(c, "bar")
			p.Name = "Bar_1"
			for _, ch := range p.Channels {
				ch.Package = "Bar_1"
			}
			p.Bundles = []*Bundle{testBundle("Bar_1", "bar.v0.1.0", "0.1.0")}
		}, []want{{"Bar_1", "", "", `invalid package name "Bar_1": [a lowercase RFC 1123 label`}}},
		{"package name too long", func(c *Catalog) {
			long := strings.Repeat("a", 64)
			p := findPkg(c, "bar")
			p.Name = long
			for _, ch := range p.Channels {
				ch.Package = long
			}
			p.Bundles = []*Bundle{testBundle(long, "bar.v0.1.0", "0.1.0")}
		}, []want{{strings.Repeat("a", 64), "", "", "must be no more than 63 characters"}}},
		{"duplicate package", func(c *Catalog) { findPkg(c, "bar").Declared = 2 },
			[]want{{"bar", "", "", `duplicate package "bar"`}}},
		{"package with no name", func(c *Catalog) {
			c.Packages = append(c.Packages, &Package{Name: "", Declared: 1})
		}, []want{
			{"", "", "", "config contains package with no name"},
			{"", "", "", "default channel must be set"},
			{"", "", "", "package must contain at least one channel"},
		}},
		{"unknown package", func(c *Catalog) {
			p := findPkg(c, "bar")
			p.Declared = 0
			p.Deprecations = []*Deprecations{{Package: "bar", Entries: []DeprecationEntry{{Reference: PackageScopedReference{Schema: SchemaPackage}, Message: "gone"}}}}
		}, []want{
			{"bar", "alpha", "", `unknown package "bar" for channel "alpha"`},
			{"bar", "", "bar.v0.1.0", `unknown package "bar" for bundle "bar.v0.1.0"`},
			{"bar", "", "", `cannot apply deprecations to an unknown package "bar"`},
		}},
		{"default channel empty", func(c *Catalog) { findPkg(c, "bar").DefaultChannel = "" },
			[]want{{"bar", "", "", "default channel must be set"}}},
		{"default channel missing", func(c *Catalog) { findPkg(c, "bar").DefaultChannel = "beta" },
			[]want{{"bar", "beta", "", "channel must contain at least one bundle"}}},
		{"default channel empty channel", func(c *Catalog) {
			p := findPkg(c, "bar")
			p.Channels = append(p.Channels, &Channel{Name: "beta", Package: "bar"})
			p.DefaultChannel = "beta"
		}, []want{{"bar", "beta", "", "channel must contain at least one bundle"}}},
		{"package without channels", func(c *Catalog) {
			p := findPkg(c, "bar")
			p.Channels = nil
		}, []want{
			{"bar", "", "", "package must contain at least one channel"},
			{"bar", "alpha", "", "channel must contain at least one bundle"},
			{"bar", "", "bar.v0.1.0", "not found in any channel entries"},
		}},
		{"channel with no name", func(c *Catalog) {
			p := findPkg(c, "bar")
			p.Channels = append(p.Channels, &Channel{Name: "", Package: "bar", Entries: []ChannelEntry{{Name: "bar.v0.1.0"}}})
		}, []want{{"bar", "", "", `package "bar" contains channel with no name`}}},
		{"duplicate channel", func(c *Catalog) {
			p := findPkg(c, "bar")
			p.Channels = append(p.Channels, &Channel{Name: "alpha", Package: "bar", Entries: []ChannelEntry{{Name: "bar.v0.1.0"}}})
		}, []want{{"bar", "alpha", "", `package "bar" has duplicate channel "alpha"`}}},
		{"duplicate entry", func(c *Catalog) {
			ch := findChannel(findPkg(c, "bar"), "alpha")
			ch.Entries = append(ch.Entries, ChannelEntry{Name: "bar.v0.1.0"})
		}, []want{{"bar", "alpha", "", `invalid package "bar", channel "alpha": duplicate entry "bar.v0.1.0"`}}},
		{"entry without bundle", func(c *Catalog) {
			ch := findChannel(findPkg(c, "bar"), "alpha")
			ch.Entries = []ChannelEntry{{Name: "bar.v0.2.0", Replaces: "bar.v0.1.0"}, {Name: "bar.v0.1.0"}}
		}, []want{{"bar", "alpha", "", `no olm.bundle blobs found in package "bar" for olm.channel entries [bar.v0.2.0]`}}},
		{"entry with no name", func(c *Catalog) {
			ch := findChannel(findPkg(c, "bar"), "alpha")
			ch.Entries = []ChannelEntry{{Name: "", Replaces: "bar.v0.1.0"}, {Name: "bar.v0.1.0"}}
		}, []want{{"bar", "alpha", "", "entry [0] has no name"}}},
		{"two heads", func(c *Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[1].Replaces = ""
		}, []want{{"foo", "stable", "", "multiple channel heads found in graph: foo.v1.0.0, foo.v1.2.0"}}},
		{"no head", func(c *Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[0].Replaces = "foo.v1.2.0"
		}, []want{{"foo", "stable", "", "no channel head found in graph"}}},
		{"cycle below the head", func(c *Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[0].Replaces = "foo.v1.1.0"
		}, []want{{"foo", "stable", "", "detected cycle in replaces chain of upgrade graph: foo.v1.2.0 -> foo.v1.1.0 -> foo.v1.0.0 -> foo.v1.1.0"}}},
		{"single entry replacing itself", func(c *Catalog) {
			ch := findChannel(findPkg(c, "bar"), "alpha")
			ch.Entries[0].Replaces = "bar.v0.1.0"
		}, []want{{"bar", "alpha", "", "no channel head found in graph"}}},
		{"stranded", func(c *Catalog) {
			// 1.2.0 replaces 1.1.0 and skips it: the walk stops at 1.1.0, so 1.0.0 is stranded.
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[2].Skips = []string{"foo.v1.1.0"}
		}, []want{{"foo", "stable", "", "channel contains one or more stranded bundles: foo.v1.0.0"}}},
		{"skipRange-only entry is an extra head", func(c *Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[1].Replaces = ""
			ch.Entries[2].Replaces = ""
			ch.Entries[2].Skips = []string{"foo.v1.1.0"}
		}, []want{{"foo", "stable", "", "multiple channel heads found in graph: foo.v1.0.0, foo.v1.2.0"}}},
		{"empty skip", func(c *Catalog) {
			ch := findChannel(findPkg(c, "foo"), "stable")
			ch.Entries[2].Skips = []string{"foo.v0.9.0", ""}
		}, []want{{"foo", "stable", "foo.v1.2.0", "skip[1] is empty"}}},
		{"bad skipRange", func(c *Catalog) {
			ch := findChannel(findPkg(c, "foo"), "fast")
			ch.Entries[0].SkipRange = ">=1.0 <1.2.0"
		}, []want{{"foo", "fast", "foo.v1.2.0", `invalid skipRange ">=1.0 <1.2.0"`}}},
		{"skipRange with comma", func(c *Catalog) {
			ch := findChannel(findPkg(c, "foo"), "fast")
			ch.Entries[0].SkipRange = ">=1.0.0, <1.2.0"
		}, []want{{"foo", "fast", "foo.v1.2.0", `invalid skipRange ">=1.0.0, <1.2.0"`}}},
		{"bundle name empty", func(c *Catalog) {
			p := findPkg(c, "bar")
			b := testBundle("bar", "", "0.2.0")
			p.Bundles = append(p.Bundles, b)
		}, []want{{"bar", "", "", "name must be set"}}},
		{"bundle package empty", func(c *Catalog) {
			b := testBundle("", "x.v1.0.0", "1.0.0")
			c.Packages = append(c.Packages, &Package{Name: "", Bundles: []*Bundle{b}})
		}, []want{
			{"", "", "x.v1.0.0", `package name must be set for bundle "x.v1.0.0"`},
			{"", "", "x.v1.0.0", "not found in any channel entries"},
		}},
		{"duplicate bundle", func(c *Catalog) {
			p := findPkg(c, "bar")
			p.Bundles = append(p.Bundles, testBundle("bar", "bar.v0.1.0", "0.1.0"))
		}, []want{{"bar", "", "bar.v0.1.0", `package "bar" has duplicate bundle "bar.v0.1.0"`}}},
		{"bundle in no channel", func(c *Catalog) {
			p := findPkg(c, "bar")
			p.Bundles = append(p.Bundles, testBundle("bar", "bar.v0.2.0", "0.2.0"))
		}, []want{{"bar", "", "bar.v0.2.0", `package "bar", bundle "bar.v0.2.0" not found in any channel entries`}}},
		{"no olm.package property", func(c *Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = nil
		}, []want{{"bar", "", "bar.v0.1.0", `package "bar" bundle "bar.v0.1.0" must have exactly 1 "olm.package" property, found 0`}}},
		{"two olm.package properties", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, pkgProp("bar", "0.1.0"))
		}, []want{{"bar", "", "bar.v0.1.0", "must have exactly 1 \"olm.package\" property, found 2"}}},
		{"packageName mismatch", func(c *Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []Property{pkgProp("baz", "0.1.0")}
		}, []want{{"bar", "", "bar.v0.1.0", `package "bar" does not match "olm.package" property "baz"`}}},
		{"version not semver", func(c *Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []Property{pkgProp("bar", "v0.1")}
		}, []want{{"bar", "", "bar.v0.1.0", `error parsing bundle "bar.v0.1.0" version "v0.1"`}}},
		{"version with leading zero", func(c *Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []Property{pkgProp("bar", "0.01.0")}
		}, []want{{"bar", "", "bar.v0.1.0", `error parsing bundle "bar.v0.1.0" version "0.01.0"`}}},
		{"version is a number", func(c *Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []Property{{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":1.0}`)}}
		}, []want{{"bar", "", "bar.v0.1.0", `parse properties for bundle "bar.v0.1.0": parse property[0] of type "olm.package": json: cannot unmarshal number`}}},
		{"duplicate versions", func(c *Catalog) {
			p := findPkg(c, "foo")
			findBundle(p, "foo.v1.1.0").Properties = []Property{pkgProp("foo", "1.0.0")}
		}, []want{{"foo", "", "", "duplicate versions found in bundles: [{1.0.0: [foo.v1.0.0, foo.v1.1.0]}]"}}},
		{"same version different build metadata is fine", func(c *Catalog) {
			p := findPkg(c, "foo")
			findBundle(p, "foo.v1.0.0").Properties = []Property{pkgProp("foo", "1.0.0+a")}
			findBundle(p, "foo.v1.1.0").Properties = []Property{pkgProp("foo", "1.0.0+b")}
		}, nil},
		{"release valid", func(c *Catalog) {
			p := findPkg(c, "bar")
			b := p.Bundles[0]
			b.Name = "bar-v0.1.0-1.rc.2"
			b.Properties = []Property{{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0","release":"1.rc.2"}`)}}
			p.Channels[0].Entries[0].Name = b.Name
		}, nil},
		{"release name mismatch", func(c *Catalog) {
			findBundle(findPkg(c, "bar"), "bar.v0.1.0").Properties = []Property{{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0","release":"2"}`)}}
		}, []want{{"bar", "", "bar.v0.1.0", `name "bar.v0.1.0" does not match normalized name "bar-v0.1.0-2"`}}},
		{"release invalid", func(c *Catalog) {
			p := findPkg(c, "bar")
			b := p.Bundles[0]
			b.Name = "bar-v0.1.0-01"
			b.Properties = []Property{{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0","release":"01"}`)}}
			p.Channels[0].Entries[0].Name = b.Name
		}, []want{{"bar", "", "bar-v0.1.0-01", `error parsing bundle "bar-v0.1.0-01" release version "01"`}}},
		{"release too long", func(c *Catalog) {
			p := findPkg(c, "bar")
			b := p.Bundles[0]
			rel := strings.Repeat("r", 21)
			b.Name = "bar-v0.1.0-" + rel
			b.Properties = []Property{{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0","release":"` + rel + `"}`)}}
			p.Channels[0].Entries[0].Name = b.Name
		}, []want{{"bar", "", "bar-v0.1.0-" + strings.Repeat("r", 21), "longer than 20 characters"}}},
		{"release with build metadata", func(c *Catalog) {
			p := findPkg(c, "bar")
			b := p.Bundles[0]
			b.Name = "bar-v0.1.0+b1-2"
			b.Properties = []Property{{Type: PropertyPackage, Value: json.RawMessage(`{"packageName":"bar","version":"0.1.0+b1","release":"2"}`)}}
			p.Channels[0].Entries[0].Name = b.Name
		}, []want{{"bar", "", "bar-v0.1.0+b1-2", "cannot use build metadata in version with a release version"}}},
		{"image empty", func(c *Catalog) { findBundle(findPkg(c, "bar"), "bar.v0.1.0").Image = "" },
			[]want{{"bar", "", "bar.v0.1.0", "bundle image must be set"}}},
		{"image empty with elided bundle objects", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Image = ""
			b.Properties = append(b.Properties, Property{Type: PropertyBundleObject})
			b.elided = []int32{1}
		}, nil},
		{"heavy property without value", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, Property{Type: PropertyBundleObject}, Property{Type: PropertyCSVMetadata})
		}, []want{
			{"bar", "", "bar.v0.1.0", `read bundle objects: parse property at index 1 as bundle object: unexpected end of JSON input`},
			{"bar", "", "bar.v0.1.0", `parse property[2] of type "olm.csv.metadata": unexpected end of JSON input`},
		}},
		{"image uppercase", func(c *Catalog) { findBundle(findPkg(c, "bar"), "bar.v0.1.0").Image = "quay.io/Example/bar:v1" },
			[]want{{"bar", "", "bar.v0.1.0", `package "bar" bundle "bar.v0.1.0" image: invalid image pull spec "quay.io/Example/bar:v1"`}}},
		{"related image bad digest", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.RelatedImages = append(b.RelatedImages, RelatedImage{Name: "x", Image: "quay.io/example/x@sha256:abc"}, RelatedImage{Name: "empty"})
		}, []want{{"bar", "", "bar.v0.1.0", `relatedImages[2].image: invalid image pull spec "quay.io/example/x@sha256:abc"`}}},
		{"property without value", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, Property{Type: "example.com/thing"})
		}, []want{{"bar", "", "bar.v0.1.0", `parse property[1] of type "example.com/thing"`}}},
		{"property without type (opm does not check types)", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, Property{Value: json.RawMessage(`{}`)})
		}, nil},
		{"property without type nor value", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, Property{})
		}, []want{{"bar", "", "bar.v0.1.0", `parse property[1] of type "": unexpected end of JSON input`}}},
		{"null values decode as empty values", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			for _, typ := range []string{PropertyGVK, PropertyGVKRequired, PropertyPackageRequired, PropertyBundleObject, PropertyCSVMetadata, "olm.channel", "olm.skips", "example.com.thing"} {
				b.Properties = append(b.Properties, Property{Type: typ, Value: json.RawMessage(`null`)})
			}
		}, nil},
		{"olm.skips and olm.skipRange are opaque to opm", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, Property{Type: "olm.skips", Value: json.RawMessage(`{"a":1}`)}, Property{Type: "olm.skipRange", Value: json.RawMessage(`[1]`)})
		}, nil},
		{"gvk wrong shape", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, Property{Type: PropertyGVK, Value: json.RawMessage(`["a"]`)})
		}, []want{{"bar", "", "bar.v0.1.0", `parse property[1] of type "olm.gvk"`}}},
		{"gvk.required and package.required wrong shape", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties,
				Property{Type: PropertyGVKRequired, Value: json.RawMessage(`{"group":1}`)},
				Property{Type: PropertyPackageRequired, Value: json.RawMessage(`{"packageName":"x","versionRange":[]}`)},
				Property{Type: PropertyPackageRequired, Value: json.RawMessage(`null`)},
			)
		}, []want{
			{"bar", "", "bar.v0.1.0", `parse property[1] of type "olm.gvk.required"`},
			{"bar", "", "bar.v0.1.0", `parse property[2] of type "olm.package.required"`},
		}},
		{"bundle object bad base64", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, Property{Type: PropertyBundleObject, Value: json.RawMessage(`{"data":"%%%"}`)})
		}, []want{{"bar", "", "bar.v0.1.0", `read bundle objects: parse property at index 1 as bundle object: illegal base64 data at input byte 0`}}},
		{"two csv metadata", func(c *Catalog) {
			b := findBundle(findPkg(c, "bar"), "bar.v0.1.0")
			b.Properties = append(b.Properties, Property{Type: PropertyCSVMetadata}, Property{Type: PropertyCSVMetadata, Value: json.RawMessage(`{"displayName":"x"}`)})
			b.elided = []int32{1}
		}, []want{{"bar", "", "bar.v0.1.0", `must have at most one "olm.csv.metadata" property, found 2`}}},
		{"two deprecations", func(c *Catalog) {
			p := findPkg(c, "foo")
			p.Deprecations = append(p.Deprecations, &Deprecations{Package: "foo"})
		}, []want{{"foo", "", "", `expected a maximum of one deprecation per package: "foo"`}}},
		{"deprecations pointing nowhere", func(c *Catalog) {
			p := findPkg(c, "foo")
			p.Deprecations[0].Entries = append(p.Deprecations[0].Entries,
				DeprecationEntry{Reference: PackageScopedReference{Schema: SchemaBundle, Name: "foo.v9.0.0"}, Message: "m"},
				DeprecationEntry{Reference: PackageScopedReference{Schema: SchemaChannel, Name: "nightly"}, Message: "m"},
				DeprecationEntry{Reference: PackageScopedReference{Schema: SchemaPackage, Name: "foo"}, Message: "m"},
				DeprecationEntry{Reference: PackageScopedReference{Schema: "olm.thing", Name: "x"}, Message: "m"},
				DeprecationEntry{Reference: PackageScopedReference{}, Message: "m"},
				DeprecationEntry{Reference: PackageScopedReference{Schema: SchemaBundle, Name: "foo.v1.0.0"}, Message: "again"},
				DeprecationEntry{Reference: PackageScopedReference{Schema: SchemaBundle, Name: "foo.v1.1.0"}},
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
		{"deprecation without package", func(c *Catalog) {
			c.Packages = append(c.Packages, &Package{Name: "", Deprecations: []*Deprecations{{}}})
		}, []want{{"", "", "", "package name must be set for deprecation item 0"}}},
		{"custom schema name", func(c *Catalog) {
			c.Others = append(c.Others, &Meta{Schema: "my schema", Origin: Origin{File: "x.json", Index: 3}})
			findPkg(c, "foo").Others = append(findPkg(c, "foo").Others, &Meta{Schema: "-bad"})
		}, []want{
			{"", "", "", `invalid schema "my schema" of a custom blob (x.json, document 3)`},
			{"foo", "", "", `invalid schema "-bad" of a custom blob`},
		}},
		{"custom blob package name", func(c *Catalog) {
			c.Packages = append(c.Packages, &Package{Name: "a/b", Others: []*Meta{{Schema: "example.com", Package: "a/b"}}})
		}, []want{{"a/b", "", "", `invalid package "a/b" of a "example.com" blob`}}},
		{"many problems at once", func(c *Catalog) {
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
			err := Validate(c)
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

func TestValidationErrorFormat(t *testing.T) {
	c := validTestCatalog()
	findPkg(c, "foo").DefaultChannel = ""
	findPkg(c, "bar").DefaultChannel = ""
	findBundle(findPkg(c, "bar"), "bar.v0.1.0").Image = ""
	c.Others = append(c.Others, &Meta{Schema: "?"})
	err := Validate(c)
	want := strings.Join([]string{
		`catalog: invalid schema "?" of a custom blob: must match ^[a-zA-Z0-9][a-zA-Z0-9._-]*$ (opm serve cannot build its cache)`,
		`package "bar": default channel must be set`,
		`package "bar", bundle "bar.v0.1.0": bundle image must be set`,
		`package "foo": default channel must be set`,
	}, "\n")
	if err == nil || err.Error() != want {
		t.Fatalf("got:\n%v\nwant:\n%s", err, want)
	}
	// Deterministic: the same input gives the same text.
	for i := 0; i < 5; i++ {
		if again := Validate(c); again.Error() != err.Error() {
			t.Fatalf("unstable output:\n%v\n---\n%v", again, err)
		}
	}
}

// testdataCases lists the sub-directories of dir.
func testdataCases(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	if len(out) == 0 {
		t.Fatalf("no test cases in %s", dir)
	}
	return out
}

// TestValidateTestdataInvalid loads every catalog of testdata/invalid/<case>/ and
// checks that Validate reports exactly the problems listed in its expected.txt
// (one substring of a problem line per line; the file is excluded from the catalog
// by the case's .indexignore).
func TestValidateTestdataInvalid(t *testing.T) {
	base := filepath.Join("testdata", "invalid")
	for _, name := range testdataCases(t, base) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join(base, name)
			raw, err := os.ReadFile(filepath.Join(dir, "expected.txt"))
			if err != nil {
				t.Fatal(err)
			}
			var expected []string
			for _, l := range strings.Split(string(raw), "\n") {
				if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
					expected = append(expected, l)
				}
			}
			for _, elide := range []bool{false, true} {
				c, err := LoadDir(context.Background(), dir, LoadOptions{ElideHeavy: elide})
				if err != nil {
					t.Fatalf("LoadDir: %v", err)
				}
				err = Validate(c)
				var ve *ValidationError
				if !errors.As(err, &ve) {
					t.Fatalf("elide=%v: want a *ValidationError, got %v", elide, err)
				}
				lines := make([]string, len(ve.Problems))
				for i, p := range ve.Problems {
					lines[i] = p.String()
				}
				used := make([]bool, len(lines))
				for _, want := range expected {
					found := false
					for i, l := range lines {
						if !used[i] && strings.Contains(l, want) {
							used[i], found = true, true
							break
						}
					}
					if !found {
						t.Errorf("elide=%v: no problem matches %q; got:\n%s", elide, want, err)
					}
				}
				for i, ok := range used {
					if !ok {
						t.Errorf("elide=%v: unexpected problem: %s", elide, lines[i])
					}
				}
			}
		})
	}
}

func TestValidateTestdataValid(t *testing.T) {
	base := filepath.Join("testdata", "valid")
	for _, name := range testdataCases(t, base) {
		t.Run(name, func(t *testing.T) {
			for _, elide := range []bool{false, true} {
				c, err := LoadDir(context.Background(), filepath.Join(base, name), LoadOptions{ElideHeavy: elide})
				if err != nil {
					t.Fatalf("LoadDir: %v", err)
				}
				if len(c.Packages) == 0 {
					t.Fatal("no packages loaded")
				}
				if err := Validate(c); err != nil {
					t.Errorf("elide=%v: Validate:\n%v", elide, err)
				}
			}
		})
	}
}

// realCatalogsDir holds real catalogs that pass opm validate (see its SOURCES.md).
var realCatalogsDir = fixtures.RealCatalogs()

// realCatalogRoots returns the catalog roots listed in SOURCES.md's table.
func realCatalogRoots(t testing.TB) []string {
	raw, err := os.ReadFile(filepath.Join(realCatalogsDir, "SOURCES.md"))
	if err != nil {
		t.Skipf("real catalogs not available: %v", err)
	}
	re := regexp.MustCompile("(?m)^\\| [^|]+ \\| `([^`]+)` \\|")
	var roots []string
	for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
		roots = append(roots, filepath.Join(realCatalogsDir, m[1]))
	}
	if len(roots) == 0 {
		t.Fatalf("no catalog roots found in %s/SOURCES.md", realCatalogsDir)
	}
	return roots
}

// raceEnabled reports whether the test binary was built with -race.
func raceEnabled() bool {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return false
	}
	for _, s := range bi.Settings {
		if s.Key == "-race" {
			return s.Value == "true"
		}
	}
	return false
}

// catalogBytes is the total size of the regular files under dir.
func catalogBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

func TestValidateRealCatalogs(t *testing.T) {
	// Loading tens of MB of YAML takes about a minute under the race detector;
	// the small catalogs still run there.
	const bigCatalog = 4 << 20
	slow := raceEnabled() || testing.Short()
	for _, root := range realCatalogRoots(t) {
		t.Run(filepath.Base(root), func(t *testing.T) {
			if size := catalogBytes(root); slow && size > bigCatalog {
				t.Skipf("%s is %d MB: skipped with -race or -short", root, size>>20)
			}
			c, err := LoadDir(context.Background(), root, LoadOptions{ElideHeavy: true})
			if err != nil {
				t.Fatalf("LoadDir: %v", err)
			}
			if err := Validate(c); err != nil {
				t.Errorf("Validate(%s):\n%v", root, err)
			}
		})
	}
}

// BenchmarkValidate validates the largest real catalog (loaded once, heavy values
// elided) or, with AIRLOCK_BENCH_CATALOG set to a catalog root, that catalog.
func BenchmarkValidate(b *testing.B) {
	root := os.Getenv("AIRLOCK_BENCH_CATALOG")
	if root == "" {
		root = realCatalogRoots(b)[0]
	}
	c, err := LoadDir(context.Background(), root, LoadOptions{ElideHeavy: true})
	if err != nil {
		b.Fatal(err)
	}
	var bundles, entries int
	for _, p := range c.Packages {
		bundles += len(p.Bundles)
		for _, ch := range p.Channels {
			entries += len(ch.Entries)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := Validate(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(bundles), "bundles")
	b.ReportMetric(float64(entries), "entries")
}

func TestValidateDir(t *testing.T) {
	ctx := context.Background()
	n, err := ValidateDir(ctx, filepath.Join("testdata", "valid", "simple"), nil)
	if err != nil {
		t.Fatalf("ValidateDir(valid): %v", err)
	}
	if want := (CatalogCounts{Packages: 1, Channels: 1, Bundles: 3}); n != want {
		t.Errorf("counts = %+v, want %+v", n, want)
	}

	n, err = ValidateDir(ctx, filepath.Join("testdata", "invalid", "duplicate-bundles"), nil)
	var ve *ValidationError
	if !errors.As(err, &ve) || len(ve.Problems) != 1 {
		t.Fatalf("ValidateDir(invalid) = %v, want one problem", err)
	}
	if want := (CatalogCounts{Packages: 1, Channels: 1, Bundles: 4}); n != want {
		t.Errorf("counts = %+v, want %+v", n, want)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.yaml"), []byte("schema: olm.package\nname: x\n---\n- 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ValidateDir(ctx, dir, nil)
	var le *LoadError
	if !errors.As(err, &le) || errors.Is(err, ErrInvalidCatalog) {
		t.Fatalf("ValidateDir(unloadable) = %v, want a *LoadError", err)
	}
	if !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("load error does not name the file: %v", err)
	}
}

// FuzzValidate loads arbitrary catalog files and validates whatever loads: Validate
// must never panic, and must be deterministic.
func FuzzValidate(f *testing.F) {
	for _, kind := range []string{"valid", "invalid"} {
		files, _ := filepath.Glob(filepath.Join("testdata", kind, "*", "*.yaml"))
		for _, p := range files {
			if data, err := os.ReadFile(p); err == nil {
				f.Add(data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Load(context.Background(), fstest.MapFS{"catalog.yaml": {Data: data}}, LoadOptions{})
		if err != nil {
			return
		}
		err1 := Validate(c)
		err2 := Validate(c)
		if (err1 == nil) != (err2 == nil) || (err1 != nil && err1.Error() != err2.Error()) {
			t.Fatalf("Validate is not deterministic:\n%v\n---\n%v", err1, err2)
		}
	})
}

// TestValidatePropertyValues loads a one-bundle catalog with one more property,
// as JSON and as YAML, with heavy values kept and elided (what the CLI does),
// and checks Validate's verdict against opm's (operator-registry v1.73.0): the
// problems must be the same in every mode.
func TestValidatePropertyValues(t *testing.T) {
	b64 := func(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }
	bo := func(data string) string {
		return `{"type":"olm.bundle.object","value":{"data":"` + data + `"}}`
	}
	tests := []struct {
		name, prop string
		want       string // the only problem (substring); "" if opm accepts
	}{
		// The disagreements the conformance tests found (docs/conformance.md).
		{"null gvk", `{"type":"olm.gvk","value":null}`, ""},
		{"empty type", `{"type":"","value":{"a":1}}`, ""},
		{"csv metadata wrong field type", `{"type":"olm.csv.metadata","value":{"displayName":5}}`,
			`parse property[1] of type "olm.csv.metadata": json: cannot unmarshal number into Go struct field csvMetadata.displayName of type string`},
		{"bundle object not YAML", bo("a2luZDogW3VuY2xvc2Vk"),
			`read bundle objects: convert bundle object property at index 1 to JSON: `},
		{"bundle object not base64", bo("%%%not base64"),
			`read bundle objects: parse property at index 1 as bundle object: illegal base64 data at input byte 0`},
		{"null csv metadata", `{"type":"olm.csv.metadata","value":null}`, ""},
		{"null unknown type", `{"type":"example.com.thing","value":null}`, ""},

		// Around them.
		{"no type, no value", `{}`, `parse property[1] of type "": unexpected end of JSON input`},
		{"csv metadata without value", `{"type":"olm.csv.metadata"}`, `parse property[1] of type "olm.csv.metadata": unexpected end of JSON input`},
		{"bundle object without value", `{"type":"olm.bundle.object"}`, `parse property at index 1 as bundle object: unexpected end of JSON input`},
		{"csv metadata full", `{"type":"olm.csv.metadata","value":{"annotations":{"a":"b"},"labels":{"c":"d"},"keywords":["k"],` +
			`"description":"d","displayName":"n","maturity":"stable","minKubeVersion":"1.20.0","provider":{"name":"p","url":"u"},` +
			`"links":[{"name":"l","url":"u"}],"maintainers":[{"name":"m","email":"e"}],"installModes":[{"type":"OwnNamespace","supported":true}],` +
			`"nativeAPIs":[{"group":"","version":"v1","kind":"Pod"}],"crdDescriptions":{"owned":[{"name":"a.b","version":"v1","kind":"A",` +
			`"resources":[{"name":"x","kind":"Y","version":"v1"}],"specDescriptors":[{"path":"p","x-descriptors":["x"],"value":{"any":[1]}}]}]},` +
			`"apiServiceDefinitions":{"required":[{"name":"n","group":"g","version":"v","kind":"K","containerPort":443}]},"unknown":{"x":[1]}}}`, ""},
		{"csv metadata annotation not a string", `{"type":"olm.csv.metadata","value":{"annotations":{"a":1}}}`, `csvMetadata.annotations of type string`},
		{"csv metadata install mode supported not a bool", `{"type":"olm.csv.metadata","value":{"installModes":[{"type":"OwnNamespace","supported":"yes"}]}}`, `of type bool`},
		{"csv metadata container port a string", `{"type":"olm.csv.metadata","value":{"apiServiceDefinitions":{"owned":[{"containerPort":"443"}]}}}`, `of type int32`},
		{"csv metadata keywords not a list", `{"type":"olm.csv.metadata","value":{"keywords":"k"}}`, `of type []string`},
		{"csv metadata an array", `{"type":"olm.csv.metadata","value":[]}`, `cannot unmarshal array`},
		{"bundle object YAML", bo(b64("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")), ""},
		{"bundle object JSON", bo(b64(`{"apiVersion":"v1","kind":"ConfigMap"}`)), ""},
		{"bundle object starting with { is not converted", bo(b64("\n\t {not: [json")), ""},
		{"bundle object YAML with a tab indent", bo(b64("a:\n\t- b\n")), `convert bundle object property at index 1 to JSON`},
		{"bundle object base64 with line breaks", `{"type":"olm.bundle.object","value":{"data":"e3\n0\r\n="}}`, ""},
		{"bundle object base64 with line breaks and too much padding", `{"type":"olm.bundle.object","value":{"data":"e30\n=\r\n\u003d"}}`, `illegal base64`},
		{"bundle object base64 escaped slash", `{"type":"olm.bundle.object","value":{"data":"` + strings.ReplaceAll(b64("{\"a\":\"???\"}"), "/", `\/`) + `"}}`, ""},
		{"bundle object data null", `{"type":"olm.bundle.object","value":{"data":null}}`, ""},
		{"bundle object empty", `{"type":"olm.bundle.object","value":{}}`, ""},
		{"bundle object null", `{"type":"olm.bundle.object","value":null}`, ""},
		{"bundle object data a number", `{"type":"olm.bundle.object","value":{"data":5}}`, `parse property at index 1 as bundle object: json: cannot unmarshal number`},
		{"bundle object a string", `{"type":"olm.bundle.object","value":"e30="}`, `parse property at index 1 as bundle object: json: cannot unmarshal string`},
		{"bundle object data key in another case", `{"type":"olm.bundle.object","value":{"DATA":"%%"}}`, `illegal base64`},
		{"bundle object two data keys, first bad", `{"type":"olm.bundle.object","value":{"data":"%%","Data":"e30="}}`, `illegal base64`},
		// (keys in sorted order: documents read from YAML have their keys sorted)
		{"bundle object two data keys, last not YAML", `{"type":"olm.bundle.object","value":{"DATA":"e30=","data":"a2luZDogW3VuY2xvc2Vk"}}`, `convert bundle object property at index 1 to JSON`},
	}
	const head = `{"schema":"olm.package","name":"foo","defaultChannel":"stable"}
{"schema":"olm.channel","name":"stable","package":"foo","entries":[{"name":"foo.v1.0.0"}]}
`
	bundle := func(prop string) string {
		return `{"schema":"olm.bundle","name":"foo.v1.0.0","package":"foo","image":"quay.io/example/foo:v1","properties":[` +
			`{"type":"olm.package","value":{"packageName":"foo","version":"1.0.0"}},` + prop + `]}` + "\n"
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{
				"json": head + bundle(tt.prop),
				// A YAML stream of flow mappings: the loader's YAML path.
				"yaml": "---\n" + strings.ReplaceAll(head, "\n", "\n---\n") + bundle(tt.prop),
			}
			formats := []string{"json", "yaml"}
			if strings.Contains(tt.prop, `\/`) {
				formats = formats[:1] // not an escape of YAML 1.1
			}
			var first string
			for _, format := range formats {
				for _, elide := range []bool{false, true} {
					fsys := fstest.MapFS{"catalog": {Data: []byte(files[format])}}
					c, err := Load(context.Background(), fsys, LoadOptions{ElideHeavy: elide})
					if err != nil {
						t.Fatalf("%s, elide=%v: Load: %v", format, elide, err)
					}
					err = Validate(c)
					got := ""
					if err != nil {
						got = err.Error()
					}
					switch {
					case tt.want == "" && err != nil:
						t.Errorf("%s, elide=%v: want valid (opm accepts), got:\n%v", format, elide, err)
					case tt.want != "" && err == nil:
						t.Errorf("%s, elide=%v: want a problem with %q (opm refuses), got none", format, elide, tt.want)
					case tt.want != "":
						var ve *ValidationError
						if !errors.As(err, &ve) || len(ve.Problems) != 1 || !strings.Contains(ve.Problems[0].String(), tt.want) {
							t.Errorf("%s, elide=%v: want exactly one problem with %q, got:\n%v", format, elide, tt.want, err)
						} else if p := ve.Problems[0]; p.Package != "foo" || p.Bundle != "foo.v1.0.0" {
							t.Errorf("%s, elide=%v: problem does not name package and bundle: %+v", format, elide, p)
						}
					}
					if format == "json" && !elide {
						first = got
					} else if got != first {
						t.Errorf("%s, elide=%v: problems differ from json with values:\n%s\n---\n%s", format, elide, got, first)
					}
				}
			}
		})
	}
}
