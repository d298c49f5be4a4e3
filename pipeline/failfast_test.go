package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/pipeline"
)

// A registry that is not there stops the run before anything is planned, with
// one message naming it, the cause and the fix, whatever --retry-times says.
func TestUnreachableRegistryFailsFast(t *testing.T) {
	src := registrytest.Start(t)
	ref := src.Host() + "/apps/one:1.0"
	imagetest.MustPush(t, ref, fakeimage.Spec{Seed: 1, Layers: 1})
	dead := registrytest.ClosedAddr(t)
	cases := []struct {
		name, cfg string
		dest      location.Location
	}{
		{"destination", "  additionalImages:\n  - name: " + ref + "\n", location.Docker(dead + "/mirror")},
		{"source catalog", "  operators:\n  - catalog: " + dead + "/ns/index:v1\n", location.Docker(src.Host() + "/mirror")},
	}
	for _, tc := range cases {
		for _, retries := range []int{0, retry.DefaultTimes} {
			t.Run(tc.name, func(t *testing.T) {
				o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n"+tc.cfg))
				o.Network.RetryTimes = retries
				o.Destination.Location = tc.dest
				o.Workspace = location.File(t.TempDir())
				res, err := pipeline.Mirror(context.Background(), o)
				if !errors.Is(err, endpoint.ErrRegistryUnreachable) {
					t.Fatalf("err = %v, want the registry reported unreachable", err)
				}
				if want := "connection refused: is a registry listening on " + dead + "?"; !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to say %q", err, want)
				}
				if res != nil {
					t.Errorf("the run went on past the preflight: %+v", res)
				}
			})
		}
	}
}

// A destination that goes away in the middle of a run stops the run after the
// retries of its first failures: the images not started are not tried one by
// one against it.
func TestDestinationDiesMidRun(t *testing.T) {
	t.Parallel()
	src := registrytest.Start(t)
	var lines []string
	for i := 0; i < 24; i++ {
		ref := src.Host() + "/apps/a" + string(rune('a'+i)) + ":1.0"
		imagetest.MustPush(t, ref, fakeimage.Spec{Seed: uint64(200 + i), Layers: 2, LayerSize: 32 << 10})
		lines = append(lines, "  - name: "+ref)
	}
	dst := registrytest.Start(t)
	o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(lines, "\n")+"\n"))
	pipeline.SetRetry(&o, &retry.Policy{Times: 3, Base: 5 * time.Millisecond, Max: 20 * time.Millisecond})
	o.Network.ParallelImages = 2
	o.Destination.Location = location.Docker(dst.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	var once sync.Once
	o.Output.Progress = func(pipeline.Progress) { once.Do(dst.Stop) }
	res, err := pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, endpoint.ErrRegistryUnreachable) {
		t.Fatalf("err = %v, want the destination reported unreachable", err)
	}
	if res == nil || res.Failed == 0 {
		t.Fatalf("result %+v", res)
	}
	notStarted := 0
	for _, im := range res.Images {
		if strings.HasPrefix(im.Error, "not started") || strings.HasPrefix(im.Error, "not finished") {
			notStarted++
		}
	}
	if notStarted == 0 {
		t.Errorf("every image was tried against the dead destination: %+v", res.Images)
	}
}

