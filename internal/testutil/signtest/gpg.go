package signtest

import (
	"bytes"
	"crypto"
	_ "crypto/sha256" // the signature's hash
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/opencontainers/go-digest"
	//lint:ignore SA1019 containers/image verifies with this frozen package under containers_image_openpgp; the test signs with it
	"golang.org/x/crypto/openpgp"
	//lint:ignore SA1019 see above
	"golang.org/x/crypto/openpgp/packet"
)

// gpgConfig signs with SHA-256 (the package would otherwise want RIPEMD-160,
// which is not compiled in).
var gpgConfig = &packet.Config{DefaultHash: crypto.SHA256}

// GPGKey is an OpenPGP key pair: the private key in memory, the public key
// ring as a file (policy.json's signedBy keyPath).
type GPGKey struct {
	entity *openpgp.Entity
	Public string
}

// NewGPGKey generates an OpenPGP key pair (RSA 2048, as gpg --quick-gen-key).
func NewGPGKey(t testing.TB) GPGKey {
	t.Helper()
	e, err := openpgp.NewEntity("airlock test", "", "signer@example.com", gpgConfig)
	if err != nil {
		t.Fatal(err)
	}
	var pub bytes.Buffer
	if err := e.Serialize(&pub); err != nil {
		t.Fatal(err)
	}
	k := GPGKey{entity: e, Public: filepath.Join(t.TempDir(), "pubring.gpg")}
	if err := os.WriteFile(k.Public, pub.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return k
}

// SignGPG signs repo@d ("host/path") as `skopeo copy --sign-by` does (an
// OpenPGP-signed "atomic container signature" whose identity is repo@d, so
// that signedBy's default matchRepoDigestOrExact accepts it) and stores
// it in the lookaside folder dir as containers/image reads it from
// "lookaside: file://DIR": DIR/PATH@sha256=HEX/signature-1.
func SignGPG(t testing.TB, k GPGKey, dir, repo string, d digest.Digest) {
	t.Helper()
	payload, err := json.Marshal(map[string]any{
		"critical": map[string]any{
			"identity": map[string]string{"docker-reference": repo + "@" + d.String()},
			"image":    map[string]string{"docker-manifest-digest": d.String()},
			"type":     "atomic container signature",
		},
		"optional": map[string]any{"creator": "airlock signtest"},
	})
	if err != nil {
		t.Fatal(err)
	}
	var sig bytes.Buffer
	w, err := openpgp.Sign(&sig, k.entity, nil, gpgConfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(payload); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, path, _ := strings.Cut(repo, "/")
	at := filepath.Join(dir, path+"@"+string(d.Algorithm())+"="+d.Encoded())
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(at, "signature-1"), sig.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
