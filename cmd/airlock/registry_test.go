package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/opencontainers/go-digest"
	"golang.org/x/crypto/bcrypt"

	"github.com/airlock-mirror/airlock/internal/seed"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// When AIRLOCK_TEST_RUN_MAIN=1 the test binary behaves as the airlock binary,
// so that TestDemoScript can run scripts/demo.sh without building airlock.
func init() {
	if os.Getenv("AIRLOCK_TEST_RUN_MAIN") == "1" {
		main()
		os.Exit(0)
	}
}

// lockedBuffer collects a command's output, written from its goroutine, and
// signals when a line matching want appears.
type lockedBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	want  *regexp.Regexp
	found chan string
}

func newLockedBuffer(want string) *lockedBuffer {
	return &lockedBuffer{want: regexp.MustCompile(want), found: make(chan string, 1)}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, _ := l.b.Write(p)
	if l.want != nil {
		if m := l.want.FindStringSubmatch(l.b.String()); m != nil {
			l.found <- m[len(m)-1]
			l.want = nil
		}
	}
	return n, nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// cmdErrorCase is a command line that must fail with an error containing want.
type cmdErrorCase struct {
	name string
	args []string
	want string
}

// checkCmdErrors runs each case in process and checks its error.
func checkCmdErrors(t *testing.T, tests []cmdErrorCase) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			_, _, err := runCmd(ctx, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// runCmd runs airlock with args in process and returns stdout and stderr.
func runCmd(ctx context.Context, args ...string) (string, string, error) {
	var out, errb bytes.Buffer
	root := newRootCmd()
	root.SetArgs(MirrorArgs(root, args))
	root.SetOut(&out)
	root.SetErr(&errb)
	err := root.ExecuteContext(ctx)
	return out.String(), errb.String(), err
}

// served is an `airlock registry serve` running in process.
type served struct {
	url    string
	host   string
	out    *lockedBuffer
	cancel context.CancelFunc
	done   chan error
}

// serve starts `airlock registry serve args...` and waits for its URL.
func serve(t *testing.T, args ...string) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{out: newLockedBuffer(`listening on (\S+)`), cancel: cancel, done: make(chan error, 1)}
	errb := &lockedBuffer{}
	root := newRootCmd()
	root.SetArgs(append([]string{"registry", "serve"}, args...))
	root.SetOut(s.out)
	root.SetErr(errb)
	go func() { s.done <- root.ExecuteContext(ctx) }()
	select {
	case s.url = <-s.out.found:
	case err := <-s.done:
		cancel()
		t.Fatalf("registry serve exited: %v\n%s", err, errb.String())
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("registry serve did not print its URL within 20s")
	}
	s.host = s.url[strings.Index(s.url, "://")+3:]
	t.Cleanup(func() { s.stop(t) })
	return s
}

// stop cancels the command's context (Ctrl-C) and checks it returns cleanly.
func (s *served) stop(t *testing.T) {
	t.Helper()
	if s.cancel == nil {
		return
	}
	s.cancel()
	s.cancel = nil
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("registry serve returned %v after Ctrl-C", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("registry serve still running 15s after Ctrl-C")
	}
	if !strings.Contains(s.out.String(), "airlock registry stopped") {
		t.Errorf("no stop message in %q", s.out.String())
	}
	if c, err := net.DialTimeout("tcp", s.host, time.Second); err == nil {
		c.Close()
		t.Errorf("%s still accepts connections after Ctrl-C", s.host)
	}
}

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "airlock test registry"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:                  true,
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func writeAuthFile(t *testing.T, path, host, user, pass string) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"auths": map[string]any{host: map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte(user + ":" + pass)),
	}}})
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRegistryServeTLSHtpasswd serves HTTPS with a self-signed certificate and
// an htpasswd file, pushes with the seed library and pulls with airlock's
// registry client, checks that wrong credentials are refused, and stops the
// registry with a context cancel (Ctrl-C).
func TestRegistryServeTLSHtpasswd(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("s3cret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	if err := os.WriteFile(htpasswd, []byte("# demo users\nalice:$2y$"+string(hash[4:])+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := serve(t, "--root", filepath.Join(dir, "root"), "--addr", "127.0.0.1:0",
		"--tls-cert", certFile, "--tls-key", keyFile, "--htpasswd", htpasswd, "--log-level", "debug")
	if !strings.HasPrefix(reg.url, "https://127.0.0.1:") {
		t.Fatalf("url %q, want https://127.0.0.1:PORT", reg.url)
	}
	good, bad := filepath.Join(dir, "good.json"), filepath.Join(dir, "bad.json")
	writeAuthFile(t, good, reg.host, "alice", "s3cret")
	writeAuthFile(t, bad, reg.host, "alice", "wrong")
	ctx := context.Background()
	tlsTransport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}

	// Push: a catalog and the images it names, plus an extra image.
	res, err := seed.Run(ctx, seed.RunOptions{
		Registry: reg.host, CatalogDir: "../../testdata/demo/catalog", CatalogRepo: "airlock-demo/demo-index",
		Images: []string{"registry.example.com/tools/support-tools:1.4"}, AuthFile: good,
		WorkDir: filepath.Join(dir, "seed"), Remote: []remote.Option{remote.WithTransport(tlsTransport)},
	})
	if err != nil {
		t.Fatalf("seed through TLS + htpasswd: %v", err)
	}
	if res.Catalog == nil || len(res.Catalog.Images) < 20 || res.Images["registry.example.com/tools/support-tools:1.4"] != reg.host+"/tools/support-tools:1.4" {
		t.Fatalf("unexpected seed result: %+v", res)
	}

	// Pull with airlock's registry client.
	client := registry.New(registry.Options{AuthFile: good, RootCAs: pool, Retry: retry.Retries(0)})
	m, err := client.Manifest(ctx, reg.host+"/tools/support-tools", "1.4")
	if err != nil {
		t.Fatalf("pull through TLS + htpasswd: %v", err)
	}
	if want := res.Digests[reg.host+"/tools/support-tools:1.4"]; m.Digest != want {
		t.Fatalf("pulled digest %s, seeded %s", m.Digest, want)
	}
	var man struct {
		Layers []struct {
			Digest digest.Digest `json:"digest"`
			Size   int64         `json:"size"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(m.Raw, &man); err != nil || len(man.Layers) == 0 {
		t.Fatalf("manifest %s: %v", m.Raw, err)
	}
	rc, err := client.Blob(ctx, reg.host+"/tools/support-tools", endpoint.Descriptor{Digest: man.Layers[0].Digest, Size: man.Layers[0].Size})
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || digest.FromBytes(b) != man.Layers[0].Digest {
		t.Fatalf("blob: %v, digest %s want %s", err, digest.FromBytes(b), man.Layers[0].Digest)
	}
	// The catalog image is there too.
	if _, err := client.Manifest(ctx, reg.host+"/airlock-demo/demo-index", "v1"); err != nil {
		t.Fatalf("catalog image: %v", err)
	}

	// Wrong password, no password, no trust: refused.
	wrong := registry.New(registry.Options{AuthFile: bad, RootCAs: pool, Retry: retry.Retries(0)})
	if _, err := wrong.Manifest(ctx, reg.host+"/tools/support-tools", "1.4"); err == nil {
		t.Fatal("wrong password accepted")
	}
	resp, err := (&http.Client{Transport: tlsTransport}).Get(reg.url + "/v2/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("anonymous /v2/: %d %q, want 401 with a challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	untrusted := registry.New(registry.Options{AuthFile: good, Retry: retry.Retries(0)})
	if _, err := untrusted.Manifest(ctx, reg.host+"/tools/support-tools", "1.4"); err == nil {
		t.Fatal("self-signed certificate accepted without RootCAs")
	}
	// A wrong push is refused too.
	if _, err := seed.Run(ctx, seed.RunOptions{Registry: reg.host, Images: []string{"x.io/a/b:1"}, AuthFile: bad,
		Remote: []remote.Option{remote.WithTransport(tlsTransport)}}); err == nil {
		t.Fatal("push with a wrong password accepted")
	}

	reg.stop(t) // Ctrl-C
}

func TestRegistryCommandErrors(t *testing.T) {
	dir := t.TempDir()
	apr1 := filepath.Join(dir, "apr1")
	if err := os.WriteFile(apr1, []byte("alice:$apr1$x$0123456789012345678901\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []cmdErrorCase{
		{"serve without root", []string{"registry", "serve"}, `required flag(s) "root" not set`},
		{"cert without key", []string{"registry", "serve", "--root", dir, "--tls-cert", "x.crt"}, "--tls-cert and --tls-key go together"},
		{"missing cert file", []string{"registry", "serve", "--root", dir, "--addr", "127.0.0.1:0", "--tls-cert", filepath.Join(dir, "no.crt"), "--tls-key", filepath.Join(dir, "no.key")}, "load TLS certificate"},
		{"missing htpasswd", []string{"registry", "serve", "--root", dir, "--htpasswd", filepath.Join(dir, "nope")}, "read htpasswd file"},
		{"md5 htpasswd", []string{"registry", "serve", "--root", dir, "--htpasswd", apr1}, "only bcrypt is supported"},
		{"bad log level", []string{"registry", "serve", "--root", dir, "--log-level", "loud"}, "invalid --log-level"},
		{"seed without registry", []string{"registry", "seed", "--catalog-dir", dir}, `required flag(s) "registry" not set`},
		{"seed nothing", []string{"registry", "seed", "--registry", "127.0.0.1:1"}, "nothing to seed"},
		{"seed without repo", []string{"registry", "seed", "--registry", "127.0.0.1:1", "--catalog-dir", dir}, "needs --catalog-repo"},
		{"seed bad catalog", []string{"registry", "seed", "--registry", "127.0.0.1:1", "--catalog-dir", filepath.Join(dir, "none"), "--catalog-repo", "a/b"}, "none"},
		{"seed bad image", []string{"registry", "seed", "--registry", "127.0.0.1:1", "--image", "UPPER/case:1"}, "UPPER/case"},
	}
	checkCmdErrors(t, tests)
}

// TestDemoScript runs scripts/demo.sh (make demo) end to end, with this test
// binary standing in for the airlock binary, then checks what it left behind:
// the archive, the cluster resources, and the mirror registry's content.
func TestDemoScript(t *testing.T) {
	// Processes only (the script runs this binary): no flag or directory of
	// this process is shared.
	t.Parallel()
	if testing.Short() {
		t.Skip("runs two registries and a full mirror round trip")
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not found")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	work := filepath.Join(t.TempDir(), "demo")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "../../scripts/demo.sh")
	cmd.Env = append(os.Environ(), "AIRLOCK_TEST_RUN_MAIN=1", "AIRLOCK="+self, "DEMO_DIR="+work)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("demo took %s", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"mirror-to-disk summary",
		"images:    23 planned: 23 downloaded into the archive, 1 blocked",
		"OK: 1 chunks",
		"disk-to-mirror summary",
		"images:    23 planned: 23 copied\n",
		"workspace: ",
		"fast     demo-operator.v1.4.0",
		"stable   demo-operator.v1.2.1",
		"demo-monitoring  stable",
		"kind: CatalogSource",
		"kind: ImageDigestMirrorSet",
		"demo OK",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Fatalf("demo output:\n%s", text)
	}
	// Both registries were stopped: their addresses no longer answer.
	for _, m := range regexp.MustCompile(`(source|mirror) registry: http://(\S+) \(pid`).FindAllStringSubmatch(text, -1) {
		if c, err := net.DialTimeout("tcp", m[2], time.Second); err == nil {
			c.Close()
			t.Errorf("the %s registry %s still answers after the demo", m[1], m[2])
		}
	}

	// The mirror registry's storage holds what the demo says: serve it again.
	reg := serve(t, "--root", filepath.Join(work, "mirror"), "--addr", "127.0.0.1:0")
	client := registry.New(registry.Options{Retry: retry.Retries(0)})
	for _, ref := range []struct {
		repo, tag string
		want      bool
	}{
		{"mirror/airlock-demo/demo-index", "v1", true},
		{"mirror/tools/support-tools", "1.4", true},
		{"mirror/demo/kube-rbac-proxy", "v0.15.0", true},
		{"mirror/demo/grafana", "10.4.1", true},                              // demo-monitoring, a gvk dependency
		{"mirror/airlock-demo/demo-database-operator", "v2.1.0", true},       // demo-database, a package dependency
		{"mirror/demo/debug-sidecar", "1.4.0", false},                        // blockedImages
		{"mirror/airlock-demo/demo-database-operator", "v3.0.0-rc.1", false}, // not selected
	} {
		_, err := client.Manifest(ctx, reg.host+"/"+ref.repo, ref.tag)
		if got := err == nil; got != ref.want {
			t.Errorf("%s:%s in the mirror: %v (err %v), want %v", ref.repo, ref.tag, got, err, ref.want)
		}
	}
	for _, f := range []string{"cs-demo-index-v1.yaml", "idms-operator-0.yaml", "itms-generic-0.yaml"} {
		b, err := os.ReadFile(filepath.Join(work, "workspace", "working-dir", "cluster-resources", f))
		if err != nil {
			t.Errorf("cluster resource: %v", err)
			continue
		}
		if !bytes.Contains(b, []byte("/mirror/")) {
			t.Errorf("%s does not point at the mirror:\n%s", f, b)
		}
	}
}
