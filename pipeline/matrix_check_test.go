package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/pipeline"
)

// destDigest is what e.dst serves for REGISTRY/REPO:TAG or @DIGEST, read with
// go-containerregistry ("" when it does not have it).
func destDigest(t *testing.T, e *matrixEnv, ref string) string {
	t.Helper()
	rest, ok := strings.CutPrefix(ref, e.dst.Host+"/")
	if !ok {
		t.Fatalf("%s is not on the destination %s", ref, e.dst.Host)
	}
	d, err := e.dst.Digest(context.Background(), rest)
	if err != nil {
		t.Fatalf("inspect %s: %v", ref, err)
	}
	return d
}

// checkAtDestination checks with the independent client that every planned
// image is at the destination under NS by digest and by each of its tags, that
// the rebuilt catalog's tag serves its digest, and that the destination holds
// nothing under NS the plan did not name.
func checkAtDestination(t *testing.T, e *matrixEnv, res *pipeline.Result, ns string) {
	t.Helper()
	ctx := context.Background()
	prefix := e.dst.Host + "/" + ns + "/"
	repos := map[string]bool{}
	for _, im := range res.Plan.Images {
		if im.Error != "" {
			t.Errorf("plan error for %s: %s", im.Source, im.Error)
			continue
		}
		if !strings.HasPrefix(im.DestRepo, prefix) {
			t.Errorf("%s goes to %s, not under %s", im.Source, im.DestRepo, prefix)
			continue
		}
		repos[strings.TrimPrefix(im.DestRepo, e.dst.Host+"/")] = true
		if d := destDigest(t, e, im.DestRepo+"@"+im.Digest.String()); d != im.Digest.String() {
			t.Errorf("%s@%s: the registry serves %q", im.DestRepo, im.Digest, d)
		}
		for _, tag := range im.Tags {
			if d := destDigest(t, e, im.DestRepo+":"+tag); d != im.Digest.String() {
				t.Errorf("%s:%s serves %q, want %s", im.DestRepo, tag, d, im.Digest)
			}
		}
	}
	if len(res.Catalogs) != 1 {
		t.Fatalf("catalogs: %+v", res.Catalogs)
	}
	c := res.Catalogs[0]
	repos[strings.TrimPrefix(c.DestRepo, e.dst.Host+"/")] = true
	if d := destDigest(t, e, c.DestRepo+":"+c.Tag); d != c.Digest.String() {
		t.Errorf("catalog %s:%s serves %q, want %s", c.DestRepo, c.Tag, d, c.Digest)
	}
	all, err := e.dst.Repositories(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range all {
		if strings.HasPrefix(r, ns+"/") {
			n++
			if !repos[r] {
				t.Errorf("%s at the destination: the plan did not name it", r)
			}
		}
	}
	if n != len(repos) {
		t.Errorf("%d repositories under %s at the destination, the plan names %d", n, ns, len(repos))
	}
}

// cdnServed is how many blob GETs the registry's CDN served (0 without one).
func cdnServed(tg *registrytest.Target) int64 {
	if tg.CDN == nil {
		return 0
	}
	return tg.CDN.Served()
}
