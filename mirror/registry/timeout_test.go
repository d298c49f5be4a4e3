package registry

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// Short timeouts: the tests measure behaviour, not the defaults.
var testTimeouts = Timeouts{Header: 500 * time.Millisecond, Idle: 500 * time.Millisecond, Stall: 800 * time.Millisecond}

func fastPolicy(times int) *retry.Policy {
	return &retry.Policy{Times: times, Base: 5 * time.Millisecond, Max: 20 * time.Millisecond}
}

// A registry that stops answering (no headers, or a body that stops) fails
// each attempt after the timeout, and after Stall without an answer the host is
// reported stalled: every operation on it fails at once, naming it, whatever
// --retry-times says.
func TestStalledRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/stall/app:1", fakeimage.Spec{Seed: 3, Layers: 1, LayerSize: 64 << 10})
	blobGET := func(r *http.Request) bool {
		return r.Method == http.MethodGet && registrytest.PathKind(r.URL.Path) == "blob"
	}
	manifestGET := func(r *http.Request) bool {
		return r.Method == http.MethodGet && registrytest.PathKind(r.URL.Path) == "manifest"
	}
	cases := []struct {
		name  string
		fault registrytest.Fault
		match func(*http.Request) bool
		op    func(ctx context.Context, c *Client, repo string) error
		what  string
	}{
		{"no answer to a manifest GET", registrytest.Stall, manifestGET, func(ctx context.Context, c *Client, repo string) error {
			_, err := c.Manifest(ctx, repo, p.Digest.String())
			return err
		}, "stopped answering"},
		{"a blob body that stops", registrytest.StallBody, blobGET, func(ctx context.Context, c *Client, repo string) error {
			rc, err := c.Blob(ctx, repo, endpoint.Descriptor{Digest: p.Blobs[0]})
			if err != nil {
				return err
			}
			defer rc.Close()
			_, err = io.Copy(io.Discard, rc)
			return err
		}, "stopped answering"},
	}
	for _, tc := range cases {
		for _, times := range []int{0, retry.DefaultTimes} {
			t.Run(tc.name, func(t *testing.T) {
				proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{Match: tc.match, Rate: 1, Kinds: []registrytest.Fault{tc.fault}})
				c := New(Options{Retry: fastPolicy(times), Timeouts: testTimeouts})
				repo := proxy.Host() + "/stall/app"
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				// As the copy engine does with a failed transfer.
				err := c.NoteFailure(ctx, repo, tc.op(ctx, c, repo))
				if !errors.Is(err, endpoint.ErrRegistryUnreachable) || !strings.Contains(err.Error(), proxy.Host()) || !strings.Contains(err.Error(), tc.what) {
					t.Fatalf("--retry-times %d: err = %v, want the host reported unreachable, named, %q", times, err, tc.what)
				}
				if ctx.Err() != nil {
					t.Fatal("the test's own deadline ended the operation")
				}
				// Once stalled, the host is not asked again.
				before := proxy.Requests()
				if _, err := c.Manifest(ctx, repo, "1"); !errors.Is(err, endpoint.ErrRegistryUnreachable) {
					t.Fatalf("after the stall: %v", err)
				}
				if n := proxy.Requests() - before; n != 0 {
					t.Fatalf("%d requests to a host reported stalled", n)
				}
				if proxy.Applied()[tc.fault] == 0 {
					t.Fatal("no fault injected")
				}
			})
		}
	}
}

// The probe of a registry that accepts connections and never answers fails
// after one header timeout, naming the host, without retries.
func TestProbeStalledRegistry(t *testing.T) {
	reg := registrytest.Start(t)
	proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{Match: registrytest.Everything, Rate: 1, Kinds: []registrytest.Fault{registrytest.Stall}})
	c := New(Options{Retry: fastPolicy(retry.DefaultTimes), Timeouts: testTimeouts})
	err := c.Probe(context.Background(), proxy.Host()+"/ns/app", true)
	if !errors.Is(err, endpoint.ErrRegistryUnreachable) || !strings.Contains(err.Error(), proxy.Host()+": the registry stopped answering: it sent no answer for 500ms") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "HTTPS") {
		t.Errorf("a stalled plain-HTTP registry is reported as a TLS problem: %v", err)
	}
}

