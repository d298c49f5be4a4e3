package registry

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// tokenRegistry fronts a registry with bearer-token auth: a request is let
// through only with the current token, and only when the token was issued with a
// scope for the request's repository (as real registries do).
type tokenRegistry struct {
	srv     *httptest.Server
	mu      sync.Mutex
	queries []string
	token   string
}

func startTokenRegistry(t *testing.T, backend string) *tokenRegistry {
	t.Helper()
	u, _ := url.Parse(backend)
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := &tokenRegistry{}
	tr.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" {
			tr.mu.Lock()
			tr.queries = append(tr.queries, r.URL.RawQuery)
			tr.token = fmt.Sprintf("tok%d", len(tr.queries))
			fmt.Fprintf(w, `{"token":%q}`, tr.token)
			tr.mu.Unlock()
			return
		}
		repo := ""
		for _, sep := range []string{"/blobs/", "/manifests/"} {
			if i := strings.Index(r.URL.Path, sep); i > 0 {
				repo = strings.TrimPrefix(r.URL.Path[:i], "/v2/")
			}
		}
		tr.mu.Lock()
		ok := tr.token != "" && r.Header.Get("Authorization") == "Bearer "+tr.token &&
			(repo == "" || strings.Contains(tr.queries[len(tr.queries)-1], url.QueryEscape("repository:"+repo+":")))
		tr.mu.Unlock()
		if !ok {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer realm="%s/token",service="x",scope="repository:%s:pull"`, tr.srv.URL, repo))
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(tr.srv.Close)
	return tr
}

// Across hundreds of repositories of one registry, token requests stay small:
// scopes do not pile up in one transport.
func TestTokenScopesStayBounded(t *testing.T) {
	be := registrytest.Start(t)
	p := imagetest.MustPush(t, be.Host()+"/a/b:1", fakeimage.Spec{Seed: 1, Layers: 1})
	tr := startTokenRegistry(t, be.URL())
	host := strings.TrimPrefix(tr.srv.URL, "http://")
	reg := New(Options{})
	ctx := context.Background()
	if _, err := reg.Manifest(ctx, host+"/a/b", p.Digest.String()); err != nil {
		t.Fatal(err)
	}
	d := endpoint.Descriptor{Digest: p.Blobs[0], Size: 1}
	for i := 0; i < 300; i++ {
		if _, err := reg.BlobExists(ctx, fmt.Sprintf("%s/team%d/app", host, i), d); err != nil {
			t.Fatalf("repository %d: %v", i, err)
		}
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	longest := 0
	for _, q := range tr.queries {
		longest = max(longest, len(q))
	}
	// 32 repositories per transport at ~40 bytes of scope each.
	if longest > 4096 {
		t.Fatalf("a token request carried %d bytes of query after 300 repositories", longest)
	}
}
