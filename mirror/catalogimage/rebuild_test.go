package catalogimage

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/fixtures"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggcrlayout "github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// flatten returns the files of img's flattened filesystem: path → content
// (directories are left out).
func flatten(t testing.TB, img v1.Image) map[string]string {
	t.Helper()
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeDir {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		out[h.Name] = string(b)
		if h.Typeflag == tar.TypeSymlink {
			out[h.Name] = "-> " + h.Linkname
		}
	}
	return out
}

func keysWithPrefix(m map[string]string, prefix string) []string {
	var out []string
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// checkRebuiltImage checks one rebuilt single-platform image against its base.
func checkRebuiltImage(t *testing.T, base, img v1.Image, arch string) {
	t.Helper()
	if err := mirrortest.ValidateImage(img); err != nil {
		t.Fatalf("rebuilt image does not validate: %v", err)
	}
	files := flatten(t, img)
	if got, want := keysWithPrefix(files, "configs/"), []string{"configs/foo/catalog.json"}; !reflect.DeepEqual(got, want) {
		t.Errorf("configs in the rebuilt image = %v, want %v", got, want)
	}
	want, _ := os.ReadFile("testdata/catalog/pruned/foo/catalog.json")
	if files["configs/foo/catalog.json"] != string(want) {
		t.Errorf("configs/foo/catalog.json differs from the pruned catalog")
	}
	if got := keysWithPrefix(files, "tmp/cache"); len(got) != 0 {
		t.Errorf("stale cache left in the image: %v", got)
	}
	if files["bin/opm"] != "opm binary for "+arch || files["etc/passwd"] == "" || files["other/ignored.json"] == "" {
		t.Errorf("base files lost: bin/opm=%q", files["bin/opm"])
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	bcfg, _ := base.ConfigFile()
	if !reflect.DeepEqual(cfg.Config.Cmd, []string{"serve", "/configs"}) {
		t.Errorf("Cmd = %q", cfg.Config.Cmd)
	}
	if !reflect.DeepEqual(cfg.Config.Entrypoint, []string{"/bin/opm"}) {
		t.Errorf("Entrypoint = %q", cfg.Config.Entrypoint)
	}
	if !reflect.DeepEqual(cfg.Config.Labels, bcfg.Config.Labels) {
		t.Errorf("Labels = %v, want %v", cfg.Config.Labels, bcfg.Config.Labels)
	}
	wantCreated := bcfg.Created.Time
	if wantCreated.IsZero() {
		wantCreated = rebuildEpoch
	}
	if cfg.Architecture != arch || !cfg.Created.Equal(wantCreated) || !cfg.History[len(cfg.History)-1].Created.Equal(wantCreated) {
		t.Errorf("Architecture=%s Created=%v", cfg.Architecture, cfg.Created)
	}
	if n := len(cfg.History); n == 0 || !strings.Contains(cfg.History[n-1].CreatedBy, "pruned catalog") || !strings.Contains(cfg.History[n-1].CreatedBy, "/tmp/cache") {
		t.Errorf("History = %+v", cfg.History)
	}
	bmt, _ := base.MediaType()
	mt, _ := img.MediaType()
	if mt != bmt {
		t.Errorf("media type %s, base %s", mt, bmt)
	}
	layers, _ := img.Layers()
	blayers, _ := base.Layers()
	if len(layers) != len(blayers)+1 {
		t.Fatalf("%d layers, want %d", len(layers), len(blayers)+1)
	}
	lmt, _ := layers[len(layers)-1].MediaType()
	if (bmt == types.DockerManifestSchema2) != (lmt == types.DockerLayer) {
		t.Errorf("layer media type %s for a %s image", lmt, bmt)
	}
	// The new layer: fixed times, owner 0, fixed modes.
	rc, err := layers[len(layers)-1].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Uid != 0 || h.Gid != 0 || h.ModTime.Unix() != 0 {
			t.Errorf("%s: uid %d gid %d mtime %v", h.Name, h.Uid, h.Gid, h.ModTime)
		}
		if (h.Typeflag == tar.TypeDir && h.Mode != 0o755) || (h.Typeflag == tar.TypeReg && h.Mode != 0o644) {
			t.Errorf("%s: mode %o", h.Name, h.Mode)
		}
	}
	wantNames := []string{"configs/", "configs/.wh..wh..opq", "configs/foo/", "configs/foo/catalog.json", "tmp/.wh.cache"}
	if !reflect.DeepEqual(names, wantNames) {
		t.Errorf("layer entries = %v, want %v", names, wantNames)
	}
}

func TestRebuildCatalog(t *testing.T) {
	reg := startRegistry(t)
	ctx := context.Background()
	for kind, mt := range map[string]types.MediaType{"oci": types.OCIManifestSchema1, "docker": types.DockerManifestSchema2} {
		t.Run(kind, func(t *testing.T) {
			img := testCatalogImage(t, mt, "amd64")
			ref := reg.Host() + "/ns/rebuild-" + kind + ":v4.18"
			push(t, ref, img)
			work := t.TempDir()
			fc, err := Fetch(ctx, ref, work, FetchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			dir1 := filepath.Join(work, "rebuilt1")
			r1, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: dir1, Logger: discardLogger()})
			if err != nil {
				t.Fatal(err)
			}
			if r1.Image == nil || r1.Index != nil || r1.Tag != "v4.18" || r1.MediaType != mt {
				t.Fatalf("Rebuilt = %+v", r1)
			}
			if r1.Digest.String() != mirrortest.DigestOf(t, r1.Image) {
				t.Fatalf("Digest %s != image digest %s", r1.Digest, mirrortest.DigestOf(t, r1.Image))
			}
			checkRebuiltImage(t, img, r1.Image, "amd64")

			// Deterministic: another layout, another run, same digest.
			r2, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: filepath.Join(work, "rebuilt2")})
			if err != nil {
				t.Fatal(err)
			}
			if r2.Digest != r1.Digest || r2.LayerDigest != r1.LayerDigest {
				t.Fatalf("second rebuild gave %s (layer %s), first %s (layer %s)", r2.Digest, r2.LayerDigest, r1.Digest, r1.LayerDigest)
			}
			// Again into the same layout: same digest, layout still valid.
			r3, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: dir1})
			if err != nil || r3.Digest != r1.Digest {
				t.Fatalf("rebuild into the same layout: %v %v", r3, err)
			}
			// A different pruned catalog into the same layout replaces the tag and
			// removes the stale blobs.
			r4, err := Rebuild(ctx, fc, "testdata/catalog/full", RebuildOptions{LayoutDir: dir1})
			if err != nil {
				t.Fatal(err)
			}
			if r4.Digest == r1.Digest {
				t.Fatal("a different catalog gave the same digest")
			}
			idx, err := ggcrlayout.ImageIndexFromPath(dir1)
			var im *v1.IndexManifest
			if err == nil {
				im, err = idx.IndexManifest()
			}
			if err != nil || len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != r4.Digest.String() {
				t.Fatalf("layout index after replace: %+v %v", im, err)
			}
			if _, err := os.Stat(filepath.Join(dir1, "blobs", "sha256", r1.Digest.Encoded())); !os.IsNotExist(err) {
				t.Errorf("stale manifest blob kept: %v", err)
			}
			if err := mirrortest.ValidateImage(r4.Image); err != nil {
				t.Fatal(err)
			}

			// The rebuilt catalog fetched back gives the pruned catalog exactly.
			fb, err := Fetch(ctx, "oci://"+dir1, t.TempDir(), FetchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := listFiles(t, fb.ConfigsDir); !reflect.DeepEqual(got, []string{"bar/catalog.yaml", "foo/catalog.json"}) {
				t.Errorf("refetched %v", got)
			}
		})
	}
}

