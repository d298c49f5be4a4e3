package registrytest

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/opencontainers/go-digest"
)

// blobStore is the storage folder of a filesystem registry (the --root of
// `airlock registry serve`, Distribution's layout under docker/registry/v2)
// read directly: what the registry host checks before its redirect (does the
// repository link the blob) and what the CDN serves (the blob's file), as
// object storage behind a CDN does, without a request to the registry.
type blobStore struct {
	root  string
	bytes atomic.Int64 // blob body bytes served from files
}

// v2 is where Distribution's filesystem driver keeps a registry under root.
func (s *blobStore) v2(parts ...string) string {
	return filepath.Join(append([]string{s.root, "docker", "registry", "v2"}, parts...)...)
}

// data is the file of blob d ("" when d is not a digest).
func (s *blobStore) data(d string) string {
	dg, err := digest.Parse(d)
	if err != nil {
		return ""
	}
	hex := dg.Encoded()
	return s.v2("blobs", string(dg.Algorithm()), hex[:2], hex, "data")
}

// linked reports whether repository repo links blob d and its file is there:
// the registry would answer a GET of it.
func (s *blobStore) linked(repo, d string) bool {
	dg, err := digest.Parse(d)
	if err != nil || !filepath.IsLocal(repo) {
		return false
	}
	if _, err := os.Stat(s.v2("repositories", repo, "_layers", string(dg.Algorithm()), dg.Encoded(), "link")); err != nil {
		return false
	}
	_, err = os.Stat(s.data(d))
	return err == nil
}

// serve answers a GET or HEAD of blob d from its file (Range requests
// included) and reports whether it did: false leaves the answer to the
// registry (no such file).
func (s *blobStore) serve(w http.ResponseWriter, r *http.Request, d string) bool {
	p := s.data(d)
	if p == "" {
		return false
	}
	f, err := os.Open(p)
	if err != nil {
		return false
	}
	defer f.Close()
	h := w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Docker-Content-Digest", d)
	h.Set("Etag", strconv.Quote(d))
	http.ServeContent(&countingWriter{ResponseWriter: w, n: &s.bytes}, r, "", time.Time{}, f)
	return true
}

// countingWriter counts the body bytes written through it into n.
type countingWriter struct {
	http.ResponseWriter
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	m, err := c.ResponseWriter.Write(p)
	c.n.Add(int64(m))
	return m, err
}
