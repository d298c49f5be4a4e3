package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestShardedDiskLeavesOutAttachmentsOfFailed: in a sharded mirror-to-disk,
// a signed image whose layer cannot be read fails in its shard while its
// signature is copied by another shard. The batch --finish writes lists the
// image as failed; disk-to-mirror (into Debian's docker-registry) pushes
// neither it nor its signature (the other shard's chunk holds it) and names
// both as missing: no signature tag for an image the mirror does not hold.
func TestShardedDiskLeavesOutAttachmentsOfFailed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := registrytest.Start(t)
	key := signtest.NewKey(t)
	signed := imagetest.MustPush(t, src.Host()+"/apps/signed:1.0", fakeimage.Spec{Seed: 31, Layers: 1})
	signtest.Sign(t, key, src.Host()+"/apps/signed", signed.Digest)
	var lines []string
	for i := range 3 {
		imagetest.MustPush(t, fmt.Sprintf("%s/apps/other%d:1.0", src.Host(), i), fakeimage.Spec{Seed: uint64(40 + i), Layers: 1})
	}
	ph := proxyTo(t, src.Host(), func(r *http.Request) int {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+signed.Blobs[0].String()) {
			return http.StatusNotFound
		}
		return 0
	})
	signedRef := ph + "/apps/signed@" + signed.Digest.String()
	lines = append(lines, "  - name: "+signedRef)
	for i := range 3 {
		lines = append(lines, fmt.Sprintf("  - name: %s/apps/other%d:1.0", ph, i))
	}
	cfg := writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(lines, "\n")+"\n")

	const shards = 4
	target := t.TempDir()
	base := opts(cfg)
	base.Destination.Location = location.File(target)
	po := base
	po.Run.PlanOnly = true
	if _, err := pipeline.Mirror(ctx, po); err != nil {
		t.Fatalf("--plan-only: %v", err)
	}
	planFile := workspace.At(target).PlanPath()
	for i := range shards {
		o := base
		o.Run.PlanFile, o.Run.Shard, o.Run.Shards = planFile, i, shards
		if _, err := pipeline.Mirror(ctx, o); err != nil && !errors.Is(err, pipeline.ErrPartial) {
			t.Fatalf("shard %d: %v", i, err)
		}
	}
	// The case this test is about: the signature in a shard that did not fail.
	recs, err := archive.ReadShards(filepath.Join(target, "batch-0001"))
	if err != nil {
		t.Fatal(err)
	}
	sigShard, failShard := -1, -1
	for _, rec := range recs.Done {
		for _, im := range rec.Images {
			if im.Attachment != nil && im.Attachment.Of == signedRef {
				sigShard = rec.Index
			}
		}
		for _, f := range rec.Failed {
			if f.Source == signedRef {
				failShard = rec.Index
			}
		}
	}
	if sigShard < 0 || failShard < 0 || sigShard == failShard {
		t.Fatalf("the plan put the signature in shard %d and the failing image in shard %d: this test needs them apart", sigShard, failShard)
	}

	fo := base
	fo.Run.PlanFile, fo.Run.Finish = planFile, true
	if _, err := pipeline.Mirror(ctx, fo); !errors.Is(err, pipeline.ErrPartial) {
		t.Fatalf("--finish: %v, want a partial batch", err)
	}
	ar, err := archive.Open(filepath.Join(target, "batch-0001"))
	if err != nil {
		t.Fatal(err)
	}
	ar.Close()
	for _, im := range ar.Images() {
		if im.Source == signedRef {
			t.Errorf("the batch lists %s to push, though it failed", im.Source)
		}
	}
	dst := registrytest.StartKind(t, registrytest.Distribution28)
	d2m := opts(cfg)
	d2m.Archive.From = location.File(filepath.Join(target, "batch-0001"))
	d2m.Workspace = location.File(t.TempDir())
	d2m.Destination.Location = location.Docker(dst.Host + "/mirror")
	res, err := pipeline.Mirror(ctx, d2m)
	if !errors.Is(err, pipeline.ErrPartial) {
		t.Fatalf("disk-to-mirror: %v, want a partial load", err)
	}
	var sigMissing bool
	for _, im := range res.Images {
		if strings.Contains(im.Source, "/apps/signed") && im.Source != signedRef {
			sigMissing = im.Status == transfer.StatusFailed && strings.Contains(im.Error, "its image "+signedRef+" failed")
			if !sigMissing {
				t.Errorf("disk-to-mirror: the signature %s is %s (%q), want failed with its image", im.Source, im.Status, im.Error)
			}
		}
	}
	if !sigMissing {
		t.Errorf("disk-to-mirror does not name the signature of the failed image as missing")
	}
	tags, err := registry.New(registry.Options{}).Tags(ctx, dst.Host+"/mirror/apps/signed")
	if err == nil && len(tags) > 0 {
		t.Errorf("disk-to-mirror pushed tags %v to apps/signed, whose image failed", tags)
	}
}
