package registry

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// A token that runs out again before the bearer transport's resend arrives (a
// short-lived token on a loaded machine): the registry answers 401 with an
// invalid_token challenge twice in a row. The operation is tried again and
// succeeds; a registry refusing the credentials is still not retried
// (TestNoRetryOnClientErrors).
func TestExpiredTokenTwiceIsRetried(t *testing.T) {
	tg := registrytest.StartKind(t, registrytest.TokenAuth)
	ref := tg.Host + "/tools/app:1.0"
	img, err := imagetest.Push(context.Background(), ref, fakeimage.Spec{Seed: 3, Layers: 1, LayerSize: 1 << 10}, tg.Remote(tg.Push)...)
	if err != nil {
		t.Fatal(err)
	}
	c := New(Options{AuthFile: tg.AuthFile(t, tg.Push), SkipTLSVerify: true})
	repo := tg.Host + "/tools/app"
	desc := endpoint.Descriptor{Digest: img.Blobs[0]}
	// A first check gets the client its token.
	if _, err := c.BlobExists(context.Background(), repo, desc); err != nil {
		t.Fatal(err)
	}
	fired := tg.Token.ExpireNext(2, func(r *http.Request) bool {
		return r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/blobs/sha256:")
	})
	found, err := c.BlobExists(context.Background(), repo, desc)
	if err != nil || !found {
		t.Fatalf("found %v, %v; want the blob found after the token ran out twice", found, err)
	}
	if fired() != 2 {
		t.Errorf("the token ran out on %d requests, want 2", fired())
	}
}
