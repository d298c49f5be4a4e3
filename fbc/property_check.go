package fbc

import "encoding/json"

// This file decodes and checks property values as opm does: the validate
// package reports what PropertyChecker finds.

// PropertyChecker decodes the property values of bundles as opm's
// property.Parse decodes them and checks the heavy ones (olm.bundle.object,
// olm.csv.metadata) as opm's loader checks them. Its zero value is ready to
// use. It keeps a scratch buffer, so one checker must not be used by two
// goroutines at once.
type PropertyChecker struct {
	hc heavyChecker
}

// CheckBundle calls fn for each property of b, in order, with its index in
// b.Properties, its decoded value and the problem opm finds in it (nil if
// none). The value is a PackagePropertyValue for olm.package; for the other
// types only the problem matters. A bad olm.bundle.object gives a
// *BundleObjectError. For a value Load elided (LoadOptions.ElideHeavy) the
// problem is the one Load found before it dropped the value, so the problems
// are the same whether the values were kept or not.
func (pc *PropertyChecker) CheckBundle(b *Bundle, fn func(i int, value any, err error)) {
	elided, loadErrs := b.elided, b.propErrs
	for i, prop := range b.Properties {
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
			pv, err = pc.parse(prop)
		}
		fn(i, pv, err)
	}
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
// (base64 data that converts to JSON), with a *BundleObjectError.
func (pc *PropertyChecker) parse(prop Property) (any, error) {
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
		return nil, pc.hc.check(prop.Type, prop.Value, false)
	case "olm.channel":
		var c channelPropertyValue
		return c, decodePropertyValue(prop.Value, &c)
	default: // olm.skips and olm.skipRange too: opm has no shape for them
		var x json.RawMessage
		return nil, decodePropertyValue(prop.Value, &x)
	}
}
