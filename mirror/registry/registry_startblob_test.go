package registry

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// noMountProxy fronts a registry that ignores cross-repository mounts: the mount
// and from parameters are dropped, so every upload POST opens a session (202),
// as registries without mount support answer.
func noMountProxy(t *testing.T, reg *registrytest.Registry) (host string, bodyBytes *atomic.Int64) {
	u, err := url.Parse(reg.URL())
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		q.Del("mount")
		q.Del("from")
		r.URL.RawQuery = q.Encode()
		if r.Method == http.MethodPut || r.Method == http.MethodPatch {
			n.Add(r.ContentLength)
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &n
}

// TestRegistryStartBlob checks the one-request blob start: a blob the repository
// holds is never sent again, whether or not the registry honours mounts, and a
// blob it lacks is uploaded through the session the same request opened.
func TestRegistryStartBlob(t *testing.T) {
	ctx := context.Background()
	content := bytes.Repeat([]byte("start-blob"), 300)
	d := endpoint.Descriptor{Digest: digest.FromBytes(content), Size: int64(len(content))}
	for _, honours := range []bool{true, false} {
		name := map[bool]string{true: "honours mounts", false: "ignores mounts"}[honours]
		t.Run(name, func(t *testing.T) {
			reg := registrytest.Start(t)
			host := reg.Host()
			var sentBytes *atomic.Int64
			if !honours {
				host, sentBytes = noMountProxy(t, reg)
			}
			r := New(Options{Retry: mirrortest.FastRetry})
			repo := host + "/start/a"

			// Absent: an upload comes back; writing it commits the blob.
			up, err := r.StartBlob(ctx, repo, d)
			if err != nil || up == nil {
				t.Fatalf("StartBlob of an absent blob: %v, %v", up, err)
			}
			if err := up.Write(ctx, bytes.NewReader(content)); err != nil {
				t.Fatal(err)
			}
			if ok, err := r.BlobExists(ctx, repo, d); !ok || err != nil {
				t.Fatalf("blob missing after the upload: %v", err)
			}

			// Present: nil, nothing sent, whether the registry says so (201) or
			// a HEAD does (a registry that ignores mounts).
			reg.Reset()
			before := int64(0)
			if sentBytes != nil {
				before = sentBytes.Load()
			}
			up, err = r.StartBlob(ctx, repo, d)
			if err != nil || up != nil {
				t.Fatalf("StartBlob of a present blob: %v, %v", up, err)
			}
			c := reg.Counts()
			if c.BytesUploaded != 0 || c.UploadPUT != 0 || (sentBytes != nil && sentBytes.Load() != before) {
				t.Fatalf("a present blob was sent: %+v", c)
			}
			if honours && (c.Mounted != 1 || c.BlobHEAD != 0) {
				t.Fatalf("want one 201 mount and no HEAD: %+v", c)
			}
			if !honours && c.BlobHEAD != 1 {
				t.Fatalf("want the HEAD that a registry ignoring mounts needs: %+v", c)
			}

			// Once the host has answered a mount with 201, an absent blob costs
			// the POST and the PUT only.
			other := endpoint.Descriptor{Digest: digest.FromString("other"), Size: 5}
			reg.Reset()
			up, err = r.StartBlob(ctx, repo, other)
			if err != nil || up == nil {
				t.Fatalf("StartBlob of a second absent blob: %v, %v", up, err)
			}
			if err := up.Write(ctx, strings.NewReader("other")); err != nil {
				t.Fatal(err)
			}
			c = reg.Counts()
			if want := map[bool]int64{true: 0, false: 1}[honours]; c.BlobHEAD != want || c.BlobsCommitted != 1 {
				t.Fatalf("blob HEADs %d (want %d), committed %d: %+v", c.BlobHEAD, want, c.BlobsCommitted, c)
			}

			// An upload that is abandoned leaves nothing behind.
			abandoned := endpoint.Descriptor{Digest: digest.FromString("abandoned"), Size: 9}
			up, err = r.StartBlob(ctx, repo, abandoned)
			if err != nil || up == nil {
				t.Fatalf("StartBlob: %v, %v", up, err)
			}
			up.Cancel(ctx)
			if ok, _ := r.BlobExists(ctx, repo, abandoned); ok {
				t.Fatal("a cancelled upload left the blob")
			}
		})
	}
}
