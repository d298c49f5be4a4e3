package catalogimage

import (
	"archive/tar"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// holdingProxy forwards to the registry at target, holding the answer to a
// GET of blob d until release is closed (or 20 s passed); held receives how
// long it was held.
func holdingProxy(t *testing.T, target string, d v1.Hash, release <-chan struct{}) (host string, held <-chan time.Duration) {
	t.Helper()
	u, _ := url.Parse(target)
	h := make(chan time.Duration, 1)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+d.String()) {
			start := time.Now()
			select {
			case <-release:
			case <-time.After(20 * time.Second):
			}
			select {
			case h <- time.Since(start):
			default:
			}
		}
		out, err := http.NewRequestWithContext(r.Context(), r.Method, u.String()+r.URL.RequestURI(), nil)
		if err != nil {
			t.Error(err)
			return
		}
		out.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(out)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}))
	t.Cleanup(proxy.Close)
	return strings.TrimPrefix(proxy.URL, "http://"), h
}

// The catalog layer is extracted while the image config is still on its way:
// the proxy holds the config until the extraction has written a.json.
func TestFetchCatalogExtractsBeforeTheConfig(t *testing.T) {
	reg := startRegistry(t)
	img, _, files := bigCatalogImage(t)
	push(t, reg.Host()+"/ns/big:v1", img)
	cd, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	sawFirst := make(chan struct{})
	var once sync.Once
	host, held := holdingProxy(t, reg.URL(), cd, sawFirst)
	restarts := 0
	fc, err := Fetch(context.Background(), host+"/ns/big:v1", t.TempDir(), FetchOptions{
		Registry: registry.New(registry.Options{Retry: mirrortest.FastRetry}),
		OnFile: func(root, rel string) {
			if rel == "a.json" {
				once.Do(func() { close(sawFirst) })
			}
		},
		OnRestart: func() { restarts++ },
	})
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, fc.ConfigsDir, files)
	if d := <-held; d >= 20*time.Second {
		t.Errorf("the extraction waited for the image config (held %v)", d)
	}
	if restarts != 0 {
		t.Errorf("the extraction started over %d times under the usual label", restarts)
	}
}

// A catalog kept elsewhere than /configs is extracted from its label's
// folder: the extraction begun under /configs is thrown away, and the files
// it reported are forgotten (OnRestart) before the right ones are.
func TestFetchCatalogOtherLabel(t *testing.T) {
	reg := startRegistry(t)
	layer := tarLayer(t, types.OCILayer,
		tarEntry{name: "configs/", typ: tar.TypeDir}, tarEntry{name: "configs/decoy.json", body: `{"schema":"olm.package","name":"decoy"}`},
		tarEntry{name: "catalog/", typ: tar.TypeDir}, tarEntry{name: "catalog/real.json", body: `{"schema":"olm.package","name":"real"}`})
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.Config(img, v1.Config{Labels: map[string]string{ConfigsLabel: "/catalog"}}); err != nil {
		t.Fatal(err)
	}
	push(t, reg.Host()+"/ns/other:v1", img)
	var mu sync.Mutex
	seen := map[string]bool{}
	fc, err := Fetch(context.Background(), reg.Host()+"/ns/other:v1", t.TempDir(), FetchOptions{
		Registry:  registry.New(registry.Options{Retry: mirrortest.FastRetry}),
		OnFile:    func(root, rel string) { mu.Lock(); seen[rel] = true; mu.Unlock() },
		OnRestart: func() { mu.Lock(); clear(seen); mu.Unlock() },
	})
	if err != nil {
		t.Fatal(err)
	}
	if fc.Label != "/catalog" {
		t.Errorf("label %q", fc.Label)
	}
	checkFiles(t, fc.ConfigsDir, map[string]string{"real.json": `{"schema":"olm.package","name":"real"}`})
	mu.Lock()
	defer mu.Unlock()
	if !seen["real.json"] || seen["decoy.json"] || len(seen) != 1 {
		t.Errorf("files reported and not forgotten: %v, want real.json only", seen)
	}
}
