package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/manifests"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// gadgetKind is a kind of content of this test only: "gadgets", each one
// image. It goes through every workflow with no change outside this file.
const gadgetKind = "gadget"

type gadgetSource struct {
	refs []string
}

func (g *gadgetSource) Name() string                               { return "gadgets" }
func (g *gadgetSource) Owns(origin string) bool                    { return origin == "gadgets" }
func (g *gadgetSource) Preflight(context.Context) ([]Probe, error) { return nil, nil }

func (g *gadgetSource) Select(context.Context) (*Selection, error) {
	// The far side reads which gadgets there were from a file of its own.
	sel := &Selection{Wants: map[string][]workspace.Want{}, Extras: map[string][]byte{"gadgets.txt": []byte(strings.Join(g.refs, "\n"))}}
	for _, ref := range g.refs {
		sel.Images = append(sel.Images, mirror.ImageRequest{Name: ref, Kind: gadgetKind, Origin: "gadgets", TargetRepo: "gadgets/" + strings.Split(filepath.Base(ref), ":")[0]})
		sel.Wants[ref] = []workspace.Want{{Kind: gadgetKind, Image: ref}}
	}
	return sel, nil
}

func (g *gadgetSource) Load(_ context.Context, ar Archived) (*Loaded, error) {
	carried := strings.Split(string(ar.Extras["gadgets.txt"]), "\n")
	out := &Loaded{Keep: func(ir archive.ImageRecord, of string) []string {
		if slices.Contains(g.refs, of) && slices.Contains(ir.Origins, "gadgets") {
			return []string{"gadgets"}
		}
		return nil
	}}
	for _, ref := range g.refs {
		if !slices.Contains(carried, ref) || !slices.ContainsFunc(ar.Manifest.Images, func(ir archive.ImageRecord) bool { return ir.Source == ref }) {
			out.Missing = append(out.Missing, "gadget "+ref+" (not in the archive)")
		}
	}
	return out, nil
}

// Resources: an inventory of the gadgets mirrored, as a ConfigMap.
func (g *gadgetSource) Resources(p *mirror.Plan, mirrored func(mirror.PlanImage) bool) (Resources, error) {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gadgets\n  namespace: default\ndata:\n")
	n := 0
	for _, im := range p.Images {
		if im.Kind == gadgetKind && mirrored(im) {
			n++
			b.WriteString(fmt.Sprintf("  gadget-%d: %q\n", n, im.Destination()))
		}
	}
	return Resources{Objects: []manifests.File{{Name: "gadgets.yaml", APIVersion: "v1", Kind: "ConfigMap", ObjectName: "gadgets", Data: []byte(b.String())}}}, nil
}

func (g *gadgetSource) Wants(im mirror.PlanImage, _ string) []workspace.Want {
	return []workspace.Want{{Kind: gadgetKind, Image: im.Owner()}}
}

// Pin: gadgets have no stanza to pin.
func (g *gadgetSource) Pin(*mirror.Plan, *imageset.Pins) {}

// Deletes: a gadget is deleted when delete.additionalImages names it.
func (g *gadgetSource) Deletes(cfg *imageset.DeleteImageSetConfiguration, w workspace.Want) (bool, bool) {
	if w.Kind != gadgetKind {
		return false, false
	}
	return slices.ContainsFunc(cfg.Delete.AdditionalImages, func(im imageset.Image) bool { return im.Ref() == w.Image }), true
}

