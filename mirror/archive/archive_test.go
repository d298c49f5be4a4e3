package archive

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/syncbuf"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name       string
		chunkSize  int64
		wantChunks int // 0: at least 2
	}{
		{"one chunk", 0, 1},
		{"small chunks", 24 << 10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			imgs := testSet(1)
			m := writeArchive(t, dir, WriterOptions{ChunkSize: tc.chunkSize}, imgs)
			names := chunkFiles(t, dir)
			if tc.wantChunks > 0 && len(names) != tc.wantChunks || tc.wantChunks == 0 && len(names) < 2 {
				t.Fatalf("got %d chunks %v", len(names), names)
			}
			if _, err := os.Stat(filepath.Join(dir, stagingDirName)); !os.IsNotExist(err) {
				t.Fatalf("staging area left behind: %v", err)
			}
			limit := tc.chunkSize
			if limit == 0 {
				limit = DefaultChunkSize
			}
			for _, n := range names {
				info, _ := os.Stat(filepath.Join(dir, n))
				if info.Size() > limit {
					t.Errorf("%s is %d bytes, more than %d", n, info.Size(), limit)
				}
				// Each chunk verifies on its own.
				if _, err := VerifyChunk(ctx, filepath.Join(dir, n)); err != nil {
					t.Errorf("VerifyChunk(%s): %v", n, err)
				}
			}
			// Every blob exactly once.
			want := map[digest.Digest]bool{}
			for _, img := range imgs {
				for _, b := range img.blobs {
					want[digest.FromBytes(b)] = true
				}
				for _, c := range img.children {
					want[c.Digest] = true
				}
				want[img.top.Digest] = true
			}
			if len(m.Blobs) != len(want) {
				t.Errorf("archive holds %d blobs, want %d", len(m.Blobs), len(want))
			}
			rep, err := Verify(ctx, dir)
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if rep.Blobs != len(want) || len(rep.Chunks) != len(names) || rep.ArchiveID != m.ArchiveID {
				t.Errorf("report %+v", rep)
			}
			r, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if got := r.ArchiveManifest(); got.ArchiveID != m.ArchiveID || len(got.Images) != len(imgs) || len(got.ReliesOn) != 0 {
				t.Errorf("manifest %+v", got)
			}
			// Read everything back through the Source interface.
			var src endpoint.Source = r
			for _, img := range imgs {
				mf, err := src.Manifest(ctx, img.repo, img.tag)
				if err != nil || !bytes.Equal(mf.Raw, img.top.Raw) || mf.MediaType != img.top.MediaType || mf.Digest != img.top.Digest {
					t.Fatalf("Manifest(%s:%s) = %v, %v", img.repo, img.tag, mf.Digest, err)
				}
				for _, c := range img.children {
					mf, err := src.Manifest(ctx, img.repo, c.Digest.String())
					if err != nil || !bytes.Equal(mf.Raw, c.Raw) {
						t.Fatalf("child manifest %s: %v", c.Digest, err)
					}
				}
				for _, b := range img.blobs {
					d := endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
					rc, err := src.Blob(ctx, img.repo, d)
					if err != nil {
						t.Fatal(err)
					}
					got, err := io.ReadAll(rc)
					rc.Close()
					if err != nil || !bytes.Equal(got, b) {
						t.Fatalf("blob %s: %v", d.Digest, err)
					}
				}
			}
			if _, err := src.Manifest(ctx, "ns/app0", "nope"); !errors.Is(err, ErrNotFound) {
				t.Errorf("unknown tag: %v", err)
			}
			if _, err := src.Blob(ctx, "ns/app0", endpoint.Descriptor{Digest: digest.FromString("nope")}); !errors.Is(err, ErrNotFound) {
				t.Errorf("unknown blob: %v", err)
			}
			// Disk-to-mirror into a registry-like destination.
			dst := newMemDest()
			if err := pull(ctx, r, dst); err != nil {
				t.Fatal(err)
			}
			for _, img := range imgs {
				if ok, _ := dst.ManifestExists(ctx, img.repo, img.tag, img.top.Digest); !ok {
					t.Errorf("%s:%s not pushed", img.repo, img.tag)
				}
			}
			d, err := Describe(dir)
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			if err := d.WriteText(&buf); err != nil {
				t.Fatal(err)
			}
			for _, s := range []string{m.ArchiveID, "quay.io/ns/app0:v1", "registry.example/catalog:v1", "full archive"} {
				if !strings.Contains(buf.String(), s) {
					t.Errorf("describe output lacks %q:\n%s", s, buf.String())
				}
			}
		})
	}
}

