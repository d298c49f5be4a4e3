//go:build !containers_image_openpgp

package sigpolicy

import (
	"context"
	"errors"

	"github.com/opencontainers/go-digest"
)

// ErrNotBuiltIn is Open's error in a binary built without the
// containers_image_openpgp tag: containers/image's signature package would
// then need gpgme (cgo, libgpgme-dev), which airlock does not link.
var ErrNotBuiltIn = errors.New("--policy/--secure-policy: this airlock was built without signature verification: build it with `make build` (or go build -tags containers_image_openpgp ./cmd/airlock)")

// Checker is the evaluation of a policy; see the tagged build.
type Checker struct{}

// Open refuses a policy: this build cannot evaluate one (a policy file that
// does not exist is named first, as in the tagged build).
func Open(o Options, _ Source) (*Checker, error) {
	if !o.Enabled() {
		return nil, nil
	}
	if _, err := o.policyFile(); err != nil {
		return nil, err
	}
	return nil, ErrNotBuiltIn
}

// File is the policy file (never reached in this build).
func (c *Checker) File() string { return "" }

// ClusterKey is the policy's sigstore key (none in this build).
func (c *Checker) ClusterKey() ([]byte, string) { return nil, "" }

// Verifier is nil in this build (Open never returns a Checker).
func (c *Checker) Verifier() func(context.Context, string, digest.Digest) error { return nil }

// Check refuses every image in this build (Open never returns a Checker).
func (c *Checker) Check(context.Context, string, digest.Digest) error { return ErrNotBuiltIn }
