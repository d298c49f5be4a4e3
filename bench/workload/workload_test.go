package workload_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/bench/workload"
	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

func tiny(t *testing.T) *workload.Workload {
	t.Helper()
	o, err := workload.Preset("tiny")
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestPresets(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		tags, repos, indexes int
		minBytes, maxBytes   int64
	}{
		{"tiny", 5, 2, 1, 300 << 10, 500 << 10},
		{"quick", 26, 4, 2, 60_000_000, 66_000_000},
		{"catalog-quick", 40, 25, 2, 145_000_000, 155_000_000},
		{"catalog-small-images", 50, 12, 3, 4_000_000, 6_000_000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := workload.Preset(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			w, err := workload.New(o)
			if err != nil {
				t.Fatal(err)
			}
			s := w.Stats()
			if s.Tags != tc.tags || s.Repos != tc.repos || s.Indexes != tc.indexes {
				t.Errorf("got %d tags, %d repos, %d indexes; want %d, %d, %d", s.Tags, s.Repos, s.Indexes, tc.tags, tc.repos, tc.indexes)
			}
			if s.BlobBytes < tc.minBytes || s.BlobBytes > tc.maxBytes {
				t.Errorf("blob bytes %d, want %d..%d", s.BlobBytes, tc.minBytes, tc.maxBytes)
			}
		})
	}
	if _, err := workload.Preset("huge"); err == nil {
		t.Error("unknown preset accepted")
	}
}

func TestBadOptions(t *testing.T) {
	for _, o := range []workload.Options{
		{Namespace: "bench", Repos: 0, Images: 1, UniqueLayers: 1},
		{Namespace: "bench", Repos: 1, Images: 0, UniqueLayers: 1},
		{Namespace: "bench", Repos: 1, Images: 1},
		{Namespace: "bench", Repos: 1, Images: 1, BaseLayers: 1},
		{Namespace: "/bench", Repos: 1, Images: 1, UniqueLayers: 1},
		{Namespace: "bench", Repos: 1, Images: 1, UniqueLayers: 1, UniqueBytes: -1},
	} {
		if _, err := workload.New(o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
}

func TestDeterministicAndConsistent(t *testing.T) {
	a, b := tiny(t), tiny(t)
	ba, bb := a.Blobs(), b.Blobs()
	if len(ba) != len(bb) {
		t.Fatalf("%d vs %d blobs", len(ba), len(bb))
	}
	for i := range ba {
		if ba[i].Digest != bb[i].Digest || ba[i].Size != bb[i].Size {
			t.Fatalf("blob %d differs: %s vs %s", i, ba[i].Digest, bb[i].Digest)
		}
		// The content matches the digest and size.
		r := ba[i].Open()
		v := ba[i].Digest.Verifier()
		n, err := io.Copy(v, r)
		r.Close()
		if err != nil || n != ba[i].Size || !v.Verified() {
			t.Errorf("blob %s: %d bytes (want %d), verified %v, %v", ba[i].Digest, n, ba[i].Size, v.Verified(), err)
		}
	}
	// Base layers are shared: fewer unique blobs than layer references.
	refs := 0
	for _, m := range a.Manifests() {
		if len(m.Children) == 0 {
			refs += 1 + len(m.Layers)
		}
	}
	if refs <= len(ba) {
		t.Errorf("%d blob references for %d unique blobs: base layers are not shared", refs, len(ba))
	}
}

func TestPushAndCatalog(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	w := tiny(t)
	catRef, err := w.AddCatalog(reg.Host())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.AddCatalog(reg.Host()); err == nil {
		t.Error("second AddCatalog accepted")
	}
	st, err := w.Push(ctx, workload.PushOptions{Registry: reg.Host(), Parallel: 4})
	if err != nil {
		t.Fatal(err)
	}
	s := w.Stats()
	if st.Blobs != int64(s.Blobs) {
		t.Errorf("uploaded %d blobs, want each of the %d once", st.Blobs, s.Blobs)
	}
	if st.Mounts == 0 {
		t.Error("no mounts: shared base layers should be mounted into the other repositories")
	}
	if st.Bytes != s.BlobBytes {
		t.Errorf("sent %d bytes, want %d", st.Bytes, s.BlobBytes)
	}
	c := reg.Counts()
	if c.BlobsCommitted != int64(s.Blobs) || c.BytesUploaded != s.BlobBytes {
		t.Errorf("registry committed %d blobs, %d bytes; want %d, %d", c.BlobsCommitted, c.BytesUploaded, s.Blobs, s.BlobBytes)
	}

	// Every tag pulls and validates with go-containerregistry.
	for _, tag := range w.Tags {
		ref, err := name.ParseReference(tag.Ref(reg.Host()), name.Insecure)
		if err != nil {
			t.Fatal(err)
		}
		desc, err := remote.Get(ref)
		if err != nil {
			t.Fatalf("%s: %v", ref, err)
		}
		if digest.Digest(desc.Digest.String()) != tag.Manifest.Digest {
			t.Errorf("%s: digest %s, want %s", ref, desc.Digest, tag.Manifest.Digest)
		}
		if desc.MediaType.IsIndex() {
			idx, err := desc.ImageIndex()
			if err != nil {
				t.Fatal(err)
			}
			im, err := idx.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Manifests) != 2 {
				t.Errorf("%s: %d platforms, want 2", ref, len(im.Manifests))
			}
			for _, d := range im.Manifests {
				img, err := idx.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				checkImage(t, ref.String()+"@"+d.Digest.String(), img)
			}
		} else {
			img, err := desc.Image()
			if err != nil {
				t.Fatal(err)
			}
			checkImage(t, ref.String(), img)
		}
	}

	// A second push with SkipExisting sends nothing.
	reg.Reset()
	st2, err := w.Push(ctx, workload.PushOptions{Registry: reg.Host(), SkipExisting: true})
	if err != nil {
		t.Fatal(err)
	}
	if st2.Blobs != 0 || st2.Bytes != 0 || st2.Manifests != 0 || reg.Counts().BlobsCommitted != 0 {
		t.Errorf("re-push sent %+v", st2)
	}

	// The catalog names every tag and is a valid catalog.
	if catRef != w.Catalog.Ref(reg.Host()) {
		t.Errorf("catalog ref %s vs %s", catRef, w.Catalog.Ref(reg.Host()))
	}
	catJSON, err := w.CatalogFBC()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "p", "catalog.json"), catJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	counts, err := validate.Dir(ctx, dir, nil)
	if err != nil {
		t.Fatalf("catalog invalid: %v", err)
	}
	if counts.Bundles != 1 {
		t.Errorf("%d bundles, want 1", counts.Bundles)
	}
	cat, err := fbc.LoadDir(ctx, dir, fbc.LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatal(err)
	}
	uses, _ := fbc.Images(cat)
	if len(uses) != len(w.Tags)-1 { // every tag but the catalog itself
		t.Errorf("catalog names %d images, want %d", len(uses), len(w.Tags)-1)
	}
}

