package cincinnatitest

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Request is one request the server answered.
type Request struct {
	Path, Channel, Arch, Accept string
}

// Server is an update service on 127.0.0.1. URL serves the graphs Build
// makes for Channels and Archs (an unknown channel gets an empty graph, as the
// real service answers); OCMirrorURL serves oc-mirror's fixtures (channels
// stable-4.0 and stable-4.15, any architecture); GraphDataURL serves the
// graph-data tarball ServeGraphData gives (404 before).
type Server struct {
	URL, OCMirrorURL, GraphDataURL string

	mu       sync.Mutex
	requests []Request
	fail     []int // statuses of the next answers, consumed in order
	cache    map[string][]byte
	extra    map[string][]byte
	data     []byte
	srv      *httptest.Server
}

// OCMirrorPayload is the 4.15.0 payload the stable-4.15 fixture is rendered with.
var OCMirrorPayload = Payload("4.15.0", "ocmirror")

// New starts a server, closed when t ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{cache: map[string][]byte{}, extra: map[string][]byte{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/upgrades_info/v1/graph", s.graph)
	mux.HandleFunc("/ocmirror/graph", s.ocmirror)
	mux.HandleFunc("/api/upgrades_info/graph-data", s.graphData)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if _, _, ok := s.begin(w, r); ok {
			http.NotFound(w, r)
		}
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	s.URL = s.srv.URL + "/api/upgrades_info/v1/graph"
	s.OCMirrorURL = s.srv.URL + "/ocmirror/graph"
	s.GraphDataURL = s.srv.URL + "/api/upgrades_info/graph-data"
	return s
}

// ServeGraphData makes GraphDataURL answer with the tarball b.
func (s *Server) ServeGraphData(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.data = b
}

func (s *Server) graphData(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Accept: r.Header.Get("Accept")})
	var status int
	if len(s.fail) > 0 {
		status, s.fail = s.fail[0], s.fail[1:]
	}
	body := s.data
	s.mu.Unlock()
	switch {
	case status != 0:
		http.Error(w, http.StatusText(status), status)
	case body == nil:
		http.NotFound(w, r)
	default:
		w.Header().Set("Content-Type", "application/gzip")
		_, _ = w.Write(body)
	}
}

// FailNext makes the next answers fail with these statuses, in order.
func (s *Server) FailNext(statuses ...int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = append(s.fail, statuses...)
}

// Serve makes URL answer channel with body (any architecture), before the
// built graphs: for graphs a test writes itself.
func (s *Server) Serve(channel string, body []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.extra[channel] = body
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// begin records r and reports whether to go on (false: a failure was answered).
func (s *Server) begin(w http.ResponseWriter, r *http.Request) (channel, arch string, ok bool) {
	q := r.URL.Query()
	channel, arch = q.Get("channel"), q.Get("arch")
	s.mu.Lock()
	s.requests = append(s.requests, Request{Path: r.URL.Path, Channel: channel, Arch: arch, Accept: r.Header.Get("Accept")})
	var status int
	if len(s.fail) > 0 {
		status, s.fail = s.fail[0], s.fail[1:]
	}
	s.mu.Unlock()
	if status != 0 {
		http.Error(w, http.StatusText(status), status)
		return "", "", false
	}
	if channel == "" {
		http.Error(w, `{"kind":"missing_params","value":"mandatory client parameters missing: channel"}`, http.StatusBadRequest)
		return "", "", false
	}
	if arch == "" {
		arch = "amd64"
	}
	return channel, arch, true
}

func (s *Server) graph(w http.ResponseWriter, r *http.Request) {
	channel, arch, ok := s.begin(w, r)
	if !ok {
		return
	}
	s.mu.Lock()
	body, found := s.extra[channel]
	if !found {
		body, found = s.cache[channel+"/"+arch]
	}
	s.mu.Unlock()
	if !found {
		if !slices.Contains(Archs, arch) {
			http.Error(w, `{"kind":"invalid_params","value":"unknown architecture"}`, http.StatusBadRequest)
			return
		}
		var err error
		if body, err = Build(channel, arch); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		s.mu.Lock()
		s.cache[channel+"/"+arch] = body
		s.mu.Unlock()
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

func (s *Server) ocmirror(w http.ResponseWriter, r *http.Request) {
	channel, _, ok := s.begin(w, r)
	if !ok {
		return
	}
	body, err := OCMirrorFixture(channel, "quay.io", OCMirrorPayload)
	if err != nil {
		body = []byte(`{"nodes":[],"edges":[],"conditionalEdges":[]}`)
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}
