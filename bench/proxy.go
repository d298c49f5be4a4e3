package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Counts are the requests and bytes a counting proxy saw.
type Counts struct {
	// Requests is every request; Blob*/Manifest*/Upload* split them by kind.
	Requests                                        int64
	BlobGET, BlobHEAD, ManifestGET, ManifestHEAD    int64
	UploadPOST, UploadPATCH, UploadPUT, ManifestPUT int64
	// BlobsCommitted counts uploads answered 201 Created (blobs sent);
	// Mounted counts cross-repository mounts answered 201 Created.
	BlobsCommitted, Mounted int64
	// BytesIn is every request body byte (what clients pushed); BytesOut every
	// response body byte (what clients pulled). BlobBytesOut is the part of
	// BytesOut that were blob contents.
	BytesIn, BytesOut, BlobBytesOut int64
	// UploadBytesIn is the part of BytesIn sent to blob uploads (POST, PATCH,
	// PUT): blob contents pushed.
	UploadBytesIn int64
	// ManifestPUTByDigest is the part of ManifestPUT made by digest, not by tag.
	ManifestPUTByDigest int64
}

// Sub returns c - o.
func (c Counts) Sub(o Counts) Counts {
	return Counts{
		Requests: c.Requests - o.Requests,
		BlobGET:  c.BlobGET - o.BlobGET, BlobHEAD: c.BlobHEAD - o.BlobHEAD,
		ManifestGET: c.ManifestGET - o.ManifestGET, ManifestHEAD: c.ManifestHEAD - o.ManifestHEAD,
		UploadPOST: c.UploadPOST - o.UploadPOST, UploadPATCH: c.UploadPATCH - o.UploadPATCH,
		UploadPUT: c.UploadPUT - o.UploadPUT, ManifestPUT: c.ManifestPUT - o.ManifestPUT,
		BlobsCommitted: c.BlobsCommitted - o.BlobsCommitted, Mounted: c.Mounted - o.Mounted,
		BytesIn: c.BytesIn - o.BytesIn, BytesOut: c.BytesOut - o.BytesOut, BlobBytesOut: c.BlobBytesOut - o.BlobBytesOut,
		UploadBytesIn:       c.UploadBytesIn - o.UploadBytesIn,
		ManifestPUTByDigest: c.ManifestPUTByDigest - o.ManifestPUTByDigest,
	}
}

type counters struct {
	requests, blobGET, blobHEAD, manifestGET, manifestHEAD   atomic.Int64
	uploadPOST, uploadPATCH, uploadPUT, manifestPUT          atomic.Int64
	blobsCommitted, mounted, bytesIn, bytesOut, blobBytesOut atomic.Int64
	uploadBytesIn, manifestPUTByDigest                       atomic.Int64
	// inflight counts the handlers that have not finished counting: a client
	// has the whole answer before its handler counts it.
	inflight atomic.Int64
	// firstUpload is when the first byte of a blob upload arrived (Unix
	// nanoseconds; 0: none yet).
	firstUpload atomic.Int64
}

// Proxy is a counting reverse proxy in front of one registry: every request
// goes through it, so what a client pulls and pushes can be counted without
// trusting the client's own report.
type Proxy struct {
	Addr   string // HOST:PORT clients use
	srv    *http.Server
	ln     net.Listener
	c      counters
	target *url.URL
}

