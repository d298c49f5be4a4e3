package conformance

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/operator-framework/operator-registry/alpha/declcfg"
	"github.com/operator-framework/operator-registry/alpha/property"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
)

// canon is a catalog reduced to sorted lines, one per document, in a form both
// implementations can be brought to. Two catalogs load to the same content when
// their canons are equal.
type canon struct {
	Packages     []string
	Channels     []string
	Bundles      []string
	Deprecations []string
	Others       []string
}

// normJSON re-encodes a JSON value through encoding/json's generic types (objects
// become map[string]any with sorted keys, numbers float64), which is how opm
// normalises custom blobs; an empty value stays empty, an invalid one is quoted
// as it is so that a difference still shows.
func normJSON(raw []byte) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "INVALID:" + string(raw)
	}
	return mustJSON(v)
}

func mustJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

type canonProp struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

func opmProps(ps []property.Property) []canonProp {
	out := make([]canonProp, len(ps))
	for i, p := range ps {
		out[i] = canonProp{p.Type, normJSON(p.Value)}
	}
	return out
}

func ourProps(ps []fbc.Property) []canonProp {
	out := make([]canonProp, len(ps))
	for i, p := range ps {
		out[i] = canonProp{p.Type, normJSON(p.Value)}
	}
	return out
}

type canonRel struct{ Name, Image string }

type canonEntry struct {
	Name, Replaces string
	Skips          []string
	SkipRange      string
}

