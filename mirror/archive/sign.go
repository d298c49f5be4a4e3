package archive

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/opencontainers/go-digest"
	"golang.org/x/crypto/nacl/secretbox"
	"golang.org/x/crypto/scrypt"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
)

// SignatureName is the archive signature's file, beside the chunks.
const SignatureName = "airlock-archive.sig"

const signatureKind = "AirlockArchiveSignature"

// ErrSignature is returned (wrapped) when an archive is unsigned, signed by
// another key, or no longer what was signed.
var ErrSignature = errors.New("archive signature does not verify")

// Signature is airlock-archive.sig: a signature of the archive manifest's
// bytes (airlock/manifest.json, which records every chunk's and every blob's
// SHA-256), so that it covers the whole archive.
type Signature struct {
	Kind      string `json:"kind"`
	ArchiveID string `json:"archiveID"`
	// ManifestDigest is the SHA-256 of the manifest bytes signed.
	ManifestDigest digest.Digest `json:"manifestDigest"`
	// Algorithm is "ed25519" or "ecdsa-p256-sha256" (cosign's keys).
	Algorithm string `json:"algorithm"`
	// KeyID is the SHA-256 of the public key's PKIX DER, in hex.
	KeyID string `json:"keyID"`
	// Signature over the manifest bytes: Ed25519, or ECDSA ASN.1 over their
	// SHA-256 (what `cosign sign-blob` makes of airlock/manifest.json).
	Signature []byte `json:"signature"`
}

// Sign signs the archive in dir with the private key in keyFile and writes
// SignatureName into dir. Keys: PEM PKCS#8 ("PRIVATE KEY": Ed25519 or ECDSA
// P-256, as `openssl genpkey` writes), SEC 1 ("EC PRIVATE KEY"), or cosign's
// encrypted key ("ENCRYPTED SIGSTORE PRIVATE KEY" / "ENCRYPTED COSIGN PRIVATE
// KEY", the passphrase in $COSIGN_PASSWORD).
func Sign(dir, keyFile string) (*Signature, error) {
	key, err := loadPrivateKey(keyFile)
	if err != nil {
		return nil, err
	}
	return signDir(dir, key)
}

// signerFor loads WriterOptions.SignKey (nil for "").
func signerFor(keyFile string) (crypto.Signer, error) {
	if keyFile == "" {
		return nil, nil
	}
	return loadPrivateKey(keyFile)
}

// finishSigned ends a finished archive: the staging area removed, then the
// signature written when the writer has a key.
func (w *Writer) finishSigned() error {
	if err := w.dropStaging(); err != nil || w.signKey == "" {
		return err
	}
	_, err := Sign(w.dir, w.signKey)
	return err
}

func signDir(dir string, key crypto.Signer) (*Signature, error) {
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	raw, err := r.manifestBytes()
	if err != nil {
		return nil, err
	}
	sig := &Signature{Kind: signatureKind, ArchiveID: r.m.ArchiveID, ManifestDigest: digest.FromBytes(raw)}
	switch k := key.(type) {
	case ed25519.PrivateKey:
		sig.Algorithm, sig.Signature = "ed25519", ed25519.Sign(k, raw)
	case *ecdsa.PrivateKey:
		sum := sha256.Sum256(raw)
		sig.Algorithm = "ecdsa-p256-sha256"
		if sig.Signature, err = ecdsa.SignASN1(rand.Reader, k, sum[:]); err != nil {
			return nil, err
		}
	}
	if sig.KeyID, err = keyID(key.Public()); err != nil {
		return nil, err
	}
	b, err := marshal(sig)
	if err != nil {
		return nil, err
	}
	return sig, atomicfile.WriteFile(filepath.Join(dir, SignatureName), b, 0o644)
}

// VerifySignature checks the archive in dir against the public key in pubFile
// (PEM PKIX "PUBLIC KEY": cosign.pub, or `openssl pkey -pubout`): the archive
// must carry SignatureName, made by that key, over the manifest the chunks
// hold now. Chunks are checked against that manifest by Open (their indexes)
// and by Verify or the reads of disk-to-mirror (every blob's digest).
func VerifySignature(dir, pubFile string) (*Signature, error) {
	pub, err := loadPublicKey(pubFile)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(dir, SignatureName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("archive %s is not signed (no %s): %w", dir, SignatureName, ErrSignature)
	}
	if err != nil {
		return nil, err
	}
	var sig Signature
	if err := strictUnmarshal(b, &sig); err != nil || sig.Kind != signatureKind {
		return nil, fmt.Errorf("%s: not an archive signature: %v: %w", filepath.Join(dir, SignatureName), err, ErrSignature)
	}
	id, err := keyID(pub)
	if err != nil {
		return nil, err
	}
	if id != sig.KeyID {
		return nil, fmt.Errorf("archive %s is signed by key %s, not by %s (%s): %w", dir, short(sig.KeyID), pubFile, short(id), ErrSignature)
	}
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	raw, err := r.manifestBytes()
	if err != nil {
		return nil, err
	}
	ok := false
	switch k := pub.(type) {
	case ed25519.PublicKey:
		ok = sig.Algorithm == "ed25519" && ed25519.Verify(k, raw, sig.Signature)
	case *ecdsa.PublicKey:
		sum := sha256.Sum256(raw)
		ok = sig.Algorithm == "ecdsa-p256-sha256" && ecdsa.VerifyASN1(k, sum[:], sig.Signature)
	}
	if !ok {
		return nil, fmt.Errorf("archive %s: the signature by %s does not match the archive manifest the chunks hold (%s; signed: %s): the archive changed after it was signed: %w", dir, pubFile, digest.FromBytes(raw), sig.ManifestDigest, ErrSignature)
	}
	return &sig, nil
}

