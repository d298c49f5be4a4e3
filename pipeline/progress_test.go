package pipeline_test

import (
	"context"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
)

// TestProgressCountsCatalogsApart: the copy's progress counts the catalog image
// apart from the images, against totals known before the first byte moves, and
// its bytes never run ahead of the blobs done.
func TestProgressCountsCatalogsApart(t *testing.T) {
	t.Parallel()
	e := setup(t)
	dst := registrytest.Start(t)
	o := opts(e.config(t, "    - name: foo"))
	o.Workspace = location.File(t.TempDir())
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	var mu sync.Mutex
	var copyEvents []pipeline.Progress
	o.Output.Progress = func(p pipeline.Progress) {
		mu.Lock()
		defer mu.Unlock()
		if p.Stage == "copy" {
			copyEvents = append(copyEvents, p)
		}
	}
	res, err := pipeline.Mirror(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	images, catalogs := 0, 0
	for _, j := range res.Plan.Images {
		if j.Kind == mirror.KindCatalog {
			catalogs++
		} else {
			images++
		}
	}
	if catalogs != 1 || images == 0 {
		t.Fatalf("plan has %d catalogs and %d images: the test proves nothing", catalogs, images)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(copyEvents) < 2 {
		t.Fatalf("%d copy events", len(copyEvents))
	}
	first, last := copyEvents[0], copyEvents[len(copyEvents)-1]
	if first.ImagesDone != 0 || first.CatalogsDone != 0 || first.BytesDone != 0 || first.BytesTotal == 0 {
		t.Errorf("first copy event %+v: want nothing done of a known total", first)
	}
	for _, p := range copyEvents {
		if p.ImagesTotal != images || p.CatalogsTotal != catalogs || p.BytesTotal != first.BytesTotal {
			t.Fatalf("event %+v: totals moved or count the catalog as an image (want %d images, %d catalogs)", p, images, catalogs)
		}
		if p.BytesDone > p.BytesTotal || p.ImagesDone > p.ImagesTotal || p.CatalogsDone > p.CatalogsTotal {
			t.Fatalf("event %+v: more done than the total", p)
		}
	}
	if last.ImagesDone != images || last.CatalogsDone != catalogs || last.BytesDone != last.BytesTotal || last.ImagesFailed+last.CatalogsFailed != 0 {
		t.Errorf("last copy event %+v: want everything done", last)
	}
}
