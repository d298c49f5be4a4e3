package pipeline

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/manifests"
)

// graphDataTarball is a graph-data tarball of the update service's shape
// (oc-mirror's fixture).
const graphDataTarball = "../release/graphimage/testdata/graph-data.tar.gz"

// checkGraphImage checks that dest holds the graph-data image, returns its
// digest, and that the UpdateService of res names it by that digest and the
// payloads' repository.
func checkGraphImage(t *testing.T, what string, res *Result, dest string) string {
	t.Helper()
	d := digestAt(t, dest+"/openshift/graph-image:latest")
	if d == "" {
		t.Fatalf("%s: no graph-data image at %s/openshift/graph-image:latest", what, dest)
	}
	b, err := os.ReadFile(filepath.Join(res.WorkingDir, "cluster-resources", manifests.UpdateServiceFile))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	var us manifests.UpdateService
	if err := yaml.UnmarshalStrict(b, &us); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if us.Spec.GraphDataImage != dest+"/openshift/graph-image@"+d || us.Spec.Releases != dest+"/openshift/release-images" {
		t.Errorf("%s: UpdateService spec %+v, want the graph-data image %s@%s and the releases %s/openshift/release-images", what, us.Spec, dest+"/openshift/graph-image", d, dest)
	}
	r, err := name.ParseReference(dest + "/openshift/graph-image@" + d)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := remote.Index(r)
	if err != nil {
		t.Fatalf("%s: the graph-data image is not the base's index rebuilt: %v", what, err)
	}
	im, err := idx.IndexManifest()
	if err != nil || len(im.Manifests) != 2 {
		t.Fatalf("%s: the graph-data image has %v manifests (%v), want the base's 2 platforms", what, im, err)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cf.Config.Cmd, " "); got != "/bin/bash -c exec cp -rp /var/lib/cincinnati-graph-data/* /var/lib/cincinnati/graph-data" {
		t.Errorf("%s: the graph-data image's command is %q", what, got)
	}
	return d
}

// graph: true builds the graph-data image from the update service's tarball
// (read with a retry) on the base image, mirrors it with the releases and
// names it by digest in the UpdateService: mirror-to-mirror, then
// mirror-to-disk from a local tarball (the same digest: the build is
// reproducible) and disk-to-mirror with the source and the service offline.
func TestReleaseGraphImage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 5})
	base := imagetest.MustPush(t, e.src.Host()+"/ubi9/ubi:latest", fakeimage.Spec{Seed: 9, Layers: 2, OCI: true, Platforms: []string{"linux/amd64", "linux/arm64"}})
	tarball, err := os.ReadFile(graphDataTarball)
	if err != nil {
		t.Fatal(err)
	}
	svc := cincinnatitest.New(t)
	svc.ServeGraphData(tarball)
	svc.FailNext(503)
	cfg := releaseConfig(t, "    release: "+e.rel.Ref+"\n    graph: true\n")
	opts := func() Options {
		return Options{ConfigPath: cfg, Network: NetworkOptions{RetryTimes: 1},
			Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys, GraphDataURL: svc.GraphDataURL, GraphBaseImage: base.Ref}}
	}

	dst := registrytest.Start(t)
	o := opts()
	o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), location.File(t.TempDir())
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkReleaseMirrored(t, "mirror-to-mirror", res, dst.Host()+"/m2m", e.rel)
	d := checkGraphImage(t, "mirror-to-mirror", res, dst.Host()+"/m2m")
	if n := len(svc.Requests()); n != 2 {
		t.Errorf("the graph data was asked %d times, want 2 (a 503, then the tarball)", n)
	}
	if w := strings.Join(res.Warnings, "\n"); strings.Contains(w, "graph") {
		t.Errorf("warnings about the graph: %s", w)
	}
	b, _ := os.ReadFile(filepath.Join(res.WorkingDir, "cluster-resources", manifests.UpdateServiceFile))
	golden.Check(t, "testdata/release/updateService.yaml", []byte(strings.NewReplacer(dst.Host(), "DEST", d, "GRAPHDIGEST").Replace(string(b))))

	// An enclave: the tarball from a file, into an archive; the same bytes
	// give the same image.
	target := t.TempDir()
	o = opts()
	o.Releases.GraphDataURL, o.Releases.GraphDataFile = "", graphDataTarball
	o.Destination.Location = location.File(target)
	if _, err := Mirror(ctx, o); err != nil {
		t.Fatal(err)
	}
	e.src.Stop()
	far := registrytest.Start(t)
	o = opts()
	o.Releases = ReleaseOptions{SignatureKeys: e.keys}
	o.Archive.From, o.Workspace, o.Destination.Location = location.File(target), location.File(t.TempDir()), location.Docker(far.Host()+"/far")
	res, err = Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := checkGraphImage(t, "disk-to-mirror", res, far.Host()+"/far"); got != d {
		t.Errorf("the graph-data image built from the file is %s, from the service %s: not reproducible", got, d)
	}
}

