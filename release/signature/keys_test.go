package signature

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/signtest"
)

func TestDefaultKeys(t *testing.T) {
	got := strings.Join(DefaultKeys().Fingerprints(), " ")
	// Red Hat release key 2, beta key 2 (keys/SOURCES.md).
	want := "567E347AD0044ADE55BA8A5F199E2F91FD431D51 B08B659EE86AF623BC90E8DB938A80CAF21541EB"
	if got != want {
		t.Fatalf("built-in keys = %s, want %s", got, want)
	}
}

func TestParseKeys(t *testing.T) {
	a, b := signtest.NewReleaseKey(t, "rsa"), signtest.NewReleaseKey(t, "ed25519")
	two := append(append([]byte("# two keys\n"), a.Armored...), b.Armored...)
	k, err := ParseKeys(two)
	if err != nil || len(k.Fingerprints()) != 2 {
		t.Fatalf("ParseKeys(two blocks) = %v, %v", k, err)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "no OpenPGP public key"},
		{"text", "hello", "not armored public keys"},
		{"no end", "-----BEGIN PGP PUBLIC KEY BLOCK-----\nabc\n", "no END line"},
		{"bad block", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nabc\n-----END PGP PUBLIC KEY BLOCK-----\n", "armored key block 1"},
	} {
		if _, err := ParseKeys([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ParseKeys = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestResolveKeys(t *testing.T) {
	dir := t.TempDir()
	a, b := signtest.NewReleaseKey(t, "rsa"), signtest.NewReleaseKey(t, "rsa")
	fa, fb := filepath.Join(dir, "a.asc"), filepath.Join(dir, "b.asc")
	if err := os.WriteFile(fa, a.Armored, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(fb, b.Armored, 0o644); err != nil {
		t.Fatal(err)
	}
	ka, _ := ParseKeys(a.Armored)
	kb, _ := ParseKeys(b.Armored)

	t.Setenv(EnvKeys, "")
	if k, err := ResolveKeys(""); err != nil || k.String() != DefaultKeys().String() {
		t.Errorf("no override: %v, %v", k, err)
	}
	t.Setenv(EnvKeys, fa)
	if k, err := ResolveKeys(""); err != nil || k.Fingerprints()[0] != ka.Fingerprints()[0] {
		t.Errorf("%s: %v, %v", EnvKeys, k, err)
	}
	if k, err := ResolveKeys(fb); err != nil || k.Fingerprints()[0] != kb.Fingerprints()[0] || !strings.HasPrefix(k.String(), fb) {
		t.Errorf("the option does not win: %v, %v", k, err)
	}
	missing := filepath.Join(dir, "missing.asc")
	t.Setenv(EnvKeys, missing)
	if _, err := ResolveKeys(""); err == nil || !strings.Contains(err.Error(), EnvKeys) || !strings.Contains(err.Error(), missing) {
		t.Errorf("a missing %s file: %v (oc-mirror falls back to Red Hat's keys silently)", EnvKeys, err)
	}
}

// FuzzParseKeys: any bytes are keys or an error, never a panic; keys parsed
// are public keys.
func FuzzParseKeys(f *testing.F) {
	f.Add(redHatKeys)
	f.Add([]byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n-----END PGP PUBLIC KEY BLOCK-----\n"))
	f.Add([]byte{0x99, 0x01, 0x0d, 0x04})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := ParseKeys(b)
		if err == nil && len(k.Fingerprints()) == 0 {
			t.Fatal("no error and no key")
		}
	})
}
