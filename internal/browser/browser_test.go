package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCatches proves the checker can fail: a page that logs an error, throws and
// loads an image from the network is reported as such, and a clean page is not.
func TestCatches(t *testing.T) {
	bin := Find()
	if bin == "" {
		t.Skip("no chromium (apt-get install chromium)")
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.html")
	os.WriteFile(bad, []byte(`<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">
<script>console.error("boom"); throw new Error("thrown");</script></body></html>`), 0o644)
	good := filepath.Join(dir, "good.html")
	os.WriteFile(good, []byte(`<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src 'none'"></head><body><p id="x">hello</p></body></html>`), 0o644)

	r, err := Open(context.Background(), bin, bad, Options{})
	if err != nil {
		t.Fatal(err)
	}
	all := strings.Join(r.Errors, "\n")
	if !strings.Contains(all, "boom") || !strings.Contains(all, "thrown") {
		t.Errorf("errors not caught: %q", r.Errors)
	}
	if len(r.Requests) != 1 || r.Requests[0] != "http://127.0.0.1:9/x.png" {
		t.Errorf("requests = %q, want the image", r.Requests)
	}

	r, err = Open(context.Background(), bin, good, Options{Eval: `document.getElementById("x").textContent`, Screenshot: true, Width: 200, Height: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Errors) > 0 || len(r.Requests) > 0 {
		t.Errorf("clean page: errors %q, requests %q", r.Errors, r.Requests)
	}
	if string(r.Value) != `"hello"` {
		t.Errorf("eval = %s", r.Value)
	}
	if len(r.Screenshot) < 100 || string(r.Screenshot[1:4]) != "PNG" {
		t.Errorf("no PNG screenshot (%d bytes)", len(r.Screenshot))
	}
}
