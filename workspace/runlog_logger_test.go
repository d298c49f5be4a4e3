package workspace

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// TestOpenRunLogHidesSecrets: what a command logs reaches its console logger
// and the run log; no password, token or authorization header lands in the
// file, whether in the message, a string, an error or a Stringer attribute.
func TestOpenRunLogHidesSecrets(t *testing.T) {
	d := Dir(t.TempDir())
	var console bytes.Buffer
	base := slog.New(slog.NewTextHandler(&console, &slog.HandlerOptions{Level: slog.LevelWarn}))
	log, done := d.OpenRunLog(base, time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), "airlock delete", "destination", "docker://alice:pw-in-ref@mirror.example.com/ns")
	log.Info("request Authorization: Basic YWxpY2U6c2VjcmV0LWJhc2lj", "header", "Authorization: Bearer tok-bearer-123")
	log.Warn("login failed password=pw-in-message", "error", errors.New(`auth {"password":"pw-in-json"}`), "ref", stringer("https://bob:pw-in-stringer@quay.io/v2/"))
	log.With("token", "token=tok-with-attr").Info("done")
	done()

	logs, err := os.ReadDir(d.LogsDir())
	if err != nil || len(logs) != 1 {
		t.Fatalf("logs: %v %v", logs, err)
	}
	b, err := os.ReadFile(d.LogsDir() + "/" + logs[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	file := string(b)
	for _, secret := range []string{"pw-in-ref", "YWxpY2U6c2VjcmV0LWJhc2lj", "tok-bearer-123", "pw-in-message", "pw-in-json", "pw-in-stringer", "tok-with-attr"} {
		if strings.Contains(file, secret) {
			t.Errorf("the run log holds %q:\n%s", secret, file)
		}
	}
	for _, want := range []string{"airlock delete", "mirror.example.com/ns", "login failed", "msg=done", logs[0].Name()} {
		if !strings.Contains(file, want) {
			t.Errorf("the run log lacks %q:\n%s", want, file)
		}
	}
	if c := console.String(); !strings.Contains(c, "login failed") || strings.Contains(c, "msg=done") {
		t.Errorf("the console logger did not get what its level shows:\n%s", c)
	}
}

type stringer string

func (s stringer) String() string { return string(s) }

// TestRunLogKeepsDetailFromConsole: a failure logged with its short reason and
// its whole error (transfer.DetailKey) shows the reason on the console and
// writes the detail once, into the run log.
func TestRunLogKeepsDetailFromConsole(t *testing.T) {
	d := Dir(t.TempDir())
	var console bytes.Buffer
	base := slog.New(slog.NewTextHandler(&console, &slog.HandlerOptions{Level: slog.LevelInfo}))
	log, done := d.OpenRunLog(base, time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), "airlock run")
	log.Warn("image copy failed", "source", "quay.io/a/b:1", "reason", "the disk is full", transfer.DetailKey, "stage blob sha256:0123: write /x/partial/0123: no space left on device")
	done()
	logs, err := os.ReadDir(d.LogsDir())
	if err != nil || len(logs) != 1 {
		t.Fatalf("logs: %v %v", logs, err)
	}
	b, err := os.ReadFile(d.LogsDir() + "/" + logs[0].Name())
	if err != nil {
		t.Fatal(err)
	}
	c := console.String()
	for _, want := range []string{"quay.io/a/b:1", "the disk is full"} {
		if !strings.Contains(c, want) || !strings.Contains(string(b), want) {
			t.Errorf("console and log must both say %q:\nconsole: %s\nlog: %s", want, c, b)
		}
	}
	if strings.Contains(c, "no space left on device") {
		t.Errorf("the console shows the detail:\n%s", c)
	}
	if n := strings.Count(string(b), "no space left on device"); n != 1 {
		t.Errorf("the run log holds the detail %d times, want once:\n%s", n, b)
	}
}
