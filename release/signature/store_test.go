package signature

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

var fastRetry = &retry.Policy{Times: 2, Base: time.Millisecond, Max: 2 * time.Millisecond}

func TestStoreFetchesUntilNotFound(t *testing.T) {
	srv := signtest.NewSignatureStore(t)
	d := digest.FromString("payload")
	srv.Put(d, []byte("one"), []byte("two"), []byte("three"))
	srv.Fail(d, 2, http.StatusServiceUnavailable, http.StatusTooManyRequests)
	s, err := NewStore(StoreOptions{URL: srv.URL + "/", Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Signatures(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || string(got[0]) != "one" || string(got[2]) != "three" {
		t.Fatalf("signatures = %q", got)
	}
	want := "/sha256=" + d.Encoded() + "/signature-"
	reqs := srv.Requests()
	if len(reqs) != 6 { // 1, 2 (503), 2 (429), 2, 3, 4 (404)
		t.Errorf("requests = %q", reqs)
	}
	for _, r := range reqs {
		if !strings.HasPrefix(r, want) {
			t.Errorf("request %q is not under %q", r, want)
		}
	}
}

func TestStoreErrors(t *testing.T) {
	d := digest.FromString("payload")
	for _, tc := range []struct {
		name  string
		setup func(*signtest.SignatureStore)
		opts  StoreOptions
		want  string
	}{
		{"forbidden is an error, not the end", func(s *signtest.SignatureStore) {
			s.Put(d, []byte("one"), []byte("two"))
			s.Fail(d, 2, http.StatusForbidden)
		}, StoreOptions{}, "403 Forbidden"},
		{"server errors past the retries", func(s *signtest.SignatureStore) {
			s.Put(d, []byte("one"))
			s.Fail(d, 1, 500, 500, 500)
		}, StoreOptions{}, "500 Internal Server Error"},
		{"too large", func(s *signtest.SignatureStore) { s.Put(d, make([]byte, 101)) }, StoreOptions{MaxBytes: 100}, "larger than 100 bytes"},
		{"empty", func(s *signtest.SignatureStore) { s.Put(d, []byte{}) }, StoreOptions{}, "empty answer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := signtest.NewSignatureStore(t)
			tc.setup(srv)
			tc.opts.URL, tc.opts.Retry = srv.URL, fastRetry
			s, err := NewStore(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Signatures(context.Background(), d)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Signatures = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}

func TestStoreCapsTheCount(t *testing.T) {
	srv := signtest.NewSignatureStore(t)
	d := digest.FromString("payload")
	srv.Put(d, []byte("1"), []byte("2"), []byte("3"), []byte("4"))
	s, err := NewStore(StoreOptions{URL: srv.URL, MaxSignatures: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Signatures(context.Background(), d)
	if err != nil || len(got) != 2 || len(srv.Requests()) != 2 {
		t.Fatalf("got %d signatures in %d requests, err %v", len(got), len(srv.Requests()), err)
	}
}

func TestStoreDeadline(t *testing.T) {
	block := make(chan struct{})
	hang := &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		select {
		case <-r.Context().Done():
			return nil, r.Context().Err()
		case <-block:
			return nil, errors.New("unblocked")
		}
	})}
	defer close(block)
	s, err := NewStore(StoreOptions{URL: "http://127.0.0.1:1", Client: hang, Timeout: 20 * time.Millisecond, Retry: fastRetry})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Signatures(context.Background(), digest.FromString("x"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Fatalf("Signatures = %v after %v, want the request deadline", err, time.Since(start))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestStoreURL(t *testing.T) {
	t.Setenv(EnvURL, "")
	s, err := NewStore(StoreOptions{})
	if err != nil || s.(*httpStore).base != DefaultURL {
		t.Fatalf("default store = %v, %v", s, err)
	}
	t.Setenv(EnvURL, "https://signatures.example.com/release/")
	s, err = NewStore(StoreOptions{})
	if err != nil || s.(*httpStore).base != "https://signatures.example.com/release" {
		t.Fatalf("store from %s = %v, %v", EnvURL, s, err)
	}
	s, err = NewStore(StoreOptions{URL: "http://127.0.0.1:8080/sigs"})
	if err != nil || s.(*httpStore).base != "http://127.0.0.1:8080/sigs" {
		t.Fatalf("the option does not win over %s: %v, %v", EnvURL, s, err)
	}
	t.Setenv(EnvURL, "ftp://example.com/x")
	if _, err := NewStore(StoreOptions{}); err == nil || !strings.Contains(err.Error(), EnvURL) {
		t.Errorf("a bad %s: %v", EnvURL, err)
	}
	for _, bad := range []string{"example.com/x", "file:///tmp/x", "https://user:pw@example.com/x"} {
		if _, err := NewStore(StoreOptions{URL: bad}); err == nil {
			t.Errorf("NewStore(%q) accepted", bad)
		}
	}
}

func TestFromFiles(t *testing.T) {
	d := digest.FromString("payload")
	other := digest.FromString("other")
	fsys := fstest.MapFS{
		FileName(d, 1):     {Data: []byte("one")},
		FileName(d, 2):     {Data: []byte("two")},
		FileName(d, 4):     {Data: []byte("after a gap: not read")},
		FileName(other, 1): {Data: []byte("other")},
	}
	got, err := FromFiles(fsys).Signatures(context.Background(), d)
	if err != nil || len(got) != 2 || string(got[1]) != "two" {
		t.Fatalf("FromFiles = %q, %v", got, err)
	}
	got, err = FromFiles(fsys).Signatures(context.Background(), digest.FromString("none"))
	if err != nil || len(got) != 0 {
		t.Fatalf("FromFiles of a digest without files = %q, %v", got, err)
	}
	big := fstest.MapFS{FileName(d, 1): {Data: make([]byte, DefaultMaxBytes+1)}}
	if _, err := FromFiles(big).Signatures(context.Background(), d); !errors.Is(err, ErrTooLarge) {
		t.Errorf("a too large file: %v", err)
	}
}

func TestFileName(t *testing.T) {
	d := digest.FromString("payload")
	name := FileName(d, 12)
	if name != "sha256-"+d.Encoded()+"-12" {
		t.Fatalf("FileName = %q", name)
	}
	if got, n, ok := ParseFileName(name); !ok || got != d || n != 12 {
		t.Errorf("ParseFileName(%q) = %s %d %v", name, got, n, ok)
	}
	for _, bad := range []string{"", "sha256-abc-1", "sha256-" + d.Encoded() + "-0", "sha256-" + d.Encoded() + "-01", "sha256-" + d.Encoded(), "sha256=" + d.Encoded() + "-1"} {
		if _, _, ok := ParseFileName(bad); ok {
			t.Errorf("ParseFileName(%q) accepted", bad)
		}
	}
}

// FuzzParseFileName: what ParseFileName accepts is written back the same by FileName.
func FuzzParseFileName(f *testing.F) {
	f.Add(FileName(digest.FromString("x"), 1))
	f.Add(FileName(digest.FromString("x"), 16))
	f.Add("sha256--1")
	f.Add("sha512-" + strings.Repeat("a", 128) + "-3")
	f.Fuzz(func(t *testing.T, name string) {
		d, n, ok := ParseFileName(name)
		if ok && FileName(d, n) != name {
			t.Fatalf("ParseFileName(%q) = %s, %d: written back as %q", name, d, n, FileName(d, n))
		}
	})
}
