package signature

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
)

// Verified is the outcome of a successful Verify.
type Verified struct {
	// Digest is the payload's digest, as signed.
	Digest digest.Digest
	// Index is the 1-based position of the first signature that verified.
	Index int
	// Payload is what that signature signed.
	Payload Payload
	// Signer is the fingerprint (upper-case hex) of the primary key that made it.
	Signer string
	// Signatures are every signature that verified, in order: the ones to carry
	// to the disconnected side and into the cluster's signature ConfigMap.
	Signatures [][]byte
}

// Refusal is a release no signature verified for. Its message is "release
// <Release> refused: <reason>", the reason naming each signature's fault.
type Refusal struct {
	// Release names the release: its version when the caller knows it, else
	// its payload.
	Release string
	// Payload is "repository@digest".
	Payload string
	// Reasons has one entry per signature offered ("signature-N: …"), or one
	// saying none was found.
	Reasons []string
}

func (r *Refusal) Error() string { return "release " + r.Release + " refused: " + r.Reason() }

// Reason is the refusal without the release's name.
func (r *Refusal) Reason() string {
	if len(r.Reasons) == 1 {
		return r.Reasons[0]
	}
	return "no signature verifies: " + strings.Join(r.Reasons, "; ")
}

// Verify checks sigs (signature-1, 2, … of one payload) for the payload
// repo@d with keys k: at least one must be an OpenPGP signed message by a key
// of k, read whole (the signature is only checked at the end of the literal
// data), whose document (ParsePayload) signs exactly d, and whose identity's
// repository is repo. repo and the identity are compared as normalized
// repository names, tag and digest ignored: "docker.io/library/x" and "x" are
// the same repository, "quay.io/a/ocp-release" and "quay.io/a/ocp-v4.0-art-dev"
// are not. When none passes, the error is a *Refusal listing every reason.
func Verify(sigs [][]byte, d digest.Digest, repo string, k Keyring) (Verified, error) {
	ref := &Refusal{Release: repo + "@" + d.String(), Payload: repo + "@" + d.String()}
	if err := d.Validate(); err != nil {
		ref.Reasons = []string{fmt.Sprintf("the payload digest %q is not valid: %v", d, err)}
		return Verified{}, ref
	}
	want, err := repositoryOf(repo)
	if err != nil {
		ref.Reasons = []string{fmt.Sprintf("the payload repository %q: %v", repo, err)}
		return Verified{}, ref
	}
	if len(k.entities) == 0 {
		ref.Reasons = []string{"no verification key is configured"}
		return Verified{}, ref
	}
	if len(sigs) == 0 {
		ref.Reasons = []string{"no signature was found"}
		return Verified{}, ref
	}
	var v Verified
	for i, sig := range sigs {
		p, signer, err := verifyOne(sig, k)
		if err == nil {
			err = matches(p, d, want)
		}
		if err != nil {
			ref.Reasons = append(ref.Reasons, fmt.Sprintf("signature-%d: %v", i+1, err))
			continue
		}
		if v.Index == 0 {
			v = Verified{Digest: d, Index: i + 1, Payload: p, Signer: signer}
		}
		v.Signatures = append(v.Signatures, sig)
	}
	if v.Index == 0 {
		return Verified{}, ref
	}
	return v, nil
}

// matches checks the signed document against the payload.
func matches(p Payload, d digest.Digest, repo string) error {
	if p.Digest != d {
		return fmt.Errorf("it signs %s, not the payload's digest %s", p.Digest, d)
	}
	got, err := repositoryOf(p.Reference)
	if err != nil {
		return fmt.Errorf("its identity %q: %v", p.Reference, err)
	}
	if got != repo {
		return fmt.Errorf("it signs repository %s (%s), not the payload's repository %s", got, p.Reference, repo)
	}
	return nil
}

// repositoryOf is the normalized repository name of a reference, without tag
// or digest.
func repositoryOf(s string) (string, error) {
	n, err := reference.ParseNormalizedNamed(location.ImageRef(s))
	if err != nil {
		return "", err
	}
	return n.Name(), nil
}

// pgpConfig is the OpenPGP policy: the library's defaults (SHA-1, MD5 and
// RIPEMD-160 message signatures refused; key expiry and revocation checked at
// the current time).
var pgpConfig = &packet.Config{}

// verifyOne reads one signed message whole and returns its document and the
// fingerprint of the key that signed it, or why it is refused.
func verifyOne(sig []byte, k Keyring) (Payload, string, error) {
	if len(sig) == 0 {
		return Payload{}, "", errors.New("empty")
	}
	if len(sig) > DefaultMaxBytes {
		return Payload{}, "", fmt.Errorf("%w (%d bytes)", ErrTooLarge, DefaultMaxBytes)
	}
	md, err := openpgp.ReadMessage(bytes.NewReader(sig), k.entities, nil, pgpConfig)
	if err != nil {
		return Payload{}, "", fmt.Errorf("not an OpenPGP signed message: %v", err)
	}
	switch {
	case md.IsEncrypted || md.IsSymmetricallyEncrypted:
		return Payload{}, "", errors.New("an encrypted message, not a signature")
	case !md.IsSigned:
		return Payload{}, "", errors.New("the message is not signed")
	case md.SignedBy == nil:
		return Payload{}, "", fmt.Errorf("signed by key %016X, which is not among %s", md.SignedByKeyId, k)
	}
	// The signature is checked once the literal data is read to its end:
	// nothing is decided before that.
	body, err := io.ReadAll(io.LimitReader(md.UnverifiedBody, DefaultMaxBytes*16+1))
	if err != nil {
		return Payload{}, "", fmt.Errorf("reading the signed message: %v", err)
	}
	if len(body) > DefaultMaxBytes*16 {
		return Payload{}, "", errors.New("the signed document is too large")
	}
	if md.SignatureError != nil {
		return Payload{}, "", fmt.Errorf("the signature does not verify: %v", md.SignatureError)
	}
	if md.Signature == nil {
		return Payload{}, "", errors.New("no signature packet")
	}
	p, err := ParsePayload(body)
	if err != nil {
		return Payload{}, "", fmt.Errorf("the signed document: %v", err)
	}
	return p, fmt.Sprintf("%X", md.SignedBy.Entity.PrimaryKey.Fingerprint), nil
}
