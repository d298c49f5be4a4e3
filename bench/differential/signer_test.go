//go:build differential

package differential

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
)

// node is a release of the test update service: what a payload digest stands for.
type node struct{ Arch, Version string }

// payloadIndex maps every payload digest of the test update service's graphs
// (every channel, every architecture) to its release.
func payloadIndex(t *testing.T) map[string]node {
	t.Helper()
	re := regexp.MustCompile(`"version":\s*"([^"]+)"`)
	idx := map[string]node{}
	for _, ch := range cincinnatitest.Channels {
		for _, arch := range cincinnatitest.Archs {
			b, err := cincinnatitest.Build(ch, arch)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range re.FindAllSubmatch(b, -1) {
				v := string(m[1])
				idx[strings.TrimPrefix(cincinnatitest.Payload(v, arch), "quay.io/openshift-release-dev/ocp-release@")] = node{arch, v}
			}
		}
	}
	return idx
}

// tagArch is the architecture as release tags spell it.
var tagArch = map[string]string{"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x", "multi": "multi"}

// signer is a release signature store on 127.0.0.1 that signs on demand: a
// request for a payload digest of the test update service is answered with a
// signature, by a throwaway key, whose identity is the release in the local
// registry (<registry>/ocp/release:<version>-<arch>); that tag is made then
// (the base payload's manifest). It records which releases were asked for:
// oc-mirror asks for the signature of every release it selected, before it
// copies any.
type signer struct {
	t        *testing.T
	key      signtest.ReleaseKey
	registry string
	base     string // the payload every tag points at
	index    map[string]node
	srv      *httptest.Server

	mu    sync.Mutex
	asked []node
	other []string // paths that named no known payload
}

func newSigner(t *testing.T, key signtest.ReleaseKey, registry, base string, index map[string]node) *signer {
	s := &signer{t: t, key: key, registry: registry, base: base, index: index}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the store's base, as OCP_SIGNATURE_URL wants it (with a final slash).
func (s *signer) URL() string { return s.srv.URL + "/" }

// reset forgets the requests recorded.
func (s *signer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked, s.other = nil, nil
}

// requests returns the releases asked for, and the other paths.
func (s *signer) requests() ([]node, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]node(nil), s.asked...), append([]string(nil), s.other...)
}

func (s *signer) serve(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.Path, "/")
	d, file, _ := strings.Cut(p, "/")
	d = strings.Replace(d, "=", ":", 1)
	n, ok := s.index[d]
	s.mu.Lock()
	if !ok || file != "signature-1" {
		s.other = append(s.other, r.URL.Path)
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	s.asked = append(s.asked, n)
	s.mu.Unlock()
	identity := s.registry + "/ocp/release:" + n.Version + "-" + tagArch[n.Arch]
	if err := tag(s.base, identity); err != nil {
		s.t.Errorf("tag %s: %v", identity, err)
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	_, _ = w.Write(s.key.SignRelease(s.t, identity, digest.Digest(d)))
}

// tag makes ref name the manifest of from (both in a plain-HTTP registry).
func tag(from, ref string) error {
	src, err := name.ParseReference(from, name.Insecure)
	if err != nil {
		return err
	}
	dst, err := name.NewTag(ref, name.Insecure)
	if err != nil {
		return err
	}
	desc, err := remote.Get(src)
	if err != nil {
		return err
	}
	return remote.Tag(dst, desc)
}
