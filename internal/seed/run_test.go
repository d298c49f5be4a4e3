package seed_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

func TestSeed(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name    string
		opts    seed.RunOptions
		tls     bool
		images  int // extra images seeded
		catalog bool
		wantErr string
	}{
		{name: "catalog and image over plain HTTP", opts: seed.RunOptions{CatalogDir: "../../testdata/demo/catalog", CatalogRepo: "airlock-demo/demo-index",
			Images: []string{"registry.example.com/tools/support-tools:1.4", "registry.example.com/tools/support-tools:1.4"}}, images: 1, catalog: true},
		{name: "images over TLS", tls: true, opts: seed.RunOptions{
			Images: []string{"quay.io/a/b@sha256:" + strings.Repeat("ab", 32), "docker.io/library/busybox"}}, images: 2},
		{name: "nothing", opts: seed.RunOptions{}, wantErr: "nothing to seed"},
		{name: "catalog without repo", opts: seed.RunOptions{CatalogDir: "../../testdata/demo/catalog"}, wantErr: "needs --catalog-repo"},
		{name: "bad reference", opts: seed.RunOptions{Images: []string{"Not/Valid"}}, wantErr: "Not/Valid"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var reg *registrytest.Registry
			if tc.tls {
				reg = registrytest.Start(t, registrytest.WithTLS())
				tc.opts.Remote = []remote.Option{remote.WithTransport(&http.Transport{TLSClientConfig: reg.TLSConfig()})}
			} else {
				reg = registrytest.Start(t)
			}
			tc.opts.Registry = reg.Host()
			tc.opts.WorkDir = t.TempDir()
			res, err := seed.Run(ctx, tc.opts)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Images) != tc.images || (res.Catalog != nil) != tc.catalog {
				t.Fatalf("seeded %d extra images, catalog %v", len(res.Images), res.Catalog != nil)
			}
			client := registry.New(registry.Options{RootCAs: reg.CertPool(), Retry: retry.Retries(0)})
			for src, seeded := range res.Images {
				if !strings.HasPrefix(seeded, reg.Host()+"/") {
					t.Errorf("%s seeded as %s", src, seeded)
				}
				d, err := client.Resolve(ctx, seeded)
				if err != nil {
					t.Fatalf("resolve %s: %v", seeded, err)
				}
				if d.Digest != res.Digests[seeded] {
					t.Errorf("%s: registry has %s, seed says %s", seeded, d.Digest, res.Digests[seeded])
				}
			}
			// Idempotent: the same options give the same digests, and push nothing new.
			before := reg.Counts().Committed()
			again, err := seed.Run(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range res.Digests {
				if again.Digests[k] != v {
					t.Errorf("%s: digest %s then %s", k, v, again.Digests[k])
				}
			}
			if tc.catalog && again.Catalog.CatalogDigest != res.Catalog.CatalogDigest {
				t.Errorf("catalog digest %s then %s", res.Catalog.CatalogDigest, again.Catalog.CatalogDigest)
			}
			if n := reg.Counts().Committed() - before; n > 0 && !tc.catalog {
				t.Errorf("second seed committed %d blobs", n)
			}
		})
	}
}
