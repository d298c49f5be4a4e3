package pipeline_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/pipeline"
)

// stableSource is the name under which setupStable's source registry is known:
// the catalog and every image are named there, so the catalog's content, and
// with it every digest and size a summary prints, does not depend on the port
// the embedded registry got.
const stableSource = "source.airlock.test"

// toRegistry sends every request for stableSource to the embedded registry.
type toRegistry struct{ host string }

func (t toRegistry) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Host == stableSource {
		r = r.Clone(r.Context())
		r.URL.Host, r.Host = t.host, t.host
	}
	return http.DefaultTransport.RoundTrip(r)
}

// setupStable is setup with the source named stableSource: it is seeded through
// a transport that sends that name to the registry, and airlock reads it
// through a registries.conf whose entry for stableSource is located at the
// registry. Runs get it from e.opts (--registries-conf, not the environment,
// so that the tests using it run in parallel).
func setupStable(t *testing.T) *env {
	t.Helper()
	src := registrytest.Start(t)
	conf := filepath.Join(t.TempDir(), "registries.conf")
	if err := os.WriteFile(conf, []byte("[[registry]]\nprefix = \""+stableSource+"\"\nlocation = \""+src.Host()+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rt := remote.WithTransport(toRegistry{src.Host()})
	res, err := seed.Seed(context.Background(), seed.Options{
		Registry: stableSource, CatalogDir: e2eCatalog, CatalogRepo: "redhatgov/oc-mirror-index",
		CatalogTag: "v1", MultiArchEvery: 3, Insecure: true, WorkDir: t.TempDir(),
		CatalogPlatforms: []string{"linux/amd64", "linux/arm64"}, Remote: []remote.Option{rt},
	})
	if err != nil {
		t.Fatal(err)
	}
	extra := stableSource + "/tools/debug:1.0"
	p := imagetest.MustPush(t, extra, fakeimage.Spec{Seed: 99, Layers: 2, Platforms: []string{"linux/amd64", "linux/arm64"}}, rt)
	return &env{src: src, seeded: res, extra: extra, extraHash: p.Digest.String(), regconf: conf}
}

// opts is opts(cfgPath) reading the sources through e's registries.conf (none
// for setup's env: the source is named by its address).
func (e *env) opts(cfgPath string) pipeline.Options {
	o := opts(cfgPath)
	o.Source.RegistriesConf = e.regconf
	return o
}
