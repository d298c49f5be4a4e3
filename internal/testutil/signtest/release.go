package signtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/opencontainers/go-digest"
)

// ReleaseKey is a throwaway OpenPGP key pair for release signatures: RSA
// (what Red Hat signs with) or ed25519 (what x/crypto/openpgp, and so
// oc-mirror, cannot read).
type ReleaseKey struct {
	entity *openpgp.Entity
	// Armored is the armored public key (an OCP_SIGNATURE_VERIFICATION_PK file's content).
	Armored []byte
}

// NewReleaseKey generates a key: algo "rsa" (2048 bits) or "ed25519".
func NewReleaseKey(t testing.TB, algo string) ReleaseKey {
	t.Helper()
	k, err := GenerateReleaseKey(algo)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// GenerateReleaseKey is NewReleaseKey returning its error, for benchmarks.
func GenerateReleaseKey(algo string) (ReleaseKey, error) {
	cfg := &packet.Config{RSABits: 2048}
	switch algo {
	case "rsa":
		cfg.Algorithm = packet.PubKeyAlgoRSA
	case "ed25519":
		cfg.Algorithm = packet.PubKeyAlgoEdDSA
	default:
		return ReleaseKey{}, fmt.Errorf("signtest: unknown key algorithm %q", algo)
	}
	e, err := openpgp.NewEntity("airlock release test", algo, "release@example.com", cfg)
	if err != nil {
		return ReleaseKey{}, err
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		return ReleaseKey{}, err
	}
	if err := e.Serialize(w); err != nil {
		return ReleaseKey{}, err
	}
	if err := w.Close(); err != nil {
		return ReleaseKey{}, err
	}
	return ReleaseKey{entity: e, Armored: buf.Bytes()}, nil
}

// SimpleSigning is the document of an atomic container signature for
// reference (the signed identity) and d.
func SimpleSigning(reference string, d digest.Digest) []byte {
	b, _ := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": reference},
			"image":    map[string]string{"docker-manifest-digest": d.String()},
			"type":     "atomic container signature",
		},
		"optional": map[string]any{"creator": "airlock signtest", "timestamp": 1700000000},
	})
	return b
}

// SignMessage wraps document in an OpenPGP signed message (binary, not
// armored, as release signatures are served) made by k.
func (k ReleaseKey) SignMessage(t testing.TB, document []byte) []byte {
	t.Helper()
	b, err := k.Sign(document)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Sign is SignMessage returning its error, for benchmarks.
func (k ReleaseKey) Sign(document []byte) ([]byte, error) {
	var sig bytes.Buffer
	w, err := openpgp.Sign(&sig, k.entity, nil, nil)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(document); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return sig.Bytes(), nil
}

// SignRelease is k's atomic container signature of reference (e.g.
// "quay.io/openshift-release-dev/ocp-release:4.15.1-x86_64") at digest d.
func (k ReleaseKey) SignRelease(t testing.TB, reference string, d digest.Digest) []byte {
	t.Helper()
	return k.SignMessage(t, SimpleSigning(reference, d))
}

// SignatureStore is a release signature store on 127.0.0.1 laid out as Red
// Hat's: GET /sha256=<hex>/signature-N.
type SignatureStore struct {
	URL string

	mu       sync.Mutex
	sigs     map[string][]byte
	faults   map[string][]int
	requests []string
}

// NewSignatureStore starts a store, closed at the end of the test.
func NewSignatureStore(t testing.TB) *SignatureStore {
	t.Helper()
	s := &SignatureStore{sigs: map[string][]byte{}, faults: map[string][]int{}}
	srv := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func storeDir(d digest.Digest) string {
	return "/" + string(d.Algorithm()) + "=" + d.Encoded() + "/"
}

func storePath(d digest.Digest, n int) string {
	return storeDir(d) + "signature-" + strconv.Itoa(n)
}

// Put serves sigs as signature-1, 2, … of d (replacing what d had).
func (s *SignatureStore) Put(d digest.Digest, sigs ...[]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.sigs {
		if strings.HasPrefix(p, storeDir(d)) {
			delete(s.sigs, p)
		}
	}
	for i, b := range sigs {
		s.sigs[storePath(d, i+1)] = b
	}
}

// Fail makes the next requests for d's signature-N answer these statuses, in
// order, before the stored answer.
func (s *SignatureStore) Fail(d digest.Digest, n int, statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults[storePath(d, n)] = append(s.faults[storePath(d, n)], statuses...)
}

// Requests returns the paths asked for, in order.
func (s *SignatureStore) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

func (s *SignatureStore) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.Path)
	if f := s.faults[r.URL.Path]; len(f) > 0 {
		s.faults[r.URL.Path] = f[1:]
		s.mu.Unlock()
		w.WriteHeader(f[0])
		return
	}
	b, ok := s.sigs[r.URL.Path]
	s.mu.Unlock()
	if r.Method != http.MethodGet || !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	_, _ = w.Write(b)
}
