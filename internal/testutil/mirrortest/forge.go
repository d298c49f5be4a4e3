package mirrortest

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// ForgeArchiveID rewrites the archive in dir so that it claims the archive ID
// to instead of from, consistently: the ID in every chunk index and in the
// archive manifest, the index checksums the manifest records, and the
// manifest's own checksum. Every checksum of the result holds; only a reader
// that computes the ID from the content can tell. (An archive written with
// other content, forged to the ID of the one announced, is the attack.)
func ForgeArchiveID(t testing.TB, dir, from, to string) {
	t.Helper()
	if len(from) != len(to) {
		t.Fatalf("forge: IDs of different lengths %q, %q", from, to)
	}
	chunks, err := filepath.Glob(filepath.Join(dir, "airlock_*.tar"))
	if err != nil || len(chunks) == 0 {
		t.Fatalf("forge: no chunks in %s (%v)", dir, err)
	}
	data, orig := map[string][]byte{}, map[string][]byte{}
	var sums [][2]string // old index checksum → new
	for _, c := range chunks {
		b, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		orig[c] = b
		old := sha256.Sum256(entry(t, b, "airlock/index.json"))
		b = bytes.ReplaceAll(b, []byte(from), []byte(to))
		sum := sha256.Sum256(entry(t, b, "airlock/index.json"))
		sums = append(sums, [2]string{hex.EncodeToString(old[:]), hex.EncodeToString(sum[:])})
		data[c] = b
	}
	for _, c := range chunks {
		b := data[c]
		m := entry(t, orig[c], "airlock/manifest.json")
		if m == nil {
			continue
		}
		oldSum := sha256.Sum256(m)
		for _, s := range sums {
			b = bytes.ReplaceAll(b, []byte(s[0]), []byte(s[1]))
		}
		newSum := sha256.Sum256(entry(t, b, "airlock/manifest.json"))
		data[c] = bytes.ReplaceAll(b, []byte(hex.EncodeToString(oldSum[:])), []byte(hex.EncodeToString(newSum[:])))
	}
	for c, b := range data {
		if err := os.WriteFile(c, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// entry is the content of the tar entry name in chunk b (nil without one).
func entry(t testing.TB, b []byte, name string) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			t.Fatalf("forge: read chunk: %v", err)
		}
		if h.Name == name {
			out, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
	}
}
