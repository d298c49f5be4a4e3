package signature

import (
	"bytes"
	_ "embed" // the built-in keys
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
)

// redHatKeys are Red Hat's public release keys (release key 2 and beta key 2),
// the ones the cluster-version operator trusts; keys/SOURCES.md names where
// they were taken from.
//
//go:embed keys/redhat-release-keys.asc
var redHatKeys []byte

// Keyring is the set of public keys a signature must be made by. The zero
// value holds no key and verifies nothing.
type Keyring struct {
	entities openpgp.EntityList
	// from says where the keys came from, for messages.
	from string
}

// DefaultKeys returns Red Hat's release key 2 and beta key 2.
func DefaultKeys() Keyring {
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(redHatKeys))
	if err != nil {
		panic("release/signature: the built-in keys do not parse: " + err.Error()) // the embedded data is tested
	}
	return Keyring{entities: el, from: "Red Hat's release keys"}
}

// ParseKeys reads armored (or binary) OpenPGP public keys: one or several
// blocks, one after the other. No key at all is an error.
func ParseKeys(armored []byte) (Keyring, error) {
	var el openpgp.EntityList
	rest := armored
	for {
		start := bytes.Index(rest, []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----"))
		if start < 0 {
			break
		}
		end := bytes.Index(rest[start:], []byte("-----END PGP PUBLIC KEY BLOCK-----"))
		if end < 0 {
			return Keyring{}, fmt.Errorf("an armored key block has no END line")
		}
		end += start + len("-----END PGP PUBLIC KEY BLOCK-----")
		e, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(rest[start:end]))
		if err != nil {
			return Keyring{}, fmt.Errorf("armored key block %d: %w", len(el)+1, err)
		}
		el = append(el, e...)
		rest = rest[end:]
	}
	if len(el) == 0 && len(bytes.TrimSpace(armored)) > 0 && !bytes.Contains(armored, []byte("-----BEGIN")) {
		e, err := openpgp.ReadKeyRing(bytes.NewReader(armored))
		if err != nil {
			return Keyring{}, fmt.Errorf("not armored public keys, nor a binary key ring: %w", err)
		}
		el = e
	}
	if len(el) == 0 {
		return Keyring{}, fmt.Errorf("no OpenPGP public key found (expected -----BEGIN PGP PUBLIC KEY BLOCK----- blocks)")
	}
	for _, e := range el {
		if e.PrivateKey != nil {
			return Keyring{}, fmt.Errorf("key %X is a private key: give the public key (gpg --export --armor)", e.PrimaryKey.Fingerprint)
		}
	}
	return Keyring{entities: el, from: "the given keys"}, nil
}

// LoadKeys reads a file of armored public keys; errors name the file.
func LoadKeys(path string) (Keyring, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Keyring{}, fmt.Errorf("release signature keys: %w", err)
	}
	k, err := ParseKeys(b)
	if err != nil {
		return Keyring{}, fmt.Errorf("release signature keys %s: %w", path, err)
	}
	k.from = path
	return k, nil
}

// ResolveKeys is the keyring a run uses: the file at path (the flag) if
// given, else the file OCP_SIGNATURE_VERIFICATION_PK names, else DefaultKeys.
// Unlike oc-mirror, an unreadable or empty override is an error, never a
// silent fallback to Red Hat's keys.
func ResolveKeys(path string) (Keyring, error) {
	if path != "" {
		return LoadKeys(path)
	}
	if env := os.Getenv(EnvKeys); env != "" {
		k, err := LoadKeys(env)
		if err != nil {
			return Keyring{}, fmt.Errorf("%s: %w", EnvKeys, err)
		}
		return k, nil
	}
	return DefaultKeys(), nil
}

// Fingerprints lists the keys' fingerprints (upper-case hex), sorted.
func (k Keyring) Fingerprints() []string {
	out := make([]string, 0, len(k.entities))
	for _, e := range k.entities {
		out = append(out, fmt.Sprintf("%X", e.PrimaryKey.Fingerprint))
	}
	sort.Strings(out)
	return out
}

// String names the keys for messages: where they came from and their fingerprints.
func (k Keyring) String() string {
	if len(k.entities) == 0 {
		return "no keys"
	}
	return k.from + " (" + strings.Join(k.Fingerprints(), ", ") + ")"
}