func short(id string) string { return id[:min(12, len(id))] }

// manifestBytes are the archive manifest's bytes as the chunks hold them.
func (r *Reader) manifestBytes() ([]byte, error) {
	f := r.files[0]
	s, err := scanChunk(f, r.m.Chunks[0].Name)
	if err == nil && s.manifest == nil {
		s, err = scanChunk(r.files[len(r.files)-1], r.m.Chunks[len(r.m.Chunks)-1].Name)
	}
	if err != nil {
		return nil, err
	}
	if digest.FromBytes(s.manifest) != r.manifestDigest {
		return nil, fmt.Errorf("archive %s: the manifest changed while it was read: %w", r.dir, ErrCorrupt)
	}
	return s.manifest, nil
}

func keyID(pub crypto.PublicKey) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return hex.EncodeToString(sum[:]), nil
}

func loadPublicKey(path string) (crypto.PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("archive key: %w", err)
	}
	p, _ := pem.Decode(b)
	if p == nil || p.Type != "PUBLIC KEY" {
		return nil, fmt.Errorf("archive key %s: not a PEM public key (-----BEGIN PUBLIC KEY-----, as cosign.pub or `openssl pkey -pubout` write it)", path)
	}
	pub, err := x509.ParsePKIXPublicKey(p.Bytes)
	if err != nil {
		return nil, fmt.Errorf("archive key %s: %w", path, err)
	}
	switch k := pub.(type) {
	case ed25519.PublicKey:
		return k, nil
	case *ecdsa.PublicKey:
		return k, nil
	}
	return nil, fmt.Errorf("archive key %s: a %T key; airlock signs archives with Ed25519 or ECDSA P-256 keys", path, pub)
}

func loadPrivateKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--sign-key: %w", err)
	}
	p, _ := pem.Decode(b)
	if p == nil {
		return nil, fmt.Errorf("--sign-key %s: not a PEM private key", path)
	}
	der := p.Bytes
	switch p.Type {
	case "ENCRYPTED SIGSTORE PRIVATE KEY", "ENCRYPTED COSIGN PRIVATE KEY":
		if der, err = decryptCosign(p.Bytes, []byte(os.Getenv("COSIGN_PASSWORD"))); err != nil {
			return nil, fmt.Errorf("--sign-key %s: %w (the passphrase is read from $COSIGN_PASSWORD)", path, err)
		}
	case "EC PRIVATE KEY":
		k, err := x509.ParseECPrivateKey(der)
		if err != nil {
			return nil, fmt.Errorf("--sign-key %s: %w", path, err)
		}
		return checkSigner(path, k)
	case "PRIVATE KEY":
	default:
		return nil, fmt.Errorf("--sign-key %s: a PEM %q block; use a PKCS#8 private key (openssl genpkey -algorithm ed25519) or a cosign key", path, p.Type)
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("--sign-key %s: %w", path, err)
	}
	return checkSigner(path, k)
}

func checkSigner(path string, k any) (crypto.Signer, error) {
	switch k := k.(type) {
	case ed25519.PrivateKey:
		return k, nil
	case *ecdsa.PrivateKey:
		if k.Curve.Params().Name == "P-256" {
			return k, nil
		}
	}
	return nil, fmt.Errorf("--sign-key %s: a %T key; airlock signs archives with Ed25519 or ECDSA P-256 keys", path, k)
}

// decryptCosign opens cosign's encrypted private key (go-securesystemslib's
// format: scrypt key derivation, NaCl secretbox) and returns the PKCS#8 DER.
func decryptCosign(data, pass []byte) ([]byte, error) {
	var env struct {
		KDF struct {
			Name   string `json:"name"`
			Params struct {
				N, R, P int
			} `json:"params"`
			Salt []byte `json:"salt"`
		} `json:"kdf"`
		Cipher struct {
			Name  string `json:"name"`
			Nonce []byte `json:"nonce"`
		} `json:"cipher"`
		Ciphertext []byte `json:"ciphertext"`
	}
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, fmt.Errorf("not a cosign encrypted key: %w", err)
	}
	if env.KDF.Name != "scrypt" || env.Cipher.Name != "nacl/secretbox" || len(env.Cipher.Nonce) != 24 {
		return nil, fmt.Errorf("cosign key with kdf %q and cipher %q: unsupported", env.KDF.Name, env.Cipher.Name)
	}
	k, err := scrypt.Key(pass, env.KDF.Salt, env.KDF.Params.N, env.KDF.Params.R, env.KDF.Params.P, 32)
	if err != nil {
		return nil, err
	}
	var key [32]byte
	var nonce [24]byte
	copy(key[:], k)
	copy(nonce[:], env.Cipher.Nonce)
	out, ok := secretbox.Open(nil, env.Ciphertext, &nonce, &key)
	if !ok {
		return nil, errors.New("wrong passphrase, or the key is damaged")
	}
	return out, nil
}
