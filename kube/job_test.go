package kube

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/internal/testutil/golden"
	"github.com/airlock-mirror/airlock/location"
)

func testOptions(t *testing.T) JobOptions {
	t.Helper()
	cfg, err := os.ReadFile(filepath.Join("testdata", "imageset.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	plan, err := os.ReadFile(filepath.Join("testdata", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	return JobOptions{
		Namespace: "airlock", Image: "mirror.example:5000/tools/airlock:v1",
		Destination: location.Docker("mirror.example:5000/ocp"), Shards: 2,
		Config: cfg, Plan: plan, Comment: "two shards of testdata/plan.json",
	}
}

// TestJobGolden pins the manifests (testdata/job.golden.yaml, which the
// conformance module also decodes with k8s.io/api and validates).
func TestJobGolden(t *testing.T) {
	got, err := Job(testOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "job.golden.yaml"), got)
	for _, s := range []string{"completionMode: Indexed", "completions: 2", "backoffLimitPerIndex: 3", "parallelism: 2",
		"secretName: airlock-mirror-auth", "- --shards", "- --finish", "name: airlock-mirror-finish", "restartPolicy: Never"} {
		if !strings.Contains(string(got), s) {
			t.Errorf("manifests lack %q", s)
		}
	}
}

func TestJobRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(o *JobOptions)
		want string
	}{
		{"no image", func(o *JobOptions) { o.Image = "" }, "no image"},
		{"no shards", func(o *JobOptions) { o.Shards = 0 }, "at least 1"},
		{"bad name", func(o *JobOptions) { o.Name = "Airlock_Mirror" }, "lower-case"},
		{"bad namespace", func(o *JobOptions) { o.Namespace = "-x" }, "namespace"},
		{"file destination", func(o *JobOptions) { o.Destination = location.File("/tmp/x") }, "docker://"},
		{"configuration too big", func(o *JobOptions) { o.Config = bytes.Repeat([]byte("x"), ConfigMapLimit) }, "configuration alone"},
		{"plan too big", func(o *JobOptions) { o.Plan = randomPlan(ConfigMapLimit + 100) }, "serve the plan another way"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t)
			tc.edit(&o)
			planPartsLimit = 1
			defer func() { planPartsLimit = MaxPlanParts }()
			_, err := Job(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error saying %q", err, tc.want)
			}
			if strings.HasSuffix(tc.name, "too big") && !errors.Is(err, ErrTooBig) {
				t.Errorf("got %v, want ErrTooBig", err)
			}
		})
	}
}

// randomPlan is n bytes gzip cannot compress (hex of random bytes compresses to
// about half: random bytes themselves do not).
func randomPlan(n int) []byte {
	b := make([]byte, n)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestJobLargePlan: a plan that does not fit one ConfigMap with the
// configuration goes compressed as binary data; one that does not fit
// compressed either is split over ConfigMaps of its own, projected into the
// pods' config folder. Every ConfigMap stays within 1 MiB, and the parts put
// together and decompressed are the plan.
func TestJobLargePlan(t *testing.T) {
	tests := []struct {
		name       string
		plan       []byte
		configMaps int
		planFile   string
	}{
		{"fits", []byte(`{"workflow":"mirror-to-mirror"}`), 1, PlanKey},
		{"compressed", bytes.Repeat([]byte(`{"source":"quay.io/example/operator@sha256:0123456789abcdef"},`), 40000), 1, PlanGzKey},
		{"compressed and split", randomPlan(ConfigMapLimit + 100), 3, PlanGzKey},
		{"not text", randomPlan(1000), 1, PlanGzKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t)
			o.Plan = tc.plan
			out, err := Job(o)
			if err != nil {
				t.Fatal(err)
			}
			docs := strings.Split(string(out), "\n---\n")[1:]
			var cms []ConfigMap
			var job BatchJob
			for _, d := range docs {
				var kind TypeMeta
				if err := yaml.Unmarshal([]byte(d), &kind); err != nil {
					t.Fatal(err)
				}
				switch kind.Kind {
				case "ConfigMap":
					var cm ConfigMap
					if err := yaml.Unmarshal([]byte(d), &cm); err != nil {
						t.Fatal(err)
					}
					cms = append(cms, cm)
				case "Job":
					if job.ObjectMeta.Name == "" {
						if err := yaml.Unmarshal([]byte(d), &job); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if len(cms) != tc.configMaps {
				t.Fatalf("%d ConfigMaps, want %d", len(cms), tc.configMaps)
			}
			var gz []byte
			for i, cm := range cms {
				size := 0
				for k, v := range cm.Data {
					size += len(k) + len(v)
				}
				for k, v := range cm.BinaryData {
					size += len(k) + len(v)
					if k == PlanGzKey || k == PlanPartKey(i-1) {
						gz = append(gz, v...)
					}
				}
				if size > ConfigMapLimit {
					t.Errorf("ConfigMap %s holds %d bytes, over 1 MiB", cm.ObjectMeta.Name, size)
				}
			}
			args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
			if !strings.Contains(args, "--plan /etc/airlock/"+tc.planFile+" ") {
				t.Errorf("the pods run %s, want --plan /etc/airlock/%s", args, tc.planFile)
			}
			got := []byte(cms[0].Data[PlanKey])
			if tc.planFile == PlanGzKey {
				zr, err := gzip.NewReader(bytes.NewReader(gz))
				if err != nil {
					t.Fatal(err)
				}
				if got, err = io.ReadAll(zr); err != nil {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(got, tc.plan) {
				t.Error("the plan put together is not the plan")
			}
			vol := job.Spec.Template.Spec.Volumes[0]
			if split := tc.configMaps > 1; split != (vol.Projected != nil) || (split && len(vol.Projected.Sources) != tc.configMaps) {
				t.Errorf("config volume %+v for %d ConfigMaps", vol, tc.configMaps)
			}
		})
	}
}

// TestJobRegistriesConf: a registries.conf goes into the ConfigMap beside the
// configuration and every pod reads the sources through it; without one, no pod
// is told about one.
func TestJobRegistriesConf(t *testing.T) {
	conf, err := os.ReadFile(filepath.Join("testdata", "registries.conf"))
	if err != nil {
		t.Fatal(err)
	}
	for _, with := range []bool{true, false} {
		o := testOptions(t)
		if with {
			o.RegistriesConf = conf
		}
		out, err := Job(o)
		if err != nil {
			t.Fatal(err)
		}
		var cm ConfigMap
		var args [][]string
		for _, doc := range strings.Split(string(out), "\n---\n") {
			switch {
			case strings.Contains(doc, "kind: ConfigMap"):
				if err := yaml.Unmarshal([]byte(doc), &cm); err != nil {
					t.Fatal(err)
				}
			case strings.Contains(doc, "kind: Job"):
				var j BatchJob
				if err := yaml.Unmarshal([]byte(doc), &j); err != nil {
					t.Fatal(err)
				}
				args = append(args, j.Spec.Template.Spec.Containers[0].Args)
			}
		}
		if got := cm.Data[RegistriesConfKey]; got != map[bool]string{true: string(conf)}[with] {
			t.Errorf("with=%v: ConfigMap's %s = %q", with, RegistriesConfKey, got)
		}
		if len(args) != 2 {
			t.Fatalf("%d Jobs, want the shards' and the finish one", len(args))
		}
		for _, a := range args {
			flag := strings.Join(a, " ")
			if has := strings.Contains(flag, "--registries-conf /etc/airlock/"+RegistriesConfKey); has != with {
				t.Errorf("with=%v: pod args %q", with, flag)
			}
		}
	}
}
