package validate

import (
	"fmt"
	"strconv"

	"github.com/airlock-mirror/airlock/fbc"
)

// The rules of deprecations and of custom schemas (see Catalog).

func (v *validator) deprecations(p *fbc.Package, channels map[string]*fbc.Channel, bundles map[string]*fbc.Bundle) {
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
		seen := make(map[fbc.PackageScopedReference]bool, len(d.Entries))
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
			case fbc.SchemaBundle:
				bn = ref.Name
				if _, ok := bundles[ref.Name]; !ok {
					v.add(pkg, "", "", "cannot deprecate bundle %q for package %q: bundle not found", ref.Name, pkg)
					bn = ""
				}
			case fbc.SchemaChannel:
				ch = ref.Name
				if _, ok := channels[ref.Name]; !ok {
					v.add(pkg, "", "", "cannot deprecate channel %q for package %q: channel not found", ref.Name, pkg)
					ch = ""
				}
			case fbc.SchemaPackage:
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

func refString(r fbc.PackageScopedReference) string {
	if r.Name == "" {
		return "{schema: " + r.Schema + "}"
	}
	return "{schema: " + r.Schema + ", name: " + strconv.Quote(r.Name) + "}"
}

// meta checks a blob of a custom schema as `opm serve` does when it stores it in
// its cache.
func (v *validator) meta(pkg string, m *fbc.Meta) {
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