// Only time spent waiting on the registry counts: a consumer that reads an
// answer slowly, or an upload whose source is slow, is not timed out.
func TestSlowConsumerIsNotIdle(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/slow/app:1", fakeimage.Spec{Seed: 4, Layers: 1, LayerSize: 256 << 10})
	c := New(Options{Retry: fastPolicy(0), Timeouts: testTimeouts})
	ctx := context.Background()
	for _, b := range p.Blobs {
		rc, err := c.Blob(ctx, reg.Host()+"/slow/app", endpoint.Descriptor{Digest: b})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 100<<10)
		for {
			_, err := rc.Read(buf)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("slow reader: %v", err)
			}
			time.Sleep(2 * testTimeouts.Idle)
		}
		rc.Close()
	}
	// An upload fed slowly by its source.
	body := &slowReader{left: 3, chunk: []byte("0123456789"), pause: 2 * testTimeouts.Idle}
	d := digest.FromString(strings.Repeat("0123456789", 3))
	c2 := New(Options{Retry: fastPolicy(0), Timeouts: testTimeouts, MonolithicMax: 1})
	if err := c2.PutBlob(ctx, reg.Host()+"/slow/up", endpoint.Descriptor{Digest: d, Size: 30}, body); err != nil {
		t.Fatalf("slow source upload: %v", err)
	}
}

type slowReader struct {
	left  int
	chunk []byte
	pause time.Duration
}

func (s *slowReader) Read(p []byte) (int, error) {
	if s.left == 0 {
		return 0, io.EOF
	}
	time.Sleep(s.pause)
	s.left--
	return copy(p, s.chunk), nil
}

// A registry that stops taking an upload's body fails the attempt after the
// idle timeout.
func TestUploadNotTaken(t *testing.T) {
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case r.Method == http.MethodPost:
			w.Header().Set("Location", "/v2/ns/up/blobs/uploads/1")
			w.WriteHeader(http.StatusAccepted)
		default: // PATCH: never read the body, never answer
			select {
			case <-r.Context().Done():
			case <-quit:
			}
		}
	}))
	defer func() { close(quit); srv.CloseClientConnections(); srv.Close() }()
	host := strings.TrimPrefix(srv.URL, "http://")
	c := New(Options{Retry: fastPolicy(0), Timeouts: testTimeouts, MonolithicMax: 1})
	size := int64(256 << 20)
	err := c.PutBlob(context.Background(), host+"/ns/up", endpoint.Descriptor{Digest: digest.FromString("x"), Size: size}, io.LimitReader(zeros{}, size))
	var te *TimeoutError
	if !errors.As(err, &te) || te.Host != host {
		t.Fatalf("err = %v, want a timeout of %s", err, host)
	}
	if te.What != "stopped taking the request body" && te.What != "sent no answer" {
		t.Errorf("timeout %q", te.What)
	}
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// A registry answering 5xx to everything but /v2/ (a proxy whose backend is
// gone): the first operation that fails after its retries stops the others on
// that host, with one message; with --retry-times 0, three such answers in a
// row do.
func TestCircuitBreaker5xx(t *testing.T) {
	reg := registrytest.Start(t)
	notBase := func(r *http.Request) bool { return registrytest.PathKind(r.URL.Path) != "base" }
	for _, times := range []int{0, 2} {
		proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{Match: notBase, Rate: 1, Kinds: []registrytest.Fault{registrytest.Unavailable}})
		c := New(Options{Retry: fastPolicy(times), Timeouts: testTimeouts})
		repo := proxy.Host() + "/ns/app"
		ctx := context.Background()
		var errs []error
		for i := 0; i < 4; i++ {
			_, err := c.Manifest(ctx, repo, "v1")
			errs = append(errs, err)
		}
		tripped := 0 // the operation that tripped the breaker
		for i, err := range errs {
			if errors.Is(err, endpoint.ErrRegistryUnreachable) {
				tripped = i
				break
			}
		}
		want := 0
		if times == 0 {
			want = 2 // the third answer in a row
		}
		if tripped != want || !strings.Contains(errs[tripped].Error(), proxy.Host()+": the registry answered the last") || !strings.Contains(errs[tripped].Error(), "503") {
			t.Fatalf("--retry-times %d: errors %v, want operation %d to stop the host", times, errs, want)
		}
		if got := proxy.Requests(); got != (times+1)*(want+1)+1 {
			t.Errorf("--retry-times %d: %d requests reached the proxy, want %d", times, got, (times+1)*(want+1)+1)
		}
	}
}
