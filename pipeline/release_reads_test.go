package pipeline

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/internal/testutil/releasetest"
	"github.com/airlock-mirror/airlock/location"
)

// The payload is read from the source registry once: the blobs read to list
// its components are the ones copied (mirror-to-mirror and mirror-to-disk),
// and its signatures are asked for once, while it is read.
func TestReleasePayloadReadOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newReleaseEnv(t, releasetest.Spec{Version: "4.15.1", Components: 12})
	svc := cincinnatitest.New(t)
	svc.Serve("stable-4.15", releasetest.GraphJSON(t, "stable-4.15", releasetest.Node{Version: "4.15.1", Payload: e.rel.PayloadRef()}))
	cfg := releaseConfig(t, "    channels:\n    - name: stable-4.15\n")
	payloadBlobs := payloadBlobDigests(t, e.rel.PayloadRef())
	for _, tc := range []struct {
		name      string
		dest      location.Location
		workspace bool
	}{
		{"mirror-to-mirror", location.Docker(registrytest.Start(t).Host() + "/m2m"), true},
		{"mirror-to-disk", location.File(t.TempDir()), false},
	} {
		e.src.Reset()
		sigAsked := len(e.store.Requests())
		o := Options{ConfigPath: cfg, Network: NetworkOptions{RetryTimes: 1},
			Releases: ReleaseOptions{GraphURL: svc.URL, SignatureURL: e.store.URL, SignatureKeys: e.keys}}
		o.Destination.Location = tc.dest
		if tc.workspace {
			o.Workspace = location.File(t.TempDir())
		}
		if _, err := Mirror(ctx, o); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		gets := e.src.Counts().BlobGETs
		for _, d := range payloadBlobs {
			if gets[d] != 1 {
				t.Errorf("%s: the payload's blob %s was read %d times from the source registry, want once", tc.name, d, gets[d])
			}
		}
		// signature-1, then signature-2 not found (besides the preflight's
		// probe, for a digest no release has).
		asked := slices.DeleteFunc(e.store.Requests()[sigAsked:], func(p string) bool { return !strings.Contains(p, e.rel.Digest.Encoded()) })
		if len(asked) != 2 {
			t.Errorf("%s: the signature store was asked %q for the payload, want signature-1 and the missing signature-2", tc.name, asked)
		}
	}
}

// payloadBlobDigests are the config and layers of the image ref.
func payloadBlobDigests(t *testing.T, ref string) []string {
	t.Helper()
	r, err := name.ParseReference(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(r)
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	out := []string{m.Config.Digest.String()}
	for _, l := range m.Layers {
		out = append(out, l.Digest.String())
	}
	return out
}
