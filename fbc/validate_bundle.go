package fbc

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
)

// The rules of a bundle (see Validate).

// versionKey identifies a bundle version inside a package: the version string as
// parsed (build metadata included) and the release.
type versionKey struct {
	version string
	release string
}

func (k versionKey) String() string {
	if k.release == "" {
		return k.version
	}
	return k.version + " (release " + k.release + ")"
}

// bundle checks b. first is false for the second and later bundles of the same
// name, which are reported as duplicates and left out of the version count.
func (v *validator) bundle(p *Package, b *Bundle, inChannel map[string]bool, first bool, versions map[versionKey][]string) {
	pkg := p.Name
	if b.Name == "" {
		v.add(pkg, "", "", "name must be set (an olm.bundle has an empty name)")
	}
	if b.Package == "" {
		v.add(pkg, "", b.Name, "package name must be set for bundle %q", b.Name)
	} else if p.Declared == 0 {
		v.add(pkg, "", b.Name, "unknown package %q for bundle %q", pkg, b.Name)
	}
	if b.Name != "" && !inChannel[b.Name] {
		v.add(pkg, "", b.Name, "package %q, bundle %q not found in any channel entries", pkg, b.Name)
	}

	var (
		pkgProps     []PackagePropertyValue
		pkgPropCount int
		objects      int
		csvMetadata  int
		elided       = b.elided
		loadErrs     = b.propErrs
	)
	for i, prop := range b.Properties {
		switch prop.Type {
		case PropertyBundleObject:
			objects++
		case PropertyCSVMetadata:
			csvMetadata++
		case PropertyPackage:
			pkgPropCount++
		}
		// b.elided and b.propErrs are in increasing index order.
		for len(elided) > 0 && int(elided[0]) < i {
			elided = elided[1:]
		}
		for len(loadErrs) > 0 && int(loadErrs[0].index) < i {
			loadErrs = loadErrs[1:]
		}
		var (
			pv  any
			err error
		)
		if prop.Value == nil && len(elided) > 0 && int(elided[0]) == i {
			// Elided by Load, which checked the value first.
			if len(loadErrs) > 0 && int(loadErrs[0].index) == i {
				err = loadErrs[0].err
			}
		} else {
			pv, err = v.parseProperty(prop)
		}
		if err != nil {
			var boe *bundleObjectError
			if errors.As(err, &boe) {
				v.add(pkg, "", b.Name, "%s", boe.message(i))
			} else {
				v.add(pkg, "", b.Name, "parse properties for bundle %q: parse property[%d] of type %q: %v", b.Name, i, prop.Type, err)
			}
			continue
		}
		if pp, ok := pv.(PackagePropertyValue); ok {
			pkgProps = append(pkgProps, pp)
		}
	}
	if pkgPropCount != 1 {
		v.add(pkg, "", b.Name, "package %q bundle %q must have exactly 1 %q property, found %d", pkg, b.Name, PropertyPackage, pkgPropCount)
	}
	if csvMetadata > 1 {
		v.add(pkg, "", b.Name, "must have at most one %q property, found %d (opm serve cannot build its cache)", PropertyCSVMetadata, csvMetadata)
	}
	if pkgPropCount == 1 && len(pkgProps) == 1 {
		pp := pkgProps[0]
		if pp.PackageName != b.Package {
			v.add(pkg, "", b.Name, "package %q does not match %q property %q", b.Package, PropertyPackage, pp.PackageName)
		}
		ver, err := semver.Parse(pp.Version)
		if err != nil {
			v.add(pkg, "", b.Name, "error parsing bundle %q version %q: %v", b.Name, pp.Version, err)
		}
		if pp.Release != "" {
			if rerr := parseRelease(pp.Release); rerr != nil {
				v.add(pkg, "", b.Name, "error parsing bundle %q release version %q: %v", b.Name, pp.Release, rerr)
			}
			if err == nil && len(ver.Build) > 0 {
				v.add(pkg, "", b.Name, "cannot use build metadata in version with a release version")
			}
			if want := pkg + "-v" + pp.Version + "-" + pp.Release; b.Name != want {
				v.add(pkg, "", b.Name, "name %q does not match normalized name %q", b.Name, want)
			}
		}
		if err == nil && b.Name != "" && first {
			k := versionKey{version: ver.String(), release: pp.Release}
			versions[k] = append(versions[k], b.Name)
		}
	}

	if b.Image == "" {
		if objects == 0 {
			v.add(pkg, "", b.Name, "bundle image must be set")
		}
	} else if err := v.imageErr(b.Image); err != nil {
		v.add(pkg, "", b.Name, "package %q bundle %q image: invalid image pull spec %q: %v", pkg, b.Name, b.Image, err)
	}
	for i, ri := range b.RelatedImages {
		if ri.Image == "" {
			continue
		}
		if err := v.imageErr(ri.Image); err != nil {
			v.add(pkg, "", b.Name, "package %q bundle %q relatedImages[%d].image: invalid image pull spec %q: %v", pkg, b.Name, i, ri.Image, err)
		}
	}
}