// When the registry a catalog's images live on is down, planning and the dry
// run report it once and fail each of its images at once, with the cause, rather
// than retrying image by image; every such image is reported, none is counted as
// something the run would copy.
func TestCatalogImagesOnDeadRegistry(t *testing.T) {
	t.Parallel()
	e := setup(t)
	// The catalog image moves to a registry that stays up; the images it names
	// stay on the source, which then goes away.
	keep := registrytest.Start(t)
	moved := keep.Host() + "/catalogs/index:v1"
	if err := crane.Copy(e.seeded.Catalog, moved, crane.Insecure); err != nil {
		t.Fatal(err)
	}
	dead := e.src.Host()
	e.src.Stop()
	o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  operators:\n  - catalog: "+moved+"\n"))
	o.Source.Insecure, o.Destination.Insecure = true, true
	o.Run.DryRun = true
	o.Destination.Location = location.Docker(keep.Host() + "/mirror")
	o.Workspace = location.File(t.TempDir())
	var stages []string
	var mu sync.Mutex
	var last pipeline.Progress
	o.Output.Stage = func(s string) { mu.Lock(); stages = append(stages, s); mu.Unlock() }
	o.Output.Progress = func(p pipeline.Progress) { mu.Lock(); last = p; mu.Unlock() }
	res, err := pipeline.Mirror(context.Background(), o)
	if err == nil {
		t.Fatal("a dry run whose images cannot be read succeeded")
	}
	if res == nil {
		t.Fatalf("no result: %v", err)
	}
	onDead := 0
	for _, im := range res.Images {
		if !strings.HasPrefix(im.Source, dead+"/") {
			continue
		}
		onDead++
		if im.Status != transfer.StatusFailed || !strings.Contains(im.Error, "registry unreachable: "+dead) {
			t.Errorf("%s: status %q, error %q; want failed, the registry named unreachable", im.Source, im.Status, im.Error)
		}
	}
	if onDead == 0 {
		t.Fatal("no image of the catalog lives on the stopped registry: the test proves nothing")
	}
	if res.DryRun == nil {
		t.Fatal("no dry run result")
	}
	for _, j := range res.DryRun.Missing {
		if res.DryRun.Unreadable[j.Key()] == "" && strings.HasPrefix(j.Source, dead+"/") {
			t.Errorf("the dry run would copy %s, which it cannot read", j.Source)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if last.Stage != "dry-run" || last.ImagesDone != last.ImagesTotal || last.ImagesFailed == 0 {
		t.Errorf("last progress %+v, want the dry run's, complete, with failures", last)
	}
	if !slices.Contains(stages, "plan") {
		t.Errorf("stages %v", stages)
	}
}

// An additionalImages entry on a registry that cannot be reached fails its
// images (listed, with the cause; the run ends incomplete, exit code 2), and
// the run goes on with the rest, as it does for catalog images: by tag (it
// cannot be resolved) or by digest (it cannot be copied), whatever
// --retry-times says.
func TestAdditionalImagesOnDeadRegistry(t *testing.T) {
	src := registrytest.Start(t)
	live := src.Host() + "/apps/one:1.0"
	imagetest.MustPush(t, live, fakeimage.Spec{Seed: 7, Layers: 1})
	dead := registrytest.ClosedAddr(t)
	deadRefs := []string{dead + "/ns/img:1", dead + "/ns/pinned@sha256:" + strings.Repeat("ab", 32)}
	for _, retries := range []int{0, retry.DefaultTimes} {
		for _, workflow := range []string{"mirror-to-mirror", "mirror-to-disk"} {
			t.Run(fmt.Sprint(workflow, " retries=", retries), func(t *testing.T) {
				dst := registrytest.Start(t)
				o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n  - name: "+live+"\n  - name: "+deadRefs[0]+"\n  - name: "+deadRefs[1]+"\n"))
				o.Network.RetryTimes = retries
				o.Destination.Location, o.Workspace = location.Docker(dst.Host()+"/mirror"), location.File(t.TempDir())
				if workflow == "mirror-to-disk" {
					o.Destination.Location, o.Workspace = location.File(t.TempDir()), location.Location{}
				}
				res, err := pipeline.Mirror(context.Background(), o)
				if !errors.Is(err, pipeline.ErrIncomplete) || errors.Is(err, endpoint.ErrRegistryUnreachable) {
					t.Fatalf("err = %v, want the run incomplete (some images failed), not stopped", err)
				}
				if res == nil || res.Failed != len(deadRefs) {
					t.Fatalf("result %+v, want %d failed images", res, len(deadRefs))
				}
				for _, im := range res.Images {
					switch {
					case slices.Contains(deadRefs, im.Source):
						if im.Status != transfer.StatusFailed || !strings.Contains(im.Error, dead) {
							t.Errorf("%s: %s %q, want failed naming %s", im.Source, im.Status, im.Error, dead)
						}
					case im.Source == live && workflow == "mirror-to-mirror":
						if im.Status != transfer.StatusCopied {
							t.Errorf("%s: %s %q, want it copied", im.Source, im.Status, im.Error)
						}
					case im.Source == live:
						// mirror-to-disk writes no archive while an image
						// fails (as for catalog images): the image is fetched
						// and kept for the next run.
						if im.Status == transfer.StatusFailed {
							t.Errorf("%s: %s %q, want it fetched", im.Source, im.Status, im.Error)
						}
					default:
						t.Errorf("unexpected image %s", im.Source)
					}
				}
				if workflow == "mirror-to-mirror" {
					if _, err := crane.Digest(dst.Host()+"/mirror/apps/one:1.0", crane.Insecure); err != nil {
						t.Errorf("the live image is not at the destination: %v", err)
					}
					if len(res.ClusterResources) == 0 {
						t.Error("no cluster resources for the image that was mirrored")
					}
				}
			})
		}
	}
}
