package registry

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// A client pings a token registry once: a second group of repositories (a
// transport of its own, made after Expect) asks for its token without
// pinging the host again, and the probe sends no GET /v2/ after its token
// exchange. Each of those was a round trip before a run's first read, and
// before the first read of a repository known only later (a release's
// components). (The authenticated GET /v2/ of a registry with basic auth,
// its only check of the credentials, is what the auth tests probe.)
func TestPingOncePerHost(t *testing.T) {
	be := registrytest.Start(t)
	one := imagetest.MustPush(t, be.Host()+"/ns/one:v1", fakeimage.Spec{Seed: 1, Layers: 1})
	two := imagetest.MustPush(t, be.Host()+"/ns/two:v1", fakeimage.Spec{Seed: 2, Layers: 1})
	var mu sync.Mutex
	seen := map[string]int{}
	wan := registrytest.NewWAN(t, be.URL(), registrytest.WANConfig{TokenAuth: true,
		Observe: func(method, path string, status int, _, _ time.Time) {
			mu.Lock()
			defer mu.Unlock()
			seen[fmt.Sprint(method, " ", path, " ", status)]++
		}})
	ctx := context.Background()
	r := New(Options{})
	if err := r.Probe(ctx, wan.Host+"/ns/one", false); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Manifest(ctx, wan.Host+"/ns/one", one.Digest.String()); err != nil {
		t.Fatal(err)
	}
	r.Expect([]string{wan.Host + "/ns/two"}, false) // a group, and a transport, of its own
	if _, err := r.Manifest(ctx, wan.Host+"/ns/two", two.Digest.String()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["GET /v2/ 401"] != 1 || seen["GET /v2/ 200"] != 0 {
		t.Errorf("pings %d, authenticated GET /v2/ %d: want one ping and no GET after the token (requests: %v)", seen["GET /v2/ 401"], seen["GET /v2/ 200"], seen)
	}
	if seen["GET /v2/auth 200"] != 2 {
		t.Errorf("%d token requests, want one per group (requests: %v)", seen["GET /v2/auth 200"], seen)
	}
}

// The probe of a registry without authentication sends its GET /v2/ to the
// host even after a transport's ping (the same request) was answered: that
// GET is what finds a registry whose answers stop after their headers, and a
// remembered ping must not answer it for the host.
func TestProbeIsNotAnsweredByAPing(t *testing.T) {
	reg := registrytest.Start(t)
	var mu sync.Mutex
	pings := 0
	// Every GET /v2/ after the first (the transport's ping) stalls its body.
	laterPing := func(r *http.Request) bool {
		if r.Method != http.MethodGet || r.URL.Path != "/v2/" {
			return false
		}
		mu.Lock()
		defer mu.Unlock()
		pings++
		return pings > 1
	}
	proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{Match: laterPing, Rate: 1, Kinds: []registrytest.Fault{registrytest.StallBody}})
	c := New(Options{Retry: fastPolicy(0), Timeouts: testTimeouts})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := c.Probe(ctx, proxy.Host()+"/ns/app", true)
	if err == nil {
		t.Fatalf("the probe passed on a registry whose GET /v2/ stalls after its headers (%d GET /v2/ reached it)", pings)
	}
	if ctx.Err() != nil {
		t.Fatal("the test's own deadline ended the probe")
	}
	mu.Lock()
	defer mu.Unlock()
	if pings < 2 {
		t.Errorf("%d GET /v2/ reached the registry, want the ping and the probe's", pings)
	}
}