func skips(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func icon(data []byte, media string, set bool) string {
	if !set {
		return "-"
	}
	return media + ":" + base64.StdEncoding.EncodeToString(data)
}

func pkgLine(name, def, desc, ic string, props []canonProp, count int) string {
	return mustJSON([]any{name, count, def, desc, ic, props})
}

func chanLine(pkg, name string, entries []canonEntry, props []canonProp) string {
	return mustJSON([]any{pkg, name, entries, props})
}

func bundleLine(pkg, name, image string, props []canonProp, rel []canonRel) string {
	return mustJSON([]any{pkg, name, image, props, rel})
}

func depLine(pkg string, entries any) string { return mustJSON([]any{pkg, entries}) }

func otherLine(schema, pkg, name string, blob []byte) string {
	return mustJSON([]any{schema, pkg, name, normJSON(blob)})
}

// canonOpm reduces opm's declarative config. Packages are grouped by name (the
// first document's fields and the number of documents), like airlock's model.
func canonOpm(cfg *declcfg.DeclarativeConfig) canon {
	var c canon
	type first struct {
		p     declcfg.Package
		count int
	}
	byName := map[string]*first{}
	var order []string
	for _, p := range cfg.Packages {
		if f, ok := byName[p.Name]; ok {
			f.count++
			continue
		}
		byName[p.Name] = &first{p: p, count: 1}
		order = append(order, p.Name)
	}
	for _, n := range order {
		f := byName[n]
		p := f.p
		ic := icon(nil, "", false)
		if p.Icon != nil {
			ic = icon(p.Icon.Data, p.Icon.MediaType, true)
		}
		c.Packages = append(c.Packages, pkgLine(p.Name, p.DefaultChannel, p.Description, ic, opmProps(p.Properties), f.count))
	}
	for _, ch := range cfg.Channels {
		es := make([]canonEntry, len(ch.Entries))
		for i, e := range ch.Entries {
			es[i] = canonEntry{e.Name, e.Replaces, skips(e.Skips), e.SkipRange}
		}
		c.Channels = append(c.Channels, chanLine(ch.Package, ch.Name, es, opmProps(ch.Properties)))
	}
	for _, b := range cfg.Bundles {
		rel := make([]canonRel, len(b.RelatedImages))
		for i, r := range b.RelatedImages {
			rel[i] = canonRel{r.Name, r.Image}
		}
		c.Bundles = append(c.Bundles, bundleLine(b.Package, b.Name, b.Image, opmProps(b.Properties), rel))
	}
	for _, d := range cfg.Deprecations {
		es := make([]fbc.DeprecationEntry, len(d.Entries))
		for i, e := range d.Entries {
			es[i] = fbc.DeprecationEntry{Reference: fbc.PackageScopedReference{Schema: e.Reference.Schema, Name: e.Reference.Name}, Message: e.Message}
		}
		c.Deprecations = append(c.Deprecations, depLine(d.Package, es))
	}
	for _, m := range cfg.Others {
		c.Others = append(c.Others, otherLine(m.Schema, m.Package, m.Name, m.Blob))
	}
	c.sort()
	return c
}

// canonOurs reduces airlock's model.
func canonOurs(cat *fbc.Catalog) canon {
	var c canon
	for _, p := range cat.Packages {
		if p.Declared > 0 {
			ic := icon(nil, "", false)
			if p.Icon != nil {
				ic = icon(p.Icon.Data, p.Icon.MediaType, true)
			}
			c.Packages = append(c.Packages, pkgLine(p.Name, p.DefaultChannel, p.Description, ic, ourProps(p.Properties), p.Declared))
		}
		for _, ch := range p.Channels {
			es := make([]canonEntry, len(ch.Entries))
			for i, e := range ch.Entries {
				es[i] = canonEntry{e.Name, e.Replaces, skips(e.Skips), e.SkipRange}
			}
			c.Channels = append(c.Channels, chanLine(ch.Package, ch.Name, es, ourProps(ch.Properties)))
		}
		for _, b := range p.Bundles {
			rel := make([]canonRel, len(b.RelatedImages))
			for i, r := range b.RelatedImages {
				rel[i] = canonRel{r.Name, r.Image}
			}
			c.Bundles = append(c.Bundles, bundleLine(b.Package, b.Name, b.Image, ourProps(b.Properties), rel))
		}
		for _, d := range p.Deprecations {
			es := d.Entries
			if es == nil {
				es = []fbc.DeprecationEntry{}
			}
			c.Deprecations = append(c.Deprecations, depLine(d.Package, es))
		}
		for _, m := range p.Others {
			c.Others = append(c.Others, otherLine(m.Schema, m.Package, m.Name, m.Blob))
		}
	}
	for _, m := range cat.Others {
		c.Others = append(c.Others, otherLine(m.Schema, m.Package, m.Name, m.Blob))
	}
	c.sort()
	return c
}

func (c *canon) sort() {
	for _, s := range []*[]string{&c.Packages, &c.Channels, &c.Bundles, &c.Deprecations, &c.Others} {
		sort.Strings(*s)
	}
}

// diff describes how b differs from a, at most max lines; "" when equal.
func (a canon) diff(b canon, max int) string {
	var out []string
	cmp := func(kind string, x, y []string) {
		if len(x) != len(y) {
			out = append(out, fmt.Sprintf("%s: %d documents vs %d", kind, len(x), len(y)))
		}
		in := func(s []string) map[string]int {
			m := map[string]int{}
			for _, v := range s {
				m[v]++
			}
			return m
		}
		mx, my := in(x), in(y)
		for _, v := range x {
			if mx[v] != my[v] {
				out = append(out, fmt.Sprintf("%s only in first (%d vs %d): %s", kind, mx[v], my[v], trunc(v)))
				my[v] = mx[v]
			}
		}
		for _, v := range y {
			if mx[v] != my[v] {
				out = append(out, fmt.Sprintf("%s only in second (%d vs %d): %s", kind, mx[v], my[v], trunc(v)))
				mx[v] = my[v]
			}
		}
	}
	cmp("package", a.Packages, b.Packages)
	cmp("channel", a.Channels, b.Channels)
	cmp("bundle", a.Bundles, b.Bundles)
	cmp("deprecation", a.Deprecations, b.Deprecations)
	cmp("other", a.Others, b.Others)
	if len(out) > max {
		out = append(out[:max], fmt.Sprintf("... and %d more", len(out)-max))
	}
	return strings.Join(out, "\n")
}

func trunc(s string) string {
	if len(s) > 600 {
		return s[:600] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// opmLoad loads dir with opm's loader, one file at a time so that document order
// is deterministic.
func opmLoad(ctx context.Context, dir string) (*declcfg.DeclarativeConfig, error) {
	return declcfg.LoadFS(ctx, os.DirFS(dir), declcfg.WithConcurrency(1))
}

// opmValidate is `opm validate`: LoadFS, then ConvertToModel (which runs the
// model's Validate), then model.Validate once more, as opm validate does.
func opmValidate(ctx context.Context, dir string) error {
	cfg, err := declcfg.LoadFS(ctx, os.DirFS(dir))
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return opmValidateCfg(cfg)
}

func opmValidateCfg(cfg *declcfg.DeclarativeConfig) error {
	m, err := declcfg.ConvertToModel(*cfg)
	if err != nil {
		return fmt.Errorf("convert: %w", err)
	}
	if err := m.Validate(); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// ourValidate is `airlock catalog validate` on a directory, with property values
// kept (ElideHeavy false) or elided as the CLI does.
func ourValidate(ctx context.Context, dir string, elide bool) error {
	c, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{ElideHeavy: elide})
	if err != nil {
		return fmt.Errorf("load: %w", err)
	}
	return validate.Catalog(c)
}