// StartProxy listens on 127.0.0.1 (a free port) and forwards to target
// ("http://127.0.0.1:5000").
func StartProxy(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{Addr: ln.Addr().String(), ln: ln, target: u}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        256,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	rp.BufferPool = bufPool{}
	rp.ErrorLog = nil
	p.srv = &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

type bufPool struct{}

var pool = make(chan []byte, 64)

func (bufPool) Get() []byte {
	select {
	case b := <-pool:
		return b
	default:
		return make([]byte, 256<<10)
	}
}

func (bufPool) Put(b []byte) {
	select {
	case pool <- b:
	default:
	}
}

type countingReader struct {
	r     io.ReadCloser
	n     *atomic.Int64
	m     *atomic.Int64 // optional second counter
	first *atomic.Int64 // optional: set to the time of the first byte
}

func (c countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n.Add(int64(n))
	if c.m != nil {
		c.m.Add(int64(n))
	}
	if c.first != nil && n > 0 && c.first.Load() == 0 {
		c.first.CompareAndSwap(0, time.Now().UnixNano())
	}
	return n, err
}

func (c countingReader) Close() error { return c.r.Close() }

type recorder struct {
	http.ResponseWriter
	status int
	n      int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.n += int64(n)
	return n, err
}

func (r *recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (p *Proxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		c := &p.c
		c.inflight.Add(1)
		defer c.inflight.Add(-1)
		c.requests.Add(1)
		k := oci.APIPathKind(req.URL.Path)
		var in atomic.Int64
		if req.Body != nil && req.Body != http.NoBody {
			cr := countingReader{r: req.Body, n: &c.bytesIn, m: &in}
			// The first byte of a copied blob: not the two bytes of the
			// registry client's mount probe (the OCI empty JSON blob, once
			// per destination host before the first blob is started).
			if k == "upload" && req.URL.Query().Get("digest") != oci.EmptyJSONDigest {
				cr.first = &c.firstUpload
			}
			req.Body = cr
		}
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, req)
		c.bytesOut.Add(rec.n)
		created := rec.status == http.StatusCreated
		if k == "upload" {
			c.uploadBytesIn.Add(in.Load())
		}
		switch req.Method + " " + k {
		case "GET blob":
			c.blobGET.Add(1)
			c.blobBytesOut.Add(rec.n)
		case "HEAD blob":
			c.blobHEAD.Add(1)
		case "GET manifest":
			c.manifestGET.Add(1)
		case "HEAD manifest":
			c.manifestHEAD.Add(1)
		case "POST upload":
			if req.URL.Query().Get("mount") != "" && created {
				c.mounted.Add(1)
			} else if created { // a monolithic POST with digest
				c.blobsCommitted.Add(1)
			}
			c.uploadPOST.Add(1)
		case "PATCH upload":
			c.uploadPATCH.Add(1)
		case "PUT upload":
			c.uploadPUT.Add(1)
			if created {
				c.blobsCommitted.Add(1)
			}
		case "PUT manifest":
			c.manifestPUT.Add(1)
			if strings.Contains(req.URL.Path, "/manifests/sha256:") {
				c.manifestPUTByDigest.Add(1)
			}
		}
	})
}

// Counts returns a snapshot of the counters, once the requests in flight are
// counted (waiting a second at most: a request still going is not finished).
func (p *Proxy) Counts() Counts {
	c := &p.c
	for deadline := time.Now().Add(time.Second); c.inflight.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond)
	}
	return Counts{
		Requests: c.requests.Load(),
		BlobGET:  c.blobGET.Load(), BlobHEAD: c.blobHEAD.Load(), ManifestGET: c.manifestGET.Load(), ManifestHEAD: c.manifestHEAD.Load(),
		UploadPOST: c.uploadPOST.Load(), UploadPATCH: c.uploadPATCH.Load(), UploadPUT: c.uploadPUT.Load(), ManifestPUT: c.manifestPUT.Load(),
		BlobsCommitted: c.blobsCommitted.Load(), Mounted: c.mounted.Load(),
		BytesIn: c.bytesIn.Load(), BytesOut: c.bytesOut.Load(), BlobBytesOut: c.blobBytesOut.Load(),
		UploadBytesIn: c.uploadBytesIn.Load(), ManifestPUTByDigest: c.manifestPUTByDigest.Load(),
	}
}

// FirstUploadByte is when the first byte of a blob upload reached the proxy
// (the zero time when none has).
func (p *Proxy) FirstUploadByte() time.Time {
	if ns := p.c.firstUpload.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// Close stops the proxy.
func (p *Proxy) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := p.srv.Shutdown(ctx)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
