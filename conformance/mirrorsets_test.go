package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/containers/image/v5/docker/reference"
	"github.com/containers/image/v5/pkg/sysregistriesv2"
	"github.com/containers/image/v5/types"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// A cluster applies ImageDigestMirrorSet, ImageTagMirrorSet and
// ImageContentSourcePolicy objects by writing them into each node's
// /etc/containers/registries.conf (the machine-config operator does it), where
// CRI-O's image library (containers/image, sysregistriesv2) reads them when it
// pulls. The resolver below does the same: it writes the rules airlock generated
// into a registries.conf the way the machine-config operator translates them, asks
// sysregistriesv2 for the pull sources of each reference, and pulls (HEAD) from
// the mirrors only, the source being out of reach.

// mirrorRule is one rule of a mirror-set object.
type mirrorRule struct {
	Source             string   `json:"source"`
	Mirrors            []string `json:"mirrors"`
	MirrorSourcePolicy string   `json:"mirrorSourcePolicy"`
}

// registriesConf renders the rules of the objects under dir that a cluster of the
// given generation applies: "mirror-sets" (IDMS + ITMS, OpenShift 4.13 and later)
// or "icsp" (ImageContentSourcePolicy, before 4.13).
func registriesConf(t *testing.T, dir, generation string) (string, int) {
	t.Helper()
	type reg struct {
		mirrors         []string
		pull            map[string]string // mirror → pull-from-mirror
		blocked, digest bool
	}
	regs := map[string]*reg{}
	get := func(src string) *reg {
		if regs[src] == nil {
			regs[src] = &reg{pull: map[string]string{}}
		}
		return regs[src]
	}
	rules := 0
	for _, o := range readClusterResources(t, dir) {
		var spec struct {
			Spec struct {
				IDMS []mirrorRule `json:"imageDigestMirrors"`
				ITMS []mirrorRule `json:"imageTagMirrors"`
				ICSP []mirrorRule `json:"repositoryDigestMirrors"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(o.doc, &spec); err != nil {
			t.Fatalf("%s: %v", o.file, err)
		}
		add := func(rs []mirrorRule, pull string) {
			for _, r := range rs {
				rules++
				g := get(r.Source)
				g.blocked = g.blocked || r.MirrorSourcePolicy == "NeverContactSource"
				for _, m := range r.Mirrors {
					if _, ok := g.pull[m]; !ok {
						g.mirrors = append(g.mirrors, m)
						g.pull[m] = pull
					} else if g.pull[m] != pull {
						g.pull[m] = sysregistriesv2.MirrorAll
					}
				}
			}
		}
		switch {
		case generation == "mirror-sets" && o.kind == "ImageDigestMirrorSet":
			add(spec.Spec.IDMS, sysregistriesv2.MirrorByDigestOnly)
		case generation == "mirror-sets" && o.kind == "ImageTagMirrorSet":
			add(spec.Spec.ITMS, sysregistriesv2.MirrorByTagOnly)
		case generation == "icsp" && o.kind == "ImageContentSourcePolicy":
			add(spec.Spec.ICSP, "")
			for _, r := range spec.Spec.ICSP {
				get(r.Source).digest = true
			}
		}
	}
	var srcs []string
	for s := range regs {
		srcs = append(srcs, s)
	}
	sort.Strings(srcs)
	var b strings.Builder
	b.WriteString("unqualified-search-registries = []\n")
	for _, s := range srcs {
		g := regs[s]
		fmt.Fprintf(&b, "\n[[registry]]\n  prefix = \"\"\n  location = %s\n", strconv.Quote(s))
		if g.blocked {
			b.WriteString("  blocked = true\n")
		}
		if g.digest {
			b.WriteString("  mirror-by-digest-only = true\n")
		}
		for _, m := range g.mirrors {
			fmt.Fprintf(&b, "\n  [[registry.mirror]]\n    location = %s\n", strconv.Quote(m))
			if p := g.pull[m]; p != "" {
				fmt.Fprintf(&b, "    pull-from-mirror = %s\n", strconv.Quote(p))
			}
		}
	}
	return b.String(), rules
}

// resolver pulls references through one registries.conf.
type resolver struct {
	sys *types.SystemContext
}

func newResolver(t *testing.T, conf string) *resolver {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "registries.conf")
	if err := os.WriteFile(p, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "registries.conf.d"), 0o755); err != nil {
		t.Fatal(err)
	}
	sys := &types.SystemContext{SystemRegistriesConfPath: p, SystemRegistriesConfDirPath: filepath.Join(dir, "registries.conf.d")}
	if _, err := sysregistriesv2.GetRegistries(sys); err != nil {
		t.Fatalf("registries.conf from the generated rules is refused: %v\n%s", err, conf)
	}
	return &resolver{sys: sys}
}

// resolve returns where ref is pulled from and the manifest digest found there.
// The source registry is never contacted.
func (rs *resolver) resolve(ref string) (from, digest string, err error) {
	named, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		return "", "", err
	}
	reg, err := sysregistriesv2.FindRegistry(rs.sys, named.String())
	if err != nil {
		return "", "", err
	}
	if reg == nil {
		return "", "", fmt.Errorf("no mirror rule covers it")
	}
	srcs, err := reg.PullSourcesFromReference(named)
	if err != nil {
		return "", "", err
	}
	var tried []string
	for _, s := range srcs {
		if s.Endpoint.Location == reg.Location {
			continue // the source itself: out of reach
		}
		r, err := name.ParseReference(s.Reference.String(), name.Insecure)
		if err != nil {
			return "", "", err
		}
		d, err := remote.Head(r)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s (%v)", s.Reference, err))
			continue
		}
		return s.Reference.String(), d.Digest.String(), nil
	}
	if len(tried) == 0 {
		return "", "", fmt.Errorf("no mirror applies to it (the rules of %s do not match a reference of this form)", reg.Location)
	}
	return "", "", fmt.Errorf("no mirror has it: tried %s", strings.Join(tried, "; "))
}

// resolveServedImages resolves every image the served catalog names through the
// run's mirror sets (and, for digest references, through its ICSP) and checks that
// the mirror holds the digest airlock planned. It returns the references checked
// and how many of them are tag references (which no ICSP can redirect).
func resolveServedImages(t *testing.T, r *mirrorRun, images []string) (checked, byTag int) {
	dir := filepath.Join(r.res.WorkingDir, "cluster-resources")
	planned := map[string]string{}
	for _, im := range r.res.Plan.Images {
		planned[im.Source] = im.Digest.String()
	}
	confSets, n := registriesConf(t, dir, "mirror-sets")
	if n == 0 {
		t.Fatalf("no IDMS/ITMS rule in %s", dir)
	}
	confICSP, _ := registriesConf(t, dir, "icsp")
	sets, icsp := newResolver(t, confSets), newResolver(t, confICSP)
	for _, img := range images {
		want, ok := planned[img]
		if !ok {
			t.Errorf("the served catalog names %s, which airlock did not plan", img)
			continue
		}
		checked++
		from, got, err := sets.resolve(img)
		if err != nil {
			t.Errorf("%s through the IDMS/ITMS: %v", img, err)
		} else if got != want {
			t.Errorf("%s through the IDMS/ITMS: %s has %s, airlock mirrored %s", img, from, got, want)
		}
		_, isDigest := mustParse(t, img).(reference.Canonical)
		if !isDigest {
			byTag++
		}
		if isDigest {
			if _, got, err := icsp.resolve(img); err != nil {
				t.Errorf("%s through the ImageContentSourcePolicy: %v", img, err)
			} else if got != want {
				t.Errorf("%s through the ImageContentSourcePolicy: %s, airlock mirrored %s", img, got, want)
			}
		}
	}
	return checked, byTag
}

func mustParse(t *testing.T, ref string) reference.Named {
	n, err := reference.ParseNormalizedNamed(ref)
	if err != nil {
		t.Fatalf("%s: %v", ref, err)
	}
	return n
}

// checkCatalogRefs checks that the CatalogSource and ClusterCatalog objects of the
// run point at the rebuilt catalog: their image pulls from the mirror directly
// (catalogs get no mirror rule) and is the digest the run pushed. It returns the
// objects checked.
func checkCatalogRefs(t *testing.T, r *mirrorRun) int {
	dir := filepath.Join(r.res.WorkingDir, "cluster-resources")
	want := r.res.Catalogs[0].Digest.String()
	n := 0
	for _, o := range readClusterResources(t, dir) {
		var obj struct {
			Spec struct {
				Image  string `json:"image"`
				Source struct {
					Image struct {
						Ref string `json:"ref"`
					} `json:"image"`
				} `json:"source"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(o.doc, &obj); err != nil {
			t.Fatalf("%s: %v", o.file, err)
		}
		var ref string
		switch o.kind {
		case "CatalogSource":
			ref = obj.Spec.Image
		case "ClusterCatalog":
			ref = obj.Spec.Source.Image.Ref
		default:
			continue
		}
		n++
		nr, err := name.ParseReference(ref, name.Insecure)
		if err != nil {
			t.Errorf("%s %s: image %q: %v", o.kind, o.name, ref, err)
			continue
		}
		d, err := remote.Head(nr)
		if err != nil {
			t.Errorf("%s %s: image %s does not pull from the mirror: %v", o.kind, o.name, ref, err)
		} else if d.Digest.String() != want {
			t.Errorf("%s %s: image %s is %s, the rebuilt catalog is %s", o.kind, o.name, ref, d.Digest, want)
		}
	}
	if n < 2 {
		t.Errorf("%d CatalogSource/ClusterCatalog objects, want one of each", n)
	}
	return n
}
