package registryserver

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/airlock-mirror/airlock/internal/testutil/syncbuf"
)

func bcryptHash(t testing.TB, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	// htpasswd -B writes the $2y$ prefix.
	return "$2y$" + string(h[4:])
}

func TestParseHtpasswd(t *testing.T) {
	alice, bob := bcryptHash(t, "wonderland"), bcryptHash(t, "builder")
	tests := []struct {
		name    string
		in      string
		users   []string
		wantErr string
	}{
		{name: "two users, comments and blank lines", in: "# users\n\nalice:" + alice + "\n  bob:" + bob + "  \n", users: []string{"alice", "bob"}},
		{name: "apr1 refused", in: "alice:$apr1$abc$0123456789012345678901\n", wantErr: "line 1: user \"alice\" does not have a bcrypt password hash (Apache MD5)"},
		{name: "sha refused", in: "alice:" + alice + "\nbob:{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=\n", wantErr: "line 2: user \"bob\" does not have a bcrypt password hash (SHA-1)"},
		{name: "plaintext refused", in: "alice:secret\n", wantErr: "plaintext or unknown"},
		{name: "no colon", in: "alice\n", wantErr: "line 1: want user:hash"},
		{name: "empty user", in: ":" + alice + "\n", wantErr: "line 1: want user:hash"},
		{name: "duplicate", in: "alice:" + alice + "\nalice:" + bob + "\n", wantErr: "line 2: user \"alice\" is already defined on line 1"},
		{name: "malformed bcrypt", in: "alice:$2y$99$" + strings.Repeat("A", 53) + "\n", wantErr: "malformed bcrypt hash"},
		{name: "empty file", in: "# nobody\n", wantErr: "no users"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := ParseHtpasswd(strings.NewReader(tc.in), "users.htpasswd")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "users.htpasswd") {
					t.Fatalf("error %v, want one starting with the file name and containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(h.Users(), ","); got != strings.Join(tc.users, ",") {
				t.Fatalf("users %s, want %v", got, tc.users)
			}
		})
	}
}

func TestHtpasswdAuthenticate(t *testing.T) {
	h, err := ParseHtpasswd(strings.NewReader("alice:"+bcryptHash(t, "wonderland")+"\n"), "f")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		user, pass string
		want       bool
	}{
		{"alice", "wonderland", true},
		{"alice", "wonderland", true}, // cached
		{"alice", "Wonderland", false},
		{"alice", "", false},
		{"bob", "wonderland", false},
		{"", "", false},
	}
	for _, tc := range tests {
		if got := h.Authenticate(tc.user, tc.pass); got != tc.want {
			t.Errorf("Authenticate(%q, %q) = %v, want %v", tc.user, tc.pass, got, tc.want)
		}
	}
}

func TestLoadHtpasswdMissingFile(t *testing.T) {
	_, err := LoadHtpasswd(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.Contains(err.Error(), "read htpasswd file") {
		t.Fatalf("error %v", err)
	}
}

// TestServeHtpasswdAccessLogReady serves with an htpasswd file and a debug
// logger: Ready gets the URL, a wrong password is refused, the right one
// accepted, every request is logged, and cancelling the context stops it.
func TestServeHtpasswdAccessLogReady(t *testing.T) {
	dir := t.TempDir()
	ht := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(ht, []byte("alice:"+bcryptHash(t, "wonderland")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	urls := make(chan string, 1)
	srv, err := NewServer(Config{Addr: "127.0.0.1:0", RootDir: filepath.Join(dir, "root"), Htpasswd: ht, Logger: log, Ready: func(u string) { urls <- u }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx) }()
	var url string
	select {
	case url = <-urls:
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("not ready after 10s")
	}
	if !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("url %q", url)
	}
	get := func(user, pass string) int {
		req, _ := http.NewRequest(http.MethodGet, url+"/v2/", nil)
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if s := get("", ""); s != http.StatusUnauthorized {
		t.Errorf("anonymous: %d", s)
	}
	if s := get("alice", "nope"); s != http.StatusUnauthorized {
		t.Errorf("wrong password: %d", s)
	}
	if s := get("alice", "wonderland"); s != http.StatusOK {
		t.Errorf("right password: %d", s)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not stop after cancel")
	}
	if _, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second); err == nil {
		t.Error("still listening after cancel")
	}
	out := logs.String()
	if n := strings.Count(out, "msg=request method=GET path=/v2/ status=401"); n != 2 {
		t.Errorf("want 2 logged 401 requests, got %d in:\n%s", n, out)
	}
	if !strings.Contains(out, "status=200") || !strings.Contains(out, "user=alice") {
		t.Errorf("200 request not logged:\n%s", out)
	}
}

func TestExposedWarning(t *testing.T) {
	var logs syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	tests := []struct {
		addr string
		warn bool
	}{
		{"127.0.0.1:0", false},
		{"0.0.0.0:0", true},
	}
	for _, tc := range tests {
		ready := make(chan string, 1)
		srv, err := NewServer(Config{Addr: tc.addr, Logger: log, Ready: func(u string) { ready <- u }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.Serve(ctx) }()
		select {
		case <-ready:
		case err := <-done:
			t.Skipf("cannot listen on %s: %v", tc.addr, err)
		}
		cancel()
		<-done
		if got := strings.Contains(logs.String(), "non-loopback"); got != tc.warn {
			t.Errorf("%s: warning %v, want %v:\n%s", tc.addr, got, tc.warn, logs.String())
		}
	}
}

func FuzzParseHtpasswd(f *testing.F) {
	f.Add("alice:$2y$04$" + strings.Repeat("a", 53) + "\n")
	f.Add("# comment\n\nbob:{SHA}x\n")
	f.Add("a:b:c\n:\n")
	f.Add("alice:$2a$10$N9qo8uLOickgx2ZMRZoMyeIjZAgcfl7p92ldGxad68LJZdL17lhWy\n")
	f.Fuzz(func(t *testing.T, in string) {
		h, err := ParseHtpasswd(strings.NewReader(in), "fuzz")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		for _, u := range h.Users() {
			if u == "" || strings.ContainsAny(u, ": \t\n") {
				t.Fatalf("bad user name %q", u)
			}
			if !isBcrypt(string(h.entries[u])) {
				t.Fatalf("non-bcrypt hash accepted for %q", u)
			}
		}
	})
}

// TestClientErrorsAreNotErrors: a 404 (manifest unknown) is logged at debug
// level with its code, not as an error of the registry.
func TestClientErrorsAreNotErrors(t *testing.T) {
	for _, lvl := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var logs syncbuf.Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: lvl}))
		srv, err := NewServer(Config{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- srv.ServeListener(ctx, ln) }()
		resp, err := http.Get("http://" + ln.Addr().String() + "/v2/no/such/manifests/v1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		cancel()
		<-done
		if resp.StatusCode != http.StatusNotFound {
			t.Fatalf("status %d", resp.StatusCode)
		}
		out := logs.String()
		if strings.Contains(out, "level=ERROR") {
			t.Errorf("404 logged as an error:\n%s", out)
		}
		if lvl == slog.LevelDebug && !strings.Contains(out, "status=404") {
			t.Errorf("404 not logged at debug:\n%s", out)
		}
	}
}
