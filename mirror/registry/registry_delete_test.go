package registry_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

func TestRegistryDeletes(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.Start(t)
	repo := reg.Host() + "/ns/app"
	idx := imagetest.MustPush(t, repo+":v1", fakeimage.Spec{Seed: 1, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}})
	img := imagetest.MustPush(t, repo+":v2", fakeimage.Spec{Seed: 2, Layers: 1})
	c := registry.New(registry.Options{Retry: retry.Retries(0)})

	tags, err := c.Tags(ctx, repo)
	if err != nil || !slices.Equal(tags, []string{"v1", "v2"}) {
		t.Fatalf("tags: %v, %v", tags, err)
	}
	if tags, err := c.Tags(ctx, reg.Host()+"/ns/none"); err != nil || len(tags) != 0 {
		t.Fatalf("tags of an unknown repository: %v, %v", tags, err)
	}
	kids, err := c.ManifestChildren(ctx, repo, idx.Digest)
	if err != nil || len(kids) != 2 {
		t.Fatalf("children of the index: %v, %v", kids, err)
	}
	if kids, err := c.ManifestChildren(ctx, repo, img.Digest); err != nil || len(kids) != 0 {
		t.Fatalf("children of an image: %v, %v", kids, err)
	}

	// A tag alone, then the manifest by digest; both report a second delete.
	if found, err := c.DeleteTag(ctx, repo, "v2"); err != nil || !found {
		t.Fatalf("delete tag: %v, %v", found, err)
	}
	if ok, _ := c.ManifestExists(ctx, repo, img.Digest.String(), img.Digest); !ok {
		t.Fatal("deleting the tag deleted the manifest")
	}
	if found, err := c.DeleteTag(ctx, repo, "v2"); err != nil || found {
		t.Fatalf("delete a missing tag: %v, %v", found, err)
	}
	if found, err := c.DeleteManifest(ctx, repo, img.Digest); err != nil || !found {
		t.Fatalf("delete manifest: %v, %v", found, err)
	}
	if found, err := c.DeleteManifest(ctx, repo, img.Digest); err != nil || found {
		t.Fatalf("delete a missing manifest: %v, %v", found, err)
	}
	if ok, _ := c.ManifestExists(ctx, repo, img.Digest.String(), img.Digest); ok {
		t.Fatal("the manifest is still there")
	}
	if _, err := c.DeleteManifest(ctx, repo, "sha256:nothex"); err == nil {
		t.Fatal("a bad digest was sent")
	}
}

// A registry without deletes (405) is told apart; tags/list pages are followed.
func TestRegistryDeleteUnsupportedAndTagPages(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/v2/":
			w.WriteHeader(http.StatusOK)
		case r.Method == http.MethodDelete:
			w.WriteHeader(http.StatusMethodNotAllowed)
			w.Write([]byte(`{"errors":[{"code":"UNSUPPORTED"}]}`))
		case strings.HasSuffix(r.URL.Path, "/tags/list") && r.URL.Query().Get("last") == "":
			w.Header().Set("Link", `</v2/ns/app/tags/list?last=b&n=2>; rel="next"`)
			w.Write([]byte(`{"name":"ns/app","tags":["a","b"]}`))
		case strings.HasSuffix(r.URL.Path, "/tags/list"):
			w.Write([]byte(`{"name":"ns/app","tags":["c"]}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	c := registry.New(registry.Options{Retry: retry.Retries(0)})
	repo := strings.TrimPrefix(srv.URL, "http://") + "/ns/app"
	tags, err := c.Tags(ctx, repo)
	if err != nil || !slices.Equal(tags, []string{"a", "b", "c"}) {
		t.Fatalf("tags: %v, %v", tags, err)
	}
	if _, err := c.DeleteTag(ctx, repo, "a"); !errors.Is(err, registry.ErrDeleteUnsupported) {
		t.Fatalf("delete on a registry without deletes: %v", err)
	}
}
