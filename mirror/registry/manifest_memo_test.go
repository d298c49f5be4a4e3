package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// With KeepManifests, a tag is resolved with one GET whose manifest serves the
// later reads by digest (in that repository only); a read by tag always asks
// the registry (tags move); with no room, nothing is kept.
func TestKeepManifests(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/apps/a:1", fakeimage.Spec{Seed: 3, Layers: 1})
	imagetest.MustPush(t, reg.Host()+"/apps/b:1", fakeimage.Spec{Seed: 3, Layers: 1}) // same manifest, another repository
	ctx := context.Background()
	repo := reg.Host() + "/apps/a"
	tests := []struct {
		name        string
		keep        int64
		gets, heads int64 // resolving
		later       int64 // manifest requests of the reads: twice by digest, by tag, in b
	}{
		{"kept", SourceManifests, 1, 0, 2},
		{"off", 0, 0, 1, 4},
		{"no room", 10, 1, 0, 4},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			reg.Reset()
			r := New(Options{KeepManifests: tc.keep})
			d, err := r.Resolve(ctx, repo+":1")
			if err != nil || d.Digest != p.Digest {
				t.Fatalf("Resolve = %v, %v; want %s", d, err, p.Digest)
			}
			c := reg.Counts().ByPath
			if c["GET manifest"] != tc.gets || c["HEAD manifest"] != tc.heads {
				t.Errorf("resolve asked %v", c)
			}
			for i := 0; i < 2; i++ {
				m, err := r.Manifest(ctx, repo, p.Digest.String())
				if err != nil || m.Digest != p.Digest || len(m.Raw) != int(d.Size) {
					t.Fatalf("Manifest by digest = %s (%d bytes), %v", m.Digest, len(m.Raw), err)
				}
			}
			if _, err := r.Manifest(ctx, repo, "1"); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Manifest(ctx, reg.Host()+"/apps/b", p.Digest.String()); err != nil {
				t.Fatal(err)
			}
			c = reg.Counts().ByPath
			if got := c["GET manifest"] + c["HEAD manifest"] - tc.gets - tc.heads; got != tc.later {
				t.Errorf("the reads after resolving asked %d times (%v)", got, c)
			}
		})
	}
}

// Two readers of one manifest at once (the prefetch and the copy of the same
// image) make one request: the second waits for the first's read and gets
// what it kept. The first read is held at the registry until the second
// reader either waits (a gate: its context's Done is asked for, which a
// reader waiting for another's read does, and which also happens just before
// a request of its own) or asks the registry too (the failure); no sleep.
func TestKeepManifestsOneReadAtATime(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/apps/a:1", fakeimage.Spec{Seed: 4, Layers: 1})
	upstream, _ := url.Parse("http://" + reg.Host())
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	var gets atomic.Int32
	arrived, release := make(chan int32, 4), make(chan struct{})
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/manifests/") {
			n := gets.Add(1)
			arrived <- n
			if n == 1 {
				<-release
			}
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	r := New(Options{KeepManifests: SourceManifests})
	repo := strings.TrimPrefix(front.URL, "http://") + "/apps/a"
	var wg sync.WaitGroup
	read := func(ctx context.Context) {
		defer wg.Done()
		if m, err := r.Manifest(ctx, repo, p.Digest.String()); err != nil || m.Digest != p.Digest {
			t.Errorf("Manifest = %s, %v", m.Digest, err)
		}
	}
	wg.Add(2)
	go read(context.Background())
	<-arrived // the first read is at the registry, held
	second := &doneAsked{Context: context.Background(), asked: make(chan struct{})}
	go read(second)
	select {
	case <-second.asked: // waiting for the first read, or about to ask the registry
	case n := <-arrived:
		t.Errorf("the second reader asked the registry (GET %d) while the first read was in flight", n)
	}
	close(release)
	wg.Wait()
	if n := gets.Load(); n != 1 {
		t.Errorf("%d manifest GETs for two readers at once, want 1", n)
	}
}

// doneAsked is a context that closes asked the first time its Done is asked
// for: a gate saying its holder has started waiting on it.
type doneAsked struct {
	context.Context
	once  sync.Once
	asked chan struct{}
}

func (c *doneAsked) Done() <-chan struct{} {
	c.once.Do(func() { close(c.asked) })
	return c.Context.Done()
}
