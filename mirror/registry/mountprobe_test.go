package registry

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// TestMountProbe: before the first blob a client starts on a host, it learns
// once whether the registry honours mounts: it mounts the empty JSON blob
// into the repository from itself, committing it first when absent. A
// registry that honours mounts (201) is trusted from then on: a new blob costs
// the POST and the PUT, no HEAD, from the very first one. One that ignores
// mounts gets the probe's session cancelled, is not probed again, and every
// new blob is looked up with a HEAD first, so a blob it holds is never sent
// again.
func TestMountProbe(t *testing.T) {
	ctx := context.Background()
	blob := func(s string) (endpoint.Descriptor, []byte) {
		b := bytes.Repeat([]byte(s), 100)
		return endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}, b
	}
	cases := []struct {
		name    string
		honours bool
		// per new blob, after the probe
		wantHEAD int64
	}{
		{"honours mounts", true, 0},
		{"ignores mounts", false, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			reg := registrytest.Start(t)
			host := reg.Host()
			if !tc.honours {
				host, _ = noMountProxy(t, reg)
			}
			r := New(Options{Retry: mirrortest.FastRetry})
			repo := host + "/probe/a"
			first, content := blob("first")
			up, err := r.StartBlob(ctx, repo, first)
			if err != nil || up == nil {
				t.Fatalf("StartBlob: %v, %v", up, err)
			}
			c := reg.Counts()
			// The probe: mount (202), HEAD (absent), commit "{}", mount
			// again; then the blob's own POST (and HEAD).
			if c.BlobsCommitted != 1 || c.BytesUploaded != 2 || c.UploadPOST+c.MountPOST != 3 || c.BlobHEAD != 1+tc.wantHEAD {
				t.Fatalf("probe and first start: %+v (%v)", c, c.ByPath)
			}
			if tc.honours && c.Mounted != 1 {
				t.Fatalf("the probe was not answered 201: %+v", c)
			}
			if !tc.honours && c.ByPath["DELETE upload"] != 1 {
				t.Fatalf("the probe's session was not cancelled: %+v (%v)", c, c.ByPath)
			}
			reg.Reset()
			if err := up.Write(ctx, bytes.NewReader(content)); err != nil {
				t.Fatal(err)
			}
			if c := reg.Counts(); c.BlobsCommitted != 1 || c.UploadPOST+c.MountPOST != 0 {
				t.Fatalf("commit: %+v", c)
			}
			for _, s := range []string{"second", "third"} {
				reg.Reset()
				d, content := blob(s)
				up, err := r.StartBlob(ctx, repo, d)
				if err != nil || up == nil {
					t.Fatalf("StartBlob %s: %v, %v", s, up, err)
				}
				if err := up.Write(ctx, bytes.NewReader(content)); err != nil {
					t.Fatal(err)
				}
				c := reg.Counts()
				if c.BlobHEAD != tc.wantHEAD || c.UploadPOST+c.MountPOST != 1 || c.BlobsCommitted != 1 {
					t.Fatalf("%s blob: %+v, want %d HEAD, 1 POST (no probe again), 1 commit", s, c, tc.wantHEAD)
				}
			}
			// A blob the repository holds is not sent again either way.
			reg.Reset()
			if up, err := r.StartBlob(ctx, repo, first); err != nil || up != nil {
				t.Fatalf("StartBlob of a held blob: %v, %v", up, err)
			}
			if c := reg.Counts(); c.BytesUploaded != 0 || c.UploadPUT != 0 {
				t.Fatalf("a held blob was sent: %+v", c)
			}
			// The next run's client: the repository holds the probe's blob,
			// so a registry that honours mounts answers the probe at once.
			reg.Reset()
			next := New(Options{Retry: mirrortest.FastRetry})
			d, _ := blob("fourth")
			up, err = next.StartBlob(ctx, repo, d)
			if err != nil || up == nil {
				t.Fatalf("StartBlob, next run: %v, %v", up, err)
			}
			up.Cancel(ctx)
			// The probe's mount (and, ignored, its HEAD), the blob's POST (and
			// HEAD); "{}" is not sent again.
			if c := reg.Counts(); c.UploadPOST+c.MountPOST != 2 || c.BytesUploaded != 0 || c.BlobHEAD != 2*tc.wantHEAD {
				t.Fatalf("next run's probe: %+v (%v)", c, c.ByPath)
			}
		})
	}
}

