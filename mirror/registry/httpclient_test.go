package registry

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// TestHTTPClientBasicAuth: a chart repository behind basic auth gets the
// credentials the auth file holds for its host; another host gets none; a
// self-signed server is refused while TLS is verified.
func TestHTTPClientBasicAuth(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "chartuser" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("apiVersion: v1\n"))
	}))
	defer srv.Close()
	host := mustHost(t, srv.URL)
	get := func(c *Client, u string) int {
		t.Helper()
		resp, err := c.HTTPClient().Get(u)
		if err != nil {
			return -1
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	withAuth := New(Options{AuthFile: registrytest.WriteAuthFile(t, map[string]registrytest.Credentials{host: {Username: "chartuser", Password: "s3cret"}})})
	if got := get(withAuth, srv.URL+"/index.yaml"); got != http.StatusOK {
		t.Fatalf("with credentials: status %d", got)
	}
	other := New(Options{AuthFile: registrytest.WriteAuthFile(t, map[string]registrytest.Credentials{"127.0.0.2:1": {Username: "x", Password: "y"}})})
	if got := get(other, srv.URL+"/index.yaml"); got != http.StatusUnauthorized {
		t.Fatalf("credentials of another host were sent: status %d", got)
	}
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	if got := get(withAuth, tlsSrv.URL+"/index.yaml"); got != -1 {
		t.Fatalf("a self-signed chart repository was accepted with TLS verification on: status %d", got)
	}
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
