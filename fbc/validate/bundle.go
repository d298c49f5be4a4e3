package validate

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
)

// The rules of a bundle (see Catalog).

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
func (v *validator) bundle(p *fbc.Package, b *fbc.Bundle, inChannel map[string]bool, first bool, versions map[versionKey][]string) {
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
		pkgProps     []fbc.PackagePropertyValue
		pkgPropCount int
		objects      int
		csvMetadata  int
	)
	v.pc.CheckBundle(b, func(i int, pv any, err error) {
		prop := b.Properties[i]
		switch prop.Type {
		case fbc.PropertyBundleObject:
			objects++
		case fbc.PropertyCSVMetadata:
			csvMetadata++
		case fbc.PropertyPackage:
			pkgPropCount++
		}
		if err != nil {
			var boe *fbc.BundleObjectError
			if errors.As(err, &boe) {
				v.add(pkg, "", b.Name, "%s", boe.Message(i))
			} else {
				v.add(pkg, "", b.Name, "parse properties for bundle %q: parse property[%d] of type %q: %v", b.Name, i, prop.Type, err)
			}
			return
		}
		if pp, ok := pv.(fbc.PackagePropertyValue); ok {
			pkgProps = append(pkgProps, pp)
		}
	})
	if pkgPropCount != 1 {
		v.add(pkg, "", b.Name, "package %q bundle %q must have exactly 1 %q property, found %d", pkg, b.Name, fbc.PropertyPackage, pkgPropCount)
	}
	if csvMetadata > 1 {
		v.add(pkg, "", b.Name, "must have at most one %q property, found %d (opm serve cannot build its cache)", fbc.PropertyCSVMetadata, csvMetadata)
	}
	if pkgPropCount == 1 && len(pkgProps) == 1 {
		pp := pkgProps[0]
		if pp.PackageName != b.Package {
			v.add(pkg, "", b.Name, "package %q does not match %q property %q", b.Package, fbc.PropertyPackage, pp.PackageName)
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

// maxReleaseLen is the longest release opm accepts in an olm.package property.
const maxReleaseLen = 20

// parseRelease checks a release as opm does: at most 20 characters of
// dot-separated semver pre-release identifiers (alphanumerics and hyphens, numeric
// identifiers without leading zeros), no build metadata.
func parseRelease(s string) error {
	if len(s) > maxReleaseLen {
		return fmt.Errorf("release %q is longer than %d characters", s, maxReleaseLen)
	}
	if strings.Contains(s, "+") {
		return fmt.Errorf("release %q must not contain build metadata (\"+\")", s)
	}
	for _, id := range strings.Split(s, ".") {
		if _, err := semver.NewPRVersion(id); err != nil {
			return err
		}
	}
	return nil
}