// TestMountProbeOnce: blobs started at once on a fresh host all wait for one
// probe, and none of them asks a HEAD on a registry that honours mounts.
func TestMountProbeOnce(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	r := New(Options{Retry: mirrortest.FastRetry})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := bytes.Repeat([]byte{byte(i)}, 300)
			d := endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
			up, err := r.StartBlob(ctx, reg.Host()+"/once/r"+strconv.Itoa(i%4), d)
			if err == nil && up != nil {
				err = up.Write(ctx, bytes.NewReader(b))
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if c := reg.Counts(); c.BlobHEAD != 1 || c.BlobsCommitted != 17 || c.Mounted != 1 {
		t.Fatalf("16 blobs at once: %+v, want the probe's HEAD only, 16 commits and the probe's", c)
	}
}

// TestMountProbeRefused: a host that refuses the probe's writes is looked up
// with a HEAD per blob, and the blob's own request reports the refusal.
func TestMountProbeRefused(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	u, _ := url.Parse(reg.URL())
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			http.Error(w, `{"errors":[{"code":"DENIED","message":"read-only"}]}`, http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r := New(Options{Retry: mirrortest.FastRetry})
	b := []byte("refused")
	d := endpoint.Descriptor{Digest: digest.FromBytes(b), Size: int64(len(b))}
	_, err := r.StartBlob(ctx, strings.TrimPrefix(srv.URL, "http://")+"/ro/a", d)
	if err == nil || !strings.Contains(err.Error(), "403") {
		t.Fatalf("err %v, want the registry's refusal", err)
	}
}

// readBlob reads exactly the declared size, checks the end and the digest, and
// names what went wrong.
func TestReadBlob(t *testing.T) {
	content := []byte(strings.Repeat("blob-content", 1000))
	d := oci.Descriptor{Digest: digest.FromBytes(content), Size: int64(len(content))}
	cases := []struct {
		name    string
		body    []byte
		desc    oci.Descriptor
		wantErr bool
	}{
		{"exact", content, d, false},
		{"empty", nil, oci.Descriptor{Digest: digest.FromBytes(nil), Size: 0}, false},
		{"short", content[:len(content)-1], d, true},
		{"long", append(append([]byte{}, content...), 'x'), d, true},
		{"altered", append([]byte{'X'}, content[1:]...), d, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			buf := getBuf(int(tc.desc.Size) + 1)
			// One byte at a time: reads that end anywhere.
			got, err := readBlob(oci.NewVerifier(&oneByte{bytes.NewReader(tc.body)}, tc.desc), buf)
			if tc.wantErr {
				if !errors.Is(err, oci.ErrDigestMismatch) {
					t.Fatalf("err %v, want a digest mismatch", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.body) {
				t.Fatalf("got %d bytes, %v", len(got), err)
			}
			putBuf(buf)
		})
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

// TestMountProbeCutShort: a probe whose caller's context ends is not taken as
// the host's answer: the next blob started there probes again.
func TestMountProbeCutShort(t *testing.T) {
	reg := registrytest.Start(t)
	r := New(Options{Retry: mirrortest.FastRetry})
	repo := reg.Host() + "/cut/a"
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.honoursMountsOf(ctx, repo); err == nil {
		t.Fatal("a probe with an ended context answered")
	}
	honours, err := r.honoursMountsOf(context.Background(), repo)
	if err != nil || !honours {
		t.Fatalf("the next probe: %v, %v; want the registry's answer (it honours mounts)", honours, err)
	}
}

// TestMountProbeNotAwaitedInSlot: a caller holding its host's slots
// (endpoint.InSlot) does not wait for a mount probe another caller runs, whose
// requests may wait for those very slots: it takes the host as one that
// ignores mounts (a HEAD before sending). Any other caller waits for the
// probe's answer.
func TestMountProbeNotAwaitedInSlot(t *testing.T) {
	r := New(Options{})
	hs := r.hostOf("registry.example")
	hs.mountProbe = &mountProbe{done: make(chan struct{})} // another caller's, unanswered
	ctx := context.Background()
	if honours, err := r.honoursMountsOf(endpoint.InSlot(ctx), "registry.example/ns/app"); honours || err != nil {
		t.Fatalf("in a slot: %v, %v; want false at once", honours, err)
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := r.honoursMountsOf(short, "registry.example/ns/app"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("outside a slot: %v, want it to wait for the probe", err)
	}
	hs.mountProbe.honours = true
	close(hs.mountProbe.done)
	if honours, err := r.honoursMountsOf(endpoint.InSlot(ctx), "registry.example/ns/app"); !honours || err != nil {
		t.Fatalf("in a slot, the probe answered: %v, %v; want true", honours, err)
	}
}
