package workload

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
)

// CatalogPackage is the package name of the workload's catalog.
const CatalogPackage = "bench-workload"

// AddCatalog adds bundle images and a file-based catalog image to the
// workload (AddCatalogs) and returns the catalog's reference in registry;
// it fails when Options.Catalogs asks for more than one.
func (w *Workload) AddCatalog(registry string) (string, error) {
	if w.Options.Catalogs > 1 {
		return "", fmt.Errorf("workload: %d catalogs: use AddCatalogs", w.Options.Catalogs)
	}
	refs, err := w.AddCatalogs(registry)
	if err != nil {
		return "", err
	}
	return refs[0], nil
}

// AddCatalogs adds bundle images and file-based catalog images to the
// workload. With Options.Packages at most 1 there is one package
// (CatalogPackage) with one channel and one bundle whose relatedImages are
// every tag of the workload; with more, package p (CatalogPackage-NNN, its own
// bundle image) names the tags i with i % Packages == p, and with
// Options.SharedEvery every SharedEvery-th tag also in package p+1. Package p
// goes to catalog p % Options.Catalogs (NS/workload-catalog with one catalog,
// NS/workload-catalog-K with several). Every channel starts with
// Options.OlderBundles older bundles naming images the registry does not
// have. Images are named in registry (the address the mirror will pull
// from), by digest (Tag.Pinned) unless Options.TagRefs names them by tag
// (Tag.Ref). It returns the catalog images' references in registry. Call it
// once, after New.
func (w *Workload) AddCatalogs(registry string) ([]string, error) {
	if w.Catalog != nil {
		return nil, errors.New("workload: the catalog was already added")
	}
	ns := w.Options.Namespace
	n := max(1, w.Options.Packages)
	nc := max(1, w.Options.Catalogs)
	if nc > n {
		return nil, fmt.Errorf("workload: %d catalogs for %d packages: every catalog needs a package", nc, n)
	}
	tags := w.Tags
	files := make([]map[string]string, nc)
	for c := range files {
		files[c] = map[string]string{}
	}
	shared := w.Options.SharedEvery
	for p := range n {
		pkg, bundleRepo := CatalogPackage, ns+"/workload-bundle"
		if n > 1 {
			pkg = fmt.Sprintf("%s-%03d", CatalogPackage, p)
			bundleRepo = ns + "/" + pkg + "-bundle"
		}
		var mine []Tag
		for i, t := range tags {
			if i%n == p || (n > 1 && shared > 0 && i%shared == 0 && (i+1)%n == p) {
				mine = append(mine, t)
			}
		}
		bundleTag, err := w.bundle(pkg, bundleRepo)
		if err != nil {
			return nil, err
		}
		fbc, err := packageFBC(pkg, registry, ns, bundleTag, mine, w.Options.OlderBundles, w.Options.TagRefs)
		if err != nil {
			return nil, err
		}
		files[p%nc]["configs/"+pkg+"/catalog.json"] = fbc
		w.Tags = append(w.Tags, bundleTag)
	}
	var refs []string
	first := len(w.Tags)
	for c := range nc {
		repo := ns + "/workload-catalog"
		if nc > 1 {
			repo = fmt.Sprintf("%s-%d", repo, c)
		}
		catTag, err := w.catalogImage(files[c], repo)
		if err != nil {
			return nil, err
		}
		w.Tags = append(w.Tags, catTag)
		refs = append(refs, catTag.Ref(registry))
	}
	for i := first; i < len(w.Tags); i++ {
		w.Catalogs = append(w.Catalogs, &w.Tags[i])
	}
	w.Catalog = w.Catalogs[0]
	return refs, nil
}

// catalogImage builds the catalog image of files (the /configs tree),
// tagged v1 in repo.
func (w *Workload) catalogImage(files map[string]string, repo string) (Tag, error) {
	catLayer, err := tarGz(files)
	if err != nil {
		return Tag{}, err
	}
	cl := &Blob{Digest: digest.FromBytes(catLayer), Size: int64(len(catLayer)), MediaType: MediaOCILayer, data: catLayer}
	cat, err := w.imageWithConfig([]*Blob{cl}, MediaOCILayer, MediaOCIConfig, MediaOCIManifest, map[string]any{
		"architecture": "amd64", "os": "linux", "created": time.Unix(0, 0).UTC().Format(time.RFC3339),
		"config": map[string]any{
			"Labels":     map[string]string{CatalogLabel: "/configs"},
			"Entrypoint": []string{"/bin/opm"},
			"Cmd":        []string{"serve", "/configs", "--cache-dir=/tmp/cache"},
		},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []digest.Digest{diffOfGz(catLayer)}},
	}, "")
	if err != nil {
		return Tag{}, err
	}
	return Tag{Repo: repo, Tag: "v1", Manifest: cat}, nil
}

// bundle builds the bundle image of package pkg, tagged v1.0.0 in repo.
func (w *Workload) bundle(pkg, repo string) (Tag, error) {
	layer, err := tarGz(map[string]string{
		"manifests/" + pkg + ".clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: " + pkg + ".v1.0.0\nspec:\n  version: 1.0.0\n",
		"metadata/annotations.yaml":                        "annotations:\n  operators.operatorframework.io.bundle.package.v1: " + pkg + "\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
	})
	if err != nil {
		return Tag{}, err
	}
	bl := &Blob{Digest: digest.FromBytes(layer), Size: int64(len(layer)), MediaType: MediaOCILayer, data: layer}
	m, err := w.imageWithConfig([]*Blob{bl}, MediaOCILayer, MediaOCIConfig, MediaOCIManifest, map[string]any{
		"architecture": "amd64", "os": "linux", "created": time.Unix(0, 0).UTC().Format(time.RFC3339),
		"config": map[string]any{"Labels": map[string]string{"operators.operatorframework.io.bundle.package.v1": pkg}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []digest.Digest{diffOfGz(layer)}},
	}, "")
	if err != nil {
		return Tag{}, err
	}
	return Tag{Repo: repo, Tag: "v1.0.0", Manifest: m}, nil
}