func TestRebuildCatalogIndex(t *testing.T) {
	reg := startRegistry(t)
	ctx := context.Background()
	for kind, mt := range map[string]types.MediaType{"oci": types.OCIImageIndex, "docker": types.DockerManifestList} {
		t.Run(kind, func(t *testing.T) {
			idx := testIndex(t, mt)
			ref := reg.Host() + "/ns/multi-" + kind + "@" + mirrortest.DigestOf(t, idx)
			pushIndex(t, ref, idx)
			fc, err := Fetch(ctx, ref, t.TempDir(), FetchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			work := t.TempDir()
			r, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: work, Tag: "pruned"})
			if err != nil {
				t.Fatal(err)
			}
			if r.Index == nil || r.MediaType != mt || r.Tag != "pruned" {
				t.Fatalf("Rebuilt = %+v", r)
			}
			if err := mirrortest.ValidateIndex(r.Index); err != nil {
				t.Fatal(err)
			}
			im, err := r.Index.IndexManifest()
			if err != nil {
				t.Fatal(err)
			}
			if len(im.Manifests) != 2 {
				t.Fatalf("%d manifests, want 2 (attestation dropped)", len(im.Manifests))
			}
			bim, _ := idx.IndexManifest()
			for i, d := range im.Manifests {
				if !reflect.DeepEqual(d.Platform, bim.Manifests[i].Platform) {
					t.Errorf("manifest %d platform %v, want %v", i, d.Platform, bim.Manifests[i].Platform)
				}
				img, err := r.Index.Image(d.Digest)
				if err != nil {
					t.Fatal(err)
				}
				base, _ := idx.Image(bim.Manifests[i].Digest)
				checkRebuiltImage(t, base, img, d.Platform.Architecture)
			}
			r2, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: t.TempDir(), Tag: "pruned"})
			if err != nil || r2.Digest != r.Digest {
				t.Fatalf("second rebuild: %v, %v (want %s)", r2, err, r.Digest)
			}
		})
	}
}

