package simple

import (
	"bytes"
	"strings"
	"testing"
)

func TestLevels(t *testing.T) {
	for _, tc := range []struct {
		level string
		want  []string
	}{
		{"error", []string{"[ERROR] : e"}},
		{"info", []string{"[ERROR] : e", "[WARN] : w", "[INFO] : i"}},
		{"trace", []string{"[ERROR] : e", "[WARN] : w", "[INFO] : i", "[DEBUG] : d", "[TRACE] : t"}},
		{"nonsense", []string{"[ERROR] : e", "[WARN] : w", "[INFO] : i"}},
	} {
		var out bytes.Buffer
		l := &Logger{Level: tc.level, Out: &out}
		l.Error("e")
		l.Warn("w")
		l.Info("i")
		l.Debug("d")
		l.Trace("t")
		lines := strings.Split(strings.TrimSpace(out.String()), "\n")
		if len(lines) != len(tc.want) {
			t.Fatalf("level %s: %q", tc.level, out.String())
		}
		for i, w := range tc.want {
			if !strings.HasSuffix(lines[i], w) {
				t.Errorf("level %s: line %q, want it to end %q", tc.level, lines[i], w)
			}
		}
	}
}
