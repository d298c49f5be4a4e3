package signature

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
)

// Release is a payload to check: Name for messages (its version, e.g.
// "4.15.2"; "" uses Payload), Payload its pull spec by digest
// ("quay.io/openshift-release-dev/ocp-release@sha256:…").
type Release struct {
	Name, Payload string
}

// CheckOptions configure Check.
type CheckOptions struct {
	// Keys verify the signatures (the zero Keyring verifies nothing: pass
	// ResolveKeys' result).
	Keys Keyring
	// Ignore skips verification (--ignore-release-signature): the signatures
	// found are still returned so that they can be carried, and the result says
	// it was skipped; a warning is logged for every release.
	Ignore bool
	// Log receives that warning (nil: slog.Default()).
	Log *slog.Logger
}

// Result is what Check found for one release.
type Result struct {
	// Verified is the verdict (zero when Skipped).
	Verified Verified
	// Signatures are what to carry and put in the cluster's ConfigMap: the
	// signatures that verified, or, when Skipped, every signature found.
	Signatures [][]byte
	// Skipped says verification was not done (Ignore).
	Skipped bool
}

// ErrNotByDigest is a payload named by tag: its signatures cannot be looked up.
var ErrNotByDigest = errors.New("the payload is not named by digest")

// Check fetches the signatures of r's payload from s and verifies them (see
// Verify). It is called when the release is mirrored and again on the
// disconnected side with FromFiles, so that what the archive carried is
// checked where it is used. A payload no signature verifies for is a
// *Refusal ("release 4.15.2 refused: …"); a store that cannot be read is
// another error (no verdict).
func Check(ctx context.Context, s Store, r Release, o CheckOptions) (Result, error) {
	name := r.Name
	if name == "" {
		name = r.Payload
	}
	repo, d, err := splitPayload(r.Payload)
	if err != nil {
		return Result{}, &Refusal{Release: name, Payload: r.Payload, Reasons: []string{err.Error()}}
	}
	sigs, err := s.Signatures(ctx, d)
	if err != nil {
		return Result{}, fmt.Errorf("release %s: %w", name, err)
	}
	if o.Ignore {
		log := o.Log
		if log == nil {
			log = slog.Default()
		}
		log.Warn("release signature NOT verified (--ignore-release-signature)", "release", name, "payload", r.Payload, "signatures", len(sigs))
		return Result{Signatures: sigs, Skipped: true}, nil
	}
	v, err := Verify(sigs, d, repo, o.Keys)
	if err != nil {
		var ref *Refusal
		if errors.As(err, &ref) {
			ref.Release = name
			if len(sigs) == 0 {
				ref.Reasons = []string{fmt.Sprintf("no signature was found in %s", describe(s))}
			}
		}
		return Result{}, err
	}
	return Result{Verified: v, Signatures: v.Signatures}, nil
}

// splitPayload splits "repo@sha256:…" (a tag before the digest is allowed
// and ignored).
func splitPayload(p string) (string, digest.Digest, error) {
	repo, dig, ok := strings.Cut(location.ImageRef(p), "@")
	if !ok {
		return "", "", fmt.Errorf("%w: %q", ErrNotByDigest, p)
	}
	d, err := digest.Parse(dig)
	if err != nil {
		return "", "", fmt.Errorf("payload %q: %v", p, err)
	}
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	return repo, d, nil
}

// describe names a store for messages.
func describe(s Store) string {
	if st, ok := s.(fmt.Stringer); ok {
		return st.String()
	}
	return "the signature store"
}

func (s fileStore) String() string { return "the signatures carried in the archive" }
