package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
)

// wanProxy is `airlock-bench wan-proxy`: the WAN simulator of the benchmarks
// (registrytest.WAN) in front of a registry, until interrupted, so that
// airlock can be tried by hand over a WAN (docs/benchmarks.md).
func wanProxy(args []string) error {
	fs := flag.NewFlagSet("wan-proxy", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: airlock-bench wan-proxy -upstream http://127.0.0.1:PORT [-preset lan|wan|far] [flags]")
		fs.PrintDefaults()
	}
	preset := fs.String("preset", "wan", "link preset: lan, wan (50 ms, 50 MB/s) or far (150 ms, 20 MB/s)")
	upstream := fs.String("upstream", "", "the registry behind the link (http://127.0.0.1:PORT), reached without credentials")
	listen := fs.String("listen", "127.0.0.1:0", "the registry host's address")
	latency := fs.Duration("latency", -1, "override the preset: round trip added to every request")
	handshake := fs.Duration("handshake", -1, "override the preset: set-up cost added to every new connection")
	bandwidth := fs.Float64("bandwidth-mb", -1, "override the preset: shared cap in MB/s each way (0: none)")
	rate := fs.Float64("rate", -1, "override the preset: requests a second before 429 (0: no limit)")
	tokenAuth := fs.Bool("token-auth", true, "token auth in front (anonymous pull; push as the user of the auth file written)")
	cdn := fs.Bool("cdn", true, "redirect blob GETs to a CDN host")
	blobRoot := fs.String("blob-root", "", "the --root of the `airlock registry serve` behind: the CDN serves blobs from its files and the registry host redirects without asking the registry (less of the machine's CPU on the registry's side)")
	authDir := fs.String("authfile-dir", os.TempDir(), "write wan-auth.json (the push user's credentials) here")
	trace := fs.String("trace", "", "write every request over the link to this file, one a line: start and end (seconds since the proxy started), status, method, path")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *upstream == "" {
		fs.Usage()
		return fmt.Errorf("wan-proxy: -upstream is required (e.g. the address of `airlock registry serve`)")
	}
	c, err := registrytest.WANPreset(*preset)
	if err != nil {
		return fmt.Errorf("wan-proxy: %w", err)
	}
	if *latency >= 0 {
		c.Latency = *latency
	}
	if *handshake >= 0 {
		c.Handshake = *handshake
	}
	if *bandwidth >= 0 {
		c.Bandwidth = int64(*bandwidth * 1e6)
	}
	if *rate >= 0 {
		c.RequestRate = *rate
		c.RequestBurst = int(*rate)
	}
	c.TokenAuth, c.CDN, c.Listen, c.BlobRoot = *tokenAuth, *cdn, *listen, *blobRoot
	if *trace != "" {
		f, err := os.Create(*trace)
		if err != nil {
			return fmt.Errorf("wan-proxy: -trace: %w", err)
		}
		defer f.Close()
		c.Observe = traceTo(f, time.Now())
	}
	w, err := registrytest.StartWAN(*upstream, c)
	if err != nil {
		return fmt.Errorf("wan-proxy: %w", err)
	}
	defer w.Close()
	fmt.Printf("WAN simulator (%s: %s) on %s in front of %s\n", *preset, c, w.Host, *upstream)
	if c.CDN {
		fmt.Printf("CDN host: %s\n", w.CDNHost())
	}
	if c.TokenAuth {
		p, err := w.WriteAuthFile(*authDir)
		if err != nil {
			return fmt.Errorf("wan-proxy: %w", err)
		}
		fmt.Printf("pull anonymously; to push use --authfile %s\n", p)
	}
	fmt.Println("e.g. airlock mirror -c isc.yaml --src-tls-verify=false ... with images at " + w.Host + "/...; Ctrl-C stops")
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tick := time.NewTicker(10 * time.Second)
	defer tick.Stop()
	last := registrytest.WANStats{}
	for {
		select {
		case <-ctx.Done():
			fmt.Printf("stopped: %+v\n", w.Stats())
			return nil
		case <-tick.C:
			// The link's idle time grows while nothing happens: a new
			// line only when a request came.
			s := w.Stats()
			seen := s
			seen.Idle = registrytest.LinkIdle{}
			if seen != last {
				fmt.Printf("%+v\n", s)
				last = seen
			}
		}
	}
}

// traceTo returns a WANConfig.Observe writing each request as a line of
// "start end status method path" (seconds since t0) to w: a timeline of the
// link (docs/benchmarks.md).
func traceTo(w io.Writer, t0 time.Time) func(method, path string, status int, start, end time.Time) {
	var mu sync.Mutex
	return func(method, path string, status int, start, end time.Time) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%.4f %.4f %d %s %s\n", start.Sub(t0).Seconds(), end.Sub(t0).Seconds(), status, method, path)
	}
}
