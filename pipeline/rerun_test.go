package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/workspace"
)

// requestsBeyondBase counts a registry's requests other than GET /v2/ (a
// client's ping when it first meets a host, and the run's preflight probe).
func requestsBeyondBase(c registrytest.Counts) (n int64) {
	for k, v := range c.ByPath {
		if k != "GET base" {
			n += v
		}
	}
	return n
}

// A no-op re-run of images pinned by digest, signed ones among them, asks the
// source nothing (the attachments the first run found are recorded in
// working-dir/attachments.json) and the destination one question per image of
// the plan (attachments included), besides the referrers checks; the signature
// column stays the same. --refresh-signatures looks again, and finds a
// signature added since.
func TestNoOpRerunAsksTheSourceNothing(t *testing.T) {
	t.Parallel()
	e := newSignedEnv(t)
	dst := registrytest.Start(t)
	ws := t.TempDir()
	o := opts(e.cfg)
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(ws)
	ctx := context.Background()
	first, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	e.checkOutcomes(t, first)
	if _, err := os.Stat(filepath.Join(ws, workspace.WorkingDirName, workspace.AttachmentsFile)); err != nil {
		t.Fatalf("no record of the attachments found: %v", err)
	}

	e.src.Reset()
	dst.Reset()
	res, err := pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	e.checkOutcomes(t, res)
	if n := requestsBeyondBase(e.src.Counts()); n != 0 {
		t.Errorf("no-op re-run: %d source requests (%v), want none", n, e.src.Counts().ByPath)
	}
	if res.Signatures == nil || res.Signatures.Reused != 4 || res.Signatures.Requests != 0 {
		t.Errorf("discovery on the re-run: %+v, want 4 images reused and no request", res.Signatures)
	}
	images := int64(len(res.Plan.Jobs()))
	// Besides one manifest HEAD per image, the referrers bookkeeping: whether
	// the destination has the referrers API (asked before the copy and again
	// when keeping referrers findable) and, without it, a read of the one
	// subject's fallback index (the SBOM's), found up to date.
	// An image whose first tag misses is asked again by digest: the first
	// tag is asked first until misses outnumber hits by 3 (transfer's
	// presence), and the images the prefetch asks about while the plan is
	// made come in resolution order, so one of the fixture's may cost two.
	c := dst.Counts()
	if c.ManifestHEAD < images || c.ManifestHEAD > images+3 || c.ManifestPUT != 0 || c.UploadPOST+c.MountPOST+c.BlobHEAD != 0 {
		t.Errorf("no-op re-run: destination %v, want %d manifest HEADs (up to 3 more) and nothing else per image", c.ByPath, images)
	}
	if n := requestsBeyondBase(c); n > c.ManifestHEAD+3 {
		t.Errorf("no-op re-run: %d destination requests for %d images (%v)", n, images, c.ByPath)
	}

	// A signature added to an image after it was mirrored: a re-run does not
	// look; --refresh-signatures does, and carries it.
	signtest.Sign(t, e.key, imagetest.Repo(e.unsigned.Ref), e.unsigned.Digest)
	res, err = pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := signatureOf(res, e.ref(e.unsigned)); got != mirror.Unsigned {
		t.Errorf("re-run without --refresh-signatures: %s is %q, want the recorded %q", e.ref(e.unsigned), got, mirror.Unsigned)
	}
	e.src.Reset()
	o.Signatures.Refresh = true
	res, err = pipeline.Mirror(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if got := signatureOf(res, e.ref(e.unsigned)); got != mirror.Signed {
		t.Errorf("--refresh-signatures: %s is %q, want %q", e.ref(e.unsigned), got, mirror.Signed)
	}
	if res.Signatures.Reused != 0 || requestsBeyondBase(e.src.Counts()) == 0 {
		t.Errorf("--refresh-signatures reused %d images and asked the source %v", res.Signatures.Reused, e.src.Counts().ByPath)
	}
}

func signatureOf(res *pipeline.Result, source string) string {
	for _, o := range res.Images {
		if o.Source == source {
			return o.Signature
		}
	}
	return ""
}