func TestRebuildCatalogErrors(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "layout")
	mirrortest.WriteLayout(t, dir, func(p ggcrlayout.Path) {
		if err := p.AppendImage(testCatalogImage(t, types.OCIManifestSchema1, "amd64")); err != nil {
			t.Fatal(err)
		}
	})
	fc, err := Fetch(ctx, "oci://"+dir, t.TempDir(), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Rebuild(ctx, nil, "testdata/catalog/pruned", RebuildOptions{LayoutDir: t.TempDir()}); err == nil {
		t.Error("nil base accepted")
	}
	if _, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{}); err == nil {
		t.Error("missing layout dir accepted")
	}
	if _, err := Rebuild(ctx, fc, "testdata/nope", RebuildOptions{LayoutDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "testdata/nope") {
		t.Errorf("missing pruned dir: %v", err)
	}
	pr := t.TempDir()
	if err := os.Symlink("/etc/passwd", filepath.Join(pr, "link.json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Rebuild(ctx, fc, pr, RebuildOptions{LayoutDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("symlink in pruned dir: %v", err)
	}
}

func TestCacheDirsAndServeCommand(t *testing.T) {
	tests := []struct {
		ep, cmd   []string
		label     string
		wantWipe  []string
		wantEP    []string
		wantServe []string
		wantErr   bool
	}{
		{[]string{"/bin/opm"}, []string{"serve", "/configs", "--cache-dir=/tmp/cache"}, "/configs", []string{"/tmp/cache"}, []string{"/bin/opm"}, []string{"serve", "/configs"}, false},
		{[]string{"/bin/opm"}, []string{"serve", "/configs", "--cache-dir", "/var/cache/opm/"}, "/configs", []string{"/tmp/cache", "/var/cache/opm"}, []string{"/bin/opm"}, []string{"serve", "/configs"}, false},
		{nil, []string{"/bin/opm", "serve", "/catalog"}, "/catalog", []string{"/tmp/cache"}, nil, []string{"/bin/opm", "serve", "/catalog"}, false},
		{nil, nil, "/configs", []string{"/tmp/cache"}, nil, []string{"serve", "/configs"}, false},
		{nil, []string{"--cache-dir=/configs/cache", "--cache-dir=relative", "--cache-dir=/"}, "/configs", []string{"/tmp/cache"}, nil, []string{"serve", "/configs"}, false},
		// The whole command in the entrypoint: cut back to the binary.
		{[]string{"/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache"}, nil, "/configs", []string{"/tmp/cache"}, []string{"/bin/opm"}, []string{"serve", "/configs"}, false},
		{[]string{"/bin/opm", "serve", "/configs"}, []string{"--cache-dir=/var/cache"}, "/configs", []string{"/tmp/cache", "/var/cache"}, []string{"/bin/opm"}, []string{"serve", "/configs"}, false},
		// A shell: airlock cannot rewrite it safely.
		{[]string{"/bin/sh", "-c"}, []string{"exec /bin/opm serve /configs --cache-dir=/var/cache"}, "/configs", []string{"/tmp/cache"}, nil, nil, true},
	}
	for i, tc := range tests {
		cfg := &v1.ConfigFile{Config: v1.Config{Entrypoint: tc.ep, Cmd: tc.cmd}}
		if got := cacheDirs(cfg, tc.label); !reflect.DeepEqual(got, tc.wantWipe) {
			t.Errorf("%d: cacheDirs = %v, want %v", i, got, tc.wantWipe)
		}
		ep, cmd, err := serveCommand(cfg.Config, tc.label)
		if (err != nil) != tc.wantErr {
			t.Errorf("%d: serveCommand error %v, want error %v", i, err, tc.wantErr)
			continue
		}
		if !reflect.DeepEqual(ep, tc.wantEP) || !reflect.DeepEqual(cmd, tc.wantServe) {
			t.Errorf("%d: serveCommand = %v %v, want %v %v", i, ep, cmd, tc.wantEP, tc.wantServe)
		}
	}
}

func BenchmarkRebuildLayer(b *testing.B) {
	dir := fixtures.Require(b, "real-catalogs/community-operators-prod-v4.21/catalogs/v4.21")
	ctx := context.Background()
	for b.Loop() {
		if _, err := writeCatalogTarGzN(ctx, io.Discard, dir, "/configs", []string{"/tmp/cache"}, 2*runtime.GOMAXPROCS(0)); err != nil {
			b.Fatal(err)
		}
	}
}

// TestRebuiltCatalogPushedWithCopyEngine runs the catalog path end to end: fetch
// from a registry, rebuild, push the layout with the copy engine to the destination
// name mirror.CatalogDestination gives, fetch the result back.
func TestRebuiltCatalogPushedWithCopyEngine(t *testing.T) {
	ctx := context.Background()
	src := startRegistry(t)
	dst := startRegistry(t)
	idx := testIndex(t, types.OCIImageIndex)
	ref := src.Host() + "/redhat/redhat-operator-index:v4.18"
	pushIndex(t, ref, idx)
	fc, err := Fetch(ctx, ref, t.TempDir(), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: filepath.Join(t.TempDir(), "rebuilt")})
	if err != nil {
		t.Fatal(err)
	}
	// The destination mirror.CatalogDestination gives this catalog with
	// --max-nested-paths 2 (package mirror tests the naming itself).
	dest := struct{ Repository, Tag string }{dst.Host() + "/mirror/redhat-redhat-operator-index", "v4.18"}
	ls, err := layout.NewSource(r.LayoutDir)
	if err != nil {
		t.Fatal(err)
	}
	jobs := []transfer.Job{{Source: fc.Source.Repository(), Digest: r.Digest, Dest: dest.Repository, Tags: []string{dest.Tag}}}
	rep, err := transfer.Copy(ctx, ls, registry.New(registry.Options{}), jobs, transfer.Options{Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if f := rep.Failed(); len(f) != 0 {
		t.Fatalf("copy failed: %+v", f)
	}
	back, err := Fetch(ctx, dest.Repository+":"+dest.Tag, t.TempDir(), FetchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest != r.Digest {
		t.Fatalf("pushed catalog has digest %s, rebuilt %s", back.Digest, r.Digest)
	}
	if got := listFiles(t, back.ConfigsDir); !reflect.DeepEqual(got, []string{"foo/catalog.json"}) {
		t.Fatalf("pushed catalog holds %v", got)
	}
	// Same inputs, new run: same digest, nothing to send.
	r2, err := Rebuild(ctx, fc, "testdata/catalog/pruned", RebuildOptions{LayoutDir: filepath.Join(t.TempDir(), "again")})
	if err != nil || r2.Digest != r.Digest {
		t.Fatalf("rebuild again: %v %v", r2, err)
	}
	ls2, _ := layout.NewSource(r2.LayoutDir)
	rep, err = transfer.Copy(ctx, ls2, registry.New(registry.Options{}), jobs, transfer.Options{Logger: discardLogger()})
	if err != nil || len(rep.Failed()) != 0 {
		t.Fatalf("second copy: %v %+v", err, rep)
	}
	if rep.BlobsSent != 0 {
		t.Fatalf("second copy sent %d blobs, want 0", rep.BlobsSent)
	}
}
