package registryproc

import (
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// Counts is a snapshot of the requests a registry served, by kind.
type Counts struct {
	BlobGET, BlobHEAD      int64
	UploadPOST             int64 // upload sessions started (not mounts)
	MountPOST              int64 // mount attempts
	Mounted                int64 // mounts answered 201 Created
	Sessions               int64 // upload POSTs (mounts included) answered 202: sessions opened
	UploadPATCH, UploadPUT int64
	BlobsCommitted         int64 // upload PUTs answered 201 Created
	// ProbeCommitted is the part of BlobsCommitted that was the OCI empty
	// JSON blob ("{}"), which the registry client's mount probe commits
	// once per run and host when the repository it probes lacks it.
	ProbeCommitted            int64
	ProbeBytes                int64 // the part of BytesUploaded sent to commit it
	ManifestGET, ManifestHEAD int64
	ManifestPUT               int64
	BytesUploaded             int64 // request body bytes of PATCH/PUT to uploads
	// Uncommitted is the part of BytesUploaded sent to upload sessions that
	// no PUT has committed: sessions an interrupted client cut, deleted or
	// left open (and sessions still under way when the snapshot is taken).
	Uncommitted int64
	Other       int64
	ByPath      map[string]int64 `json:"-"` // "METHOD kind" → count
	// BlobGETs counts the blob GETs by digest ("sha256:…").
	BlobGETs map[string]int64 `json:"-"`
}

// Committed is BlobsCommitted less the mount probe's blob: the blobs a
// client copied.
func (c Counts) Committed() int64 { return c.BlobsCommitted - c.ProbeCommitted }

// Uploaded is BytesUploaded less the mount probe's: the blob bytes a client
// copied.
func (c Counts) Uploaded() int64 { return c.BytesUploaded - c.ProbeBytes }

// wireCounts is Counts with its maps, as the registry process sends it.
type wireCounts struct {
	Counts
	ByPath   map[string]int64 `json:"byPath,omitempty"`
	BlobGETs map[string]int64 `json:"blobGETs,omitempty"`
}

func (c Counts) wire() wireCounts { return wireCounts{c, c.ByPath, c.BlobGETs} }

func (w wireCounts) counts() Counts {
	c := w.Counts
	c.ByPath, c.BlobGETs = w.ByPath, w.BlobGETs
	return c.clone()
}

// Counter counts the requests a registry handler answers, by kind. The
// counters change before the answer's status reaches the client, so they are
// up to date when the client sees the answer.
type Counter struct {
	mu sync.Mutex
	c  Counts
	// open is the bytes sent to each upload session (by its path) not yet
	// committed.
	open map[string]int64
}

// Counts returns a snapshot of the counters.
func (r *Counter) Counts() Counts {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.c.clone()
	for _, n := range r.open {
		c.Uncommitted += n
	}
	return c
}

// clone is c with maps of its own (ByPath never nil).
func (c Counts) clone() Counts {
	c.ByPath, c.BlobGETs = maps.Clone(c.ByPath), maps.Clone(c.BlobGETs)
	if c.ByPath == nil {
		c.ByPath = map[string]int64{}
	}
	return c
}

// Reset zeroes the counters.
func (r *Counter) Reset() {
	r.mu.Lock()
	r.c, r.open = Counts{}, nil
	r.mu.Unlock()
}

// CountingBody adds the bytes read through it to N.
type CountingBody struct {
	io.ReadCloser
	N *atomic.Int64
}

func (b CountingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.N.Add(int64(n))
	return n, err
}

// statusRecorder calls onHeader with the status before the response reaches
// the client, so counters are up to date when the client sees the answer.
type statusRecorder struct {
	http.ResponseWriter
	status   int
	onHeader func(status int)
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status != 0 {
		return
	}
	s.status = code
	s.onHeader(code)
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Wrap returns next counting its requests into r.
func (r *Counter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		kind := oci.APIPathKind(req.URL.Path)
		var uploaded atomic.Int64
		if kind == "upload" && (req.Method == http.MethodPatch || req.Method == http.MethodPut) && req.Body != nil {
			req.Body = CountingBody{req.Body, &uploaded}
		}
		rec := &statusRecorder{ResponseWriter: w, onHeader: func(status int) { r.add(req, kind, status, uploaded.Load()) }}
		next.ServeHTTP(rec, req)
		if rec.status == 0 {
			rec.WriteHeader(http.StatusOK)
		}
	})
}

func (r *Counter) add(req *http.Request, kind string, status int, uploaded int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &r.c
	if c.ByPath == nil {
		c.ByPath = map[string]int64{}
	}
	c.ByPath[req.Method+" "+kind]++
	c.BytesUploaded += uploaded
	if uploaded > 0 {
		if r.open == nil {
			r.open = map[string]int64{}
		}
		r.open[req.URL.Path] += uploaded
	}
	if kind == "upload" && req.URL.Query().Get("digest") == oci.EmptyJSONDigest {
		c.ProbeBytes += uploaded
	}
	switch kind + " " + req.Method {
	case "blob GET":
		c.BlobGET++
		if c.BlobGETs == nil {
			c.BlobGETs = map[string]int64{}
		}
		c.BlobGETs[req.URL.Path[strings.LastIndex(req.URL.Path, "/")+1:]]++
	case "blob HEAD":
		c.BlobHEAD++
	case "upload POST":
		if status == http.StatusAccepted {
			c.Sessions++
		}
		if req.URL.Query().Get("mount") != "" {
			c.MountPOST++
			if status == http.StatusCreated {
				c.Mounted++
			}
		} else {
			c.UploadPOST++
		}
	case "upload PATCH":
		c.UploadPATCH++
	case "upload PUT":
		c.UploadPUT++
		if status == http.StatusCreated {
			delete(r.open, req.URL.Path)
			c.BlobsCommitted++
			if req.URL.Query().Get("digest") == oci.EmptyJSONDigest {
				c.ProbeCommitted++
			}
		}
	case "manifest GET":
		c.ManifestGET++
	case "manifest HEAD":
		c.ManifestHEAD++
	case "manifest PUT":
		c.ManifestPUT++
	default:
		c.Other++
	}
}

// IgnoreMounts makes next ignore cross-repository mounts, as some registries
// do: the mount and from parameters of upload POSTs are dropped, so a mount
// request opens an upload session (202) instead of mounting.
func IgnoreMounts(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if q := req.URL.Query(); req.Method == http.MethodPost && q.Has("mount") {
			req = req.Clone(req.Context()) // a Counter in front still sees the mount asked
			q.Del("mount")
			q.Del("from")
			req.URL.RawQuery = q.Encode()
		}
		next.ServeHTTP(w, req)
	})
}
