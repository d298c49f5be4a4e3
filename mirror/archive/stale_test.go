package archive

import (
	"context"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// digestsOf returns the digests of the blobs and manifests of imgs.
func digestsOf(imgs []testImage) map[digest.Digest]bool {
	out := map[digest.Digest]bool{}
	for _, img := range imgs {
		for _, b := range img.blobs {
			out[digest.FromBytes(b)] = true
		}
		for _, c := range img.children {
			out[c.Digest] = true
		}
		out[img.top.Digest] = true
	}
	return out
}

// A failed mirror-to-disk leaves its staging area behind; the next run, with the
// failing images blocked, must ship only what its plan names: the same archive,
// byte for byte, as a clean run with that plan, and a state that records only the
// plan's blobs.
func TestStaleStagingLeftOut(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(12)
	rng := testRNG(12)
	// An older tag of ns/app0 with other content: staged, then dropped from the plan.
	oldApp0 := makeImage(rng, imgs[0].repo, "old", randBytes(rng, 5000))

	// base is an earlier archive holding imgs[1] (which shares the base layer with
	// every other image), for the incremental cases.
	baseDir := t.TempDir()
	baseState, err := LoadState(filepath.Join(t.TempDir(), "archive-state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := baseState.Record(writeArchive(t, baseDir, WriterOptions{}, imgs[1:2]), baseDir); err != nil {
		t.Fatal(err)
	}
	shipped := baseState.Shipped()

	for _, tc := range []struct {
		name  string
		opts  WriterOptions
		stale []testImage // what the failed run staged
		plan  []testImage // what the next run copies and finishes with
		// interrupt makes the failed run get as far as an interrupted Finish of
		// its whole plan (chunks written), instead of failing during the copy.
		interrupt bool
	}{
		{"single image", WriterOptions{}, imgs, imgs[:1], false},
		{"index", WriterOptions{}, imgs, imgs[4:], false},
		{"older tag in the same repository", WriterOptions{}, append(slices.Clone(imgs), oldApp0), imgs[:1], false},
		{"two of five, small chunks", WriterOptions{ChunkSize: 20 << 10}, imgs, []testImage{imgs[0], imgs[4]}, false},
		{"incremental", WriterOptions{Shipped: shipped}, imgs, imgs[:1], false},
		{"interrupted finish", WriterOptions{ChunkSize: 20 << 10}, imgs, imgs[2:3], true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			w, err := NewWriter(dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range tc.stale {
				push(t, ctx, w, img)
			}
			if tc.interrupt {
				if _, err := w.Finish(cancelWhenExists{ctx, filepath.Join(dir, ChunkName(2))}, metaFor(tc.stale)); err == nil {
					t.Fatal("interrupted Finish succeeded")
				}
			}
			w.Close() // the run failed: no Finish

			w2, err := NewWriter(dir, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, img := range tc.plan {
				push(t, ctx, w2, img)
			}
			m, err := w2.Finish(ctx, metaFor(tc.plan))
			if err != nil {
				t.Fatal(err)
			}

			clean := t.TempDir()
			want := writeArchive(t, clean, tc.opts, tc.plan)
			if m.ArchiveID != want.ArchiveID {
				t.Errorf("archive id %s, a clean run gives %s", m.ArchiveID, want.ArchiveID)
			}
			sameChunks(t, clean, dir)

			// Nothing only the stale images use is in the archive or relied on.
			inPlan := digestsOf(tc.plan)
			for _, b := range m.Blobs {
				if !inPlan[b.Digest] {
					t.Errorf("archive ships %s, which no image of the plan uses", b.Digest)
				}
			}
			for _, b := range m.ReliesOn {
				if !inPlan[b.Digest] {
					t.Errorf("archive relies on %s, which no image of the plan uses", b.Digest)
				}
			}
			for _, tg := range m.Tags {
				if !inPlan[tg.Digest] || tg.Reference == "old" {
					t.Errorf("archive has tag %s:%s of an image outside the plan", tg.Repo, tg.Reference)
				}
			}
			if len(m.Blobs) == 0 {
				t.Fatal("archive holds no blob")
			}
			if _, err := Verify(ctx, dir); err != nil {
				t.Fatal(err)
			}

			// The state records exactly the blobs a clean run ships.
			st, err := LoadState(filepath.Join(t.TempDir(), "archive-state.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := st.Record(m, dir); err != nil {
				t.Fatal(err)
			}
			var wantBlobs []digest.Digest
			for _, b := range want.Blobs {
				wantBlobs = append(wantBlobs, b.Digest)
			}
			if got := slices.Sorted(maps.Keys(st.Blobs)); !slices.Equal(got, wantBlobs) {
				t.Errorf("state records %d blobs %v, a clean run ships %d %v", len(got), got, len(wantBlobs), wantBlobs)
			}

			// disk-to-mirror of the archive gives the plan's images.
			r, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			dst := newMemDest()
			if len(m.ReliesOn) > 0 {
				rb, err := Open(baseDir)
				if err != nil {
					t.Fatal(err)
				}
				defer rb.Close()
				if err := pull(ctx, rb, dst); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.EnsureReliesOn(ctx, dst, nil); err != nil {
				t.Fatal(err)
			}
			if err := pull(ctx, r, dst); err != nil {
				t.Fatal(err)
			}
			for _, img := range tc.plan {
				if ok, _ := dst.ManifestExists(ctx, img.repo, img.tag, img.top.Digest); !ok {
					t.Errorf("%s:%s not pushed", img.repo, img.tag)
				}
			}
		})
	}
}

// Finish refuses a plan whose images were not completely written, whatever else
// the staging area holds.
func TestFinishRefusesIncompletePlan(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(13)
	app, multi := imgs[0], imgs[4]
	for _, tc := range []struct {
		name string
		// stage puts into w what the run managed to copy.
		stage func(t *testing.T, w *Writer)
		plan  []ImageRecord
		want  string
	}{
		{"manifest never written", func(t *testing.T, w *Writer) {
			push(t, ctx, w, imgs[1])
		}, metaFor([]testImage{app}).Images, "never written"},
		{"layer missing", func(t *testing.T, w *Writer) {
			for _, b := range app.blobs[:len(app.blobs)-1] {
				if err := w.PutBlob(ctx, app.repo, endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}, strings.NewReader(string(b))); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.PutManifest(ctx, app.repo, app.tag, app.top); err != nil {
				t.Fatal(err)
			}
		}, metaFor([]testImage{app}).Images, "neither written nor shipped"},
		{"child manifest missing", func(t *testing.T, w *Writer) {
			for _, b := range multi.blobs {
				if err := w.PutBlob(ctx, multi.repo, endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}, strings.NewReader(string(b))); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.PutManifest(ctx, multi.repo, multi.tag, multi.top); err != nil {
				t.Fatal(err)
			}
		}, metaFor([]testImage{multi}).Images, "never written"},
		{"tag never written", func(t *testing.T, w *Writer) {
			push(t, ctx, w, app)
		}, []ImageRecord{{Source: "quay.io/ns/app0:v2", Digest: app.top.Digest, Destination: app.repo, Tags: []string{"v1", "v2"}}}, "tag v2 was never written"},
		{"tag holds another manifest", func(t *testing.T, w *Writer) {
			push(t, ctx, w, app)
			push(t, ctx, w, testImage{repo: app.repo, tag: app.tag, blobs: imgs[1].blobs, top: imgs[1].top})
		}, metaFor([]testImage{app}).Images, "holds manifest " + imgs[1].top.Digest.String()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := NewWriter(t.TempDir(), WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			tc.stage(t, w)
			if _, err := w.Finish(ctx, Meta{Images: tc.plan}); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Finish: %v, want an error with %q", err, tc.want)
			}
		})
	}
}
