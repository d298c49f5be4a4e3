package fbc

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/blang/semver/v4"
)

// ErrNoPackageProperty is returned by BundleVersion and BundlePackageProperty when
// a bundle has no olm.package property.
var ErrNoPackageProperty = errors.New("bundle has no olm.package property")

// PackagePropertyValue is the value of an olm.package property.
type PackagePropertyValue struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
	// Release is the optional release (opm v1.62+): dot-separated semver
	// pre-release identifiers.
	Release string `json:"release,omitempty"`
}

// ParseSkipRange parses a skipRange (or an olm.package.required versionRange) with
// the semantics OLM and opm use: github.com/blang/semver/v4 ParseRange (space means
// AND, "||" means OR, full versions or x-wildcards, pre-releases not excluded).
// It never panics.
func ParseSkipRange(s string) (r semver.Range, err error) {
	defer func() {
		if p := recover(); p != nil {
			r, err = nil, fmt.Errorf("could not parse range %q: %v", s, p)
		}
	}()
	return semver.ParseRange(s)
}

// BundlePackageProperty returns the decoded value of the first olm.package property
// of b. It does not check that there is exactly one (validate.Catalog does).
func BundlePackageProperty(b *Bundle) (PackagePropertyValue, error) {
	for i, p := range b.Properties {
		if p.Type != PropertyPackage {
			continue
		}
		v, err := parsePackageProperty(p.Value)
		if err != nil {
			return PackagePropertyValue{}, fmt.Errorf("parse property[%d] of type %q: %w", i, p.Type, err)
		}
		return v, nil
	}
	return PackagePropertyValue{}, ErrNoPackageProperty
}

// BundleVersion returns the version of b from its olm.package property, parsed as
// strict semver (blang Parse: no leading "v", three numeric parts, no leading zeros).
// The release, if any, is not part of the returned version.
func BundleVersion(b *Bundle) (semver.Version, error) {
	pv, err := BundlePackageProperty(b)
	if err != nil {
		return semver.Version{}, fmt.Errorf("bundle %q: %w", b.Name, err)
	}
	v, err := semver.Parse(pv.Version)
	if err != nil {
		return semver.Version{}, fmt.Errorf("error parsing bundle %q version %q: %w", b.Name, pv.Version, err)
	}
	return v, nil
}

// packagePropertyNames are PackagePropertyValue's JSON names, lower case.
var packagePropertyNames = []string{"packagename", "version", "release"}

// parsePackageProperty decodes an olm.package value strictly enough to catch the
// usual mistakes (a number instead of a string, a missing value).
func parsePackageProperty(raw json.RawMessage) (PackagePropertyValue, error) {
	var v PackagePropertyValue
	if stringObject(raw, packagePropertyNames, []*string{&v.PackageName, &v.Version, &v.Release}) {
		return v, nil
	}
	v = PackagePropertyValue{}
	if err := decodePropertyValue(raw, &v); err != nil {
		return PackagePropertyValue{}, err
	}
	return v, nil
}

// decodePropertyValue decodes a property value into dst as opm's property.Parse
// does (encoding/json.Unmarshal): a missing or empty value is an error, JSON null
// decodes to the zero value without error, unknown object fields are ignored.
func decodePropertyValue(raw json.RawMessage, dst any) error {
	if len(bytes.TrimSpace(raw)) == 0 {
		return errors.New("unexpected end of JSON input")
	}
	return json.Unmarshal(raw, dst)
}
