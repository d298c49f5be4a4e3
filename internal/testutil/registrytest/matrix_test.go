package registrytest_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// Every kind of the matrix takes a push and answers its inspection helpers,
// and refuses what it should refuse.
func TestMatrixKinds(t *testing.T) {
	ctx := context.Background()
	for _, kind := range registrytest.Kinds {
		t.Run(kind, func(t *testing.T) {
			tg := registrytest.StartKind(t, kind)
			p := imagetest.MustPush(t, tg.Host+"/ns/app:v1", fakeimage.Spec{Seed: 5, Layers: 1, Platforms: []string{"linux/amd64", "linux/arm64"}}, tg.Remote(tg.Push)...)
			d, err := tg.Digest(ctx, "ns/app:v1")
			if err != nil || d != p.Digest.String() {
				t.Fatalf("digest %q (%v), want %s", d, err, p.Digest)
			}
			if d, err := tg.Digest(ctx, "ns/app:nope"); err != nil || d != "" {
				t.Errorf("missing tag: %q, %v", d, err)
			}
			tags, err := tg.Tags(ctx, "ns/app")
			if err != nil || len(tags) != 1 || tags[0] != "v1" {
				t.Errorf("tags %v, %v", tags, err)
			}
			repos, err := tg.Repositories(ctx)
			if err != nil || len(repos) != 1 || repos[0] != "ns/app" {
				t.Errorf("repositories %v, %v", repos, err)
			}
			// Pull every blob through the registry's own path (redirects included).
			ref, _ := tg.Ref("ns/app:v1")
			idx, err := remote.Index(ref, tg.Remote(tg.Pull)...)
			if err != nil {
				t.Fatal(err)
			}
			im, _ := idx.IndexManifest()
			for _, m := range im.Manifests {
				img, err := idx.Image(m.Digest)
				if err != nil {
					t.Fatal(err)
				}
				ls, _ := img.Layers()
				for _, l := range ls {
					rc, err := l.Compressed()
					if err != nil {
						t.Fatal(err)
					}
					if _, err := io.Copy(io.Discard, rc); err != nil {
						t.Fatalf("read layer: %v", err)
					}
					rc.Close()
				}
			}
			switch kind {
			case registrytest.TokenAuth:
				// The pull-only user cannot push; anonymous cannot read.
				if _, err := imagetest.Push(ctx, tg.Host+"/ns/other:v1", fakeimage.Spec{Seed: 6, Layers: 1}, tg.Remote(tg.Pull)...); err == nil {
					t.Error("the pull-only user pushed")
				}
				if _, err := remote.Head(ref, remote.WithAuth(authn.Anonymous)); err == nil {
					t.Error("anonymous read")
				}
				// A token stops working after TokenTTL: the registry answers
				// 401 invalid_token to it.
				resp, err := http.Get(tg.Token.Realm() + "?service=airlock-test-registry&scope=repository:ns/app:pull")
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				req, _ := http.NewRequest(http.MethodGet, tg.Token.Realm()+"?service=airlock-test-registry&scope=repository:ns/app:pull", nil)
				req.SetBasicAuth(tg.Pull.Username, tg.Pull.Password)
				tok := fetchToken(t, req)
				if code, _ := getManifest(t, "http://"+tg.Host+"/v2/ns/app/manifests/v1", tok); code != http.StatusOK {
					t.Fatalf("fresh token: status %d", code)
				}
				time.Sleep(registrytest.TokenTTL + 1100*time.Millisecond)
				if code, chal := getManifest(t, "http://"+tg.Host+"/v2/ns/app/manifests/v1", tok); code != http.StatusUnauthorized || !strings.Contains(chal, "invalid_token") {
					t.Errorf("expired token: status %d, challenge %q", code, chal)
				}
			case registrytest.CDNRedirect:
				if tg.CDN.Redirects() == 0 || tg.CDN.Served() == 0 {
					t.Errorf("no blob went through the CDN: %d redirects, %d served", tg.CDN.Redirects(), tg.CDN.Served())
				}
				blob := p.Blobs[0].String()
				for name, u := range map[string]string{
					"expired":  tg.CDN.SignedURL("ns/app", blob, time.Now().Add(-time.Second)),
					"tampered": strings.Replace(tg.CDN.SignedURL("ns/app", blob, time.Now().Add(time.Minute)), "repo=ns", "repo=xx", 1),
				} {
					resp, err := http.Get(u)
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
					if resp.StatusCode != http.StatusForbidden {
						t.Errorf("%s URL: status %d, want 403", name, resp.StatusCode)
					}
				}
			case registrytest.PrivateCA, registrytest.Htpasswd:
				// Without the CA the certificate is refused.
				if _, err := remote.Head(ref, remote.WithAuth(&authn.Basic{Username: tg.Push.Username, Password: tg.Push.Password})); err == nil || !strings.Contains(err.Error(), "certificate") {
					t.Errorf("untrusted CA: %v", err)
				}
			}
		})
	}
}

func fetchToken(t *testing.T, req *http.Request) string {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	s := string(b)
	i := strings.Index(s, `"token":"`)
	if resp.StatusCode != 200 || i < 0 {
		t.Fatalf("token: %d %s", resp.StatusCode, s)
	}
	s = s[i+len(`"token":"`):]
	return s[:strings.IndexByte(s, '"')]
}

func getManifest(t *testing.T, u, tok string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Accept", "application/vnd.oci.image.index.v1+json,application/vnd.docker.distribution.manifest.list.v2+json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate")
}
