package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// A tag push altered on the way is stored by the registry under the tag: the
// altered revision is deleted by its digest and the tag pushed again; when the
// registry refuses the delete, the tag is pushed again all the same (it
// names the right manifest) and the altered revision, still readable by its
// digest, is listed by AlteredKept.
func TestPutManifestAlteredTag(t *testing.T) {
	reg := registrytest.Start(t)
	p := imagetest.MustPush(t, reg.Host()+"/put/app:1", fakeimage.Spec{Seed: 5, Layers: 1})
	ctx := context.Background()
	m, err := New(Options{}).Manifest(ctx, reg.Host()+"/put/app", p.Digest.String())
	if err != nil {
		t.Fatal(err)
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, m.Raw, "", "   "); err != nil {
		t.Fatal(err)
	}
	altered := digest.FromBytes(indented.Bytes())
	tagPUT := func(r *http.Request) bool {
		return registrytest.ManifestUploads(r) && !strings.Contains(r.URL.Path, "/manifests/sha256:")
	}
	for _, tc := range []struct {
		name         string
		refuseDelete bool
	}{{"deleted and pushed again", false}, {"delete refused", true}} {
		t.Run(tc.name, func(t *testing.T) {
			proxy := registrytest.NewFaultProxy(t, reg.Host(), registrytest.FaultPlan{Match: tagPUT, Sequence: []registrytest.Fault{registrytest.MangleJSON}})
			host := proxy.Host()
			if tc.refuseDelete {
				u, _ := url.Parse("http://" + proxy.Host())
				rp := httputil.NewSingleHostReverseProxy(u)
				front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.Method == http.MethodDelete {
						http.Error(w, `{"errors":[{"code":"UNSUPPORTED","message":"The operation is unsupported."}]}`, http.StatusMethodNotAllowed)
						return
					}
					rp.ServeHTTP(w, r)
				}))
				defer front.Close()
				host = strings.TrimPrefix(front.URL, "http://")
			}
			repo := host + "/put/app"
			reg.Reset()
			c := New(Options{Retry: &retry.Policy{Times: 3, Base: 1, Max: 1}})
			err := c.PutManifest(ctx, repo, tc.name[:6], m)
			if proxy.Applied()[registrytest.MangleJSON] != 1 {
				t.Fatalf("faults injected: %v", proxy.Applied())
			}
			direct := New(Options{})
			kept, herr := direct.ManifestExists(ctx, reg.Host()+"/put/app", altered.String(), altered)
			if herr != nil {
				t.Fatal(herr)
			}
			if !tc.refuseDelete {
				if err != nil {
					t.Fatalf("push: %v", err)
				}
				if kept {
					t.Errorf("the altered revision %s is still in the repository", altered)
				}
				if ok, err := direct.ManifestExists(ctx, reg.Host()+"/put/app", tc.name[:6], p.Digest); err != nil || !ok {
					t.Errorf("tag %s does not name %s (%v)", tc.name[:6], p.Digest, err)
				}
				if c := reg.Counts(); c.ByPath["DELETE manifest"] != 1 {
					t.Errorf("deletes: %v", c.ByPath)
				}
				return
			}
			if err != nil {
				t.Fatalf("push with the delete refused: %v", err)
			}
			if ok, err := direct.ManifestExists(ctx, reg.Host()+"/put/app", tc.name[:6], p.Digest); err != nil || !ok {
				t.Errorf("tag %s does not name %s after it was pushed again (%v)", tc.name[:6], p.Digest, err)
			}
			if got := c.AlteredKept(); len(got) != 1 || got[0] != (AlteredManifest{Repository: repo, Digest: altered}) {
				t.Errorf("AlteredKept = %v, want %s@%s", got, repo, altered)
			}
			if !kept {
				t.Errorf("the test's registry does not hold the altered revision: the case tested nothing")
			}
		})
	}
}
