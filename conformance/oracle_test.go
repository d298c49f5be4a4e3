package conformance

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/prune"
)

// productClasses maps the product's refusal messages to the oracle's reason
// classes (docs/conformance.md, "Which bundles are kept").
var productClasses = []struct{ substr, class string }{
	{"has no package", "unknown-package"},
	{"is not a channel of the package", "unknown-default-channel"},
	{"has no channel", "unknown-channel"},
	{"has no bundle", "unknown-bundle"},
	{"listed twice", "config"},
	{"has no name", "config"},
	{"set both on the package and on its channels", "config"},
	{"cannot be combined", "config"},
	{"use a semantic version", "bad-version"},
	{"is greater than maxVersion", "bad-version"},
	{"leaves its default channel", "default-channel-emptied"},
	{"is in none of the selected channels", "bundle-not-in-channels"},
	{"along replaces edges (it is only skipped)", "bundle-only-skipped"},
	{"is not among the kept channels", "default-channel-not-kept"},
	{"is not selected", "default-channel-not-selected"},
	{"the filtered catalog is not valid", "invalid-output"},
	{"source catalog is invalid", "invalid-source"},
	{"source catalog is not valid", "invalid-source"},
	{"source channel is invalid", "invalid-source"},
	{"source channel is probably invalid", "invalid-source"},
}

// productClass is the reason class of an error of prune.Filter.
func productClass(err error) string {
	if !errors.Is(err, prune.ErrFilter) {
		return "not-errfilter"
	}
	for _, pc := range productClasses {
		if strings.Contains(err.Error(), pc.substr) {
			return pc.class
		}
	}
	return "unclassified"
}

// selectFunc is a filter under test: the product, or a mutant of it.
type selectFunc func(c *fbc.Catalog, op imageset.Operator) (*oResult, *oRefusal)

// oracleCatalogRef names the catalog in the configurations the product checks.
const oracleCatalogRef = "registry.example.com/oracle/catalog:v1"

// validateConfig checks op inside an ImageSetConfiguration as imageset.Load
// does before the pipeline filters anything.
func validateConfig(op imageset.Operator) *oRefusal {
	op.Catalog = oracleCatalogRef
	cfg := imageset.ImageSetConfiguration{
		TypeMeta: imageset.TypeMeta{APIVersion: "mirror.openshift.io/v2alpha1", Kind: "ImageSetConfiguration"},
		Mirror:   imageset.ImageSetConfigurationSpec{Operators: []imageset.Operator{op}},
	}
	err := cfg.Validate()
	if err == nil {
		return nil
	}
	// Every problem of the configuration is reported: the first gives the
	// class, the others are classes it also has.
	errs := []error{err}
	if multi, ok := err.(interface{ Unwrap() []error }); ok {
		errs = multi.Unwrap()
	}
	r := &oRefusal{msg: err.Error()}
	for _, e := range errs {
		class := "config"
		if m := e.Error(); strings.Contains(m, "is not a valid semantic version") || strings.Contains(m, "is greater than maxVersion") {
			class = "bad-version"
		}
		if r.class == "" {
			r.class = class
		} else {
			r.also = append(r.also, class)
		}
	}
	return r
}

// productSelect runs the product as the pipeline does (the configuration
// validated as imageset.Load does, then prune.Filter) and reads what it kept.
func productSelect(c *fbc.Catalog, op imageset.Operator) (*oResult, *oRefusal) {
	if r := validateConfig(op); r != nil {
		return nil, r
	}
	op.Catalog = oracleCatalogRef
	out, _, err := prune.Filter(c, op, prune.FilterOptions{})
	if err != nil {
		return nil, &oRefusal{class: productClass(err), msg: err.Error()}
	}
	return resultOf(out), nil
}

// resultOf reads the kept packages, default channels and entries of a catalog.
func resultOf(out *fbc.Catalog) *oResult {
	res := &oResult{pkgs: map[string]*oOut{}}
	for _, p := range out.Packages {
		o := &oOut{defaultChannel: p.DefaultChannel, chans: map[string]map[string]bool{}}
		for _, ch := range p.Channels {
			set := map[string]bool{}
			for _, e := range ch.Entries {
				set[e.Name] = true
			}
			o.chans[ch.Name] = set
		}
		res.pkgs[p.Name] = o
	}
	return res
}

