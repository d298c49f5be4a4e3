package releasetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/opencontainers/go-digest"
)

// Key is a throwaway OpenPGP release key.
type Key struct {
	entity *openpgp.Entity
	// Armored is the public key, armored (ReleaseOptions.SignatureKeys' file).
	Armored []byte
}

// NewKey generates a release key.
func NewKey(t testing.TB) Key {
	t.Helper()
	e, err := openpgp.NewEntity("airlock release test", "", "release@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	return Key{entity: e, Armored: buf.Bytes()}
}

// Sign is an atomic container signature of d with identity ref (a
// "repo:tag" or "repo@digest" docker reference), as Red Hat signs releases:
// an OpenPGP signed message holding the simple-signing document.
func (k Key) Sign(t testing.TB, ref string, d digest.Digest) []byte {
	t.Helper()
	doc, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"type":     "atomic container signature",
			"image":    map[string]string{"docker-manifest-digest": d.String()},
			"identity": map[string]string{"docker-reference": ref},
		},
		"optional": map[string]any{"creator": "airlock releasetest"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := openpgp.Sign(&buf, k.entity, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(doc)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Store is a signature store on 127.0.0.1, laid out as Red Hat's:
// URL/sha256=<hex>/signature-N.
type Store struct {
	srv  *httptest.Server
	mu   sync.Mutex
	sigs map[digest.Digest][][]byte
	// Requests counts the requests served.
	Requests atomic.Int64
}

// NewStore starts an empty store, stopped with the test.
func NewStore(t testing.TB) *Store {
	s := &Store{sigs: map[digest.Digest][][]byte{}}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.Requests.Add(1)
		var alg, hex string
		var n int
		dir, file, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		a, h, ok := strings.Cut(dir, "=")
		if _, err := fmt.Sscanf(file, "signature-%d", &n); err != nil || !ok {
			http.NotFound(w, r)
			return
		}
		alg, hex = a, h
		s.mu.Lock()
		sigs := s.sigs[digest.NewDigestFromEncoded(digest.Algorithm(alg), hex)]
		s.mu.Unlock()
		if n < 1 || n > len(sigs) {
			http.NotFound(w, r)
			return
		}
		w.Write(sigs[n-1])
	}))
	t.Cleanup(s.srv.Close)
	return s
}

// URL is the store's base URL.
func (s *Store) URL() string { return s.srv.URL }

// Stop stops serving (the store goes offline).
func (s *Store) Stop() { s.srv.Close() }

// Put serves sig as the next signature of d.
func (s *Store) Put(d digest.Digest, sig []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sigs[d] = append(s.sigs[d], sig)
}

// Node is one release of a graph.
type Node struct {
	Version, Payload string
}

// GraphJSON is a Cincinnati graph of channel holding nodes, each updating to
// every later one (serve it with cincinnatitest.Server.Serve).
func GraphJSON(t testing.TB, channel string, nodes ...Node) []byte {
	t.Helper()
	type node struct {
		Version  string            `json:"version"`
		Payload  string            `json:"payload"`
		Metadata map[string]string `json:"metadata"`
	}
	doc := struct {
		Nodes []node  `json:"nodes"`
		Edges [][]int `json:"edges"`
	}{Edges: [][]int{}}
	for i, n := range nodes {
		doc.Nodes = append(doc.Nodes, node{Version: n.Version, Payload: n.Payload, Metadata: map[string]string{"io.openshift.upgrades.graph.release.channels": channel}})
		for j := range i {
			doc.Edges = append(doc.Edges, []int{j, i})
		}
	}
	return mustJSON(t, doc)
}
