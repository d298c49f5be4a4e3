package registry

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

type countingRT struct{ n int }

func (c *countingRT) RoundTrip(*http.Request) (*http.Response, error) {
	c.n++
	return &http.Response{StatusCode: http.StatusUnauthorized, Body: http.NoBody}, nil
}

// A request that carries a body reaches the network once, however often a
// transport above hands it down (go-containerregistry's bearer transport
// re-sends it after a token refresh); a request without a body may go again.
func TestSendOnce(t *testing.T) {
	inner := &countingRT{}
	g := &schemeGuard{inner: inner, allow: func(string) bool { return true }}
	for _, tc := range []struct {
		name   string
		body   bool
		second error
	}{
		{"upload", true, errBodySent},
		{"read", false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPut, "http://127.0.0.1:1/v2/a/blobs/uploads/x?digest=sha256:1", nil)
			if tc.body {
				req, _ = http.NewRequest(http.MethodPut, "http://127.0.0.1:1/v2/a/blobs/uploads/x?digest=sha256:1", strings.NewReader("blob"))
			}
			before := inner.n
			if _, err := g.RoundTrip(req); err != nil {
				t.Fatal(err)
			}
			_, err := g.RoundTrip(req)
			if !errors.Is(err, tc.second) {
				t.Fatalf("second send: %v, want %v", err, tc.second)
			}
			if err != nil && strings.Contains(err.Error(), "digest=") {
				t.Errorf("the error names the query: %v", err)
			}
			if want := map[bool]int{true: 1, false: 2}[tc.body]; inner.n-before != want {
				t.Errorf("reached the network %d times, want %d", inner.n-before, want)
			}
		})
	}
}
