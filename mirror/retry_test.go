package mirror

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// countingRegistry answers every request with status (after a working /v2/) and
// counts the attempts of each request (method and path).
type countingRegistry struct {
	srv    *httptest.Server
	status int
	ok     map[string][2]string // path → content type, body answered 200
	mu     sync.Mutex
	counts map[string]int
}

func newCountingRegistry(t *testing.T, status int, retryAfter string) *countingRegistry {
	c := &countingRegistry{status: status, counts: map[string]int{}, ok: map[string][2]string{}}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.counts[r.Method+" "+r.URL.Path]++
		c.mu.Unlock()
		c.mu.Lock()
		body, ok := c.ok[r.URL.Path]
		c.mu.Unlock()
		if ok {
			w.Header().Set("Content-Type", body[0])
			w.Header().Set("Docker-Content-Digest", digest.FromString(body[1]).String())
			w.Write([]byte(body[1]))
			return
		}
		if r.URL.Path == "/v2/" {
			w.WriteHeader(http.StatusOK)
			return
		}
		if retryAfter != "" {
			w.Header().Set("Retry-After", retryAfter)
		}
		w.WriteHeader(c.status)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

func (c *countingRegistry) serve(path, contentType, body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok[path] = [2]string{contentType, body}
}

func (c *countingRegistry) host() string { u, _ := url.Parse(c.srv.URL); return u.Host }

func (c *countingRegistry) count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

// --retry-times N means at most N+1 attempts of one request, whatever the
// operation: one manifest GET, one existence check, one blob transfer, a catalog
// fetch.
func TestRetryTimesBoundsAttempts(t *testing.T) {
	d := digest.FromString("x")
	for _, n := range []int{0, 1, 5} {
		for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
			t.Run(fmt.Sprintf("retry-times=%d/%d", n, status), func(t *testing.T) {
				c := newCountingRegistry(t, status, "0")
				p := &RetryPolicy{Times: n, Base: time.Millisecond, Max: 2 * time.Millisecond}
				r := NewRegistry(RegistryOptions{Retry: p})
				repo := c.host() + "/ns/app"
				ctx := context.Background()
				if _, err := r.Manifest(ctx, repo, "v1"); err == nil {
					t.Fatal("manifest: no error")
				}
				if got := c.count("GET /v2/ns/app/manifests/v1"); got != n+1 {
					t.Errorf("manifest GET attempts %d, want %d", got, n+1)
				}
				if _, err := r.BlobExists(ctx, repo, endpoint.Descriptor{Digest: d, Size: 1}); err == nil {
					t.Fatal("blob HEAD: no error")
				}
				if got := c.count("HEAD /v2/ns/app/blobs/" + d.String()); got != n+1 {
					t.Errorf("blob HEAD attempts %d, want %d", got, n+1)
				}
				// The copy engine's first request, a manifest check at the destination.
				_, err := Copy(ctx, r, r, []Job{{Source: repo, Digest: d, Dest: c.host() + "/ns/copy"}}, CopyOptions{Retry: p})
				if err == nil {
					t.Fatal("copy: no error")
				}
				if got := c.count("HEAD /v2/ns/copy/manifests/" + d.String()); got != n+1 {
					t.Errorf("copy's manifest HEAD attempts %d, want %d", got, n+1)
				}
				// A blob transfer (source read + upload, one operation): its blob GET
				// is attempted N+1 times in all.
				manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` + d.String() + `","size":1},"layers":[]}`
				md := digest.FromString(manifest)
				c.serve("/v2/ns/app/manifests/"+md.String(), "application/vnd.oci.image.manifest.v1+json", manifest)
				dst := registrytest.Start(t)
				if _, err := Copy(ctx, r, NewRegistry(RegistryOptions{Retry: p}), []Job{{Source: repo, Digest: md, Dest: dst.Host() + "/ns/copy"}}, CopyOptions{Retry: p}); err == nil {
					t.Fatal("copy: no error")
				}
				if got := c.count("GET /v2/ns/app/blobs/" + d.String()); got != n+1 {
					t.Errorf("blob transfer GET attempts %d, want %d", got, n+1)
				}
				// A catalog fetch goes through the same client.
				if _, err := FetchCatalogWithOptions(ctx, repo+":cat", t.TempDir(), FetchOptions{Registry: r}); err == nil {
					t.Fatal("fetch: no error")
				}
				if got := c.count("GET /v2/ns/app/manifests/cat"); got != n+1 {
					t.Errorf("catalog fetch manifest GET attempts %d, want %d", got, n+1)
				}
			})
		}
	}
}

