package archive

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containers/image/v5/signature/sigstore"
)

// keyPair writes a private key in the named format and its public key.
func keyPair(t *testing.T, format string) (priv, pub string) {
	t.Helper()
	dir := t.TempDir()
	priv, pub = filepath.Join(dir, "key"), filepath.Join(dir, "key.pub")
	var privPEM, pubPEM []byte
	switch format {
	case "cosign":
		kp, err := sigstore.GenerateKeyPair([]byte("s3cret"))
		if err != nil {
			t.Fatal(err)
		}
		privPEM, pubPEM = kp.PrivateKey, kp.PublicKey
	default:
		var key any
		var pubKey any
		switch format {
		case "ed25519":
			p, k, err := ed25519.GenerateKey(rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			key, pubKey = k, p
		case "ecdsa", "ec-sec1":
			k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			if err != nil {
				t.Fatal(err)
			}
			key, pubKey = k, &k.PublicKey
		}
		if format == "ec-sec1" {
			der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
			if err != nil {
				t.Fatal(err)
			}
			privPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		} else {
			der, err := x509.MarshalPKCS8PrivateKey(key)
			if err != nil {
				t.Fatal(err)
			}
			privPEM = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
		}
		der, err := x509.MarshalPKIXPublicKey(pubKey)
		if err != nil {
			t.Fatal(err)
		}
		pubPEM = pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	}
	if err := os.WriteFile(priv, privPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pub, pubPEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return priv, pub
}

func TestSignArchive(t *testing.T) {
	t.Setenv("COSIGN_PASSWORD", "s3cret")
	imgs := testSet(7)
	for _, format := range []string{"ed25519", "ecdsa", "ec-sec1", "cosign"} {
		t.Run(format, func(t *testing.T) {
			dir := t.TempDir()
			writeArchive(t, dir, WriterOptions{ChunkSize: 20 << 10}, imgs)
			if len(chunkFiles(t, dir)) < 2 {
				t.Fatal("want an archive of several chunks")
			}
			priv, pub := keyPair(t, format)
			otherPriv, otherPub := keyPair(t, "ed25519")

			// Unsigned: refused.
			if _, err := VerifySignature(dir, pub); !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "not signed") {
				t.Fatalf("unsigned archive: %v", err)
			}
			sig, err := Sign(dir, priv)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := VerifySignature(dir, pub); err != nil || got.ManifestDigest != sig.ManifestDigest {
				t.Fatalf("signed archive refused: %v", err)
			}
			// Another key: refused.
			if _, err := VerifySignature(dir, otherPub); !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "signed by key") {
				t.Fatalf("verified with another key: %v", err)
			}

			// One chunk replaced by the same chunk of another archive: refused.
			other := t.TempDir()
			writeArchive(t, other, WriterOptions{ChunkSize: 20 << 10}, testSet(8))
			replaced := t.TempDir()
			copyDir(t, dir, replaced)
			name := filepath.Base(chunkFiles(t, dir)[1])
			if err := os.WriteFile(filepath.Join(replaced, name), readFile(t, filepath.Join(other, name)), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := VerifySignature(replaced, pub); err == nil {
				t.Fatal("an archive with a chunk replaced verifies")
			}
			// The whole archive replaced (its manifest too) under the old
			// signature: refused by the signature itself.
			swapped := t.TempDir()
			copyDir(t, other, swapped)
			if err := os.WriteFile(filepath.Join(swapped, SignatureName), readFile(t, filepath.Join(dir, SignatureName)), 0o644); err != nil {
				t.Fatal(err)
			}
			if _, err := VerifySignature(swapped, pub); !errors.Is(err, ErrSignature) || !strings.Contains(err.Error(), "changed after it was signed") {
				t.Fatalf("another archive under this signature: %v", err)
			}
			// Re-signed by another key: refused with the first key.
			if _, err := Sign(dir, otherPriv); err != nil {
				t.Fatal(err)
			}
			if _, err := VerifySignature(dir, pub); !errors.Is(err, ErrSignature) {
				t.Fatalf("re-signed by another key, verified with the first: %v", err)
			}
		})
	}
}

func TestSignKeyErrors(t *testing.T) {
	dir := t.TempDir()
	writeArchive(t, dir, WriterOptions{}, testSet(3))
	priv, _ := keyPair(t, "cosign")
	t.Setenv("COSIGN_PASSWORD", "wrong")
	for _, tc := range []struct {
		name, key, want string
	}{
		{"wrong passphrase", priv, "wrong passphrase"},
		{"missing", filepath.Join(dir, "nope.key"), "--sign-key: open"},
		{"public key", writeTemp(t, "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), `a PEM "PUBLIC KEY" block`},
		{"not PEM", writeTemp(t, "ssh-ed25519 AAAA"), "not a PEM private key"},
	} {
		if _, err := Sign(dir, tc.key); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, SignatureName)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Sign left %s: %v", SignatureName, err)
	}
}

func writeTemp(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
