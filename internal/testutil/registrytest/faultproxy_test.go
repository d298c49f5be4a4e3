package registrytest_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// TestFaultProxyInjected: Injected counts only the faults that changed an
// exchange, Applied every fault drawn. A flipped byte or a cut body drawn for
// a HEAD (no body) changes nothing; on a GET it does; 429 always does.
func TestFaultProxyInjected(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/r:1", fakeimage.Spec{Seed: 1, Layers: 1, LayerSize: 4096})
	proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{
		Match:    registrytest.Everything,
		Sequence: []registrytest.Fault{registrytest.FlipByte, registrytest.CutMidBody, registrytest.FlipByte, registrytest.TooManyRequests},
	})
	url := "http://" + proxy.Host() + "/v2/r/blobs/" + p.Blobs[0].String()
	for _, method := range []string{http.MethodHead, http.MethodHead, http.MethodGet, http.MethodGet} {
		req, _ := http.NewRequest(method, url, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	applied, injected := proxy.Applied(), proxy.Injected()
	if applied[registrytest.FlipByte] != 2 || applied[registrytest.CutMidBody] != 1 || applied[registrytest.TooManyRequests] != 1 {
		t.Errorf("applied %v: want 2 flips, 1 cut, one 429 drawn", applied)
	}
	if injected[registrytest.FlipByte] != 1 || injected[registrytest.CutMidBody] != 0 || injected[registrytest.TooManyRequests] != 1 {
		t.Errorf("injected %v: want the GET's flip and the 429 only (the HEADs have no body to alter)", injected)
	}
}
