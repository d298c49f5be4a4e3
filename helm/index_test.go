package helm

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/mirror/retry"
)

func sboIndex(t *testing.T) *Index {
	t.Helper()
	b, err := os.ReadFile("testdata/oc-mirror/indexes/service-binding-operator-index.yaml")
	if err != nil {
		t.Fatal(err)
	}
	idx, err := ParseIndex(b, "sbo")
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

func TestIndexSelect(t *testing.T) {
	idx := sboIndex(t)
	tests := []struct {
		chart, version, want, err string
	}{
		{"service-binding-operator", "", "1.4.1", ""},
		{"service-binding-operator", "1.3.0", "1.3.0", ""},
		{"service-binding-operator", ">=1.1 <1.4", "1.3.3", ""},
		{"service-binding-operator", "~1.0", "1.0.2", ""},
		{"service-binding-operator", "1.2.0", "", "it has 1.4.1, 1.4.0, 1.3.3, 1.3.2, 1.3.1, 1.3.0, 1.1.0, 1.0.2, 1.0.1, 1.0.0"},
		{"service-binding-operator", ">=2", "", "version >=2: not in the chart repository"},
		{"nope", "", "", `chart "nope": not in the chart repository (it has service-binding-operator)`},
	}
	for _, tc := range tests {
		v, err := idx.Select(tc.chart, tc.version)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || !errors.Is(err, ErrNotFound) {
				t.Errorf("%s %q: err = %v, want %q", tc.chart, tc.version, err, tc.err)
			}
			continue
		}
		if err != nil || v.Version != tc.want {
			t.Errorf("%s %q = %v, %v; want %s", tc.chart, tc.version, v, err, tc.want)
		}
	}
	if n := len(idx.Versions("service-binding-operator")); n != 10 {
		t.Errorf("%d versions", n)
	}
}

func TestParseIndexErrors(t *testing.T) {
	for _, in := range []string{"", "entries: {}", "apiVersion: [", "<html>"} {
		if _, err := ParseIndex([]byte(in), "x"); err == nil {
			t.Errorf("ParseIndex(%q): want an error", in)
		}
	}
}

// TestFetcher: a chart is downloaded from a repository served on
// 127.0.0.1 and checked against its index digest; a tampered archive, a
// missing archive and a repository that is down fail with what to do.
func TestFetcher(t *testing.T) {
	good, err := os.ReadFile("testdata/oc-mirror/charts/service-binding-operator-1.4.1.tgz")
	if err != nil {
		t.Fatal(err)
	}
	index, _ := os.ReadFile("testdata/oc-mirror/indexes/service-binding-operator-index.yaml")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/repo/index.yaml":
			_, _ = w.Write(index)
		case "/repo/service-binding-operator-1.4.1.tgz":
			_, _ = w.Write(good)
		case "/repo/service-binding-operator-1.4.0.tgz":
			_, _ = w.Write(append([]byte{}, good...)) // 1.4.1's bytes under 1.4.0's name
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	f := &Fetcher{Client: srv.Client(), Timeout: 10 * time.Second, Retry: &retry.Policy{Times: 1, Base: time.Millisecond}}
	idx, err := f.Index(ctx, srv.URL+"/repo/")
	if err != nil {
		t.Fatal(err)
	}
	v, _ := idx.Select("service-binding-operator", "1.4.1")
	data, err := f.Chart(ctx, srv.URL+"/repo", v)
	if err != nil || len(data) != len(good) {
		t.Fatalf("Chart: %v", err)
	}
	v, _ = idx.Select("service-binding-operator", "1.4.0")
	if _, err := f.Chart(ctx, srv.URL+"/repo", v); !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("tampered chart: err = %v", err)
	}
	v, _ = idx.Select("service-binding-operator", "1.3.0")
	if _, err := f.Chart(ctx, srv.URL+"/repo", v); err == nil || !strings.Contains(err.Error(), "404") {
		t.Fatalf("missing chart: err = %v", err)
	}
	if err := CheckDigest(good, &ChartVersion{Name: "x", Version: "1"}); err == nil {
		t.Fatal("a chart without an index digest must not be taken unverified")
	}
	srv.Close()
	if _, err := f.Index(ctx, srv.URL+"/repo"); err == nil {
		t.Fatal("a repository that is down must fail")
	}
}

