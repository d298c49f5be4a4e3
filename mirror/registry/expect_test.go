package registry

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// Told the repositories in advance (Expect), the client asks a token registry
// for one token per group of reposPerTransport repositories; without it, every
// repository after a group's first costs a 401 and a token request more.
func TestExpectAsksOneTokenPerGroup(t *testing.T) {
	be := registrytest.Start(t)
	p := imagetest.MustPush(t, be.Host()+"/a/b:1", fakeimage.Spec{Seed: 1, Layers: 1})
	const repos = 100
	groups := (repos + reposPerTransport - 1) / reposPerTransport
	for _, tc := range []struct {
		name      string
		expect    bool
		maxTokens int
	}{
		{"expected", true, groups},
		{"not expected", false, repos},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := startTokenRegistry(t, be.URL())
			host := strings.TrimPrefix(tr.srv.URL, "http://")
			var names []string
			for i := 0; i < repos; i++ {
				names = append(names, fmt.Sprintf("%s/team%d/app", host, i))
			}
			reg := New(Options{})
			if tc.expect {
				reg.Expect(names, false)
			}
			ctx := context.Background()
			d := endpoint.Descriptor{Digest: p.Blobs[0], Size: 1}
			for _, n := range names {
				if _, err := reg.BlobExists(ctx, n, d); err != nil {
					t.Fatalf("%s: %v", n, err)
				}
			}
			tr.mu.Lock()
			tokens := len(tr.queries)
			tr.mu.Unlock()
			if tokens > tc.maxTokens || (tc.expect && tokens < groups) {
				t.Errorf("%d token requests for %d repositories, want at most %d", tokens, repos, tc.maxTokens)
			}
			t.Logf("%d token requests for %d repositories", tokens, repos)
		})
	}
}