func TestPushErrors(t *testing.T) {
	w := tiny(t)
	if _, err := w.Push(context.Background(), workload.PushOptions{}); err == nil {
		t.Error("push without a registry accepted")
	}
	reg := registrytest.Start(t)
	host := reg.Host()
	reg.Stop()
	if _, err := w.Push(context.Background(), workload.PushOptions{Registry: host}); err == nil {
		t.Error("push to a stopped registry succeeded")
	}
}

// checkImage pulls every layer of img, checks its digest and that the
// config's diff IDs are the digests of the uncompressed layers.
func checkImage(t *testing.T, what string, img v1.Image) {
	t.Helper()
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatalf("%s: config: %v", what, err)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != len(cf.RootFS.DiffIDs) {
		t.Fatalf("%s: %d layers, %d diff IDs", what, len(layers), len(cf.RootFS.DiffIDs))
	}
	for i, l := range layers {
		d, _ := l.Digest()
		rc, err := l.Compressed()
		if err != nil {
			t.Fatal(err)
		}
		v := digest.Digest(d.String()).Verifier()
		_, err = io.Copy(v, rc)
		rc.Close()
		if err != nil || !v.Verified() {
			t.Errorf("%s: layer %s does not match its digest (%v)", what, d, err)
		}
		u, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		dv := digest.Digest(cf.RootFS.DiffIDs[i].String()).Verifier()
		_, err = io.Copy(dv, u)
		u.Close()
		if err != nil || !dv.Verified() {
			t.Errorf("%s: layer %d is not a gzip stream of its diff ID %s (%v)", what, i, cf.RootFS.DiffIDs[i], err)
		}
	}
}

// TestHeadManifests checks the no-op floor client: one HEAD per tag, every
// one found after a push, and a missing manifest (another prefix) an error.
func TestHeadManifests(t *testing.T) {
	reg := registrytest.Start(t)
	ctx := context.Background()
	w := tiny(t)
	if _, err := w.Push(ctx, workload.PushOptions{Registry: reg.Host(), Parallel: 4}); err != nil {
		t.Fatal(err)
	}
	st, err := w.HeadManifests(ctx, workload.PushOptions{Registry: reg.Host(), Parallel: 4}, "")
	if err != nil {
		t.Fatal(err)
	}
	if st.Requests != int64(len(w.Tags)) {
		t.Errorf("%d requests for %d tags, want one each", st.Requests, len(w.Tags))
	}
	if _, err := w.HeadManifests(ctx, workload.PushOptions{Registry: reg.Host(), Parallel: 4}, "elsewhere"); err == nil || !strings.Contains(err.Error(), "is not in") {
		t.Errorf("missing manifests: %v", err)
	}
}