// TestFetcherRetries: a repository answering 503 (with Retry-After) is asked
// again under the retry policy; one answering 404 is not.
func TestFetcherRetries(t *testing.T) {
	index, _ := os.ReadFile("testdata/oc-mirror/indexes/service-binding-operator-index.yaml")
	var asked, missing atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/gone/index.yaml" {
			missing.Add(1)
			http.NotFound(w, r)
			return
		}
		if asked.Add(1) < 3 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write(index)
	}))
	defer srv.Close()
	f := &Fetcher{Client: srv.Client(), Timeout: 10 * time.Second, Retry: &retry.Policy{Times: 3, Base: time.Millisecond}}
	if _, err := f.Index(context.Background(), srv.URL+"/repo"); err != nil {
		t.Fatalf("Index after two 503s: %v", err)
	}
	if n := asked.Load(); n != 3 {
		t.Errorf("%d requests, want 3 (two refused, one answered)", n)
	}
	_, err := f.Index(context.Background(), srv.URL+"/gone")
	if err == nil || !strings.Contains(err.Error(), "check the repository URL") {
		t.Errorf("missing index: err = %v, want the advice to check the URL", err)
	}
	if n := missing.Load(); n != 1 {
		t.Errorf("a 404 was asked %d times, want once", n)
	}
}

func FuzzParseIndex(f *testing.F) {
	b, _ := os.ReadFile("testdata/oc-mirror/indexes/service-binding-operator-index.yaml")
	f.Add(b)
	f.Add([]byte("apiVersion: v1\nentries:\n  a:\n  - version: 1.0.0\n    urls: [a.tgz]\n  - null\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		idx, err := ParseIndex(data, "fuzz")
		if err != nil {
			return
		}
		for _, c := range idx.Charts() {
			_, _ = idx.Select(c, "")
			_, _ = idx.Select(c, ">=1 <2")
			for _, v := range idx.Versions(c) {
				_, _ = ChartURL("https://example.com/charts", v)
			}
		}
	})
}

func FuzzChartLayer(f *testing.F) {
	f.Add([]byte(`{"config":{"mediaType":"application/vnd.cncf.helm.config.v1+json"},"layers":[{"mediaType":"application/vnd.cncf.helm.chart.content.v1.tar+gzip","digest":"sha256:` + strings.Repeat("a", 64) + `","size":3}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _, _ = ChartLayer(data, "fuzz")
	})
}

// TestTagIndex: the version tags of an OCI chart repository are chosen
// among as an index's versions ("_" read as "+"); other tags are not
// versions.
func TestTagIndex(t *testing.T) {
	idx := TagIndex("app", []string{"latest", "1.0.0", "1.2.0_build.1", "1.3.0-rc.1", "2.0.0", "sha256-abc.sig", "v1.1.0", "1.4"})
	tests := []struct{ constraint, want, err string }{
		{"", "2.0.0", ""},
		{">=1.0 <2", "1.2.0+build.1", ""},
		{"~1.1", "v1.1.0", ""},
		{"1.3.0-rc.1", "1.3.0-rc.1", ""},
		{">=3", "", "it has 2.0.0, 1.3.0-rc.1, 1.2.0+build.1, v1.1.0, 1.0.0"},
	}
	for _, tc := range tests {
		v, err := idx.Select("app", tc.constraint)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err = %v, want %q", tc.constraint, err, tc.err)
			}
			continue
		}
		if err != nil || v.Version != tc.want || Tag(v.Version) == "" {
			t.Errorf("%q = %v, %v; want %s", tc.constraint, v, err, tc.want)
		}
	}
	if _, err := TagIndex("app", nil).Select("app", ""); !errors.Is(err, ErrNotFound) {
		t.Errorf("no tags: err = %v", err)
	}
}

func FuzzTagIndex(f *testing.F) {
	f.Add("1.0.0,1.2.0_build.1,latest,v2.0.0")
	f.Fuzz(func(t *testing.T, tags string) {
		idx := TagIndex("app", strings.Split(tags, ","))
		for _, c := range []string{"", ">=1 <2", "~1.2"} {
			if v, err := idx.Select("app", c); err == nil && strings.Contains(Tag(v.Version), "+") {
				t.Fatalf("tag %q has a +", Tag(v.Version))
			}
		}
	})
}
