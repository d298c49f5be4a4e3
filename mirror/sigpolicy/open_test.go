//go:build containers_image_openpgp

package sigpolicy

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.json", `{"default":[{"type":"insecureAcceptAnything"}]}`)
	cases := []struct {
		name string
		o    Options
		want []string // parts of the error
	}{
		{"missing file", Options{Policy: filepath.Join(dir, "nope.json")}, []string{"--policy " + filepath.Join(dir, "nope.json"), "no such file", "containers-policy.json"}},
		{"bad JSON", Options{Policy: write("bad.json", `{"default": [`)}, []string{filepath.Join(dir, "bad.json"), "not a valid containers-policy.json", "man containers-policy.json"}},
		{"unknown requirement", Options{Policy: write("type.json", `{"default":[{"type":"signedByMagic"}]}`)}, []string{filepath.Join(dir, "type.json"), "signedByMagic"}},
		{"no default", Options{Policy: write("nodefault.json", `{"transports":{}}`)}, []string{filepath.Join(dir, "nodefault.json"), "default"}},
		{"missing key file", Options{Policy: write("key.json", `{"default":[{"type":"sigstoreSigned","keyPath":"`+filepath.Join(dir, "cosign.pub")+`","signedIdentity":{"type":"matchRepository"}}]}`)},
			[]string{filepath.Join(dir, "key.json"), "sigstoreSigned", filepath.Join(dir, "cosign.pub"), "fix the path"}},
		{"registries.d is a file", Options{Policy: good, RegistriesDir: good}, []string{"--registries.d " + good, "not a folder"}},
		{"registries.d missing", Options{Policy: good, RegistriesDir: filepath.Join(dir, "nowhere")}, []string{"--registries.d " + filepath.Join(dir, "nowhere")}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			chk, err := Open(c.o, Source{})
			if err == nil {
				t.Fatalf("accepted: %+v", chk)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
	if chk, err := Open(Options{}, Source{}); chk != nil || err != nil || chk.Verifier() != nil {
		t.Errorf("no policy asked: got %v, %v", chk, err)
	}
}

// TestSecurePolicy: --secure-policy takes $HOME/.config/containers/policy.json,
// else the system's, else says what to do; --policy wins over both.
func TestSecurePolicy(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	old := systemPolicy
	t.Cleanup(func() { systemPolicy = old })
	systemPolicy = filepath.Join(t.TempDir(), "policy.json")
	if _, err := Open(Options{Secure: true}, Source{}); err == nil || !strings.Contains(err.Error(), "--secure-policy: no default policy") || !strings.Contains(err.Error(), systemPolicy) || !strings.Contains(err.Error(), "--policy FILE") {
		t.Errorf("no default policy: %v", err)
	}
	accept := []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`)
	if err := os.WriteFile(systemPolicy, accept, 0o644); err != nil {
		t.Fatal(err)
	}
	check := func(o Options, want string) {
		t.Helper()
		chk, err := Open(o, Source{})
		if err != nil {
			t.Fatal(err)
		}
		if chk.File() != want {
			t.Errorf("%+v evaluates %s, want %s", o, chk.File(), want)
		}
	}
	check(Options{Secure: true}, systemPolicy)
	user := filepath.Join(home, ".config", "containers", "policy.json")
	if err := os.MkdirAll(filepath.Dir(user), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(user, accept, 0o644); err != nil {
		t.Fatal(err)
	}
	check(Options{Secure: true}, user)
	own := filepath.Join(t.TempDir(), "mine.json")
	if err := os.WriteFile(own, accept, 0o644); err != nil {
		t.Fatal(err)
	}
	check(Options{Secure: true, Policy: own}, own)
}
