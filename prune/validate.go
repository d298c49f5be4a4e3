package prune

import (
	"context"
	// go-digest (used by reference parsing) only accepts the algorithms whose
	// hash is linked into the binary.
	_ "crypto/sha256"
	_ "crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/blang/semver/v4"
	"github.com/distribution/reference"
)

// ErrInvalidCatalog matches every *ValidationError with errors.Is.
var ErrInvalidCatalog = errors.New("invalid catalog")

// Problem is one rule a catalog breaks. Package, Channel and Bundle locate it (empty
// when not relevant); Message uses opm's wording where opm has a rule for it.
type Problem struct {
	Package string `json:"package,omitempty"`
	Channel string `json:"channel,omitempty"`
	Bundle  string `json:"bundle,omitempty"`
	Message string `json:"message"`
}

// String renders the problem on one line, naming where it is.
func (p Problem) String() string {
	var b strings.Builder
	if p.Package != "" || p.Channel != "" || p.Bundle != "" {
		fmt.Fprintf(&b, "package %q", p.Package)
		if p.Channel != "" {
			fmt.Fprintf(&b, ", channel %q", p.Channel)
		}
		if p.Bundle != "" {
			fmt.Fprintf(&b, ", bundle %q", p.Bundle)
		}
		b.WriteString(": ")
	} else {
		b.WriteString("catalog: ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// ValidationError lists every problem Validate found, sorted by package, channel,
// bundle and message.
type ValidationError struct {
	Problems []Problem
}

// Error prints one problem per line.
func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalidCatalog) true.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalidCatalog }

// metaNameRE is the name rule `opm serve` (v1.69+) applies to custom schemas and to
// the package names of custom blobs when it builds its cache.
var metaNameRE = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]*$`)

// dns1123LabelRE is Kubernetes' RFC 1123 label.
var dns1123LabelRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

const dns1123LabelMsg = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"

// CatalogCounts counts the documents of a catalog.
type CatalogCounts struct {
	Packages int `json:"packages"`
	Channels int `json:"channels"`
	Bundles  int `json:"bundles"`
}

// CountCatalog counts the packages, channels and bundles of c (duplicates
// included).
func CountCatalog(c *Catalog) CatalogCounts {
	var n CatalogCounts
	if c == nil {
		return n
	}
	n.Packages = len(c.Packages)
	for _, p := range c.Packages {
		n.Channels += len(p.Channels)
		n.Bundles += len(p.Bundles)
	}
	return n
}

// ValidateDir loads the catalog rooted at the directory dir with heavy property
// values elided and validates it. A catalog that cannot be loaded gives the load
// error (a *LoadError names the file and document); an invalid one gives a
// *ValidationError, together with the counts of what was loaded.
func ValidateDir(ctx context.Context, dir string, log *slog.Logger) (CatalogCounts, error) {
	c, err := LoadDir(ctx, dir, LoadOptions{ElideHeavy: true, Logger: log})
	if err != nil {
		return CatalogCounts{}, err
	}
	return CountCatalog(c), Validate(c)
}

// Validate checks c against every rule of the newest `opm validate` (model
// conversion and model validation) plus the stricter checks `opm serve` applies
// when it builds its cache (custom schema and package names, at most one
// olm.csv.metadata per bundle). It reports all problems, not only the first: nil
// when the catalog is valid, else a *ValidationError.
//
// Property values are decoded as opm decodes them: a bad olm.bundle.object (not
// base64, or data that is neither JSON nor YAML) is reported as opm's loader
// reports it. Values Load elided (LoadOptions.ElideHeavy) were checked by Load
// before they were dropped; Validate reports what it found there, so the
// problems are the same whether the values were kept or not.
func Validate(c *Catalog) error {
	v := &validator{imageErrs: make(map[string]error)}
	if c == nil {
		return nil
	}
	for _, p := range c.Packages {
		v.pkg(p)
	}
	for _, m := range c.Others {
		v.meta("", m)
	}
	return v.result()
}

type validator struct {
	problems []Problem
	// imageErrs caches reference parse results: the same images recur across bundles.
	imageErrs map[string]error
	// hc checks the values of heavy properties.
	hc heavyChecker
}

func (v *validator) add(pkg, ch, bundle, format string, args ...any) {
	v.problems = append(v.problems, Problem{Package: pkg, Channel: ch, Bundle: bundle, Message: fmt.Sprintf(format, args...)})
}

func (v *validator) result() error {
	if len(v.problems) == 0 {
		return nil
	}
	ps := v.problems
	sort.Slice(ps, func(i, j int) bool {
		a, b := ps[i], ps[j]
		if a.Package != b.Package {
			return a.Package < b.Package
		}
		if a.Channel != b.Channel {
			return a.Channel < b.Channel
		}
		if a.Bundle != b.Bundle {
			return a.Bundle < b.Bundle
		}
		return a.Message < b.Message
	})
	out := ps[:0]
	for i, p := range ps {
		if i > 0 && p == ps[i-1] {
			continue
		}
		out = append(out, p)
	}
	return &ValidationError{Problems: out}
}

func (v *validator) pkg(p *Package) {
	name := p.Name
	known := p.Declared > 0

	// Package document rules.
	switch {
	case !known:
		// Everything naming it is reported below as pointing at an unknown package.
	case name == "":
		v.add(name, "", "", "config contains package with no name")
	default:
		if p.Declared > 1 {
			v.add(name, "", "", "duplicate package %q", name)
		}
		if errs := dns1123Label(name); len(errs) > 0 {
			v.add(name, "", "", "invalid package name %q: [%s]", name, strings.Join(errs, " "))
		}
	}

	// Channels.
	channelsByName := make(map[string]*Channel, len(p.Channels))
	entryNames := make(map[string]bool)
	for _, ch := range p.Channels {
		if !known {
			v.add(name, ch.Name, "", "unknown package %q for channel %q", name, ch.Name)
		}
		if ch.Name == "" {
			v.add(name, "", "", "package %q contains channel with no name", name)
		} else if _, dup := channelsByName[ch.Name]; dup {
			v.add(name, ch.Name, "", "package %q has duplicate channel %q", name, ch.Name)
		} else {
			channelsByName[ch.Name] = ch
		}
		for _, e := range ch.Entries {
			entryNames[e.Name] = true
		}
	}

	// Bundles.
	bundlesByName := make(map[string]*Bundle, len(p.Bundles))
	for _, b := range p.Bundles {
		if b.Name != "" {
			if _, dup := bundlesByName[b.Name]; dup {
				if name != "" {
					v.add(name, "", b.Name, "package %q has duplicate bundle %q", name, b.Name)
				}
				continue
			}
			bundlesByName[b.Name] = b
		}
	}

	// Package-level rules that need the channels.
	if known {
		switch {
		case p.DefaultChannel == "":
			v.add(name, "", "", "default channel must be set")
		default:
			if _, ok := channelsByName[p.DefaultChannel]; !ok {
				v.add(name, p.DefaultChannel, "", "channel must contain at least one bundle (default channel %q has no olm.channel document)", p.DefaultChannel)
			}
		}
		if len(p.Channels) == 0 {
			v.add(name, "", "", "package must contain at least one channel")
		}
	}

	for _, ch := range p.Channels {
		v.channel(p, ch, bundlesByName)
	}

	versions := make(map[versionKey][]string)
	for _, b := range p.Bundles {
		first := b.Name == "" || bundlesByName[b.Name] == b
		v.bundle(p, b, entryNames, first, versions)
	}
	v.duplicateVersions(name, versions)

	v.deprecations(p, channelsByName, bundlesByName)

	for _, m := range p.Others {
		v.meta(name, m)
	}
}

func dns1123Label(s string) []string {
	var errs []string
	if len(s) > 63 {
		errs = append(errs, "must be no more than 63 characters")
	}
	if !dns1123LabelRE.MatchString(s) {
		errs = append(errs, dns1123LabelMsg)
	}
	return errs
}

func (v *validator) channel(p *Package, ch *Channel, bundles map[string]*Bundle) {
	pkg := p.Name
	if len(ch.Entries) == 0 {
		v.add(pkg, ch.Name, "", "channel must contain at least one bundle")
		return
	}
	seen := make(map[string]bool, len(ch.Entries))
	var missing []string
	for i, e := range ch.Entries {
		if e.Name == "" {
			v.add(pkg, ch.Name, "", "entry [%d] has no name: every channel entry must name an olm.bundle", i)
		} else if seen[e.Name] {
			v.add(pkg, ch.Name, "", "invalid package %q, channel %q: duplicate entry %q", pkg, ch.Name, e.Name)
		}
		if e.Name != "" && !seen[e.Name] {
			if _, ok := bundles[e.Name]; !ok {
				missing = append(missing, e.Name)
			}
		}
		seen[e.Name] = true
		for j, s := range e.Skips {
			if s == "" {
				v.add(pkg, ch.Name, e.Name, "skip[%d] is empty", j)
			}
		}
		if e.SkipRange != "" {
			if _, err := ParseSkipRange(e.SkipRange); err != nil {
				v.add(pkg, ch.Name, e.Name, "invalid skipRange %q: %v", e.SkipRange, err)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		v.add(pkg, ch.Name, "", "no olm.bundle blobs found in package %q for olm.channel entries [%s]", pkg, strings.Join(missing, " "))
	}

	if err := NewGraph(ch).Check(); err != nil {
		v.add(pkg, ch.Name, "", "%s", err.Error())
	}
}

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

func (v *validator) deprecations(p *Package, channels map[string]*Channel, bundles map[string]*Bundle) {
	pkg := p.Name
	if len(p.Deprecations) == 0 {
		return
	}
	if pkg == "" {
		for i := range p.Deprecations {
			v.add("", "", "", "package name must be set for deprecation item %d", i)
		}
		return
	}
	if p.Declared == 0 {
		v.add(pkg, "", "", "cannot apply deprecations to an unknown package %q", pkg)
	}
	if len(p.Deprecations) > 1 {
		v.add(pkg, "", "", "expected a maximum of one deprecation per package: %q", pkg)
	}
	for _, d := range p.Deprecations {
		seen := make(map[PackageScopedReference]bool, len(d.Entries))
		for j, e := range d.Entries {
			ref := e.Reference
			if ref.Schema == "" {
				v.add(pkg, "", "", "schema must be set for deprecation entry [%d] for package %q", j, pkg)
				continue
			}
			if seen[ref] {
				v.add(pkg, "", "", "duplicate deprecation entry %s for package %q", refString(ref), pkg)
				continue
			}
			seen[ref] = true
			ch, bn := "", ""
			switch ref.Schema {
			case SchemaBundle:
				bn = ref.Name
				if _, ok := bundles[ref.Name]; !ok {
					v.add(pkg, "", "", "cannot deprecate bundle %q for package %q: bundle not found", ref.Name, pkg)
					bn = ""
				}
			case SchemaChannel:
				ch = ref.Name
				if _, ok := channels[ref.Name]; !ok {
					v.add(pkg, "", "", "cannot deprecate channel %q for package %q: channel not found", ref.Name, pkg)
					ch = ""
				}
			case SchemaPackage:
				if ref.Name != "" {
					v.add(pkg, "", "", "package name must be empty for deprecated package %q (specified %q)", pkg, ref.Name)
				}
			default:
				v.add(pkg, "", "", "cannot deprecate object %s referenced by entry %d for package %q: object schema unknown", refString(ref), j, pkg)
				continue
			}
			if e.Message == "" {
				v.add(pkg, ch, bn, "invalid deprecation: message must be set (deprecation entry [%d])", j)
			}
		}
	}
}

func refString(r PackageScopedReference) string {
	if r.Name == "" {
		return "{schema: " + r.Schema + "}"
	}
	return "{schema: " + r.Schema + ", name: " + strconv.Quote(r.Name) + "}"
}

// meta checks a blob of a custom schema as `opm serve` does when it stores it in
// its cache.
func (v *validator) meta(pkg string, m *Meta) {
	where := ""
	if m.Origin.File != "" {
		where = fmt.Sprintf(" (%s, document %d)", m.Origin.File, m.Origin.Index)
	}
	if !metaNameRE.MatchString(m.Schema) {
		v.add(pkg, "", "", "invalid schema %q of a custom blob%s: must match %s (opm serve cannot build its cache)", m.Schema, where, metaNameRE)
	}
	if m.Package != "" && !metaNameRE.MatchString(m.Package) {
		v.add(pkg, "", "", "invalid package %q of a %q blob%s: must match %s (opm serve cannot build its cache)", m.Package, m.Schema, where, metaNameRE)
	}
}
