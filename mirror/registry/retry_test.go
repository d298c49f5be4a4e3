package registry

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// 4xx answers other than 408 and 429 are never retried.
func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden, http.StatusMethodNotAllowed} {
		c := mirrortest.NewCountingRegistry(t, status, "")
		r := New(Options{Retry: &retry.Policy{Times: 5, Base: time.Millisecond}})
		if _, err := r.Manifest(context.Background(), c.Host()+"/ns/app", "v1"); err == nil {
			t.Fatalf("%d: no error", status)
		}
		if got := c.Count("GET /v2/ns/app/manifests/v1"); got != 1 {
			t.Errorf("%d: %d attempts, want 1", status, got)
		}
	}
}

// A 429 waits the Retry-After the registry asked for.
func TestRetryAfterHonoured(t *testing.T) {
	c := mirrortest.NewCountingRegistry(t, http.StatusTooManyRequests, "1")
	r := New(Options{Retry: &retry.Policy{Times: 1, Base: time.Millisecond, Max: time.Millisecond}})
	start := time.Now()
	_, _ = r.Manifest(context.Background(), c.Host()+"/ns/app", "v1")
	if c.Count("GET /v2/ns/app/manifests/v1") != 2 {
		t.Fatalf("attempts %d, want 2", c.Count("GET /v2/ns/app/manifests/v1"))
	}
	// The backoff alone would be about a millisecond; Retry-After says a second.
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Errorf("retried after %v, before the 1 s Retry-After", waited)
	}
}

// A registry that refuses connections is reported at once by Probe, whatever
// the retry policy, with the cause and the fix; later operations on the host
// fail at once.
func TestProbeUnreachable(t *testing.T) {
	host := registrytest.ClosedAddr(t)
	for _, n := range []int{0, retry.DefaultTimes} {
		r := New(Options{Retry: &retry.Policy{Times: n}, TLSFlag: "--dest-tls-verify=false"})
		err := r.Probe(context.Background(), host+"/ns/x", true)
		if !errors.Is(err, endpoint.ErrRegistryUnreachable) || !strings.Contains(err.Error(), "connection refused: is a registry listening on "+host+"?") {
			t.Fatalf("retry %d: %v", n, err)
		}
		if _, err := r.Manifest(context.Background(), host+"/ns/x", "v1"); !errors.Is(err, endpoint.ErrRegistryUnreachable) {
			t.Fatalf("after the probe: %v", err)
		}
	}
}

// An unknown host and an untrusted certificate are explained, not retried.
func TestProbeExplains(t *testing.T) {
	r := New(Options{Retry: &retry.Policy{Times: 2}})
	err := r.Probe(context.Background(), "no-such-registry.invalid/ns/x", false)
	if !errors.Is(err, endpoint.ErrRegistryUnreachable) || !strings.Contains(err.Error(), "cannot resolve") {
		t.Fatalf("unknown host: %v", err)
	}
	tlsReg := registrytest.Start(t, registrytest.WithTLS())
	r = New(Options{Retry: &retry.Policy{Times: 2}, TLSFlag: "--src-tls-verify=false"})
	err = r.Probe(context.Background(), tlsReg.Host()+"/ns/x", false)
	if !errors.Is(err, endpoint.ErrRegistryUnreachable) || !strings.Contains(err.Error(), "x509") || !strings.Contains(err.Error(), "--src-tls-verify=false") {
		t.Fatalf("untrusted certificate: %v", err)
	}
	if c := tlsReg.Counts(); c.Other+c.ManifestGET > 0 {
		t.Errorf("requests reached the registry through an untrusted TLS connection: %+v", c)
	}
}
