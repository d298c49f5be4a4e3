// Package browser drives a headless Chromium. Open loads a page for tests and
// reports what it did: console errors, uncaught exceptions, browser log errors
// (Content-Security-Policy violations among them) and every network request,
// through the DevTools protocol; tests skip when no chromium binary is found
// (.ci/run installs Debian's chromium). SVGToPNG draws the upgrade-graph
// pictures of `airlock catalog graph -o x.png`. It knows nothing of catalogs or
// registries: it is given pages and SVG.
package browser

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"
)

// Find returns the path of a chromium binary ($AIRLOCK_CHROMIUM, chromium,
// chromium-browser), or "".
func Find() string {
	if p := os.Getenv("AIRLOCK_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// Result is what loading a page did.
type Result struct {
	// Errors are console errors, uncaught exceptions and browser log entries of
	// level error, as text.
	Errors []string
	// Requests are the URLs the page requested besides the page itself.
	Requests []string
	// Value is what Options.Eval evaluated to (JSON).
	Value json.RawMessage
	// Screenshot is a PNG of the page when Options.Screenshot is set.
	Screenshot []byte
}

// Options tune Open.
type Options struct {
	// Eval is a JavaScript expression evaluated once the page has loaded (a
	// promise it evaluates to is awaited).
	Eval string
	// Screenshot asks for a PNG of the first Height pixels, Width wide.
	Screenshot    bool
	Width, Height int
}

// Open loads file (an HTML file) in a fresh headless Chromium and reports.
func Open(ctx context.Context, bin, file string, opts Options) (*Result, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, err
	}
	if opts.Width == 0 {
		opts.Width, opts.Height = 1280, 1600
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	profile, err := os.MkdirTemp("", "airlock-chromium-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(profile)
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-default-browser-check", "--user-data-dir="+profile,
		"--remote-debugging-port=0", "--remote-allow-origins=*", "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	endpoint := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`DevTools listening on ws://([^/]+)/`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				endpoint <- m[1]
			}
		}
	}()
	var hostPort string
	select {
	case hostPort = <-endpoint:
	case <-ctx.Done():
		return nil, errors.New("chromium did not start its DevTools endpoint")
	}
	wsURL, err := pageTarget(ctx, hostPort)
	if err != nil {
		return nil, err
	}
	conn, err := websocket.Dial(wsURL, "", "http://"+hostPort)
	if err != nil {
		return nil, fmt.Errorf("devtools: %w", err)
	}
	defer conn.Close()
	c := &client{conn: conn, replies: map[int]chan message{}, loaded: make(chan struct{})}
	go c.read()
	go func() { <-ctx.Done(); conn.Close() }()

	for _, m := range []string{"Network.enable", "Runtime.enable", "Log.enable", "Page.enable"} {
		if _, err := c.call(m, nil); err != nil {
			return nil, err
		}
	}
	if _, err := c.call("Emulation.setDeviceMetricsOverride", map[string]any{"width": opts.Width, "height": opts.Height, "deviceScaleFactor": 1, "mobile": false}); err != nil {
		return nil, err
	}
	pageURL := fileURL(abs)
	if _, err := c.call("Page.navigate", map[string]any{"url": pageURL}); err != nil {
		return nil, err
	}
	select {
	case <-c.loaded:
	case <-ctx.Done():
		return nil, errors.New("the page did not finish loading")
	}
	// Let late requests and console messages arrive.
	time.Sleep(300 * time.Millisecond)
	res := &Result{}
	if opts.Eval != "" {
		v, err := c.call("Runtime.evaluate", map[string]any{"expression": opts.Eval, "returnByValue": true, "awaitPromise": true})
		if err != nil {
			return nil, err
		}
		var r struct {
			Result struct {
				Value json.RawMessage `json:"value"`
			} `json:"result"`
		}
		json.Unmarshal(v, &r)
		res.Value = r.Result.Value
	}
	if opts.Screenshot {
		v, err := c.call("Page.captureScreenshot", map[string]any{"format": "png"})
		if err != nil {
			return nil, err
		}
		var r struct {
			Data string `json:"data"`
		}
		json.Unmarshal(v, &r)
		if res.Screenshot, err = base64.StdEncoding.DecodeString(r.Data); err != nil {
			return nil, err
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	res.Errors = append(res.Errors, c.errors...)
	for _, u := range c.requests {
		if u != pageURL {
			res.Requests = append(res.Requests, u)
		}
	}
	return res, nil
}

func pageTarget(ctx context.Context, hostPort string) (string, error) {
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostPort+"/json/list", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			var targets []struct {
				Type string `json:"type"`
				WS   string `json:"webSocketDebuggerUrl"`
			}
			err = json.NewDecoder(resp.Body).Decode(&targets)
			resp.Body.Close()
			for _, t := range targets {
				if t.Type == "page" && t.WS != "" {
					return t.WS, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("no page target in chromium: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

type message struct {
	ID     int             `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type client struct {
	conn     *websocket.Conn
	mu       sync.Mutex
	next     int
	replies  map[int]chan message
	errors   []string
	requests []string
	loaded   chan struct{}
	once     sync.Once
}

func (c *client) call(method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	c.next++
	id := c.next
	ch := make(chan message, 1)
	c.replies[id] = ch
	c.mu.Unlock()
	if params == nil {
		params = map[string]any{}
	}
	if err := websocket.JSON.Send(c.conn, map[string]any{"id": id, "method": method, "params": params}); err != nil {
		return nil, fmt.Errorf("devtools %s: %w", method, err)
	}
	m, ok := <-ch
	if !ok {
		return nil, fmt.Errorf("devtools %s: connection closed", method)
	}
	if m.Error != nil {
		return nil, fmt.Errorf("devtools %s: %s", method, m.Error.Message)
	}
	return m.Result, nil
}

func (c *client) read() {
	defer func() {
		c.mu.Lock()
		for id, ch := range c.replies {
			close(ch)
			delete(c.replies, id)
		}
		c.mu.Unlock()
	}()
	for {
		var m message
		if err := websocket.JSON.Receive(c.conn, &m); err != nil {
			return
		}
		if m.ID != 0 {
			c.mu.Lock()
			ch := c.replies[m.ID]
			delete(c.replies, m.ID)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
			continue
		}
		c.event(m)
	}
}

func (c *client) event(m message) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch m.Method {
	case "Page.loadEventFired":
		c.once.Do(func() { close(c.loaded) })
	case "Network.requestWillBeSent":
		var p struct {
			Request struct {
				URL string `json:"url"`
			} `json:"request"`
		}
		json.Unmarshal(m.Params, &p)
		c.requests = append(c.requests, p.Request.URL)
	case "Runtime.consoleAPICalled":
		var p struct {
			Type string `json:"type"`
			Args []struct {
				Value any `json:"value"`
			} `json:"args"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Type == "error" || p.Type == "assert" {
			var parts []string
			for _, a := range p.Args {
				parts = append(parts, fmt.Sprint(a.Value))
			}
			c.errors = append(c.errors, "console."+p.Type+": "+strings.Join(parts, " "))
		}
	case "Runtime.exceptionThrown":
		c.errors = append(c.errors, "exception: "+string(m.Params))
	case "Log.entryAdded":
		var p struct {
			Entry struct {
				Level, Text, URL string
			} `json:"entry"`
		}
		json.Unmarshal(m.Params, &p)
		if p.Entry.Level == "error" {
			c.errors = append(c.errors, "log: "+p.Entry.Text+" "+p.Entry.URL)
		}
	}
}

// fileURL is the file: URL of the absolute path p, escaped as the browser
// writes it back in the requests it reports. It is a URL, not a location.
func fileURL(p string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(p)}).String()
}