func TestOversizedBlobGetsOwnChunk(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	var logs syncbuf.Buffer
	rng := testRNG(2)
	big := randBytes(rng, 40<<10)
	imgs := []testImage{makeImage(rng, "ns/big", "v1", big, randBytes(rng, 1000)), makeImage(rng, "ns/small", "v1", randBytes(rng, 2000))}
	const limit = 16 << 10
	m := writeArchive(t, dir, WriterOptions{ChunkSize: limit, Logger: slog.New(slog.NewTextHandler(&logs, nil))}, imgs)
	bigD := digest.FromBytes(big)
	var bigChunk int
	for _, b := range m.Blobs {
		if b.Digest == bigD {
			bigChunk = b.Chunk
		}
	}
	for _, b := range m.Blobs {
		if b.Chunk == bigChunk && b.Digest != bigD {
			t.Errorf("blob %s shares the oversized blob's chunk", b.Digest)
		}
	}
	for _, c := range m.Chunks {
		info, _ := os.Stat(filepath.Join(dir, c.Name))
		if c.Number != bigChunk && info.Size() > limit {
			t.Errorf("%s is %d bytes", c.Name, info.Size())
		}
	}
	if !strings.Contains(logs.String(), "larger than the archive chunk size") || !strings.Contains(logs.String(), bigD.String()) {
		t.Errorf("no warning naming the oversized blob: %s", logs.String())
	}
	if _, err := Verify(ctx, dir); err != nil {
		t.Fatal(err)
	}
}

func TestDeterministic(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(3)
	a, b := t.TempDir(), t.TempDir()
	writeArchive(t, a, WriterOptions{ChunkSize: 20 << 10}, imgs)
	// Second archive: reverse order, concurrent pushes.
	w, err := NewWriter(b, WriterOptions{ChunkSize: 20 << 10})
	if err != nil {
		t.Fatal(err)
	}
	rev := slices.Clone(imgs)
	slices.Reverse(rev)
	var wg sync.WaitGroup
	for _, img := range rev {
		wg.Add(1)
		go func() { defer wg.Done(); push(t, ctx, w, img) }()
	}
	wg.Wait()
	meta := metaFor(imgs)
	slices.Reverse(meta.Images)
	if _, err := w.Finish(ctx, meta); err != nil {
		t.Fatal(err)
	}
	na, nb := chunkFiles(t, a), chunkFiles(t, b)
	if !slices.Equal(na, nb) || len(na) < 2 {
		t.Fatalf("chunks %v vs %v", na, nb)
	}
	for _, n := range na {
		if !bytes.Equal(readFile(t, filepath.Join(a, n)), readFile(t, filepath.Join(b, n))) {
			t.Errorf("%s differs between two writes of the same content", n)
		}
	}
}

