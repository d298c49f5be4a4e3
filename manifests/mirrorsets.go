package manifests

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// category groups mirror rules into objects, like oc-mirror does: one per
// kind of content (operator, generic, and the kinds other content sources
// name), each object named after it (idms-operator, itms-generic…).
type category string

const (
	catOperator category = "operator"
	catGeneric  category = "generic"
)

// categoryOf is the category of an image kind: "" is generic.
func categoryOf(k Kind) category {
	if k == "" {
		return catGeneric
	}
	return category(k)
}

// validCategory reports whether a kind can name objects (a DNS label less the
// object prefix and chunk suffix).
func validCategory(c category) bool {
	if len(c) == 0 || len(c) > 40 {
		return false
	}
	for _, r := range c {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return c[0] != '-' && c[len(c)-1] != '-'
}

// categoryLess orders categories: operator first, generic last, the others
// by name between them. A rule several categories share goes to the first.
func categoryLess(a, b category) bool {
	rank := func(c category) int {
		switch c {
		case catOperator:
			return 0
		case catGeneric:
			return 2
		}
		return 1
	}
	if rank(a) != rank(b) {
		return rank(a) < rank(b)
	}
	return a < b
}

// ruleAcc accumulates one mirror rule.
type ruleAcc struct {
	mirrors map[string]bool
	cat     category // the first category (categoryLess) of the images that use it
}

// rules holds the digest and tag rules keyed by source.
type rules struct {
	digest map[string]*ruleAcc
	tag    map[string]*ruleAcc
}

// mappedImage is a parsed non-catalog Image.
type mappedImage struct {
	img      Image
	src, dst parsedRef
	cat      category
}

// buildRules turns the mapping into digest and tag rules. Catalog repositories take
// part in the namespace-collapse decision (a namespace rule must never claim a
// repository that was mirrored elsewhere) but get no rule.
func buildRules(images []Image, catalogs []Catalog, opts Options) (rules, []string, error) {
	var (
		mapped  []mappedImage
		skipped []string
		// repoDests: every source repository seen → its destination repositories.
		repoDests = map[string]map[string]bool{}
	)
	addPair := func(src, dst string) {
		m := repoDests[src]
		if m == nil {
			m = map[string]bool{}
			repoDests[src] = m
		}
		m[dst] = true
	}
	var errs []error
	refs := refCache{}
	for _, img := range images {
		src, err := refs.parse(img.Source)
		if errors.Is(err, errNotRegistry) {
			skipped = append(skipped, img.Source)
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("image %q: invalid source reference: %w; fix the mapping that produced it", img.Source, err))
			continue
		}
		dst, err := refs.parse(img.Destination)
		if err != nil {
			errs = append(errs, fmt.Errorf("image %q: invalid destination reference %q: %w; the destination must be a registry reference", img.Source, img.Destination, err))
			continue
		}
		addPair(src.repo, dst.repo)
		if img.Kind == KindCatalog {
			continue // used through CatalogSource/ClusterCatalog; no mirror rule
		}
		cat := categoryOf(img.Kind)
		if !validCategory(cat) {
			errs = append(errs, fmt.Errorf("image %q: kind %q cannot name a mirror set (lower-case letters, digits and '-', at most 40)", img.Source, img.Kind))
			continue
		}
		mapped = append(mapped, mappedImage{img: img, src: src, dst: dst, cat: cat})
	}
	for _, c := range catalogs {
		src, err := parseRef(c.Source)
		if err != nil {
			continue // oci:// catalogs and the like: nothing in a registry to collapse over
		}
		dst, err := parseRef(c.Destination)
		if err != nil {
			continue // reported by the catalog builder
		}
		addPair(src.repo, dst.repo)
	}
	if len(errs) > 0 {
		return rules{}, nil, errors.Join(errs...)
	}

	collapsed := map[string]string{} // source namespace → destination namespace
	if !opts.RepositoryScope {
		collapsed = collapseNamespaces(repoDests)
	}

	r := rules{digest: map[string]*ruleAcc{}, tag: map[string]*ruleAcc{}}
	for _, m := range mapped {
		source, mirror := m.src.repo, m.dst.repo
		if ns := parentNamespace(source); ns != "" {
			if dns, ok := collapsed[ns]; ok {
				source, mirror = ns, dns
			}
		}
		set := r.tag
		if m.src.digest != "" {
			set = r.digest
		}
		acc := set[source]
		if acc == nil {
			acc = &ruleAcc{mirrors: map[string]bool{}, cat: m.cat}
			set[source] = acc
		}
		acc.mirrors[mirror] = true
		if categoryLess(m.cat, acc.cat) {
			acc.cat = m.cat
		}
	}
	sort.Strings(skipped)
	return r, skipped, nil
}