// headsOf gives the heads of every kept channel, computed by the oracle's graph
// code on the source channel's edges.
func headsOf(src *oCatalog, r *oResult) map[string][]string {
	out := map[string][]string{}
	for pn, o := range r.pkgs {
		for cn, keep := range o.chans {
			if p := src.pkgs[pn]; p != nil && p.chans[cn] != nil {
				out[pn+"/"+cn] = oHeads(p.chans[cn], keep)
			}
		}
	}
	return out
}

func setString(m map[string]bool) string {
	var s []string
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return "[" + strings.Join(s, " ") + "]"
}

// diffResults describes how two results differ ("" when they agree): packages,
// default channels, channels, entries and heads.
func diffResults(src *oCatalog, want, got *oResult) string {
	var d []string
	var names []string
	for n := range want.pkgs {
		names = append(names, n)
	}
	for n := range got.pkgs {
		if want.pkgs[n] == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		w, g := want.pkgs[n], got.pkgs[n]
		switch {
		case w == nil:
			d = append(d, fmt.Sprintf("package %s kept by the product only", n))
			continue
		case g == nil:
			d = append(d, fmt.Sprintf("package %s kept by the oracle only", n))
			continue
		case w.defaultChannel != g.defaultChannel:
			d = append(d, fmt.Sprintf("package %s: default channel oracle %q, product %q", n, w.defaultChannel, g.defaultChannel))
		}
		chans := map[string]bool{}
		for c := range w.chans {
			chans[c] = true
		}
		for c := range g.chans {
			chans[c] = true
		}
		var cs []string
		for c := range chans {
			cs = append(cs, c)
		}
		sort.Strings(cs)
		for _, c := range cs {
			if a, b := setString(w.chans[c]), setString(g.chans[c]); a != b {
				d = append(d, fmt.Sprintf("package %s channel %s: oracle %s, product %s", n, c, a, b))
			}
		}
	}
	if len(d) == 0 {
		wh, gh := headsOf(src, want), headsOf(src, got)
		for k, h := range wh {
			if fmt.Sprint(h) != fmt.Sprint(gh[k]) {
				d = append(d, fmt.Sprintf("channel %s: heads oracle %v, product %v", k, h, gh[k]))
			}
		}
	}
	return strings.Join(d, "\n")
}

// agreement is the outcome of one (catalog, configuration) pair.
type agreement struct {
	kept, refused int
	classes       map[string]int
}

func (a *agreement) pairs() int { return a.kept + a.refused }

// comparePair runs the oracle and sel on one pair; it returns a description of
// the disagreement, or "".
func comparePair(src *oCatalog, c *fbc.Catalog, fc filterConfig, sel selectFunc, a *agreement) string {
	want, wr := oracleFilter(src, fc.op)
	got, gr := sel(c, fc.op)
	d := compareOutcomes(src, want, wr, got, gr)
	if d != "" {
		return d
	}
	if a != nil {
		if wr != nil {
			a.refused++
			if a.classes == nil {
				a.classes = map[string]int{}
			}
			a.classes[wr.class]++
		} else {
			a.kept++
		}
	}
	return ""
}

// compareOutcomes describes how the product's outcome (got, gr) differs from the
// oracle's (want, wr), "" when they agree.
func compareOutcomes(src *oCatalog, want *oResult, wr *oRefusal, got *oResult, gr *oRefusal) string {
	switch {
	case wr != nil && gr != nil:
		// A configuration with several problems: the two must name one alike.
		if !slices.ContainsFunc(append([]string{wr.class}, wr.also...), func(c string) bool {
			return c == gr.class || slices.Contains(gr.also, c)
		}) {
			return fmt.Sprintf("both refuse, oracle for %s, product for %s", wr, gr)
		}
		return ""
	case wr != nil:
		return fmt.Sprintf("oracle refuses (%s), product keeps", wr)
	case gr != nil:
		return fmt.Sprintf("product refuses (%s: %s), oracle keeps", gr.class, gr.msg)
	}
	return diffResults(src, want, got)
}