func TestIncremental(t *testing.T) {
	ctx := context.Background()
	imgs := testSet(4)
	first, second := imgs[:2], imgs
	dir1, dir2 := t.TempDir(), t.TempDir()
	statePath := filepath.Join(t.TempDir(), "ws", "archive-state.json")

	st, err := LoadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	m1 := writeArchive(t, dir1, WriterOptions{Shipped: st.Shipped()}, first)
	if err := st.Record(m1, dir1); err != nil {
		t.Fatal(err)
	}
	st, err = LoadState(statePath)
	if err != nil {
		t.Fatal(err)
	}
	shipped := st.Shipped()
	if len(shipped) != len(m1.Blobs) {
		t.Fatalf("state has %d blobs, archive 1 shipped %d", len(shipped), len(m1.Blobs))
	}
	m2 := writeArchive(t, dir2, WriterOptions{Shipped: shipped}, second)

	// Archive 2 holds no blob of archive 1 except manifests, and relies on the rest.
	in1 := map[digest.Digest]bool{}
	for _, b := range m1.Blobs {
		in1[b.Digest] = true
	}
	manifests := map[digest.Digest]bool{}
	for _, tg := range m2.Tags {
		manifests[tg.Digest] = true
	}
	for _, b := range m2.Blobs {
		if in1[b.Digest] && !manifests[b.Digest] {
			t.Errorf("archive 2 ships %s again", b.Digest)
		}
	}
	if len(m2.ReliesOn) == 0 {
		t.Fatal("archive 2 relies on nothing")
	}
	abs1, _ := filepath.Abs(dir1)
	for _, rl := range m2.ReliesOn {
		if !in1[rl.Digest] || rl.Origin.ArchiveID != m1.ArchiveID || rl.Origin.Archive != abs1 || len(rl.Repos) == 0 {
			t.Errorf("relied record %+v", rl)
		}
	}
	if _, err := Verify(ctx, dir2); err != nil {
		t.Fatal(err)
	}
	r2, err := Open(dir2)
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Close()
	if !reflect.DeepEqual(r2.ReliesOn(), m2.ReliesOn) {
		t.Error("ReliesOn differs from the manifest")
	}
	if _, err := r2.Blob(ctx, "x", endpoint.Descriptor{Digest: m2.ReliesOn[0].Digest}); !errors.Is(err, ErrReliedOn) || !strings.Contains(err.Error(), m1.ArchiveID) {
		t.Errorf("Blob of a relied-on blob: %v", err)
	}
	// A fresh destination lacks the base: the check names the blobs and archive 1.
	dst := newMemDest()
	err = r2.EnsureReliesOn(ctx, dst, nil)
	if !errors.Is(err, ErrBaseMissing) || !strings.Contains(err.Error(), m1.ArchiveID) || !strings.Contains(err.Error(), m2.ReliesOn[0].Digest.String()) {
		t.Fatalf("EnsureReliesOn on an empty destination: %v", err)
	}
	// Push archive 1, then archive 2 works.
	r1, err := Open(dir1)
	if err != nil {
		t.Fatal(err)
	}
	defer r1.Close()
	if err := pull(ctx, r1, dst); err != nil {
		t.Fatal(err)
	}
	if err := r2.EnsureReliesOn(ctx, dst, nil); err != nil {
		t.Fatalf("EnsureReliesOn after the base: %v", err)
	}
	if err := pull(ctx, r2, dst); err != nil {
		t.Fatal(err)
	}
	d, err := Describe(dir2)
	if err != nil || !d.Incremental || len(d.Bases) != 1 || d.Bases[0].ArchiveID != m1.ArchiveID {
		t.Errorf("Describe: %+v, %v", d, err)
	}
	// --since-archive gives the same shipped set as the state.
	since, _, err := SinceArchive(dir1)
	if err != nil {
		t.Fatal(err)
	}
	for dg := range shipped {
		if since[dg].ArchiveID != m1.ArchiveID {
			t.Errorf("SinceArchive lacks %s", dg)
		}
	}
	// Recording archive 1 again changes nothing.
	if err := st.Record(m1, dir1); err != nil || len(st.Archives) != 1 {
		t.Errorf("second Record: %v, %d archives", err, len(st.Archives))
	}
}

func TestWriterRefusesFinishedArchive(t *testing.T) {
	dir := t.TempDir()
	writeArchive(t, dir, WriterOptions{}, testSet(5)[:1])
	if _, err := NewWriter(dir, WriterOptions{}); !errors.Is(err, ErrArchiveExists) {
		t.Fatalf("NewWriter on a finished archive: %v", err)
	}
}

