package kubejob_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"
	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/kube"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/pipeline/kubejob"
)

// tinyBinary builds a tiny static Linux binary and returns its path.
func tinyBinary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "tiny")
	build := exec.Command("go", "build", "-o", bin, src)
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOFLAGS=-buildvcs=false")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build a static binary: %v\n%s", err, out)
	}
	return bin
}

// TestKubeImage builds the image of a (tiny, static) binary and pushes it to a
// real registry: the image runs it as its entrypoint, holds it byte for byte,
// and the same binary gives the same digest (a second push sends nothing).
func TestKubeImage(t *testing.T) {
	bin := tinyBinary(t)
	want, _ := os.ReadFile(bin)
	reg := registrytest.Start(t)
	o := kubejob.ImageOptions{Destination: location.Docker(reg.Host() + "/tools/airlock"), Binary: bin, Version: "v9.9.9"}
	res, err := kubejob.Image(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Tag != "v9.9.9" || !strings.HasPrefix(res.Reference, reg.Host()+"/tools/airlock@sha256:") {
		t.Errorf("pushed %+v", res)
	}
	ref, err := name.ParseReference(reg.Host()+"/tools/airlock:v9.9.9", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	if !strings.HasSuffix(res.Reference, d.String()) {
		t.Errorf("tag resolves to %s, pushed %s", d, res.Reference)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(cf.Config.Entrypoint, " ") != "/airlock" || cf.Config.User != "65532:65532" || cf.OS != "linux" {
		t.Errorf("config: %+v", cf.Config)
	}
	layers, _ := img.Layers()
	if len(layers) != 1 {
		t.Fatalf("%d layers, want 1", len(layers))
	}
	if diff, _ := layers[0].DiffID(); cf.RootFS.DiffIDs[0] != diff {
		t.Errorf("config diff id %s, layer %s", cf.RootFS.DiffIDs[0], diff)
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(rc)
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "airlock" {
			got, _ := io.ReadAll(tr)
			found = bytes.Equal(got, want) && h.Mode&0o111 != 0
		}
	}
	rc.Close()
	if !found {
		t.Error("the image does not hold the binary, executable, at /airlock")
	}

	again, err := kubejob.Image(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if again.Reference != res.Reference || again.BytesSent != 0 {
		t.Errorf("second push: %+v, first %+v", again, res)
	}

	o.Binary = filepath.Join(filepath.Dir(bin), "main.go") // not an executable
	if _, err := kubejob.Image(context.Background(), o); !errors.Is(err, layout.ErrNotStatic) {
		t.Errorf("a Go source file as the binary: got %v, want ErrNotStatic", err)
	}
}

// TestKubeJobRefusesTemplates: the pods see only the configuration and the
// plan, so a catalog source template file is refused up front.
func TestKubeJobRefusesTemplates(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "isc.yaml")
	if err := os.WriteFile(cfg, []byte(`apiVersion: mirror.openshift.io/v2alpha1
kind: ImageSetConfiguration
mirror:
  operators:
  - catalog: registry.example/catalog:v1
    targetCatalogSourceTemplate: cs-template.yaml
`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := kubejob.JobOptions{ConfigPath: cfg, PlanFile: filepath.Join(t.TempDir(), "plan.json")}
	o.Shards, o.Image, o.Destination = 2, "registry.example/airlock:v1", location.Docker("registry.example/ocp")
	if _, err := kubejob.Job(o); err == nil || !strings.Contains(err.Error(), "cannot read") {
		t.Errorf("got %v, want the template refused", err)
	}
}

// TestKubeJobLargePlan: a plan over the ConfigMap limit goes compressed, and
// over it compressed, split over ConfigMaps; the files the pods see (every
// ConfigMap's keys in one folder) load as the plan with --plan as the Job
// gives it.
func TestKubeJobLargePlan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		images int
		file   string
		cms    int
	}{
		{"plain", 10, kube.PlanKey, 1},
		{"compressed", 3000, kube.PlanGzKey, 1},
		{"compressed and split", 12000, kube.PlanGzKey, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.images), 1))
			hex := func() digest.Digest {
				return digest.NewDigestFromEncoded(digest.SHA256, fmt.Sprintf("%016x%016x%016x%016x", rng.Uint64(), rng.Uint64(), rng.Uint64(), rng.Uint64()))
			}
			p := mirror.Plan{Workflow: mirror.MirrorToMirror, Destination: "registry.example/ocp"}
			for i := range tc.images {
				p.Images = append(p.Images, mirror.PlanImage{
					Source: fmt.Sprintf("quay.io/example/app%d:1.0", i), Kind: mirror.KindGeneric,
					SourceRepo: fmt.Sprintf("quay.io/example/app%d", i), Digest: hex(),
					DestRepo: fmt.Sprintf("registry.example/ocp/example/app%d", i), Tags: []string{"1.0"},
					Blobs: []mirror.PlanBlob{{Digest: hex(), Size: 1 << 20}, {Digest: hex(), Size: 512}},
				})
			}
			dir := t.TempDir()
			planFile := filepath.Join(dir, "plan.json")
			b, _ := json.Marshal(p)
			if err := os.WriteFile(planFile, b, 0o644); err != nil {
				t.Fatal(err)
			}
			o := kubejob.JobOptions{ConfigPath: filepath.Join("..", "..", "kube", "testdata", "imageset.yaml"), PlanFile: planFile}
			o.Shards, o.Image, o.Destination = 3, "registry.example/airlock:v1", location.Docker("registry.example/ocp")
			out, err := kubejob.Job(o)
			if err != nil {
				t.Fatal(err)
			}
			mount := t.TempDir()
			cms := 0
			for _, doc := range strings.Split(string(out), "\n---\n")[1:] {
				var cm kube.ConfigMap
				if err := yaml.Unmarshal([]byte(doc), &cm); err != nil || cm.Kind != "ConfigMap" {
					continue
				}
				cms++
				for k, v := range cm.Data {
					if err := os.WriteFile(filepath.Join(mount, k), []byte(v), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				for k, v := range cm.BinaryData {
					if err := os.WriteFile(filepath.Join(mount, k), v, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			if cms != tc.cms {
				t.Errorf("%d ConfigMaps, want %d", cms, tc.cms)
			}
			if !strings.Contains(string(out), "- /etc/airlock/"+tc.file+"\n") {
				t.Errorf("the pods are not given --plan /etc/airlock/%s", tc.file)
			}
			got, err := mirror.LoadPlan(filepath.Join(mount, tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Images) != tc.images || got.Images[tc.images-1].Digest != p.Images[tc.images-1].Digest {
				t.Errorf("loaded %d images, want %d, the same", len(got.Images), tc.images)
			}
		})
	}
}

// TestKubeJobRegistriesConf: the registries.conf of --registries-conf (or of
// $CONTAINERS_REGISTRIES_CONF) is checked and carried into the ConfigMap; a
// missing or broken one is refused naming it.
func TestKubeJobRegistriesConf(t *testing.T) {
	dir := t.TempDir()
	plan := mirror.Plan{Workflow: mirror.MirrorToMirror, Destination: "registry.example/ocp"}
	b, _ := json.Marshal(plan)
	planFile := filepath.Join(dir, "plan.json")
	good, bad := filepath.Join("..", "..", "kube", "testdata", "registries.conf"), filepath.Join(dir, "bad.conf")
	if err := errors.Join(os.WriteFile(planFile, b, 0o644), os.WriteFile(bad, []byte("[[registry]\nlocation = 1\n"), 0o644)); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, flag, env string
		carried         bool
		refused         string
	}{
		{"flag", good, "", true, ""},
		{"environment", "", good, true, ""},
		{"neither", "", "", false, ""},
		{"missing", filepath.Join(dir, "nope.conf"), "", false, "--registries-conf " + filepath.Join(dir, "nope.conf")},
		{"broken", bad, "", false, bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("CONTAINERS_REGISTRIES_CONF", tc.env)
			o := kubejob.JobOptions{ConfigPath: filepath.Join("..", "..", "kube", "testdata", "imageset.yaml"), PlanFile: planFile, RegistriesConfPath: tc.flag}
			o.Shards, o.Image, o.Destination = 2, "registry.example/airlock:v1", location.Docker("registry.example/ocp")
			out, err := kubejob.Job(o)
			if tc.refused != "" {
				if err == nil || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("got %v, want a refusal naming %s", err, tc.refused)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var cm kube.ConfigMap
			if err := yaml.Unmarshal([]byte(strings.Split(string(out), "\n---\n")[1]), &cm); err != nil {
				t.Fatal(err)
			}
			if got, ok := cm.Data[kube.RegistriesConfKey]; ok != tc.carried || (ok && got != string(want)) {
				t.Errorf("ConfigMap's %s: %q (carried %v, want %v)", kube.RegistriesConfKey, got, ok, tc.carried)
			}
		})
	}
}
