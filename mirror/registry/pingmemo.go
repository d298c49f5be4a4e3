package registry

import (
	"net/http"
	"strings"
	"sync"
)

// pingMemo answers a registry's ping from the first answer the host gave to
// one. The ping is what an authenticated transport sends before its first
// request (a GET /v2/ without credentials, transport.NewWithContext): its
// answer says how the registry authenticates (no challenge, Basic, or Bearer
// with the token service's realm). A client makes a transport per group of
// repositories (see transportGroups), so without the memo each group asked
// again, one round trip before its token request: over a WAN, 50 ms more
// before the first component of a release, whose repository is only known
// once the payload is read.
//
// Only answers that describe the host are kept (200, and 401 with a
// challenge); anything else, and every failure, goes to the host again. The
// memo sits under the transports, so requests that carry credentials (a
// probe's authenticated GET /v2/) are never answered from it.
type pingMemo struct {
	inner http.RoundTripper

	mu      sync.Mutex
	answers map[string]pingAnswer // by scheme://host
}

// pingAnswer is what a host answered a ping: the status and the headers.
type pingAnswer struct {
	code   int
	header http.Header
}

func (p *pingMemo) RoundTrip(req *http.Request) (*http.Response, error) {
	if !isPing(req) || req.Context().Value(unmemoizedKey{}) != nil {
		return p.inner.RoundTrip(req)
	}
	key := req.URL.Scheme + "://" + req.URL.Host
	p.mu.Lock()
	a, ok := p.answers[key]
	p.mu.Unlock()
	if ok {
		return &http.Response{
			Status: http.StatusText(a.code), StatusCode: a.code, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: a.header.Clone(), Body: http.NoBody, ContentLength: 0, Request: req,
		}, nil
	}
	resp, err := p.inner.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusOK || (resp.StatusCode == http.StatusUnauthorized && resp.Header.Get("WWW-Authenticate") != "") {
		p.mu.Lock()
		if p.answers == nil {
			p.answers = map[string]pingAnswer{}
		}
		p.answers[key] = pingAnswer{code: resp.StatusCode, header: resp.Header.Clone()}
		p.mu.Unlock()
	}
	return resp, nil
}

// unmemoizedKey marks the context of a request the memo must send to the
// host: the probe's GET /v2/, which on a registry without authentication is
// the same request as a ping but is what checks that the host answers whole
// (a body that stalls is found there, before the run's first read).
type unmemoizedKey struct{}

// isPing tells a ping: GET /v2/ without credentials.
func isPing(req *http.Request) bool {
	return req.Method == http.MethodGet && req.URL.Path == "/v2/" && req.URL.RawQuery == "" && req.Header.Get("Authorization") == ""
}

// tokenAuth reports whether host answered a ping (over either scheme) with a
// Bearer challenge: its transports exchange the credentials for a token
// before their first request, which the token service refuses when the
// credentials are wrong.
func (p *pingMemo) tokenAuth(host string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, scheme := range []string{"https", "http"} {
		if a, ok := p.answers[scheme+"://"+host]; ok && a.code == http.StatusUnauthorized &&
			strings.HasPrefix(strings.ToLower(strings.TrimSpace(a.header.Get("WWW-Authenticate"))), "bearer") {
			return true
		}
	}
	return false
}
