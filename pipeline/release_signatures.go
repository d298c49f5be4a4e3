package pipeline

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/manifests"
	relsig "github.com/airlock-mirror/airlock/release/signature"
)

// signatureStore is where the connected side reads payload signatures
// (Releases.SignatureURL, $OCP_SIGNATURE_URL, Red Hat's store).
func (s *releaseSource) signatureStore() (relsig.Store, error) {
	if st := s.r.opts.Releases.signatures; st != nil {
		return st, nil
	}
	return relsig.NewStore(relsig.StoreOptions{URL: s.r.opts.Releases.SignatureURL, Retry: s.r.retry(), Log: s.r.log})
}

// keys are the release keys signatures are verified with
// (Releases.SignatureKeys, $OCP_SIGNATURE_VERIFICATION_PK, Red Hat's).
func (s *releaseSource) keys() (relsig.Keyring, error) {
	if s.keyring == nil {
		k, err := relsig.ResolveKeys(s.r.opts.Releases.SignatureKeys)
		if err != nil {
			return relsig.Keyring{}, err
		}
		s.keyring = &k
	}
	return *s.keyring, nil
}

// verify checks c's payload signatures in st and returns the ones to carry.
// A payload no signature verifies for (none found, tampered, signed for
// another digest or repository) is an error naming the release and why: it
// never reaches the plan. With Releases.IgnoreSignatures the check is
// skipped with a warning (the signatures found are still carried; a store
// that cannot be read then only warns).
func (s *releaseSource) verify(ctx context.Context, c *chosenRelease, st relsig.Store) ([][]byte, string, error) {
	k, err := s.keys()
	if err != nil {
		return nil, "", err
	}
	ignore := s.r.opts.Releases.IgnoreSignatures
	res, err := relsig.Check(ctx, st, relsig.Release{Name: c.Version + " (" + c.Arch + ")", Payload: c.PayloadRef()}, relsig.CheckOptions{Keys: k, Ignore: ignore, Log: s.r.log})
	var refusal *relsig.Refusal
	switch {
	case err != nil && ignore && !errors.As(err, &refusal):
		return nil, fmt.Sprintf("release %s (%s): signatures NOT verified (--ignore-release-signature) and none could be read: %v", c.Version, c.Arch, err), nil
	case err != nil && errors.As(err, &refusal):
		return nil, "", fmt.Errorf("%w; it is not mirrored (--ignore-release-signature mirrors it unverified)", err)
	case err != nil:
		return nil, "", fmt.Errorf("%w; no release is mirrored without its signatures verified (--ignore-release-signature skips the check)", err)
	case res.Skipped:
		return res.Signatures, fmt.Sprintf("release %s (%s): signatures NOT verified (--ignore-release-signature): payload %s is mirrored on trust", c.Version, c.Arch, c.PayloadRef()), nil
	}
	return res.Signatures, "", nil
}

// carriedSignatures is the signature store of what an archive carried: the
// files written into a new folder of dir (removed by the returned func).
func carriedSignatures(extras map[string][]byte, dir string) (relsig.Store, func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp(dir, "signatures-")
	if err != nil {
		return nil, nil, err
	}
	done := func() { os.RemoveAll(tmp) }
	for name, b := range extras {
		rest, ok := strings.CutPrefix(name, signaturesExtra)
		if !ok {
			continue
		}
		if _, _, ok := relsig.ParseFileName(rest); !ok {
			done()
			return nil, nil, fmt.Errorf("the archive carries %s, which is not a release signature's name", name)
		}
		if err := os.WriteFile(filepath.Join(tmp, rest), b, 0o644); err != nil {
			done()
			return nil, nil, err
		}
	}
	return relsig.FromFiles(os.DirFS(tmp)), done, nil
}

// signatureConfigMaps are the cluster's signature ConfigMaps of the releases
// mirrored (manifests.BuildReleaseSignatures).
func (s *releaseSource) signatureConfigMaps(mirrored func(d digest.Digest) bool) ([]manifests.File, error) {
	var in []manifests.ReleaseSignatures
	for _, c := range s.sorted() {
		if sigs := s.sigs[c.Digest]; len(sigs) > 0 && mirrored(c.Digest) {
			in = append(in, manifests.ReleaseSignatures{Digest: c.Digest.String(), Signatures: sigs})
		}
	}
	_, files, err := manifests.BuildReleaseSignatures(in)
	return files, err
}
