package workload

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
)

// CatalogPackage is the package name of the workload's catalog.
const CatalogPackage = "bench-workload"

// AddCatalog adds a bundle image and a file-based catalog image to the
// workload. The catalog has one package (CatalogPackage) with one channel and
// one bundle whose relatedImages are every tag of the workload, named in
// registry (the address the mirror will pull from). It returns the catalog
// image's reference in registry. Call it once, after New.
func (w *Workload) AddCatalog(registry string) (string, error) {
	if w.Catalog != nil {
		return "", errors.New("workload: the catalog was already added")
	}
	ns := w.Options.Namespace
	bundleLayer, err := tarGz(map[string]string{
		"manifests/bench-workload.clusterserviceversion.yaml": "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: bench-workload.v1.0.0\nspec:\n  version: 1.0.0\n",
		"metadata/annotations.yaml":                           "annotations:\n  operators.operatorframework.io.bundle.package.v1: bench-workload\n  operators.operatorframework.io.bundle.channels.v1: stable\n",
	})
	if err != nil {
		return "", err
	}
	bl := &Blob{Digest: digest.FromBytes(bundleLayer), Size: int64(len(bundleLayer)), MediaType: MediaOCILayer, data: bundleLayer}
	bundle, err := w.imageWithConfig([]*Blob{bl}, MediaOCILayer, MediaOCIConfig, MediaOCIManifest, map[string]any{
		"architecture": "amd64", "os": "linux", "created": time.Unix(0, 0).UTC().Format(time.RFC3339),
		"config": map[string]any{"Labels": map[string]string{"operators.operatorframework.io.bundle.package.v1": CatalogPackage}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []digest.Digest{diffOfGz(bundleLayer)}},
	}, "")
	if err != nil {
		return "", err
	}
	bundleTag := Tag{Repo: ns + "/workload-bundle", Tag: "v1.0.0", Manifest: bundle}

	type rel struct {
		Name  string `json:"name"`
		Image string `json:"image"`
	}
	rels := []rel{{Name: "", Image: bundleTag.Ref(registry)}}
	for _, t := range w.Tags {
		n := strings.NewReplacer("/", "-", ".", "-").Replace(strings.TrimPrefix(t.Repo, ns+"/") + "-" + t.Tag)
		rels = append(rels, rel{Name: n, Image: t.Ref(registry)})
	}
	docs := []any{
		map[string]any{"schema": "olm.package", "name": CatalogPackage, "defaultChannel": "stable"},
		map[string]any{"schema": "olm.channel", "name": "stable", "package": CatalogPackage, "entries": []map[string]string{{"name": CatalogPackage + ".v1.0.0"}}},
		map[string]any{"schema": "olm.bundle", "name": CatalogPackage + ".v1.0.0", "package": CatalogPackage, "image": bundleTag.Ref(registry),
			"properties": []any{
				map[string]any{"type": "olm.package", "value": map[string]string{"packageName": CatalogPackage, "version": "1.0.0"}},
			},
			"relatedImages": rels},
	}
	var fbc bytes.Buffer
	enc := json.NewEncoder(&fbc)
	enc.SetIndent("", "    ")
	for _, d := range docs {
		if err := enc.Encode(d); err != nil {
			return "", err
		}
	}
	catLayer, err := tarGz(map[string]string{"configs/" + CatalogPackage + "/catalog.json": fbc.String()})
	if err != nil {
		return "", err
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
		return "", err
	}
	catTag := Tag{Repo: ns + "/workload-catalog", Tag: "v1", Manifest: cat}
	w.Tags = append(w.Tags, bundleTag, catTag)
	w.Catalog = &w.Tags[len(w.Tags)-1]
	return catTag.Ref(registry), nil
}

// CatalogFBC returns the file-based catalog inside the catalog image (for tests
// and for `airlock catalog` runs on it).
func (w *Workload) CatalogFBC() ([]byte, error) {
	if w.Catalog == nil {
		return nil, errors.New("workload: no catalog: call AddCatalog")
	}
	zr, err := gzip.NewReader(bytes.NewReader(w.Catalog.Manifest.Layers[0].data))
	if err != nil {
		return nil, err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, err
		}
		if strings.HasSuffix(h.Name, "catalog.json") {
			return io.ReadAll(tr)
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
