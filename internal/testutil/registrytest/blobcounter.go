package registrytest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registryproc"
)

// BlobCounter is a reverse proxy in front of a registry that counts the bytes
// of the blob bodies it serves (what a client fetched), and records the
// Range header of every blob GET. RangeMode makes it misbehave the ways
// registries and proxies do with Range requests.
type BlobCounter struct {
	srv   *httptest.Server
	bytes atomic.Int64
	mode  atomic.Int32
	mu    sync.Mutex
	seen  []string // "STATUS RANGE" of each blob GET
}

// Range modes of a BlobCounter.
const (
	// RangeHonoured passes Range requests on (the registry answers 206).
	RangeHonoured int32 = iota
	// RangeIgnored drops the Range header: the registry answers 200 with
	// the whole blob.
	RangeIgnored
	// RangeShort answers a Range request with 206 and a body one byte
	// shorter than the rest of the blob (a Content-Length that is not it).
	RangeShort
)

// NewBlobCounter starts a BlobCounter in front of the registry at host
// ("127.0.0.1:PORT", plain HTTP), stopped with t.Cleanup.
func NewBlobCounter(t testing.TB, host string) *BlobCounter {
	t.Helper()
	target, err := url.Parse("http://" + host)
	if err != nil {
		t.Fatal(err)
	}
	c := &BlobCounter{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.ModifyResponse = func(resp *http.Response) error {
		req := resp.Request
		if req.Method != http.MethodGet || PathKind(req.URL.Path) != "blob" {
			return nil
		}
		c.mu.Lock()
		c.seen = append(c.seen, resp.Status[:3]+" "+req.Header.Get("Range"))
		c.mu.Unlock()
		if c.mode.Load() == RangeShort && resp.StatusCode == http.StatusPartialContent && resp.ContentLength > 1 {
			resp.ContentLength--
			resp.Header.Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.LimitReader(resp.Body, resp.ContentLength), resp.Body}
		}
		resp.Body = registryproc.CountingBody{ReadCloser: resp.Body, N: &c.bytes}
		return nil
	}
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.mode.Load() == RangeIgnored {
			r.Header.Del("Range")
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(c.srv.Close)
	return c
}

// Host returns "127.0.0.1:PORT" of the proxy.
func (c *BlobCounter) Host() string { return strings.TrimPrefix(c.srv.URL, "http://") }

// SetRangeMode sets how Range requests are answered from now on.
func (c *BlobCounter) SetRangeMode(m int32) { c.mode.Store(m) }

// Bytes returns the blob body bytes served so far.
func (c *BlobCounter) Bytes() int64 { return c.bytes.Load() }

// Reset zeroes the byte count and the recorded GETs.
func (c *BlobCounter) Reset() {
	c.bytes.Store(0)
	c.mu.Lock()
	c.seen = nil
	c.mu.Unlock()
}

// Gets returns "STATUS RANGE" of each blob GET so far ("200 ", "206 bytes=N-").
func (c *BlobCounter) Gets() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.seen...)
}
