package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"syscall"
	"time"
)

// Registry is an embedded registry (`airlock registry serve`) running in its
// own process, so that its CPU is accounted separately, with filesystem
// storage in Root and a counting proxy in front of it.
type Registry struct {
	Root string
	// URL is the registry's own address ("http://127.0.0.1:PORT").
	URL string
	// Proxy counts what clients send and receive; clients use Proxy.Addr.
	Proxy  *Proxy
	cmd    *exec.Cmd
	done   chan struct{}
	stderr *tailBuffer
}

var listening = regexp.MustCompile(`listening on (https?://\S+)`)

// StartRegistry starts `airlock registry serve --root root --addr 127.0.0.1:0`
// and a counting proxy in front of it.
func StartRegistry(ctx context.Context, airlock, root string) (*Registry, error) {
	return StartRegistryAt(ctx, airlock, root, "127.0.0.1:0")
}

// StartRegistryAt is StartRegistry listening on addr.
func StartRegistryAt(ctx context.Context, airlock, root, addr string) (*Registry, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, err
	}
	cmd := exec.Command(airlock, "registry", "serve", "--root", root, "--addr", addr, "--log-level", "warn")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	r := &Registry{Root: root, cmd: cmd, done: make(chan struct{}), stderr: &tailBuffer{max: 16 << 10}}
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start registry (%s registry serve): %w", airlock, err)
	}
	urls := make(chan string, 1)
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(out)
		sent := false
		for sc.Scan() {
			if m := listening.FindStringSubmatch(sc.Text()); m != nil && !sent {
				urls <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}()
	select {
	case u := <-urls:
		r.URL = u
	case <-r.done:
		return nil, fmt.Errorf("registry exited before listening: %s", r.stderr.String())
	case <-time.After(60 * time.Second):
		r.kill()
		return nil, fmt.Errorf("registry did not start within 60 s: %s", r.stderr.String())
	case <-ctx.Done():
		r.kill()
		return nil, ctx.Err()
	}
	p, err := StartProxy(r.URL)
	if err != nil {
		r.kill()
		return nil, err
	}
	r.Proxy = p
	return r, nil
}

// Addr is the address clients use (the proxy's).
func (r *Registry) Addr() string { return r.Proxy.Addr }

// CPU returns the CPU time the registry process has used so far.
func (r *Registry) CPU() time.Duration { return procCPU(r.cmd.Process.Pid) }

// PeakRSS returns the registry process's peak RSS so far.
func (r *Registry) PeakRSS() int64 { return procRSS(r.cmd.Process.Pid) }

func (r *Registry) kill() {
	_ = r.cmd.Process.Kill()
	<-r.done
}

// Stop stops the proxy and the registry (SIGTERM, then SIGKILL after 10 s).
func (r *Registry) Stop() {
	if r.Proxy != nil {
		_ = r.Proxy.Close()
	}
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		r.kill()
	}
}
