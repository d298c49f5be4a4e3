package registry

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/internal/fakeimage"
	"github.com/airlock-mirror/airlock/internal/testutil/imagetest"
	"github.com/airlock-mirror/airlock/internal/testutil/registrytest"
	"github.com/airlock-mirror/airlock/mirror/retry"
)

// A registry whose certificate a private CA issued is reached through
// --*-cert-dir or the containers certs.d/HOST convention, and refused without.
func TestCertDirs(t *testing.T) {
	tg := registrytest.StartKind(t, registrytest.PrivateCA)
	p := imagetest.MustPush(t, tg.Host+"/ns/app:v1", fakeimage.Spec{Seed: 1, Layers: 1}, tg.Remote(tg.Push)...)
	certsD := t.TempDir()
	if err := os.MkdirAll(filepath.Join(certsD, tg.Host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(certsD, tg.Host, "ca.crt"), tg.CA.PEM(), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "client.cert")
	os.WriteFile(bad, []byte("x"), 0o644)
	noKey := filepath.Dir(bad)
	defer func(old func() []string) { certsDirs = old }(certsDirs)
	for _, tc := range []struct {
		name    string
		certDir string
		certsD  string
		want    string // "" = success
	}{
		{"cert dir", tg.CertDir, "", ""},
		{"certs.d", "", certsD, ""},
		{"none", "", t.TempDir(), "certificate"},
		{"missing cert dir", "/nonexistent/certs", "", "certificate folder /nonexistent/certs"},
		{"client cert without key", noKey, "", "missing key client.key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			certsDirs = func() []string { return []string{tc.certsD} }
			c := New(Options{CertDir: tc.certDir, Retry: retry.Retries(0), Keychain: nil, AuthFile: tg.AuthFile(t, tg.Push)})
			ok, err := c.ManifestExists(context.Background(), tg.Host+"/ns/app", p.Digest.String(), p.Digest)
			if tc.want == "" {
				if err != nil || !ok {
					t.Fatalf("exists %v, %v", ok, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