// RefOf is how the catalog AddCatalog builds names image t in registry: by
// digest, or by tag with Options.TagRefs.
func (w *Workload) RefOf(t Tag, registry string) string { return refOf(t, registry, w.Options.TagRefs) }

func refOf(t Tag, registry string, byTag bool) string {
	if byTag {
		return t.Ref(registry)
	}
	return t.Pinned(registry)
}

// packageFBC is the catalog.json of one package: its channel "stable" of
// older bundles (v0.K.0, a replaces chain, naming images the registry does not
// have) and the head v1.0.0 naming bundle and tags, by tag with byTag, else by
// digest (the older bundles by made-up digests).
func packageFBC(pkg, registry, ns string, bundle Tag, tags []Tag, older int, byTag bool) (string, error) {
	type rel struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	}
	ref := func(t Tag) string { return refOf(t, registry, byTag) }
	gone := func(repo, tag string) string { // an older release's image, not in the registry
		if byTag {
			return registry + "/" + repo + ":" + tag
		}
		return registry + "/" + repo + "@" + digest.FromString(repo+":"+tag).String()
	}
	bundleDoc := func(version, image string, rels []rel) map[string]any {
		return map[string]any{"schema": "olm.bundle", "name": pkg + ".v" + version, "package": pkg, "image": image,
			"properties": []any{
				map[string]any{"type": "olm.package", "value": map[string]string{"packageName": pkg, "version": version}},
			},
			"relatedImages": rels}
	}
	var entries []map[string]string
	var bundles []any
	prev := ""
	for k := range older {
		v := fmt.Sprintf("0.%d.0", k)
		img := gone(bundle.Repo, "v"+v)
		rels := []rel{{Name: "", Image: img}, {Name: "operator", Image: gone(ns+"/"+pkg+"-operator", "v"+v)}}
		e := map[string]string{"name": pkg + ".v" + v}
		if prev != "" {
			e["replaces"] = prev
		}
		entries, bundles, prev = append(entries, e), append(bundles, bundleDoc(v, img, rels)), pkg+".v"+v
	}
	rels := []rel{{Name: "", Image: ref(bundle)}}
	for _, t := range tags {
		name := strings.NewReplacer("/", "-", ".", "-").Replace(strings.TrimPrefix(t.Repo, ns+"/") + "-" + t.Tag)
		rels = append(rels, rel{Name: name, Image: ref(t)})
	}
	head := map[string]string{"name": pkg + ".v1.0.0"}
	if prev != "" {
		head["replaces"] = prev
	}
	entries, bundles = append(entries, head), append(bundles, bundleDoc("1.0.0", ref(bundle), rels))
	docs := append([]any{
		map[string]any{"schema": "olm.package", "name": pkg, "defaultChannel": "stable"},
		map[string]any{"schema": "olm.channel", "name": "stable", "package": pkg, "entries": entries},
	}, bundles...)
	var fbc bytes.Buffer
	enc := json.NewEncoder(&fbc)
	enc.SetIndent("", "    ")
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return "", err
		}
	}
	return fbc.String(), nil
}

// CatalogFBC returns the file-based catalog inside the (first) catalog
// image, every package's catalog.json one after the other (for tests and for
// `airlock catalog` runs on it).
func (w *Workload) CatalogFBC() ([]byte, error) {
	if w.Catalog == nil {
		return nil, errors.New("workload: no catalog: call AddCatalog")
	}
	return CatalogFBCOf(*w.Catalog)
}

// CatalogFBCOf returns the file-based catalog inside catalog image t (one of
// Workload.Catalogs), every package's catalog.json one after the other.
func CatalogFBCOf(t Tag) ([]byte, error) {
	if len(t.Manifest.Layers) != 1 || t.Manifest.Layers[0].data == nil {
		return nil, fmt.Errorf("workload: %s:%s is not a catalog image", t.Repo, t.Tag)
	}
	zr, err := gzip.NewReader(bytes.NewReader(t.Manifest.Layers[0].data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	var out []byte
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(h.Name, "catalog.json") {
			b, err := io.ReadAll(tr)
			if err != nil {
				return nil, err
			}
			out = append(out, b...)
		}
	}
}

// tarGz builds a deterministic gzip-compressed tar of files (sorted, with
// their parent folders, mtime 0, uid 0).
func tarGz(files map[string]string) ([]byte, error) {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	dirs := map[string]bool{}
	epoch := time.Unix(0, 0).UTC()
	for _, n := range names {
		parts := strings.Split(n, "/")
		for i := 1; i < len(parts); i++ {
			d := strings.Join(parts[:i], "/") + "/"
			if !dirs[d] {
				dirs[d] = true
				if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX}); err != nil {
					return nil, err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func diffOfGz(b []byte) digest.Digest {
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return ""
	}
	h := sha256.New()
	if _, err := io.Copy(h, zr); err != nil {
		return ""
	}
	return digest.NewDigestFromBytes(digest.SHA256, h.Sum(nil))
}