func TestPutBlobRejectsBadContent(t *testing.T) {
	ctx := context.Background()
	w, err := NewWriter(t.TempDir(), WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	good := []byte("hello")
	d := endpoint.Descriptor{Digest: digest.FromBytes(good), Size: 5}
	for _, tc := range []struct {
		name string
		d    endpoint.Descriptor
		body []byte
	}{
		{"wrong content", d, []byte("hellO")},
		{"too long", d, []byte("hello!")},
		{"too short", d, []byte("hell")},
		{"sha512", endpoint.Descriptor{Digest: digest.Digest("sha512:" + strings.Repeat("ab", 64)), Size: 5}, good},
		{"malformed", endpoint.Descriptor{Digest: "sha256:xyz", Size: 5}, good},
	} {
		// As it comes: a plain reader (the writer hashes it), a reader that
		// verifies the blob itself (the copy engine's: not hashed twice), one
		// that verifies another blob (hashed here all the same).
		for _, r := range []struct {
			how string
			r   io.Reader
		}{
			{"plain", bytes.NewReader(tc.body)},
			{"verifying", oci.NewVerifier(bytes.NewReader(tc.body), tc.d)},
			{"verifying another blob", oci.NewVerifier(bytes.NewReader(tc.body), endpoint.Descriptor{Digest: digest.FromBytes(tc.body), Size: int64(len(tc.body))})},
		} {
			if err := w.PutBlob(ctx, "r", tc.d, r.r); err == nil {
				t.Errorf("%s, %s reader: accepted", tc.name, r.how)
			}
			if ok, _ := w.BlobExists(ctx, "r", d); ok {
				t.Fatalf("%s, %s reader: a bad blob was staged", tc.name, r.how)
			}
		}
	}
	if err := w.PutBlob(ctx, "r", d, oci.NewVerifier(bytes.NewReader(good), d)); err != nil {
		t.Errorf("the good blob through a verifying reader: %v", err)
	} else if ok, _ := w.BlobExists(ctx, "r", d); !ok {
		t.Error("the good blob through a verifying reader was not staged")
	}
	if err := w.PutManifest(ctx, "r", "v1", endpoint.Manifest{Digest: digest.FromString("x"), Raw: []byte("{}")}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("manifest with a wrong digest: %v", err)
	}
	// An image whose manifest was never written makes Finish fail.
	if _, err := w.Finish(ctx, Meta{Images: []ImageRecord{{Source: "a", Digest: digest.FromString("m"), Destination: "r"}}}); err == nil || !strings.Contains(err.Error(), "never written") {
		t.Errorf("Finish with a missing image: %v", err)
	}
}

// A manifest recorded under a tag is held by its digest too (as in a
// registry), also after the writer resumes from its journal: the copy engine
// pushes an image under its tag and asks by digest on the next run.
func TestManifestUnderTagHeldByDigest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw := []byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}`)
	d := digest.FromBytes(raw)
	if err := w.PutManifest(ctx, "r", "v1", endpoint.Manifest{Digest: d, Raw: raw}); err != nil {
		t.Fatal(err)
	}
	check := func(w *Writer, when string) {
		for _, tc := range []struct {
			repo, ref string
			want      bool
		}{{"r", d.String(), true}, {"r", "v1", true}, {"r", "v2", false}, {"other", d.String(), false}} {
			if ok, err := w.ManifestExists(ctx, tc.repo, tc.ref, d); ok != tc.want || err != nil {
				t.Errorf("%s: ManifestExists(%s, %s) = %v, %v; want %v", when, tc.repo, tc.ref, ok, err, tc.want)
			}
		}
	}
	check(w, "same writer")
	w.Close()
	w2, err := NewWriter(dir, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	check(w2, "resumed writer")
}
