package pipeline_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/imagetest"
	"github.com/airlock-mirror/airlock/internal/registrytest"
	"github.com/airlock-mirror/airlock/mirror"
	"github.com/airlock-mirror/airlock/pipeline"
)

// A registry that is not there stops the run before anything is planned, with
// one message naming it, the cause and the fix, whatever --retry-times says.
func TestUnreachableRegistryFailsFast(t *testing.T) {
	src := registrytest.Start(t)
	ref := src.Host() + "/apps/one:1.0"
	imagetest.MustPush(t, ref, imagetest.Spec{Seed: 1, Layers: 1})
	dead := registrytest.ClosedAddr(t)
	cases := []struct {
		name, cfg, dest string
	}{
		{"destination", "  additionalImages:\n  - name: " + ref + "\n", "docker://" + dead + "/mirror"},
		{"source catalog", "  operators:\n  - catalog: " + dead + "/ns/index:v1\n", "docker://" + src.Host() + "/mirror"},
		{"source image", "  additionalImages:\n  - name: " + dead + "/ns/img:1\n", "docker://" + src.Host() + "/mirror"},
	}
	for _, tc := range cases {
		for _, retries := range []int{0, mirror.DefaultRetryTimes} {
			t.Run(tc.name, func(t *testing.T) {
				o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n"+tc.cfg))
				o.RetryTimes = retries
				o.Destination = tc.dest
				o.Workspace = "file://" + t.TempDir()
				res, err := pipeline.Mirror(context.Background(), o)
				if !errors.Is(err, mirror.ErrRegistryUnreachable) {
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
	src := registrytest.Start(t)
	var lines []string
	for i := 0; i < 24; i++ {
		ref := src.Host() + "/apps/a" + string(rune('a'+i)) + ":1.0"
		imagetest.MustPush(t, ref, imagetest.Spec{Seed: uint64(200 + i), Layers: 2, LayerSize: 32 << 10})
		lines = append(lines, "  - name: "+ref)
	}
	dst := registrytest.Start(t)
	o := opts(writeCfg(t, "apiVersion: mirror.openshift.io/v2alpha1\nkind: ImageSetConfiguration\nmirror:\n  additionalImages:\n"+strings.Join(lines, "\n")+"\n"))
	o.Retry = &mirror.RetryPolicy{Times: 3, Base: 5 * time.Millisecond, Max: 20 * time.Millisecond}
	o.ParallelImages = 2
	o.Destination = "docker://" + dst.Host() + "/mirror"
	o.Workspace = "file://" + t.TempDir()
	var once sync.Once
	o.Progress = func(pipeline.Progress) { once.Do(dst.Stop) }
	res, err := pipeline.Mirror(context.Background(), o)
	if !errors.Is(err, mirror.ErrRegistryUnreachable) {
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
