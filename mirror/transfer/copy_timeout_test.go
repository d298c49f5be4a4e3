package transfer

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// --image-timeout bounds one image: an image whose blob never arrives fails
// alone, with the flag named, while the others are copied.
func TestCopyImageTimeout(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	slow := imagetest.MustPush(t, src.Host()+"/timeout/slow:1", fakeimage.Spec{Seed: 21, Layers: 1, LayerSize: 4 << 10})
	fast := imagetest.MustPush(t, src.Host()+"/timeout/fast:1", fakeimage.Spec{Seed: 22, Layers: 1, LayerSize: 4 << 10})
	// Blob bodies of the slow repository stall (headers, then nothing), for
	// less than the registry client's own idle timeout (30 s). The fast image has
	// 5 s, plenty on a loaded machine under the race detector.
	proxy := registrytest.NewFaultProxy(t, src.Host(), registrytest.FaultPlan{
		Match: func(r *http.Request) bool {
			return r.Method == http.MethodGet && registrytest.PathKind(r.URL.Path) == "blob" && strings.Contains(r.URL.Path, "/slow/")
		},
		Rate: 1, Kinds: []registrytest.Fault{registrytest.StallBody},
	})
	jobs := []Job{
		{Source: proxy.Host() + "/timeout/slow", Digest: slow.Digest, Dest: dst.Host() + "/m/slow", Tags: []string{"1"}},
		{Source: proxy.Host() + "/timeout/fast", Digest: fast.Digest, Dest: dst.Host() + "/m/fast", Tags: []string{"1"}},
	}
	rep, err := Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry, ImageTimeout: 5 * time.Second})
	if err == nil {
		t.Fatal("no error")
	}
	if im := rep.Images[0]; im.Status != StatusFailed || !strings.Contains(im.Err, "not copied within 5s (--image-timeout)") {
		t.Errorf("slow image: %s %s", im.Status, im.Err)
	}
	if im := rep.Images[1]; im.Status != StatusCopied {
		t.Errorf("fast image: %s %s", im.Status, im.Err)
	}
	if proxy.Applied()[registrytest.StallBody] == 0 {
		t.Fatal("no stall injected")
	}
}
