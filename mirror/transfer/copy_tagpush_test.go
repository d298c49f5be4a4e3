package transfer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// alteringProxy forwards to target and rewrites the body of the first n
// manifest PUTs by tag into a different but valid manifest (a trailing
// newline): the registry accepts it and stores it under the tag.
func alteringProxy(t *testing.T, target string, n int32) (host string, altered *atomic.Int32) {
	t.Helper()
	u, _ := url.Parse("http://" + target)
	rp := httputil.NewSingleHostReverseProxy(u)
	altered = &atomic.Int32{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/manifests/") &&
			!strings.Contains(r.URL.Path, "/manifests/sha256:") && altered.Load() < n {
			body, err := io.ReadAll(r.Body)
			if err != nil {
				panic(http.ErrAbortHandler)
			}
			altered.Add(1)
			body = append(body, '\n')
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.Header.Set("Content-Length", strconv.Itoa(len(body)))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	su, _ := url.Parse(srv.URL)
	return su.Host, altered
}

// The top manifest is pushed under its tags, one PUT each (not by digest
// first): a tag push altered on the way lands under the tag, is noticed from
// the digest the registry reports, is deleted by that digest and pushed again,
// so the tag ends on the source digest and no altered revision stays.
func TestCopyPushesTagsAndDeletesAlteredManifest(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	p := imagetest.MustPush(t, src.Host()+"/tagpush/app:1.0", fakeimage.Spec{Seed: 7, Layers: 2, LayerSize: 512})
	for _, alter := range []int32{0, 2} {
		proxy, altered := alteringProxy(t, dst.Host(), alter)
		dest := proxy + "/m/tagpush/app" + strconv.Itoa(int(alter))
		jobs := []Job{{Source: src.Host() + "/tagpush/app", Digest: p.Digest, Dest: dest, Tags: []string{"1.0", "latest"}}}
		dst.Reset()
		rep, err := Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
		if err != nil || rep.Images[0].Status != StatusCopied {
			t.Fatalf("alter %d: copy: %v (%+v)", alter, err, rep)
		}
		if got := altered.Load(); got != alter {
			t.Fatalf("alter %d: the proxy altered %d pushes", alter, got)
		}
		// One PUT per tag, plus one per altered push, each altered revision
		// deleted by its digest.
		c := dst.Counts()
		if c.ManifestPUT != int64(2+alter) || c.ByPath["DELETE manifest"] != int64(alter) {
			t.Fatalf("alter %d: %d manifest PUTs, %d DELETEs, want %d and %d (%v)", alter, c.ManifestPUT, c.ByPath["DELETE manifest"], 2+alter, alter, c.ByPath)
		}
		// Read back with go-containerregistry, straight from the registry.
		for _, tag := range jobs[0].Tags {
			ref, err := name.ParseReference(dst.Host()+"/m/tagpush/app"+strconv.Itoa(int(alter))+":"+tag, name.Insecure)
			if err != nil {
				t.Fatal(err)
			}
			d, err := remote.Head(ref)
			if err != nil || d.Digest.String() != p.Digest.String() {
				t.Fatalf("alter %d: tag %s is %v (%v), want %s", alter, tag, d, err, p.Digest)
			}
		}
	}
}

// A tag the registry refuses for good (403 here, as for an immutable tag)
// fails the job that wants it, not another job sharing the manifest: the
// manifest still goes in by digest, whichever job pushes first.
func TestCopyRefusedTagFailsOnlyItsJob(t *testing.T) {
	src := registrytest.Start(t)
	dst := registrytest.Start(t)
	p := imagetest.MustPush(t, src.Host()+"/tagpush/shared:1.0", fakeimage.Spec{Seed: 11, Layers: 1, LayerSize: 256})
	u, _ := url.Parse("http://" + dst.Host())
	rp := httputil.NewSingleHostReverseProxy(u)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/manifests/locked") {
			http.Error(w, `{"errors":[{"code":"DENIED","message":"tag is immutable"}]}`, http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	ph := strings.TrimPrefix(proxy.URL, "http://")
	for round := range 10 { // the two jobs race to push first
		dest := ph + "/m/shared" + strconv.Itoa(round)
		jobs := []Job{
			{Source: src.Host() + "/tagpush/shared", Digest: p.Digest, Dest: dest, Tags: []string{"locked"}},
			{Source: src.Host() + "/tagpush/shared", Digest: p.Digest, Dest: dest, Tags: []string{"ok"}},
		}
		if round%2 == 1 {
			jobs[0], jobs[1] = jobs[1], jobs[0]
		}
		rep, err := Copy(context.Background(), testRegistry(), testRegistry(), jobs, Options{Retry: mirrortest.FastRetry})
		if err == nil {
			t.Fatalf("round %d: no error with a refused tag", round)
		}
		for _, im := range rep.Images {
			locked := im.Job.Tags[0] == "locked"
			if locked && (im.Status != StatusFailed || !strings.Contains(im.Err, "403")) || !locked && im.Status != StatusCopied {
				t.Fatalf("round %d: %v: %s %s", round, im.Job.Tags, im.Status, im.Err)
			}
		}
		ref, _ := name.ParseReference(dst.Host()+"/m/shared"+strconv.Itoa(round)+":ok", name.Insecure)
		if d, err := remote.Head(ref); err != nil || d.Digest.String() != p.Digest.String() {
			t.Fatalf("round %d: tag ok is %v (%v), want %s", round, d, err, p.Digest)
		}
	}
}
