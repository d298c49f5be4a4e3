package pipeline_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/report"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestSignaturesSharded: on a destination without the referrers API
// (Distribution v3), a sharded mirror-to-mirror leaves the referrers findable
// by their subject as an unsharded run does (the "sha256-<hex>" fallback
// index, written by --finish), and what plan.json and mapping.txt say is
// what the registry holds: the image that has referrers is planned without
// the digest tag the index takes, in the unsharded run, the dry run and the
// plan the shards copy.
func TestSignaturesSharded(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	digestTag := "sha256-" + e.signed.Digest.Encoded()
	for _, n := range []int{0, 1, 2} { // 0: unsharded
		name := map[int]string{0: "unsharded", 1: "1 shard", 2: "2 shards"}[n]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dst := registrytest.Start(t)
			base := opts(e.cfg)
			base.Destination.Location = location.Docker(dst.Host() + "/mirror")
			run := func(o pipeline.Options) *pipeline.Result {
				t.Helper()
				o.Workspace = location.File(t.TempDir())
				res, err := pipeline.Mirror(ctx, o)
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			dry := base
			dry.Run.DryRun = true
			checkPlanned(t, run(dry), digestTag)
			var res *pipeline.Result
			if n == 0 {
				res = run(base)
				checkPlanned(t, res, digestTag)
				e.checkReport(t, res)
			} else {
				po := base
				po.Run.PlanOnly = true
				planRes := run(po)
				checkPlanned(t, planRes, digestTag)
				planFile := workspace.Dir(planRes.WorkingDir).PlanPath()
				for i := 0; i < n; i++ {
					o := base
					o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, i, n
					run(o)
				}
				fo := base
				fo.Run.PlanFile, fo.Run.Finish = planFile, true
				res = run(fo)
			}
			dstRepo := ""
			for _, im := range res.Plan.Images {
				if im.Source == e.ref(e.signed) {
					dstRepo = im.DestRepo
				}
			}
			found := false
			for _, d := range signtest.Referrers(t, dstRepo, e.signed.Digest) {
				found = found || d.Digest.String() == e.sbom.String()
			}
			if !found {
				t.Errorf("SBOM %s is not findable as a referrer of %s@%s after the run (warnings %v)", e.sbom, dstRepo, e.signed.Digest, res.Warnings)
			}
		})
	}
}

// checkPlanned: plan.json and mapping.txt of res do not promise the digest
// tag of the image with referrers (it goes to the referrers index).
func checkPlanned(t *testing.T, res *pipeline.Result, digestTag string) {
	t.Helper()
	wd := workspace.Dir(res.WorkingDir)
	b, err := os.ReadFile(wd.PlanPath())
	if err != nil {
		t.Fatal(err)
	}
	var p mirror.Plan
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	for _, im := range p.Images {
		for _, tag := range im.Tags {
			if tag == digestTag && im.Kind != mirror.KindAttachment {
				t.Errorf("plan.json gives %s the tag %s, which the referrers index takes", im.Source, tag)
			}
		}
	}
	mappings := []string{wd.MappingPath()}
	if res.DryRun != nil {
		mappings = append(mappings, wd.DryRunMappingPath())
	}
	for _, f := range mappings {
		m, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(m), ":"+digestTag+"\n") {
			t.Errorf("%s maps an image to the tag %s, which the referrers index takes:\n%s", filepath.Base(f), digestTag, m)
		}
	}
}

// checkReport: report.json (and so report.html) has the signature column:
// signed with its attachments counted, unsigned.
func (e *signedEnv) checkReport(t *testing.T, res *pipeline.Result) {
	t.Helper()
	b, err := os.ReadFile(workspace.Dir(res.WorkingDir).ReportDataPath())
	if err != nil {
		t.Fatal(err)
	}
	var r report.Run
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{e.ref(e.signed): "signed, 2 attachments carried", e.ref(e.index): "signed, 3 attachments carried", e.ref(e.unsigned): "unsigned"}
	for _, im := range r.Images {
		if w, ok := want[im.Source]; ok {
			if im.SignatureNote() != w {
				t.Errorf("report: %s %q, want %q", im.Source, im.SignatureNote(), w)
			}
			delete(want, im.Source)
		}
	}
	if len(want) > 0 {
		t.Errorf("report lacks %v", want)
	}
}
