package prune

import (
	"fmt"
	"sort"
	"strings"
)

// Errors for packages the configuration names but the catalog lacks, with
// "did you mean" suggestions.

// missingPackages builds the error for packages the catalog does not have.
func (f *filterer) missingPackages(missing []string) error {
	names := make([]string, 0, len(f.src.Packages))
	for _, p := range f.src.Packages {
		names = append(names, p.Name)
	}
	msgs := make([]string, 0, len(missing))
	for _, m := range missing {
		msgs = append(msgs, fmt.Sprintf("%q%s", m, didYouMean(m, names)))
	}
	what := "package"
	if len(missing) > 1 {
		what = "packages"
	}
	cat, hint := "the catalog", "airlock list operators --catalog CATALOG"
	if f.op.Catalog != "" {
		cat, hint = "catalog "+f.op.Catalog, "airlock list operators --catalog "+f.op.Catalog
	}
	return f.errorf("%s has no %s %s: check the names with %s", cat, what, strings.Join(msgs, ", "), hint)
}

// didYouMean returns " (did you mean a, b?)" with the names closest to s, or "".
func didYouMean(s string, names []string) string {
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	ls := strings.ToLower(s)
	for _, n := range names {
		ln := strings.ToLower(n)
		d := editDistance(ls, ln)
		limit := max(1, len(s)/3)
		if (d <= limit && d < len(ls)) || (len(ls) >= 3 && (strings.Contains(ln, ls) || strings.Contains(ls, ln))) {
			cands = append(cands, cand{n, d})
		}
	}
	if len(cands) == 0 {
		return ""
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].d != cands[j].d {
			return cands[i].d < cands[j].d
		}
		return cands[i].name < cands[j].name
	})
	if len(cands) > 3 {
		cands = cands[:3]
	}
	out := make([]string, len(cands))
	for i, c := range cands {
		out[i] = c.name
	}
	return " (did you mean " + strings.Join(out, ", ") + "?)"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