// 4xx answers other than 408 and 429 are never retried.
func TestNoRetryOnClientErrors(t *testing.T) {
	for _, status := range []int{http.StatusNotFound, http.StatusUnauthorized, http.StatusForbidden, http.StatusMethodNotAllowed} {
		c := newCountingRegistry(t, status, "")
		r := NewRegistry(RegistryOptions{Retry: &RetryPolicy{Times: 5, Base: time.Millisecond}})
		if _, err := r.Manifest(context.Background(), c.host()+"/ns/app", "v1"); err == nil {
			t.Fatalf("%d: no error", status)
		}
		if got := c.count("GET /v2/ns/app/manifests/v1"); got != 1 {
			t.Errorf("%d: %d attempts, want 1", status, got)
		}
	}
}

// A 429 waits the Retry-After the registry asked for.
func TestRetryAfterHonoured(t *testing.T) {
	c := newCountingRegistry(t, http.StatusTooManyRequests, "1")
	r := NewRegistry(RegistryOptions{Retry: &RetryPolicy{Times: 1, Base: time.Millisecond, Max: time.Millisecond}})
	start := time.Now()
	_, _ = r.Manifest(context.Background(), c.host()+"/ns/app", "v1")
	if c.count("GET /v2/ns/app/manifests/v1") != 2 {
		t.Fatalf("attempts %d, want 2", c.count("GET /v2/ns/app/manifests/v1"))
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
	for _, n := range []int{0, DefaultRetryTimes} {
		r := NewRegistry(RegistryOptions{Retry: &RetryPolicy{Times: n}, TLSFlag: "--dest-tls-verify=false"})
		err := r.Probe(context.Background(), host+"/ns/x", true)
		if !errors.Is(err, ErrRegistryUnreachable) || !strings.Contains(err.Error(), "connection refused: is a registry listening on "+host+"?") {
			t.Fatalf("retry %d: %v", n, err)
		}
		if _, err := r.Manifest(context.Background(), host+"/ns/x", "v1"); !errors.Is(err, ErrRegistryUnreachable) {
			t.Fatalf("after the probe: %v", err)
		}
	}
}

// An unknown host and an untrusted certificate are explained, not retried.
func TestProbeExplains(t *testing.T) {
	r := NewRegistry(RegistryOptions{Retry: &RetryPolicy{Times: 2}})
	err := r.Probe(context.Background(), "no-such-registry.invalid/ns/x", false)
	if !errors.Is(err, ErrRegistryUnreachable) || !strings.Contains(err.Error(), "cannot resolve") {
		t.Fatalf("unknown host: %v", err)
	}
	tlsReg := registrytest.Start(t, registrytest.WithTLS())
	r = NewRegistry(RegistryOptions{Retry: &RetryPolicy{Times: 2}, TLSFlag: "--src-tls-verify=false"})
	err = r.Probe(context.Background(), tlsReg.Host()+"/ns/x", false)
	if !errors.Is(err, ErrRegistryUnreachable) || !strings.Contains(err.Error(), "x509") || !strings.Contains(err.Error(), "--src-tls-verify=false") {
		t.Fatalf("untrusted certificate: %v", err)
	}
	if c := tlsReg.Counts(); c.Other+c.ManifestGET > 0 {
		t.Errorf("requests reached the registry through an untrusted TLS connection: %+v", c)
	}
}