func (v *validator) imageErr(ref string) error {
	if err, ok := v.imageErrs[ref]; ok {
		return err
	}
	var err error
	if !plainReference(ref) {
		_, err = reference.ParseNormalizedNamed(ref)
	}
	v.imageErrs[ref] = err
	return err
}

func (v *validator) duplicateVersions(pkg string, versions map[versionKey][]string) {
	var dups []versionKey
	for k, names := range versions {
		if len(names) > 1 {
			dups = append(dups, k)
		}
	}
	if len(dups) == 0 {
		return
	}
	sort.Slice(dups, func(i, j int) bool {
		if dups[i].version != dups[j].version {
			return dups[i].version < dups[j].version
		}
		return dups[i].release < dups[j].release
	})
	parts := make([]string, len(dups))
	for i, k := range dups {
		names := append([]string(nil), versions[k]...)
		sort.Strings(names)
		parts[i] = fmt.Sprintf("{%s: [%s]}", k, strings.Join(names, ", "))
	}
	v.add(pkg, "", "", "duplicate versions found in bundles: [%s]", strings.Join(parts, " "))
}

// Typed shapes of the property values opm's property.Parse decodes. Go's JSON
// decoder matches field names case-insensitively and ignores unknown fields, as
// opm's does.
type (
	gvkValue struct {
		Group   string `json:"group"`
		Kind    string `json:"kind"`
		Version string `json:"version"`
	}
	packageRequiredValue struct {
		PackageName  string `json:"packageName"`
		VersionRange string `json:"versionRange"`
	}
	bundleObjectValue struct {
		Data []byte `json:"data"`
	}
	channelPropertyValue struct {
		ChannelName string `json:"channelName"`
		Priority    int    `json:"priority"`
	}
)

// The JSON names of gvkValue's and packageRequiredValue's fields, lower case.
var (
	gvkNames             = []string{"group", "kind", "version"}
	packageRequiredNames = []string{"packagename", "versionrange"}
)

// parseProperty decodes prop as opm's property.Parse does: the known types into
// their shapes (olm.csv.metadata into opm's CSVMetadata), every other type only
// as valid JSON; JSON null is the zero value, a missing value an error, the type
// is not checked. A bundle object is also checked as opm's loader checks it
// (base64 data that converts to JSON), with a *bundleObjectError.
func (v *validator) parseProperty(prop Property) (any, error) {
	switch prop.Type {
	case PropertyPackage:
		return parsePackageProperty(prop.Value)
	case PropertyGVK, PropertyGVKRequired:
		var g gvkValue
		if stringObject(prop.Value, gvkNames, []*string{&g.Group, &g.Kind, &g.Version}) {
			return g, nil
		}
		g = gvkValue{}
		return g, decodePropertyValue(prop.Value, &g)
	case PropertyPackageRequired:
		var r packageRequiredValue
		if stringObject(prop.Value, packageRequiredNames, []*string{&r.PackageName, &r.VersionRange}) {
			return r, nil
		}
		r = packageRequiredValue{}
		return r, decodePropertyValue(prop.Value, &r)
	case PropertyBundleObject, PropertyCSVMetadata:
		return nil, v.hc.check(prop.Type, prop.Value, false)
	case "olm.channel":
		var c channelPropertyValue
		return c, decodePropertyValue(prop.Value, &c)
	default: // olm.skips and olm.skipRange too: opm has no shape for them
		var x json.RawMessage
		return nil, decodePropertyValue(prop.Value, &x)
	}
}
