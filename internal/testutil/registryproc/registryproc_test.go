package registryproc_test

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registryproc"
)

// helperEnv makes the test binary a test process that starts a registry
// process, prints its process id and URL, and waits to be killed.
const helperEnv = "REGISTRYPROC_TEST_PARENT"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		p, err := registryproc.Start(registryproc.Config{})
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println(registryproc.PID(p), p.BaseURL())
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// start runs c in a registry process or in this one.
func start(t *testing.T, inProcess bool, c registryproc.Config) registryproc.Registry {
	t.Helper()
	var r registryproc.Registry
	var err error
	if inProcess {
		r, err = registryproc.Serve(c)
	} else {
		r, err = registryproc.Start(c)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

func client(r registryproc.Registry) *http.Client {
	tr := &http.Transport{}
	if cert := r.Certificate(); cert != nil {
		pool := x509.NewCertPool()
		pool.AddCert(cert)
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

func get(t *testing.T, c *http.Client, url, user, password string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// TestOptions runs each option in a registry process and in this one: the
// same answers, the same counts.
func TestOptions(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		where := map[bool]string{false: "process", true: "inprocess"}[inProcess]
		t.Run(where+"/tls-and-basic-auth", func(t *testing.T) {
			r := start(t, inProcess, registryproc.Config{SelfSigned: true, Users: map[string]string{"alice": "s3cret"}})
			if !strings.HasPrefix(r.BaseURL(), "https://127.0.0.1:") || r.Certificate() == nil {
				t.Fatalf("URL %s, certificate %v: want HTTPS on 127.0.0.1 and its certificate", r.BaseURL(), r.Certificate())
			}
			c := client(r)
			if got := get(t, c, r.BaseURL()+"/v2/", "", ""); got != http.StatusUnauthorized {
				t.Errorf("anonymous GET /v2/: %d, want 401", got)
			}
			if got := get(t, c, r.BaseURL()+"/v2/", "alice", "s3cret"); got != http.StatusOK {
				t.Errorf("GET /v2/ as alice: %d, want 200", got)
			}
			if _, err := http.Get(r.BaseURL() + "/v2/"); err == nil {
				t.Error("a client not trusting the certificate was answered")
			}
			counts, err := r.Counts()
			if err != nil {
				t.Fatal(err)
			}
			if counts.ByPath["GET base"] != 2 {
				t.Errorf("counts %v, want 2 GET base (the refused handshake is no request)", counts.ByPath)
			}
		})
		t.Run(where+"/filesystem-push-and-counts", func(t *testing.T) {
			root := t.TempDir()
			r := start(t, inProcess, registryproc.Config{RootDir: root})
			host := strings.TrimPrefix(r.BaseURL(), "http://")
			p := imagetest.MustPush(t, host+"/a/b:v1", fakeimage.Spec{Seed: 1, Layers: 2})
			c, err := r.Counts()
			if err != nil {
				t.Fatal(err)
			}
			if c.BlobsCommitted != int64(len(p.Blobs)) || c.ManifestPUT != 1 || c.BytesUploaded == 0 {
				t.Errorf("counts %+v, want %d blobs committed, 1 manifest PUT, bytes uploaded", c, len(p.Blobs))
			}
			if _, err := os.Stat(filepath.Join(root, "docker", "registry", "v2", "blobs", "sha256", p.Blobs[0].Hex()[:2], p.Blobs[0].Hex(), "data")); err != nil {
				t.Errorf("blob not in the storage folder: %v", err)
			}
			if err := r.Reset(); err != nil {
				t.Fatal(err)
			}
			if c, _ := r.Counts(); c.ManifestPUT != 0 || len(c.ByPath) != 0 {
				t.Errorf("after Reset: %+v", c)
			}
		})
		t.Run(where+"/no-mounts", func(t *testing.T) {
			r := start(t, inProcess, registryproc.Config{NoMounts: true})
			host := strings.TrimPrefix(r.BaseURL(), "http://")
			p := imagetest.MustPush(t, host+"/a/b:v1", fakeimage.Spec{Seed: 2, Layers: 1})
			req, _ := http.NewRequest(http.MethodPost, r.BaseURL()+"/v2/c/d/blobs/uploads/?mount="+p.Blobs[0].String()+"&from=a/b", nil)
			resp, err := client(r).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Errorf("mount: %d, want 202 (a session, not a mount)", resp.StatusCode)
			}
			if c, _ := r.Counts(); c.MountPOST != 1 || c.Mounted != 0 || c.Sessions < 1 {
				t.Errorf("counts %+v, want one mount attempt, none mounted", c)
			}
		})
		t.Run(where+"/distribution-htpasswd", func(t *testing.T) {
			h, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
			if err != nil {
				t.Fatal(err)
			}
			hp := filepath.Join(t.TempDir(), "htpasswd")
			if err := os.WriteFile(hp, []byte("bob:"+string(h)+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			r := start(t, inProcess, registryproc.Config{Distribution: true, RootDir: t.TempDir(), Htpasswd: hp})
			c := client(r)
			if got := get(t, c, r.BaseURL()+"/v2/", "bob", "wrong"); got != http.StatusUnauthorized {
				t.Errorf("wrong password: %d, want 401", got)
			}
			if got := get(t, c, r.BaseURL()+"/v2/", "bob", "pw"); got != http.StatusOK {
				t.Errorf("bob: %d, want 200", got)
			}
		})
	}
}

// TestStopDropsTheRegistry: after Stop nothing answers, and the counts of
// before stay readable.
func TestStopDropsTheRegistry(t *testing.T) {
	r := start(t, false, registryproc.Config{})
	c := client(r)
	get(t, c, r.BaseURL()+"/v2/", "", "")
	r.Stop()
	r.Stop()
	if _, err := c.Get(r.BaseURL() + "/v2/"); err == nil {
		t.Fatal("registry still answering after Stop")
	}
	if n, err := r.Counts(); err != nil || n.ByPath["GET base"] != 1 {
		t.Fatalf("counts after Stop: %v, %v; want the GET of before", n.ByPath, err)
	}
}

// TestStartFailsClearly: a registry process that cannot serve its
// configuration, or is no registry process, is an error saying why.
func TestStartFailsClearly(t *testing.T) {
	_, err := registryproc.Start(registryproc.Config{Distribution: true})
	if err == nil || !strings.Contains(err.Error(), "did not start") || !strings.Contains(err.Error(), "needs a storage folder") {
		t.Errorf("Distribution without a folder: %v, want it did not start and why", err)
	}
	_, err = registryproc.StartBinary("/bin/false", registryproc.Config{})
	if err == nil || !strings.Contains(err.Error(), "/bin/false did not start") {
		t.Errorf("a process that exits at once: %v", err)
	}
	_, err = registryproc.StartBinary(filepath.Join(t.TempDir(), "missing"), registryproc.Config{})
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("no binary: %v", err)
	}
}

// FuzzCommands: whatever the test process sends after the configuration,
// the registry process answers or stops, and never panics.
func FuzzCommands(f *testing.F) {
	f.Add("counts\nreset\ncounts\n")
	f.Add("nonsense\n\n")
	f.Add("counts")
	f.Fuzz(func(t *testing.T, cmds string) {
		var out, errOut strings.Builder
		code := registryproc.Main(strings.NewReader("{}\n"+cmds), &out, &errOut)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, errOut.String())
		}
		lines := strings.Count(out.String(), "\n")
		if want := 1 + strings.Count(cmds, "\n"); lines != want {
			t.Fatalf("%d lines for %q, want %d: %s", lines, cmds, want, out.String())
		}
	})
}
