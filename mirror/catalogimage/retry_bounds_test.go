package catalogimage

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/opencontainers/go-digest"
)

// --retry-times N means at most N+1 attempts of one request, whatever the
// operation: one manifest GET, one existence check, one blob transfer, a catalog
// fetch. (It lives here, the lowest package that sees the registry client,
// the copy engine and the catalog fetch together.)
func TestRetryTimesBoundsAttempts(t *testing.T) {
	d := digest.FromString("x")
	for _, n := range []int{0, 1, 5} {
		for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests} {
			t.Run(fmt.Sprintf("retry-times=%d/%d", n, status), func(t *testing.T) {
				c := mirrortest.NewCountingRegistry(t, status, "0")
				p := &retry.Policy{Times: n, Base: time.Millisecond, Max: 2 * time.Millisecond}
				// A fresh client per operation: a client stops asking a host that
				// answered 5xx to every request (registry.Client.NoteFailure).
				r := registry.New(registry.Options{Retry: p})
				repo := c.Host() + "/ns/app"
				ctx := context.Background()
				if _, err := r.Manifest(ctx, repo, "v1"); err == nil {
					t.Fatal("manifest: no error")
				}
				if got := c.Count("GET /v2/ns/app/manifests/v1"); got != n+1 {
					t.Errorf("manifest GET attempts %d, want %d", got, n+1)
				}
				r = registry.New(registry.Options{Retry: p})
				if _, err := r.BlobExists(ctx, repo, endpoint.Descriptor{Digest: d, Size: 1}); err == nil {
					t.Fatal("blob HEAD: no error")
				}
				if got := c.Count("HEAD /v2/ns/app/blobs/" + d.String()); got != n+1 {
					t.Errorf("blob HEAD attempts %d, want %d", got, n+1)
				}
				// The copy engine's first request, a manifest check at the destination.
				r = registry.New(registry.Options{Retry: p})
				_, err := transfer.Copy(ctx, r, r, []transfer.Job{{Source: repo, Digest: d, Dest: c.Host() + "/ns/copy"}}, transfer.Options{Retry: p})
				if err == nil {
					t.Fatal("copy: no error")
				}
				if got := c.Count("HEAD /v2/ns/copy/manifests/" + d.String()); got != n+1 {
					t.Errorf("copy's manifest HEAD attempts %d, want %d", got, n+1)
				}
				// A blob transfer (source read + upload, one operation): its blob GET
				// is attempted N+1 times in all.
				manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` + d.String() + `","size":1},"layers":[]}`
				md := digest.FromString(manifest)
				c.Serve("/v2/ns/app/manifests/"+md.String(), "application/vnd.oci.image.manifest.v1+json", manifest)
				dst := registrytest.Start(t)
				r = registry.New(registry.Options{Retry: p})
				if _, err := transfer.Copy(ctx, r, registry.New(registry.Options{Retry: p}), []transfer.Job{{Source: repo, Digest: md, Dest: dst.Host() + "/ns/copy"}}, transfer.Options{Retry: p}); err == nil {
					t.Fatal("copy: no error")
				}
				if got := c.Count("GET /v2/ns/app/blobs/" + d.String()); got != n+1 {
					t.Errorf("blob transfer GET attempts %d, want %d", got, n+1)
				}
				// A catalog fetch goes through the same client.
				r = registry.New(registry.Options{Retry: p})
				if _, err := Fetch(ctx, repo+":cat", t.TempDir(), FetchOptions{Registry: r}); err == nil {
					t.Fatal("fetch: no error")
				}
				if got := c.Count("GET /v2/ns/app/manifests/cat"); got != n+1 {
					t.Errorf("catalog fetch manifest GET attempts %d, want %d", got, n+1)
				}
			})
		}
	}
}
