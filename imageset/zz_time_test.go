package imageset

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestZZTimeCorpus(t *testing.T) {
	dir := os.Getenv("CORPUS")
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	type r struct {
		f string
		d time.Duration
		n int
	}
	var worst r
	for _, f := range files {
		raw, _ := os.ReadFile(f)
		s := string(raw)
		i := strings.Index(s, "[]byte(")
		if i < 0 {
			continue
		}
		body := strings.TrimSuffix(strings.TrimSpace(s[i+7:]), ")")
		data, err := strconv.Unquote(body)
		if err != nil {
			continue
		}
		start := time.Now()
		c, err := Load(bytes.NewReader([]byte(data)), "x")
		if err == nil {
			checkRoundTrip(t, c)
		}
		LoadDelete(bytes.NewReader([]byte(data)), "x")
		if d := time.Since(start); d > worst.d {
			worst = r{f, d, len(data)}
		}
	}
	t.Logf("%d files, worst %v %s (%d bytes)", len(files), worst.d, worst.f, worst.n)
}