// oracleInput is a catalog as both sides see it.
type oracleInput struct {
	name string
	src  *oCatalog
	cat  *fbc.Catalog
	seed uint64
}

// oracleInputs are the valid catalogs of allSources (real, testdata, generated)
// read by the oracle's reader and loaded by airlock, and the catalogs with
// dependency chains of depCatalogs.
func oracleInputs(t *testing.T) []oracleInput {
	oracleInputsOnce.Do(func() { oracleInputsCache, oracleInputsErr = loadOracleInputs(t) })
	if oracleInputsErr != nil {
		t.Fatal(oracleInputsErr)
	}
	return oracleInputsCache
}

var (
	oracleInputsOnce  sync.Once
	oracleInputsCache []oracleInput
	oracleInputsErr   error
)

func loadOracleInputs(t *testing.T) ([]oracleInput, error) {
	ctx := context.Background()
	var out []oracleInput
	for _, s := range allSources(t) {
		if s.Kind == "invalid" {
			continue
		}
		c, err := fbc.LoadDir(ctx, s.Dir, fbc.LoadOptions{ElideHeavy: true})
		if err != nil || validate.Catalog(c) != nil {
			continue
		}
		docs, err := readFBC(os.DirFS(s.Dir))
		if err != nil {
			return nil, fmt.Errorf("%s: oracle read: %v", s.Name, err)
		}
		h := fnv.New64a()
		h.Write([]byte(s.Name))
		out = append(out, oracleInput{s.Name, oracleCatalog(docs), c, h.Sum64()})
	}
	for i := range depCatalogCount {
		seed := uint64(i) + 1
		cfg := depCatalog(seed)
		fsys, err := depCatalogFS(cfg)
		if err != nil {
			return nil, fmt.Errorf("dependency catalog %d: %v", seed, err)
		}
		c, err := fbc.Load(ctx, fsys, fbc.LoadOptions{})
		if err != nil {
			return nil, fmt.Errorf("dependency catalog %d: %v", seed, err)
		}
		if err := validate.Catalog(c); err != nil {
			return nil, fmt.Errorf("dependency catalog %d is not valid for airlock: %v", seed, err)
		}
		if err := opmValidateCfg(cfg); err != nil {
			return nil, fmt.Errorf("dependency catalog %d is not valid for opm: %v", seed, err)
		}
		docs, err := readFBC(fsys)
		if err != nil {
			return nil, fmt.Errorf("dependency catalog %d: oracle read: %v", seed, err)
		}
		out = append(out, oracleInput{fmt.Sprintf("deps/%d", seed), oracleCatalog(docs), c, seed})
	}
	return out, nil
}

// TestSelectionOracle compares what prune.Filter keeps with what the oracle
// keeps, for every catalog × the generated configurations.
func TestSelectionOracle(t *testing.T) {
	var total agreement
	for _, in := range oracleInputs(t) {
		t.Run(in.name, func(t *testing.T) {
			var a agreement
			for _, fc := range oracleConfigs(in.src, in.seed, oracleMaxPkgs) {
				if d := comparePair(in.src, in.cat, fc, productSelect, &a); d != "" {
					t.Errorf("%s: %s", fc.name, d)
				}
			}
			t.Logf("%d pairs agree: %d kept, %d refused %v", a.pairs(), a.kept, a.refused, a.classes)
			total.kept += a.kept
			total.refused += a.refused
			for k, v := range a.classes {
				if total.classes == nil {
					total.classes = map[string]int{}
				}
				total.classes[k] += v
			}
		})
	}
	t.Logf("selection oracle: %d (catalog, configuration) pairs agree: %d kept, %d refused %v", total.pairs(), total.kept, total.refused, total.classes)
	if !t.Failed() && total.pairs() < 5000 {
		t.Errorf("only %d pairs compared, want at least 5,000", total.pairs())
	}
}

// oracleMaxPkgs caps the packages of one catalog that get per-package cases.
const oracleMaxPkgs = 16
