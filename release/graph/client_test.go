package graph

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/cincinnatitest"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// fastRetry is the project's policy with short waits.
var fastRetry = &retry.Policy{Times: 3, Base: time.Millisecond, Max: 5 * time.Millisecond}

func TestClientRequest(t *testing.T) {
	s := cincinnatitest.New(t)
	f := NewClient(ClientOptions{URL: s.URL + "?id=keep", Retry: fastRetry})
	raw, err := f.Fetch(context.Background(), TypeOCP, "stable-4.16", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	g, err := Parse(raw)
	if err != nil || len(g.Nodes) < 100 {
		t.Fatalf("graph of %d nodes, %v", len(g.Nodes), err)
	}
	reqs := s.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	if r := reqs[0]; r.Channel != "stable-4.16" || r.Arch != "arm64" || r.Accept != "application/json" {
		t.Errorf("request %+v: want channel stable-4.16, arch arm64, Accept application/json", r)
	}
}

func TestClientURLs(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	c := NewClient(ClientOptions{Getenv: getenv}).(*client)
	if got := c.ServiceURL(TypeOCP); got != DefaultOCPURL {
		t.Errorf("ocp: %s", got)
	}
	if got := c.ServiceURL(TypeOKD); got != DefaultOKDURL {
		t.Errorf("okd: %s", got)
	}
	env[URLOverrideEnv] = "https://updates.example/graph"
	if got := c.ServiceURL(TypeOKD); got != "https://updates.example/graph" {
		t.Errorf("override: %s", got)
	}
	c = NewClient(ClientOptions{URL: "https://flag.example/graph", Getenv: getenv}).(*client)
	if got := c.ServiceURL(TypeOCP); got != "https://flag.example/graph" {
		t.Errorf("the explicit URL wins over the environment: %s", got)
	}
}

func TestClientOverrideEnv(t *testing.T) {
	s := cincinnatitest.New(t)
	t.Setenv(URLOverrideEnv, s.URL)
	if _, err := NewClient(ClientOptions{}).Fetch(context.Background(), TypeOCP, "eus-4.16", "amd64"); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Requests()); n != 1 {
		t.Fatalf("%d requests to the override", n)
	}
}

func TestClientRetries(t *testing.T) {
	s := cincinnatitest.New(t)
	s.FailNext(http.StatusServiceUnavailable, http.StatusBadGateway)
	if _, err := NewClient(ClientOptions{URL: s.URL, Retry: fastRetry}).Fetch(context.Background(), TypeOCP, "eus-4.14", "amd64"); err != nil {
		t.Fatal(err)
	}
	if n := len(s.Requests()); n != 3 {
		t.Errorf("%d requests, want 3 (two failures retried)", n)
	}
}

func TestClientErrors(t *testing.T) {
	s := cincinnatitest.New(t)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	t.Cleanup(hang.Close)
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"nodes":[` + strings.Repeat(" ", 4096) + `]}`))
	}))
	t.Cleanup(big.Close)
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`<html>login</html>`))
	}))
	t.Cleanup(html.Close)

	tests := []struct {
		name  string
		o     ClientOptions
		fail  []int
		want  []string
		tries int
	}{
		{name: "not found", o: ClientOptions{URL: s.URL + "/nope"},
			want: []string{"update graph of channel stable-4.16 (ocp) for amd64 from " + s.URL + "/nope?arch=amd64&channel=stable-4.16", "404", "check the channel name"}, tries: 1},
		{name: "server error after retries", o: ClientOptions{URL: s.URL}, fail: []int{500, 500, 500, 500},
			want: []string{"500", "the update service failed; try again later"}, tries: 4},
		{name: "deadline", o: ClientOptions{URL: hang.URL, Timeout: 50 * time.Millisecond, Retry: retry.Retries(0)},
			want: []string{"context deadline exceeded", "did not answer in time"}, tries: 0},
		{name: "too big", o: ClientOptions{URL: big.URL, MaxBytes: 1024},
			want: []string{"larger than 1024 bytes"}, tries: 0},
		{name: "not a graph", o: ClientOptions{URL: html.URL},
			want: []string{"invalid update graph: not Cincinnati JSON", "check the URL (--graph-url or UPDATE_URL_OVERRIDE)"}, tries: 0},
		{name: "bad url", o: ClientOptions{URL: "ftp://x/graph"},
			want: []string{`update service URL "ftp://x/graph" is not an http(s) URL`}, tries: 0},
		{name: "credentials not shown", o: ClientOptions{URL: strings.Replace(s.URL, "http://", "http://user:secret@", 1) + "/nope"},
			want: []string{"404"}, tries: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(s.Requests())
			s.FailNext(tc.fail...)
			if tc.o.Retry == nil {
				tc.o.Retry = fastRetry
			}
			_, err := NewClient(tc.o).Fetch(context.Background(), TypeOCP, "stable-4.16", "amd64")
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error shows the password: %v", err)
			}
			if got := len(s.Requests()) - before; tc.tries > 0 && got != tc.tries {
				t.Errorf("%d requests, want %d", got, tc.tries)
			}
		})
	}
}

func TestClientCancel(t *testing.T) {
	s := cincinnatitest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := NewClient(ClientOptions{URL: s.URL}).Fetch(ctx, TypeOCP, "stable-4.16", "amd64")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error = %v, want context.Canceled", err)
	}
}
