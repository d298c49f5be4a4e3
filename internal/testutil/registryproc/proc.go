package registryproc

import (
	"bufio"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/syncbuf"
)

// ReadyTimeout is how long Start waits for a registry process to listen.
const ReadyTimeout = time.Minute

// commandTimeout bounds the answer to one command (counts, reset).
const commandTimeout = 30 * time.Second

// Proc is a registry served by a registry process of its own.
type Proc struct {
	url  string
	cert *x509.Certificate

	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	out    *bufio.Reader
	stderr *syncbuf.Buffer
	exited chan struct{}

	mu      sync.Mutex
	stopped bool
	last    Counts // the counts when Stop stopped the process
}

// Start runs the registry c describes in a registry process (the binary of
// Binary) on 127.0.0.1:0 and returns once it listens. The process dies with
// the test process (on Linux even when that one is killed: its parent-death
// signal; everywhere when its standard input ends). Stop stops it.
func Start(c Config) (*Proc, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	return startBinary(bin, c)
}

func startBinary(bin string, c Config) (*Proc, error) {
	line, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("registry process: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("registry process: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, fmt.Errorf("registry process: %w", err)
	}
	p := &Proc{stdin: inW, stdout: outR, out: bufio.NewReader(outR), stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin)
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = inR, outW, p.stderr
	p.cmd.SysProcAttr = sysProcAttr()
	err = spawn(p.cmd)
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("registry process %s: %w", bin, err)
	}
	go func() { p.cmd.Wait(); close(p.exited) }()
	fail := func(err error) (*Proc, error) {
		p.kill()
		if msg := strings.TrimSpace(p.stderr.String()); msg != "" {
			err = fmt.Errorf("%w; its output: %s", err, msg)
		}
		return nil, fmt.Errorf("registry process %s did not start: %w", bin, err)
	}
	if _, err := inW.Write(append(line, '\n')); err != nil {
		return fail(err)
	}
	var r ready
	if err := p.read(&r, ReadyTimeout); err != nil {
		return fail(err)
	}
	u, err := url.Parse(r.URL)
	if err != nil || u.Host == "" {
		return fail(fmt.Errorf("it printed %q, not its URL", r.URL))
	}
	p.url = r.URL
	if len(r.Cert) > 0 {
		if p.cert, err = x509.ParseCertificate(r.Cert); err != nil {
			return fail(fmt.Errorf("its certificate: %w", err))
		}
	}
	return p, nil
}

// BaseURL is "http://127.0.0.1:PORT" or https.
func (p *Proc) BaseURL() string { return p.url }

// Certificate is what an HTTPS registry serves (nil over plain HTTP).
func (p *Proc) Certificate() *x509.Certificate { return p.cert }

// read decodes the process's next line into v within timeout.
func (p *Proc) read(v any, timeout time.Duration) error {
	p.stdout.SetReadDeadline(time.Now().Add(timeout))
	line, err := p.out.ReadBytes('\n')
	if err != nil {
		select {
		case <-p.exited:
			return fmt.Errorf("it exited (%v)", p.cmd.ProcessState)
		case <-time.After(time.Second):
		}
		return err
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(line, &e) == nil && e.Error != "" {
		return errors.New(e.Error)
	}
	return json.Unmarshal(line, v)
}

// command sends cmd and decodes the answer into v. The caller holds p.mu.
func (p *Proc) command(cmd string, v any) error {
	if _, err := p.stdin.WriteString(cmd + "\n"); err != nil {
		return fmt.Errorf("registry process %s: %s: %w", p.url, cmd, err)
	}
	if err := p.read(v, commandTimeout); err != nil {
		return fmt.Errorf("registry process %s: %s: %w", p.url, cmd, err)
	}
	return nil
}

// Counts returns the registry's request counts (those of when it stopped,
// once stopped).
func (p *Proc) Counts() (Counts, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return p.last.clone(), nil
	}
	var w wireCounts
	if err := p.command("counts", &w); err != nil {
		return Counts{}, err
	}
	return w.counts(), nil
}

// Reset zeroes the registry's request counts.
func (p *Proc) Reset() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		p.last = Counts{}
		return nil
	}
	return p.command("reset", &struct{}{})
}

// Stop kills the registry process at once (a registry going away: its
// connections drop) and waits for it to exit; its counts stay readable. Safe
// to call more than once.
func (p *Proc) Stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	var w wireCounts
	if p.command("counts", &w) == nil {
		p.last = w.counts()
	}
	p.stopped = true
	p.kill()
}

func (p *Proc) kill() {
	p.stdin.Close()
	p.cmd.Process.Kill()
	<-p.exited
	p.stdout.Close()
}

// spawn starts cmd from one goroutine locked to its OS thread for the life
// of the process: Linux sends the parent-death signal when the thread that
// forked a child exits, not the process, and the Go runtime may end the
// thread of any other goroutine.
func spawn(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawns = make(chan spawnReq)
		go func() {
			runtime.LockOSThread()
			for r := range spawns {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawns <- spawnReq{cmd, done}
	return <-done
}

type spawnReq struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawns    chan spawnReq
)