// The graph data is refused with the reason before anything is mirrored: a
// service that does not serve it (naming the URL and the flags), a tarball
// that is not graph data, a file that does not exist.
func TestReleaseGraphDataRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 2})
	base := imagetest.MustPush(t, e.src.Host()+"/ubi9/ubi:latest", fakeimage.Spec{Seed: 9, Layers: 1})
	svc := cincinnatitest.New(t)
	notGraph := filepath.Join(t.TempDir(), "not-graph.tar")
	writeTar(t, notGraph, map[string]string{"README": "hello"})
	cfg := releaseConfig(t, "    release: "+e.rel.Ref+"\n    graph: true\n")
	cases := []struct {
		name      string
		url, file string
		want      []string
	}{
		{"not served", svc.GraphDataURL, "", []string{svc.GraphDataURL, "--graph-data-file", "--graph-data-url"}},
		{"not graph data", "", notGraph, []string{notGraph, "not the update service's graph data"}},
		{"no file", "", filepath.Join(t.TempDir(), "absent.tar.gz"), []string{"--graph-data-file", "absent.tar.gz"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := registrytest.Start(t)
			o := Options{ConfigPath: cfg, Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys, GraphDataURL: tc.url, GraphDataFile: tc.file, GraphBaseImage: base.Ref}}
			o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), location.File(t.TempDir())
			_, err := Mirror(ctx, o)
			for _, w := range tc.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("Mirror: %v, want an error saying %q", err, w)
				}
			}
			if got := digestAt(t, dst.Host()+"/m2m/openshift/release-images:4.15.1-x86_64"); got != "" {
				t.Errorf("the payload was mirrored though the graph data was refused")
			}
		})
	}
}

// writeTar writes a tar archive of files at p.
func writeTar(t *testing.T, p string, files map[string]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for n, body := range files {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// The releases' workspace folder keeps only what the last run needs: a run
// with the next z-stream drops the previous payload image, a run without
// graph: true drops the graph-data image, its data and its base.
func TestReleaseCacheCleaned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 3})
	next := releasetest.Push(t, e.src.Host(), releasetest.Spec{Version: "4.15.2", Components: 3, Changed: 1})
	e.store.Put(next.Digest, e.key.SignRelease(t, next.Ref, next.Digest))
	ubi := imagetest.MustPush(t, e.src.Host()+"/ubi9/ubi:latest", fakeimage.Spec{Seed: 9, Layers: 1})
	dst := registrytest.Start(t)
	ws := location.File(t.TempDir())
	run := func(stanza string) string {
		t.Helper()
		o := Options{ConfigPath: releaseConfig(t, stanza), Releases: ReleaseOptions{SignatureURL: e.store.URL, SignatureKeys: e.keys, GraphDataFile: graphDataTarball, GraphBaseImage: ubi.Ref}}
		o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), ws
		res, err := Mirror(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		return filepath.Join(res.WorkingDir, "releases")
	}
	held := func(dir string) string {
		t.Helper()
		var out []string
		_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && (d.Name() == e.rel.Digest.Encoded() || d.Name() == next.Digest.Encoded() || d.Name() == ubi.Digest.Encoded()) {
				out = append(out, d.Name()[:8])
			}
			if err == nil && d.IsDir() && (d.Name() == graphImageDir || d.Name() == graphDataDir) {
				out = append(out, d.Name())
			}
			return nil
		})
		return strings.Join(out, ",")
	}
	dir := run("    release: " + e.rel.Ref + "\n    graph: true\n")
	if got, want := held(dir), strings.Join([]string{ubi.Digest.Encoded()[:8], "graph-data", "graph-image", e.rel.Digest.Encoded()[:8]}, ","); got != want {
		t.Errorf("after the first run the releases folder holds %s, want %s", got, want)
	}
	run("    release: " + next.Ref + "\n")
	if got, want := held(dir), next.Digest.Encoded()[:8]; got != want {
		t.Errorf("after the next z-stream without the graph the releases folder holds %s, want %s", got, want)
	}
}
