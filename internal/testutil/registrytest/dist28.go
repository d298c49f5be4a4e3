package registrytest

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Distribution28Binary is Debian's CNCF Distribution 2.8 registry (package
// docker-registry), what the registry:2 image runs.
const Distribution28Binary = "/usr/bin/docker-registry"

// Distribution28Missing says why Distribution 2.8 cannot run here ("" when it
// can).
func Distribution28Missing() string {
	if _, err := os.Stat(Distribution28Binary); err != nil {
		return Distribution28Binary + " is not installed (Debian package docker-registry; .ci/run installs it, so CI runs these tests)"
	}
	return ""
}

type dist28 struct {
	host, root string
}

// startDistribution28 runs `docker-registry serve` with filesystem storage in
// t.TempDir(), deletes enabled unless noDelete, on a free 127.0.0.1 port,
// waits until /v2/ answers, and kills it with t.Cleanup. The caller checks
// Distribution28Missing first.
func startDistribution28(t testing.TB, noDelete bool) *dist28 {
	t.Helper()
	root := t.TempDir()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		addr := ClosedAddr(t)
		cfg := filepath.Join(t.TempDir(), "config.yml")
		err := os.WriteFile(cfg, []byte(fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
  delete:
    enabled: %t
  maintenance:
    uploadpurging:
      enabled: false
http:
  addr: %s
  secret: registrytest-%d
`, root, !noDelete, addr, time.Now().UnixNano())), 0o644)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		cmd := exec.Command(Distribution28Binary, "serve", cfg)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("registrytest: start %s: %v", Distribution28Binary, err)
		}
		exited := make(chan struct{})
		var waitErr error
		go func() { waitErr = cmd.Wait(); close(exited) }()
		if lastErr = waitV2(addr, exited, &waitErr); lastErr == nil {
			t.Cleanup(func() {
				cmd.Process.Kill()
				<-exited
			})
			return &dist28{host: addr, root: root}
		}
		cmd.Process.Kill()
		<-exited
		lastErr = fmt.Errorf("%w; its output: %s", lastErr, strings.TrimSpace(out.String()))
	}
	t.Fatalf("registrytest: %s did not start: %v", Distribution28Binary, lastErr)
	return nil
}

// waitV2 waits up to 15 s for GET /v2/ to answer 200, or for the process to exit.
func waitV2(addr string, exited <-chan struct{}, waitErr *error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	c := &http.Client{Timeout: time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/v2/", nil)
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return fmt.Errorf("it exited: %v", *waitErr)
		case <-ctx.Done():
			return fmt.Errorf("GET http://%s/v2/ did not answer 200 within 15 s", addr)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
