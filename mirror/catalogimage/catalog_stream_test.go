package catalogimage

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/airlock-mirror/airlock/internal/testutil/mirrortest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/syncbuf"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// bigCatalogImage is a catalog image whose catalog layer is a few MB of
// barely compressible files: a.json first, small enough to be complete once
// half of the compressed layer arrived.
func bigCatalogImage(t testing.TB) (v1.Image, v1.Layer, map[string]string) {
	t.Helper()
	files := map[string]string{}
	entries := []tarEntry{{name: "configs/", typ: tar.TypeDir}}
	for _, f := range []struct {
		name string
		size int
	}{{"a.json", 1 << 20}, {"b.json", 3 << 20}, {"c.json", 3 << 20}} {
		b := make([]byte, f.size/2)
		rand.Read(b)
		body := hex.EncodeToString(b)
		files[f.name] = body
		entries = append(entries, tarEntry{name: "configs/" + f.name, body: body})
	}
	layer := tarLayer(t, types.OCILayer, entries...)
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	img, err = mutate.Config(img, v1.Config{Labels: map[string]string{ConfigsLabel: "/configs"}})
	if err != nil {
		t.Fatal(err)
	}
	return img, layer, files
}

func checkFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	for name, body := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || string(b) != body {
			t.Errorf("%s: %d bytes (err %v), want the %d of the image", name, len(b), err, len(body))
		}
	}
}

// The catalog layer is extracted while the copy engine writes it into the
// workspace: a proxy sends the first half of the layer and holds the rest until
// the extraction has written a.json (or 20 s passed).
func TestFetchCatalogStreamsTheLayer(t *testing.T) {
	reg := startRegistry(t)
	img, layer, files := bigCatalogImage(t)
	ref := reg.Host() + "/ns/big:v1"
	push(t, ref, img)
	ld, _ := layer.Digest()

	sawFirst := make(chan struct{})
	var once sync.Once
	held := make(chan time.Duration, 1)
	target, _ := url.Parse(reg.URL())
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		out, err := http.NewRequestWithContext(r.Context(), r.Method, target.String()+r.URL.RequestURI(), nil)
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
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+ld.String()) {
			io.Copy(w, resp.Body)
			return
		}
		body, _ := io.ReadAll(resp.Body)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		start := time.Now()
		select {
		case <-sawFirst:
		case <-time.After(20 * time.Second):
		}
		select {
		case held <- time.Since(start):
		default: // a later fetch of the layer (a retry): the first one counts
		}
		w.Write(body[len(body)/2:])
	}))
	t.Cleanup(proxy.Close)
	host := strings.TrimPrefix(proxy.URL, "http://")

	fc, err := Fetch(context.Background(), host+"/ns/big:v1", t.TempDir(), FetchOptions{
		Registry: registry.New(registry.Options{Retry: mirrortest.FastRetry}),
		OnFile: func(root, rel string) {
			if rel == "a.json" {
				once.Do(func() { close(sawFirst) })
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	checkFiles(t, fc.ConfigsDir, files)
	if d := <-held; d >= 20*time.Second {
		t.Errorf("a.json was extracted only once the whole layer had arrived (held %v): the extraction does not follow the copy", d)
	}
	if !layoutHolds(context.Background(), fc.ImageLayout, fc.Digest) {
		t.Error("the workspace layout does not hold the whole image after the fetch")
	}
	if _, ok := fc.Image.(interface{ RawManifest() ([]byte, error) }); !ok {
		t.Error("Image is not an image")
	}
}

// A transfer of the catalog layer that goes wrong (bytes flipped, cut, short,
// refused) is retried by the copy engine; whatever the extraction read from a
// bad attempt is thrown away and the layer read again as committed, in the
// same run.
func TestFetchCatalogStreamRecoversFromBadTransfers(t *testing.T) {
	reg := startRegistry(t)
	img, layer, files := bigCatalogImage(t)
	push(t, reg.Host()+"/ns/big:v1", img)
	ld, _ := layer.Digest()
	refused := []registrytest.Fault{registrytest.Unavailable, registrytest.Unavailable, registrytest.Unavailable, registrytest.Unavailable}
	for _, tc := range []struct {
		name  string
		seq   []registrytest.Fault
		again bool // the extraction must have read bad bytes and started over
	}{
		// The good attempt comes a second or more after the flipped one, when
		// the extraction has long read the flipped byte.
		{"flip", append([]registrytest.Fault{registrytest.FlipByte}, refused...), true},
		{"cut", []registrytest.Fault{registrytest.CutMidBody}, false},
		{"truncate", []registrytest.Fault{registrytest.TruncateBody}, false},
		{"503", refused, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{
				Match: func(r *http.Request) bool {
					return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+ld.String())
				},
				Sequence: tc.seq,
			})
			var buf syncbuf.Buffer
			fc, err := Fetch(context.Background(), p.Host()+"/ns/big:v1", t.TempDir(), FetchOptions{
				Registry: registry.New(registry.Options{Retry: &retry.Policy{Times: 8, Base: 250 * time.Millisecond, Max: 250 * time.Millisecond}}),
				Logger:   slog.New(slog.NewTextHandler(&buf, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			checkFiles(t, fc.ConfigsDir, files)
			if n := p.Applied()[tc.seq[0]]; n == 0 {
				t.Errorf("fault %s never applied", tc.seq[0])
			}
			if !layoutHolds(context.Background(), fc.ImageLayout, fc.Digest) {
				t.Error("the workspace layout does not hold the whole image after the fetch")
			}
			if again := strings.Contains(buf.String(), "extracting the catalog again"); again != tc.again {
				t.Errorf("extracted again = %v, want %v; log:\n%s", again, tc.again, buf.String())
			}
		})
	}
}
