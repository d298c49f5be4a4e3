package pipeline_test

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	ggvalidate "github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
)

// checkMirroredWithGGCR checks a mirror-to-mirror run at the destination with
// go-containerregistry alone, never airlock's client: every planned image is
// there by digest, validated (validate.Image or validate.Index: manifests,
// configs, children, and every layer read back and hashed against its digest
// and size), each of its tags resolves to it, and the rebuilt catalog pulled
// by tag has the digest the plan says, passes the full validation (diff IDs
// too: its layers are real tar.gz) and holds a valid catalog that names only
// mirrored images.
func checkMirroredWithGGCR(t *testing.T, res *pipeline.Result, dst *registrytest.Registry) {
	t.Helper()
	mirrored := map[string]bool{}
	for _, im := range plannedAt(t, res, dst) {
		ref, err := name.ParseReference(im.DestRepo+"@"+im.Digest.String(), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		if validateRemote(t, ref, false) != im.Digest.String() {
			continue
		}
		for _, tag := range im.Tags {
			tr, err := name.ParseReference(im.DestRepo+":"+tag, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := remote.Head(tr); err != nil || d.Digest.String() != im.Digest.String() {
				t.Errorf("tag %s: %v (%v), want %s", tr, d, err, im.Digest)
			}
		}
		mirrored[im.Source] = true
	}
	if len(res.Catalogs) != 1 {
		t.Fatalf("catalogs: %+v", res.Catalogs)
	}
	c := res.Catalogs[0]
	ref, err := name.ParseReference(c.DestRepo+":"+c.Tag, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if got := validateRemote(t, ref, true); got != c.Digest.String() {
		t.Fatalf("rebuilt catalog %s: digest %s, the plan says %s", ref, got, c.Digest)
	}
	img, err := remote.Image(ref) // the index's linux/amd64 image
	if err != nil {
		t.Fatal(err)
	}
	checkRebuiltCatalog(t, extractConfigs(t, img), mirrored)
	if len(res.ClusterResources) == 0 {
		t.Errorf("no cluster resources written")
	}
}

// checkRebuiltCatalog loads the rebuilt catalog extracted in dir: it must be
// valid and name only images that were mirrored (by source reference).
func checkRebuiltCatalog(t *testing.T, dir string, mirrored map[string]bool) {
	t.Helper()
	cat, err := fbc.LoadDir(context.Background(), dir, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Catalog(cat); err != nil {
		t.Errorf("rebuilt catalog is invalid: %v", err)
	}
	uses, _ := fbc.Images(cat)
	for _, u := range uses {
		if !mirrored[u.Image] {
			t.Errorf("rebuilt catalog names %s, which was not mirrored", u.Image)
		}
	}
}

// plannedAt returns the images of res's plan that have no plan error,
// reporting those that do and any whose destination is not under dst.
func plannedAt(t *testing.T, res *pipeline.Result, dst *registrytest.Registry) []mirror.PlanImage {
	t.Helper()
	var out []mirror.PlanImage
	for _, im := range res.Plan.Images {
		if im.Error != "" {
			t.Errorf("plan error for %s: %s", im.Source, im.Error)
			continue
		}
		if !strings.HasPrefix(im.DestRepo, dst.Host()+"/") {
			t.Errorf("%s goes to %s, not under the destination %s", im.Source, im.DestRepo, dst.Host())
		}
		out = append(out, im)
	}
	return out
}

// validateRemote reads ref with go-containerregistry, validates it and
// returns its digest ("" after reporting an error). Without full, layers are
// checked by their compressed bytes only (digest and size), not unpacked: the
// test images' layers (internal/fakeimage) are random bytes, not tar.gz.
func validateRemote(t *testing.T, ref name.Reference, full bool) string {
	t.Helper()
	var opts []ggvalidate.Option
	if !full {
		opts = append(opts, ggvalidate.Fast)
	}
	desc, err := remote.Get(ref)
	if err != nil {
		t.Errorf("%s is not at the destination: %v", ref, err)
		return ""
	}
	var imgs []v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err == nil {
			err = ggvalidate.Index(idx, opts...)
		}
		if err != nil {
			t.Errorf("index %s: %v", ref, err)
			return ""
		}
		im, err := idx.IndexManifest()
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range im.Manifests {
			img, err := idx.Image(m.Digest)
			if err != nil {
				t.Errorf("index %s, child %s: %v", ref, m.Digest, err)
				return ""
			}
			imgs = append(imgs, img)
		}
	} else {
		img, err := desc.Image()
		if err == nil {
			err = ggvalidate.Image(img, opts...)
		}
		if err != nil {
			t.Errorf("image %s: %v", ref, err)
			return ""
		}
		imgs = append(imgs, img)
	}
	for _, img := range imgs {
		if !layersMatch(t, ref, img) {
			return ""
		}
	}
	return desc.Digest.String()
}

// layersMatch reads every layer of img and checks its bytes against the
// digest and size its manifest gives.
func layersMatch(t *testing.T, ref name.Reference, img v1.Image) bool {
	t.Helper()
	m, err := img.Manifest()
	if err != nil {
		t.Errorf("%s: %v", ref, err)
		return false
	}
	ok := true
	for _, l := range m.Layers {
		layer, err := img.LayerByDigest(l.Digest)
		if err != nil {
			t.Errorf("%s layer %s: %v", ref, l.Digest, err)
			ok = false
			continue
		}
		rc, err := layer.Compressed()
		if err != nil {
			t.Errorf("%s layer %s: %v", ref, l.Digest, err)
			ok = false
			continue
		}
		h, n, err := v1.SHA256(rc)
		rc.Close()
		if err != nil || h != l.Digest || n != l.Size {
			t.Errorf("%s layer %s: %d bytes hashing to %s (%v), the manifest says %d bytes", ref, l.Digest, n, h, err, l.Size)
			ok = false
		}
	}
	return ok
}

// extractConfigs writes the catalog folder of a catalog image (its configs
// label, /configs by default) into a temporary folder and returns it.
func extractConfigs(t *testing.T, img v1.Image) string {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	configs := strings.Trim(cf.Config.Labels["operators.operatorframework.io.index.configs.v1"], "/")
	if configs == "" {
		configs = "configs"
	}
	out := t.TempDir()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	files := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p := path.Clean(strings.TrimPrefix(h.Name, "/"))
		rel, ok := strings.CutPrefix(p, configs+"/")
		if !ok || h.Typeflag != tar.TypeReg {
			continue
		}
		dst := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
		files++
	}
	if files == 0 {
		t.Fatalf("the catalog image holds no file under /%s", configs)
	}
	return out
}
