package workspace

import (
	"bytes"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"
)

func samplePlan() *DeletePlan {
	return &DeletePlan{
		APIVersion: DeletePlanAPIVersion, Kind: DeletePlanKind, Destination: "127.0.0.1:5000/mirror",
		Generated: time.Date(2026, 11, 24, 19, 0, 0, 0, time.UTC), Reason: "stale", HistoryRun: 3,
		Manifests: []PlannedManifest{{Repository: "127.0.0.1:5000/mirror/a/b", Digest: digest.Digest("sha256:" + strings.Repeat("a", 64)), Tags: []string{"v1"}, Why: []string{"stale"}}},
	}
}

func TestDeletePlanRoundTripAndChecks(t *testing.T) {
	wd := At(t.TempDir())
	p := samplePlan()
	path, err := WriteDeletePlan(wd, p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadDeletePlan(bytes.NewReader(b), path)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID() != p.PlanID || got.Manifests[0].line == 0 {
		t.Fatalf("round trip: id %s, want %s; line %d", got.ID(), p.PlanID, got.Manifests[0].line)
	}
	if err := CheckDeletePlan(got, path, wd, p.Destination); err != nil {
		t.Fatalf("unedited plan refused: %v", err)
	}
	tests := []struct {
		name, dest, want string
		edit             func(*DeletePlan)
	}{
		{"other destination", "quay.io/ns", "not quay.io/ns", func(*DeletePlan) {}},
		{"edited tags", "", "tags of", func(p *DeletePlan) { p.Manifests[0].Tags = []string{"v1", "latest"} }},
		{"unknown plan", "", "was not generated in the workspace", func(p *DeletePlan) { p.PlanID = "sha256:" + strings.Repeat("b", 64) }},
		{"bad plan id", "", "not a plan ID", func(p *DeletePlan) { p.PlanID = "sha256:../../x" }},
		{"unknown digest", "", "was never planned", func(p *DeletePlan) { p.Manifests[0].Digest = digest.Digest("sha256:" + strings.Repeat("c", 64)) }},
		{"foreign repository", "", "foreign registry", func(p *DeletePlan) { p.Manifests[0].Repository = "quay.io/x/y" }},
		{"fewer manifests", "", "", func(p *DeletePlan) { p.Manifests = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := *got
			e.Manifests = append([]PlannedManifest(nil), got.Manifests...)
			tc.edit(&e)
			dest := tc.dest
			if dest == "" {
				dest = p.Destination
			}
			err := CheckDeletePlan(&e, path, wd, dest)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestReadPlanBadInput(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"empty", "", "is empty"},
		{"not yaml", "{[", "plan.yaml"},
		{"unknown field", "apiVersion: airlock.io/v1alpha1\nkind: DeletePlan\nforce: true\n", "line 3: field force not found"},
		{"other kind", "apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\n", "is not a delete plan"},
		{"wrong type", "apiVersion: airlock.io/v1alpha1\nkind: DeletePlan\nmanifests: 3\n", "line 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadDeletePlan(strings.NewReader(tc.in), "plan.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func FuzzReadPlan(f *testing.F) {
	b, _ := marshalPlan(samplePlan())
	f.Add(b)
	f.Add([]byte("apiVersion: airlock.io/v1alpha1\nkind: DeletePlan\nmanifests:\n- repository: a/b\n  digest: x\n"))
	f.Add([]byte("&a [*a]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := ReadDeletePlan(bytes.NewReader(data), "fuzz.yaml")
		if err != nil {
			return
		}
		if p.Kind != DeletePlanKind {
			t.Fatalf("accepted kind %q", p.Kind)
		}
		_ = CheckDeletePlan(p, "fuzz.yaml", Dir(t.TempDir()), "reg/ns")
	})
}