// collapseNamespaces returns the source namespaces whose every direct child repository
// maps to exactly one destination, destNS + "/" + the same last path element, with one
// destNS for the whole namespace. A namespace that is itself a mirrored repository is
// never collapsed (its own rule would be merged with the namespace rule).
func collapseNamespaces(repoDests map[string]map[string]bool) map[string]string {
	type nsState struct {
		dest string
		ok   bool
	}
	state := map[string]*nsState{}
	for src, dsts := range repoDests {
		ns := parentNamespace(src)
		if ns == "" {
			continue
		}
		st := state[ns]
		if st == nil {
			st = &nsState{ok: true}
			state[ns] = st
		}
		if !st.ok {
			continue
		}
		if len(dsts) != 1 {
			st.ok = false
			continue
		}
		var dst string
		for d := range dsts {
			dst = d
		}
		if lastElement(dst) != lastElement(src) || !strings.Contains(dst, "/") {
			st.ok = false
			continue
		}
		dns := dst[:len(dst)-len(lastElement(dst))-1]
		if st.dest == "" {
			st.dest = dns
		} else if st.dest != dns {
			st.ok = false
		}
	}
	out := map[string]string{}
	for ns, st := range state {
		if !st.ok {
			continue
		}
		if _, isRepo := repoDests[ns]; isRepo {
			continue
		}
		out[ns] = st.dest
	}
	return out
}

// categories returns the categories of the rules, in categoryLess order;
// operator and generic are always there (their objects may be empty).
func (r rules) categories() []category {
	seen := map[category]bool{catOperator: true, catGeneric: true}
	for _, set := range []map[string]*ruleAcc{r.digest, r.tag} {
		for _, acc := range set {
			seen[acc.cat] = true
		}
	}
	out := make([]category, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return categoryLess(out[i], out[j]) })
	return out
}

// sortedRules returns the rules of one category sorted by source, mirrors sorted.
func sortedRules(set map[string]*ruleAcc, cat category) []MirrorRule {
	var out []MirrorRule
	for src, acc := range set {
		if acc.cat != cat {
			continue
		}
		mirrors := make([]string, 0, len(acc.mirrors))
		for m := range acc.mirrors {
			mirrors = append(mirrors, m)
		}
		sort.Strings(mirrors)
		out = append(out, MirrorRule{Source: src, Mirrors: mirrors})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Source < out[j].Source })
	return out
}

// renderFunc builds the object named name with the given rules and serialises it.
type renderFunc func(name string, rs []MirrorRule) (obj any, data []byte, err error)

// chunk is one object of a split list.
type chunk struct {
	name  string
	rules []MirrorRule
	obj   any
	data  []byte
}

// splitRules splits rules into objects named prefix-0, prefix-1, … each at most max
// bytes once serialised. Rules are packed greedily in order from their exact per-rule
// size; each object is then serialised under its final name and, should it still be too
// large, halved until it fits. The work is linear in the number of rules.
func splitRules(prefix string, rs []MirrorRule, max int, render renderFunc) ([]chunk, error) {
	if len(rs) == 0 {
		return nil, nil
	}
	costs, err := ruleCosts(rs)
	if err != nil {
		return nil, err
	}
	_, empty, err := render(prefix+"-0", nil)
	if err != nil {
		return nil, err
	}
	base := len(empty) - len(" []") // the empty list renders as "field: []"
	var groups [][]MirrorRule
	var cur []MirrorRule
	size := base
	for i, r := range rs {
		if len(cur) > 0 && size+costs[i] > max {
			groups = append(groups, cur)
			cur, size = nil, base
		}
		cur = append(cur, r)
		size += costs[i]
	}
	groups = append(groups, cur)

	var out []chunk
	for len(groups) > 0 {
		g := groups[0]
		groups = groups[1:]
		name := fmt.Sprintf("%s-%d", prefix, len(out))
		obj, data, err := render(name, g)
		if err != nil {
			return nil, err
		}
		if len(data) <= max {
			out = append(out, chunk{name: name, rules: g, obj: obj, data: data})
			continue
		}
		if len(g) == 1 {
			return nil, fmt.Errorf("mirror rule for %q alone serialises to %d bytes, more than the %d-byte object limit; raise the limit", g[0].Source, len(data), max)
		}
		half := len(g) / 2
		groups = append([][]MirrorRule{g[:half], g[half:]}, groups...)
	}
	return out, nil
}

