package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
)

// docsReleases serves docs/releases.md's walk-through: two z-streams of
// stable-4.15 pushed to the source at host, signed with a throwaway key
// ($OCP_SIGNATURE_VERIFICATION_PK) into a store on 127.0.0.1
// ($OCP_SIGNATURE_URL), and an update service serving that channel beside
// the cincinnati-graph-data channels `list releases` reads. It returns the
// update service's URL.
func docsReleases(t *testing.T, host string) string {
	t.Helper()
	r1 := releasetest.Push(t, host, releasetest.Spec{Version: "4.15.1", Components: 20})
	r2 := releasetest.Push(t, host, releasetest.Spec{Version: "4.15.2", Previous: []string{"4.15.1"}, Components: 20, Changed: 4})
	key, store := signtest.NewReleaseKey(t, "rsa"), signtest.NewSignatureStore(t)
	for _, r := range []releasetest.Release{r1, r2} {
		store.Put(r.Digest, key.SignRelease(t, r.Ref, r.Digest))
	}
	keys := filepath.Join(t.TempDir(), "release-key.asc")
	if err := os.WriteFile(keys, key.Armored, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("OCP_SIGNATURE_URL", store.URL)
	t.Setenv("OCP_SIGNATURE_VERIFICATION_PK", keys)
	svc := cincinnatitest.New(t)
	svc.Serve("stable-4.15", releasetest.GraphJSON(t, "stable-4.15",
		releasetest.Node{Version: "4.15.1", Payload: r1.PayloadRef()}, releasetest.Node{Version: "4.15.2", Payload: r2.PayloadRef()}))
	return svc.URL
}
