package imageset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// A pinned configuration is the configuration a run used with every catalog and
// additional image pinned by digest (REPO:TAG@DIGEST: the copy is made by digest,
// the destination keeps the tag), so that running it again selects exactly the
// same images even after the source tags moved on. The bundles the run selected
// are named in comments under each catalog: the pinned catalog makes the
// selection itself the same, and naming them as packages[].bundles would change
// what the entries mean (heads, ranges, dependencies).

// CatalogPin is what a run found for one operators[] catalog.
type CatalogPin struct {
	// Digest is the digest the catalog reference resolved to.
	Digest string
	// Bundles are the bundles the run selected, by package (dependencies
	// included).
	Bundles map[string][]string
}

// Pins are the digests a run resolved: catalogs and additional images by the
// reference the configuration names.
type Pins struct {
	Catalogs map[string]CatalogPin
	Images   map[string]string
	// Releases are the digests of the payloads mirror.platform.release
	// names, by that reference.
	Releases map[string]string
	// Charts are the chart versions a run mirrored, by "REPOSITORY/CHART"
	// (helm.repositories[].name and charts[].name): each chart entry is
	// pinned to the newest of them its version accepts, and a repository
	// that lists no charts gets one entry per chart version mirrored.
	Charts map[string][]string
}

// PinnedConfig is a configuration pinned by Pin, ready to be written.
type PinnedConfig struct {
	Config *ImageSetConfiguration
	// bundles are the selected bundles of each operators[] entry, by package.
	bundles []map[string][]string
}

// Pin returns a copy of cfg with every catalog, additional image and the
// release payload (platform.release; channels stay as written) pinned to the
// digest pins names for it. A reference already pinned by digest, and an
// oci:// catalog (a local folder), stay as they are. A docker reference that
// pins does not name is an error: the pinned file would not reproduce the run.
func Pin(cfg *ImageSetConfiguration, pins Pins) (*PinnedConfig, error) {
	b, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	out := &ImageSetConfiguration{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	out.APIVersion, out.Kind = APIVersion, KindImageSetConfiguration
	pc := &PinnedConfig{Config: out}
	var missing []string
	for i := range out.Mirror.Operators {
		op := &out.Mirror.Operators[i]
		p, ok := pins.Catalogs[op.Catalog]
		pc.bundles = append(pc.bundles, p.Bundles)
		if op.IsOCI() {
			continue
		}
		if !ok || p.Digest == "" {
			missing = append(missing, "catalog "+op.Catalog)
			continue
		}
		op.Catalog = pinRef(op.Catalog, p.Digest)
	}
	blocked, err := out.BlockedPatterns()
	if err != nil {
		return nil, err
	}
	for i := range out.Mirror.AdditionalImages {
		im := &out.Mirror.AdditionalImages[i]
		d, ok := pins.Images[im.Ref()]
		if (!ok || d == "") && matchesAny(blocked, im.Ref()) {
			continue // left out by blockedImages, as it will be again
		}
		if !ok || d == "" {
			missing = append(missing, "additional image "+im.Name)
			continue
		}
		im.Name = pinRef(im.Name, d)
	}
	if p := out.Mirror.Platform; p != nil && p.Release != "" {
		if d := pins.Releases[p.Release]; d != "" {
			p.Release = pinRef(p.Release, d)
		} else {
			missing = append(missing, "release "+p.Release)
		}
	}
	pinCharts(out.Mirror.Helm, pins.Charts)
	if len(missing) > 0 {
		return nil, fmt.Errorf("no digest for %s: the pinned configuration would not reproduce the run", strings.Join(missing, ", "))
	}
	return pc, nil
}

func matchesAny(res []*regexp.Regexp, s string) bool {
	for _, re := range res {
		if re.MatchString(s) {
			return true
		}
	}
	return false
}

// pinRef returns ref pinned to digest d: REPO:TAG@d (":latest" for a reference
// without tag, as it was mirrored), or ref itself when it has a digest.
func pinRef(ref, d string) string {
	if strings.Contains(ref, "@") {
		return ref
	}
	if last := ref[strings.LastIndex(ref, "/")+1:]; !strings.Contains(last, ":") {
		ref += ":latest"
	}
	return ref + "@" + d
}

// YAML writes the pinned configuration in the mirror.openshift.io/v2alpha1
// format (it loads with Load), with a header saying what it is and, under each
// catalog, the bundles the run selected.
func (pc *PinnedConfig) YAML(header string) ([]byte, error) {
	js, err := json.Marshal(pc.Config)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	blockStyle(&doc)
	root := doc.Content[0]
	root.HeadComment = header
	if ops := mapValue(mapValue(root, "mirror"), "operators"); ops != nil {
		for i, op := range ops.Content {
			if i < len(pc.bundles) {
				if c := bundleComment(pc.bundles[i]); c != "" {
					op.HeadComment = c
				}
			}
		}
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// bundleComment names the selected bundles, one package a line.
func bundleComment(bundles map[string][]string) string {
	if len(bundles) == 0 {
		return ""
	}
	pkgs := make([]string, 0, len(bundles))
	for p := range bundles {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	lines := []string{"bundles the run selected from this catalog (dependencies included):"}
	for _, p := range pkgs {
		bs := slices.Clone(bundles[p])
		slices.Sort(bs)
		lines = append(lines, fmt.Sprintf("  %s: %s", p, strings.Join(slices.Compact(bs), ", ")))
	}
	return strings.Join(lines, "\n")
}

// blockStyle turns the flow style and quoting of a document read from JSON into
// block style with plain scalars (quoted again by the encoder where needed).
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

// pinCharts sets each repository chart's version to the one the run
// mirrored (the chart archive is checked against its index digest, so the
// version names one archive). A chart the run did not mirror keeps its
// version or constraint.
func pinCharts(h *Helm, versions map[string][]string) {
	if h == nil {
		return
	}
	for i := range h.Repositories {
		r := &h.Repositories[i]
		if len(r.Charts) == 0 { // every chart: the ones mirrored, each by version
			var names []string
			for key := range versions {
				if repo, chart, ok := strings.Cut(key, "/"); ok && repo == r.Name {
					names = append(names, chart)
				}
			}
			sort.Strings(names)
			for _, n := range names {
				vs := slices.Clone(versions[r.Name+"/"+n])
				sort.Strings(vs)
				for _, v := range slices.Compact(vs) {
					r.Charts = append(r.Charts, HelmChart{Name: n, Version: v})
				}
			}
			continue
		}
		for j := range r.Charts {
			c := &r.Charts[j]
			if v := newestAccepted(c.Version, versions[r.Name+"/"+c.Name]); v != "" {
				c.Version = v
			}
		}
	}
}
