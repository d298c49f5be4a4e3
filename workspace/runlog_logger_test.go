package workspace

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"
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