// ruleCosts returns the number of bytes each rule adds to an object: the rule's list
// item as serialised, with every line indented by two more spaces (the list sits under
// spec). Rules whose names YAML writes as they are (plainCost) are counted without
// serialising them (at 20,000 images that serialisation cost a re-run 0.35 s);
// otherwise the whole list is serialised once and cut at its items.
func ruleCosts(rs []MirrorRule) ([]int, error) {
	costs := make([]int, 0, len(rs))
	for _, r := range rs {
		c, ok := plainCost(r)
		if !ok {
			break
		}
		costs = append(costs, c)
	}
	if len(costs) == len(rs) {
		return costs, nil
	}
	return yamlCosts(rs)
}

// yamlCosts is ruleCosts by serialising the rules.
func yamlCosts(rs []MirrorRule) ([]int, error) {
	data, err := yaml.Marshal(rs)
	if err != nil {
		return nil, err
	}
	costs := make([]int, 0, len(rs))
	for len(data) > 0 {
		// An item starts with "- " at column 0 and runs to the next such line.
		end := bytes.Index(data[1:], []byte("\n- "))
		if end < 0 {
			end = len(data)
		} else {
			end += 2 // include the newline
		}
		item := data[:end]
		costs = append(costs, len(item)+2*bytes.Count(item, []byte("\n")))
		data = data[end:]
	}
	if len(costs) != len(rs) {
		// Not the layout expected: fall back to one serialisation per rule.
		costs = costs[:0]
		for _, r := range rs {
			item, err := yaml.Marshal([]MirrorRule{r})
			if err != nil {
				return nil, err
			}
			costs = append(costs, len(item)+2*bytes.Count(item, []byte("\n")))
		}
	}
	return costs, nil
}

// plainCost is ruleCosts' count for r when every name in it is one YAML
// writes unquoted: lower-case letters, digits and "._/:-", starting with a
// letter or a digit and holding a "/" (so it cannot read as a number, a
// boolean or null). Its item is then "- mirrors:", a "  - MIRROR" line per
// mirror and "  source: SOURCE", each line two bytes more under spec.
func plainCost(r MirrorRule) (int, bool) {
	if len(r.Mirrors) == 0 || !plainName(r.Source) {
		return 0, false
	}
	n := len("- mirrors:\n") + len("  source: \n") + len(r.Source)
	for _, m := range r.Mirrors {
		if !plainName(m) {
			return 0, false
		}
		n += len("  - \n") + len(m)
	}
	return n + 2*(2+len(r.Mirrors)), true
}

// plainName reports whether YAML writes s as it is (see plainCost).
func plainName(s string) bool {
	if s == "" || !strings.Contains(s, "/") || strings.HasSuffix(s, ":") {
		return false
	}
	for i, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case i > 0 && strings.ContainsRune("._/:-", c):
		default:
			return false
		}
	}
	return true
}

func renderIDMS(name string, rs []MirrorRule) (any, []byte, error) {
	o := ImageDigestMirrorSet{APIVersion: APIVersionConfig, Kind: KindIDMS, Metadata: ObjectMeta{Name: name}}
	o.Spec.ImageDigestMirrors = nonNil(rs)
	data, err := yaml.Marshal(o)
	return o, data, err
}

func renderITMS(name string, rs []MirrorRule) (any, []byte, error) {
	o := ImageTagMirrorSet{APIVersion: APIVersionConfig, Kind: KindITMS, Metadata: ObjectMeta{Name: name}}
	o.Spec.ImageTagMirrors = nonNil(rs)
	data, err := yaml.Marshal(o)
	return o, data, err
}

func renderICSP(operator bool) renderFunc {
	return func(name string, rs []MirrorRule) (any, []byte, error) {
		o := ImageContentSourcePolicy{APIVersion: APIVersionICSP, Kind: KindICSP, Metadata: ObjectMeta{Name: name}}
		if operator {
			o.Metadata.Labels = map[string]string{operatorCatalogLabel: "true"}
		}
		o.Spec.RepositoryDigestMirrors = nonNil(rs)
		data, err := yaml.Marshal(o)
		return o, data, err
	}
}

func nonNil(rs []MirrorRule) []MirrorRule {
	if rs == nil {
		return []MirrorRule{}
	}
	return rs
}
