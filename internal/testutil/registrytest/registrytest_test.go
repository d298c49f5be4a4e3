package registrytest_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

func TestPushCountsAndStop(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/a/b:v1", fakeimage.Spec{Seed: 1, BaseSeed: 1, BaseLayers: 2, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}})
	c := reg.Counts()
	// 2 shared base layers + 1 unique per platform + 2 configs.
	if len(p.Blobs) != 6 || c.BlobsCommitted != 6 {
		t.Fatalf("blobs %d committed %d, want 6", len(p.Blobs), c.BlobsCommitted)
	}
	if c.ManifestPUT != 3 {
		t.Fatalf("manifest PUTs %d, want 3", c.ManifestPUT)
	}
	reg.Reset()
	if c := reg.Counts(); c.ManifestPUT != 0 {
		t.Fatal("reset did not zero counters")
	}
	reg.Stop()
	if _, err := http.Get(reg.URL() + "/v2/"); err == nil {
		t.Fatal("registry still answering after Stop")
	}
}

func TestDeterministic(t *testing.T) {
	a, err := fakeimage.Image(fakeimage.Spec{Seed: 7, Layers: 2, OCI: true}, "")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := fakeimage.Image(fakeimage.Spec{Seed: 7, Layers: 2, OCI: true}, "")
	c, _ := fakeimage.Image(fakeimage.Spec{Seed: 8, Layers: 2, OCI: true}, "")
	da, _ := a.Digest()
	db, _ := b.Digest()
	dc, _ := c.Digest()
	if da != db || da == dc {
		t.Fatalf("digests: %v %v %v", da, db, dc)
	}
}

func TestTLSAndBasicAuth(t *testing.T) {
	reg := registrytest.Start(t, registrytest.WithTLS(), registrytest.WithBasicAuth("alice", "s3cret"))
	tr := &http.Transport{TLSClientConfig: reg.TLSConfig()}
	resp, err := (&http.Client{Transport: tr}).Get(reg.URL() + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous: status %d, want 401", resp.StatusCode)
	}
	imagetest.MustPush(t, reg.Host()+"/x:1", fakeimage.Spec{Seed: 3, Layers: 1},
		remote.WithTransport(tr), remote.WithAuth(&authn.Basic{Username: "alice", Password: "s3cret"}))
}

func TestFaultProxy(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/r:1", fakeimage.Spec{Seed: 1, Layers: 1, LayerSize: 4096})
	proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{
		Sequence: []registrytest.Fault{registrytest.TooManyRequests, registrytest.Unavailable, registrytest.CutMidBody, registrytest.TruncateBody, registrytest.FlipByte, registrytest.Pass},
	})
	url := "http://" + proxy.Host() + "/v2/r/blobs/" + p.Blobs[0].String()
	for i, want := range []int{429, 503, -1, 200, 200, 200} {
		resp, err := http.Get(url)
		if want == -1 {
			if err == nil {
				_, err = io.ReadAll(resp.Body)
				resp.Body.Close()
			}
			if err == nil {
				t.Fatalf("request %d: cut connection read without error", i)
			}
			continue
		}
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("request %d: status %d want %d", i, resp.StatusCode, want)
		}
		if i == 3 && int64(len(body))*2 > 4096+100 {
			t.Fatalf("truncate: got %d bytes", len(body))
		}
	}
	if got := proxy.Applied()[registrytest.FlipByte]; got != 1 {
		t.Fatalf("flip applied %d", got)
	}
}