// TestSourceKindGoesEverywhere: a kind of content added by a test file alone
// is mirrored, archived, loaded on the far side, reported, recorded in the
// history and deleted, with cluster resources of its own kind.
func TestSourceKindGoesEverywhere(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := registrytest.Start(t)
	gadget := src.Host() + "/gadgets-src/widget:2.0"
	pushed := imagetest.MustPush(t, gadget, fakeimage.Spec{Seed: 42, Layers: 2})
	tool := src.Host() + "/tools/debug:1.0"
	imagetest.MustPush(t, tool, fakeimage.Spec{Seed: 43, Layers: 1})
	cfg := filepath.Join(t.TempDir(), "isc.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: "+tool+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := func() Options {
		return Options{ConfigPath: cfg, Network: NetworkOptions{RetryTimes: 2}, sources: []Source{&gadgetSource{refs: []string{gadget}}}}
	}
	// present says whether ref is in reg by digest, asked with go-containerregistry.
	present := func(ref string) bool {
		r, err := name.ParseReference(ref)
		if err != nil {
			t.Fatal(err)
		}
		d, err := remote.Head(r)
		return err == nil && d.Digest.String() == pushed.Digest.String()
	}
	checkRun := func(what string, res *Result, dst *registrytest.Registry, dest string) {
		t.Helper()
		if !present(dest + "/gadgets/widget:2.0") {
			t.Errorf("%s: the gadget is not at %s/gadgets/widget:2.0", what, dest)
		}
		var row *ImageOutcome
		for i := range res.Images {
			if res.Images[i].Source == gadget {
				row = &res.Images[i]
			}
		}
		if row == nil || row.Kind != gadgetKind || row.Status != "copied" {
			t.Errorf("%s: results.json row of the gadget: %+v", what, row)
		}
		if _, err := os.Stat(filepath.Join(res.WorkingDir, "cluster-resources", "itms-"+gadgetKind+"-0.yaml")); err != nil {
			t.Errorf("%s: no mirror set of the gadget kind: %v", what, err)
		}
		if b, err := os.ReadFile(filepath.Join(res.WorkingDir, "cluster-resources", "gadgets.yaml")); err != nil || !strings.Contains(string(b), dest+"/gadgets/widget:2.0") {
			t.Errorf("%s: the gadget kind's own cluster resource: %q, %v", what, b, err)
		}
		var sum strings.Builder
		res.WriteSummary(&sum)
		if !strings.Contains(sum.String(), "  gadget:    1 image\n") {
			t.Errorf("%s: the summary has no line for the gadget kind:\n%s", what, sum.String())
		}
		b, err := os.ReadFile(filepath.Join(res.WorkingDir, workspace.ReportDataFile))
		if err != nil || !strings.Contains(string(b), `"kind": "`+gadgetKind+`"`) && !strings.Contains(string(b), `"kind":"`+gadgetKind+`"`) {
			t.Errorf("%s: the report does not show the gadget (%v)", what, err)
		}
	}
	checkHistory := func(what string, ws location.Location) {
		t.Helper()
		h, err := ReadHistory(ws)
		if err != nil || len(h.Runs) == 0 {
			t.Fatalf("%s: history: %v", what, err)
		}
		last := h.Runs[len(h.Runs)-1]
		found := false
		for _, im := range last.Images {
			if im.Source == gadget {
				found = len(im.WantedBy) == 1 && im.WantedBy[0].Kind == gadgetKind && im.WantedBy[0].Image == gadget
			}
		}
		if !found {
			t.Errorf("%s: the history does not say the gadget kind wanted %s", what, gadget)
		}
	}

	// Mirror-to-mirror.
	dst := registrytest.Start(t)
	ws := location.File(t.TempDir())
	o := opts()
	o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/m2m"), ws
	res, err := Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkRun("mirror-to-mirror", res, dst, dst.Host()+"/m2m")
	checkHistory("mirror-to-mirror", ws)

	// Mirror-to-disk, then disk-to-mirror with the source gone.
	target := t.TempDir()
	o = opts()
	o.Destination.Location = location.File(target)
	res, err = Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Archive == nil {
		t.Fatal("no archive written")
	}
	if _, err := archive.Verify(ctx, res.Archive.Dir); err != nil {
		t.Fatal(err)
	}
	ar, err := archive.Open(res.Archive.Dir)
	if err != nil {
		t.Fatal(err)
	}
	man := ar.ArchiveManifest()
	ar.Close()
	if !slices.ContainsFunc(man.Images, func(ir archive.ImageRecord) bool { return ir.Source == gadget && ir.Kind == gadgetKind }) {
		t.Errorf("the archive does not hold the gadget as its kind")
	}
	src.Stop()
	far := registrytest.Start(t)
	farWS := location.File(t.TempDir())
	o = opts()
	o.Archive.From, o.Workspace, o.Destination.Location = location.File(target), farWS, location.Docker(far.Host()+"/far")
	res, err = Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	checkRun("disk-to-mirror", res, far, far.Host()+"/far")
	checkHistory("disk-to-mirror", farWS)

	// A configuration whose gadget the archive lacks is refused by name.
	o.sources = []Source{&gadgetSource{refs: []string{gadget, src.Host() + "/gadgets-src/other:1"}}}
	if _, err := Mirror(ctx, o); err == nil || !strings.Contains(err.Error(), "gadget "+src.Host()+"/gadgets-src/other:1 (not in the archive)") {
		t.Errorf("disk-to-mirror without a gadget it asks for: %v", err)
	}

	// Delete: the gadget kind says the delete configuration names it.
	del := filepath.Join(t.TempDir(), "delete.yaml")
	if err := os.WriteFile(del, []byte("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n  additionalImages:\n  - name: "+gadget+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srcs := append(defaultSources(), &gadgetSource{refs: []string{gadget}})
	dres, err := deletion.Run(ctx, deletion.Options{
		Generate: true, ConfigPath: del, Workspace: farWS, Destination: location.Docker(far.Host() + "/far"),
		Names: func(c *imageset.DeleteImageSetConfiguration, w workspace.Want) bool { return deleteNames(srcs, c, w) },
	})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(dres.Plan)
	if !strings.Contains(string(b), "gadgets/widget") || strings.Contains(string(b), "tools/debug") {
		t.Errorf("delete plan: %s, want the gadget's manifest only", b)
	}
}
