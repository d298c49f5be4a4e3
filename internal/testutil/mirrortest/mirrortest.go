// Package mirrortest is test support shared by the packages under mirror/: the
// fast retry policy of tests and a fake registry that counts attempts. It is
// imported by tests only, never by code the binary links.
package mirrortest

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/retry"
)

// FastRetry keeps retry sleeps short in tests.
var FastRetry = &retry.Policy{Times: retry.DefaultTimes, Base: 5 * time.Millisecond, Max: 50 * time.Millisecond}

// CountingRegistry is a fake registry for retry tests: it answers every request with status (after a working /v2/) and
// counts the attempts of each request (method and path).
type CountingRegistry struct {
	srv    *httptest.Server
	status int
	ok     map[string][2]string // path → content type, body answered 200
	mu     sync.Mutex
	counts map[string]int
}

// NewCountingRegistry starts a CountingRegistry answering status (with a
// Retry-After header when retryAfter is set), stopped when the test ends.
func NewCountingRegistry(t *testing.T, status int, retryAfter string) *CountingRegistry {
	c := &CountingRegistry{status: status, counts: map[string]int{}, ok: map[string][2]string{}}
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

// Serve makes the registry answer path with 200, contentType and body.
func (c *CountingRegistry) Serve(path, contentType, body string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok[path] = [2]string{contentType, body}
}

// Host is the registry's host:port.
func (c *CountingRegistry) Host() string { u, _ := url.Parse(c.srv.URL); return u.Host }

// Count is how many requests key ("METHOD /path") received.
func (c *CountingRegistry) Count(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}
