package manifests

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"
)

// This file holds an independent checker of a written folder: it parses every file back
// and checks it against the input mapping, without using the builder's internals.

var (
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// The IDMS/ITMS CRD pattern for source and mirrors (host[:port][/path]).
	mirrorSourcePattern = regexp.MustCompile(`^((?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?:\.(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]))+(?::[0-9]+)?)|(?:(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])(?::[0-9]+)))(?:/[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*)*$|^localhost(?::[0-9]+)?(?:/[a-z0-9]+(?:(?:[._]|__|[-]*)[a-z0-9]+)*)*$`)
)

// kindFiles is what the checker found, by kind: source → mirrors, and how many rules
// with that source exist across all objects of the kind.
type kindRules struct {
	mirrors map[string][]string
	count   map[string]int
}

type parsedFolder struct {
	rules          map[string]*kindRules // by kind
	catalogSources map[string]map[string]any
	clusterCats    map[string]map[string]any
	names          map[string]string // kind/name → file
}

// checkFolder parses every file under dir and returns a list of problems.
func checkFolder(dir string, images []Image, catalogs []Catalog, opts Options) []string {
	var problems []string
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	max := opts.MaxObjectBytes
	if max <= 0 {
		max = DefaultMaxObjectBytes
	}
	pf := parsedFolder{
		rules:          map[string]*kindRules{},
		catalogSources: map[string]map[string]any{},
		clusterCats:    map[string]map[string]any{},
		names:          map[string]string{},
	}
	for _, k := range []string{KindIDMS, KindITMS, KindICSP} {
		pf.rules[k] = &kindRules{mirrors: map[string][]string{}, count: map[string]int{}}
	}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		rel = filepath.ToSlash(rel)
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if rel == ReadmeName {
			if !strings.Contains(string(data), "oc apply -f .") {
				fail("%s: no oc apply command", rel)
			}
			return nil
		}
		var obj map[string]any
		if err := yaml.UnmarshalStrict(data, &obj); err != nil {
			fail("%s: does not parse: %v", rel, err)
			return nil
		}
		av, _ := obj["apiVersion"].(string)
		kind, _ := obj["kind"].(string)
		meta, _ := obj["metadata"].(map[string]any)
		name, _ := meta["name"].(string)
		spec, _ := obj["spec"].(map[string]any)
		if prev, dup := pf.names[kind+"/"+name]; dup {
			fail("%s: %s %s also in %s", rel, kind, name, prev)
		}
		pf.names[kind+"/"+name] = rel
		if !dns1123Subdomain.MatchString(name) || len(name) > 253 {
			fail("%s: name %q is not a DNS-1123 subdomain", rel, name)
		}
		if rel != name+".yaml" && rel != ICSPDir+"/"+name+".yaml" {
			fail("%s: file name does not match object name %q", rel, name)
		}
		want := map[string]string{KindIDMS: APIVersionConfig, KindITMS: APIVersionConfig, KindICSP: APIVersionICSP,
			KindCatalogSource: APIVersionOLM, KindClusterCatalog: APIVersionOLMv1}
		if want[kind] == "" || want[kind] != av {
			fail("%s: unexpected apiVersion/kind %q/%q", rel, av, kind)
			return nil
		}
		if strings.HasPrefix(rel, ICSPDir+"/") != (kind == KindICSP) {
			fail("%s: %s in the wrong folder", rel, kind)
		}
		switch kind {
		case KindIDMS, KindITMS, KindICSP:
			if len(data) > max {
				fail("%s: %d bytes, over the %d limit", rel, len(data), max)
			}
			if _, ok := meta["namespace"]; ok {
				fail("%s: cluster-scoped object has a namespace", rel)
			}
			field := map[string]string{KindIDMS: "imageDigestMirrors", KindITMS: "imageTagMirrors", KindICSP: "repositoryDigestMirrors"}[kind]
			list, _ := spec[field].([]any)
			if len(list) == 0 {
				fail("%s: empty %s", rel, field)
			}
			var prevSrc string
			for _, e := range list {
				em, _ := e.(map[string]any)
				src, _ := em["source"].(string)
				ms, _ := em["mirrors"].([]any)
				if src <= prevSrc {
					fail("%s: sources not sorted/unique at %q", rel, src)
				}
				prevSrc = src
				if !mirrorSourcePattern.MatchString(src) {
					fail("%s: source %q does not match the CRD pattern", rel, src)
				}
				var mirrors []string
				for _, m := range ms {
					s, _ := m.(string)
					if !mirrorSourcePattern.MatchString(s) {
						fail("%s: mirror %q does not match the CRD pattern", rel, s)
					}
					mirrors = append(mirrors, s)
				}
				if len(mirrors) == 0 || !sort.StringsAreSorted(mirrors) {
					fail("%s: mirrors of %q empty or unsorted: %v", rel, src, mirrors)
				}
				kr := pf.rules[kind]
				kr.count[src]++
				kr.mirrors[src] = mirrors
			}
			labels, _ := meta["labels"].(map[string]any)
			isOp := strings.Contains(name, "-operator-")
			if kind == KindICSP && isOp && labels[operatorCatalogLabel] != "true" {
				fail("%s: operator ICSP without the %s label", rel, operatorCatalogLabel)
			}
		case KindCatalogSource:
			if !dns1123Label.MatchString(name) || len(name) > 63 {
				fail("%s: CatalogSource name %q is not a DNS-1123 label", rel, name)
			}
			if meta["namespace"] != CatalogNamespace {
				fail("%s: namespace %v", rel, meta["namespace"])
			}
			if spec["sourceType"] != "grpc" {
				fail("%s: sourceType %v", rel, spec["sourceType"])
			}
			for _, f := range []string{"resourceVersion", "uid", "creationTimestamp"} {
				if _, ok := meta[f]; ok {
					fail("%s: server field metadata.%s kept", rel, f)
				}
			}
			if _, ok := obj["status"]; ok {
				fail("%s: status kept", rel)
			}
			pf.catalogSources[name] = obj
		case KindClusterCatalog:
			src, _ := spec["source"].(map[string]any)
			img, _ := src["image"].(map[string]any)
			ref, _ := img["ref"].(string)
			if src["type"] != "Image" || ref == "" {
				fail("%s: bad spec.source %v", rel, src)
			}
			if _, poll := img["pollIntervalMinutes"]; poll && strings.Contains(ref, "@") {
				fail("%s: pollIntervalMinutes with a digest reference", rel)
			}
			pf.clusterCats[name] = obj
		}
		return nil
	})
	if err != nil {
		fail("walking %s: %v", dir, err)
	}

	// Every registry image is covered by exactly one rule (the most specific source that
	// matches, as registries.conf resolves it), and that rule leads to its destination.
	for _, img := range images {
		src, err := parseRef(img.Source)
		if err != nil || img.Kind == KindCatalog {
			continue
		}
		dst, _ := parseRef(img.Destination)
		kinds := []string{KindITMS}
		if src.digest != "" {
			kinds = []string{KindIDMS, KindICSP}
		}
		for _, k := range kinds {
			kr := pf.rules[k]
			best := ""
			for s := range kr.mirrors {
				if covers(s, src.repo) && len(s) > len(best) {
					best = s
				}
			}
			if best == "" {
				fail("%s: no %s rule covers %s", img.Source, k, src.repo)
				continue
			}
			if kr.count[best] != 1 {
				fail("%s: %d %s rules with source %s", img.Source, kr.count[best], k, best)
			}
			rest := strings.TrimPrefix(src.repo, best)
			found := false
			for _, m := range kr.mirrors[best] {
				if m+rest == dst.repo {
					found = true
				}
			}
			if !found {
				fail("%s: %s rule %s → %v does not lead to %s", img.Source, k, best, kr.mirrors[best], dst.repo)
			}
			if opts.RepositoryScope && best != src.repo {
				fail("%s: repository scope asked, rule source is %s", img.Source, best)
			}
		}
	}
	// Catalog repositories get no repository-scoped rule of their own.
	imageRepos := map[string]bool{}
	for _, img := range images {
		if r, err := parseRef(img.Source); err == nil && img.Kind != KindCatalog {
			imageRepos[r.repo] = true
		}
	}
	for _, c := range catalogs {
		r, err := parseRef(c.Source)
		if err != nil || imageRepos[r.repo] {
			continue
		}
		for k, kr := range pf.rules {
			if kr.count[r.repo] > 0 {
				fail("catalog %s has a %s rule", c.Source, k)
			}
		}
	}
	// One CatalogSource and one ClusterCatalog per distinct catalog, pointing at it.
	dests := map[string]bool{}
	for _, c := range catalogs {
		img, _, err := catalogImage(c)
		if err == nil {
			dests[img] = true
		}
	}
	seen := map[string]bool{}
	for name, cs := range pf.catalogSources {
		spec := cs["spec"].(map[string]any)
		img, _ := spec["image"].(string)
		if !dests[img] {
			fail("CatalogSource %s: image %s is not a mirrored catalog", name, img)
		}
		seen[img] = true
		cc, ok := pf.clusterCats["cc-"+strings.TrimPrefix(name, "cs-")]
		if !ok {
			fail("CatalogSource %s has no ClusterCatalog", name)
			continue
		}
		if ref := cc["spec"].(map[string]any)["source"].(map[string]any)["image"].(map[string]any)["ref"]; ref != img {
			fail("ClusterCatalog for %s points at %v, want %s", name, ref, img)
		}
	}
	for d := range dests {
		if !seen[d] {
			fail("catalog %s has no CatalogSource", d)
		}
	}
	if len(pf.clusterCats) != len(pf.catalogSources) {
		fail("%d ClusterCatalogs for %d CatalogSources", len(pf.clusterCats), len(pf.catalogSources))
	}
	return problems
}
