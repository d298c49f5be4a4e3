// Package endpoint defines what the copy engine reads from (Source: registries, OCI
// layouts, archives) and writes to (Destination: registries, archives), with the
// few things both sides share: how repositories are named (RepoHost), the one
// typed registry error (RegistryError, with the distribution spec's error
// codes) and that of a registry found unreachable (ErrRegistryUnreachable),
// the one adaptive bound per host that an endpoint and the engine share
// (HostLimit, HostLimiter, InSlot), and the blobs another worker of the run
// holds (HeldElsewhere), so that the engine never imports an endpoint
// implementation. It is a leaf package (it imports only oci) so that every
// endpoint implementation and the engine can share it.
package endpoint

import (
	"context"
	"errors"
	"io"
	"strings"

	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/oci"
)

// ErrRegistryUnreachable is returned (wrapped) once a registry host could not be
// reached after the retries of an operation: the connection was refused, the name
// does not resolve, TLS fails, or nothing answers. Later operations on that host
// fail at once with it, so a registry that is down ends the run after the retries
// of its first failure instead of failing every remaining image one by one.
var ErrRegistryUnreachable = errors.New("registry unreachable")

// Descriptor and Manifest are the OCI vocabulary's (package oci); they are
// named here too so that endpoint implementations read naturally.
type (
	Descriptor = oci.Descriptor
	Manifest   = oci.Manifest
)

// Source is where the copy engine reads images from: a set of registries, an OCI
// image layout, or an archive. Repositories are named as the source knows them
// (for registries "quay.io/ns/name", without tag or digest).
type Source interface {
	// Manifest fetches a manifest by tag or by digest ("sha256:<hex>").
	Manifest(ctx context.Context, repo, reference string) (Manifest, error)
	// Blob opens the blob d of repo. The copy engine verifies what it reads against
	// d.Digest and d.Size; implementations may verify as well.
	Blob(ctx context.Context, repo string, d Descriptor) (io.ReadCloser, error)
}

// Destination is where the copy engine writes images: a registry or an archive.
type Destination interface {
	// BlobExists reports whether repo already holds blob d.
	BlobExists(ctx context.Context, repo string, d Descriptor) (bool, error)
	// MountBlob links blob d, already present in repository from, into repo without
	// transferring it. It returns false when the destination cannot mount.
	MountBlob(ctx context.Context, repo, from string, d Descriptor) (bool, error)
	// PutBlob stores blob d read from r, verifying digest and size while it
	// streams; on a mismatch nothing is committed and an error is returned.
	PutBlob(ctx context.Context, repo string, d Descriptor, r io.Reader) error
	// ManifestExists reports whether repo holds manifest d under reference (a tag or
	// the digest itself).
	ManifestExists(ctx context.Context, repo, reference string, d digest.Digest) (bool, error)
	// PutManifest stores m in repo under reference (a tag, or its digest). Callers
	// push a manifest only after every blob and child manifest it references.
	PutManifest(ctx context.Context, repo, reference string, m Manifest) error
}

// Uploader is implemented by destinations that learn, in the request that
// opens an upload, whether the repository already holds the blob (a registry
// asked to mount the blob from the repository itself). The copy engine uses it
// instead of BlobExists then PutBlob.
type Uploader interface {
	// StartBlob begins storing blob d in repo. It returns nil when repo already
	// holds d: nothing needs to be sent.
	StartBlob(ctx context.Context, repo string, d Descriptor) (BlobUpload, error)
}

// BlobUpload is an upload that StartBlob opened.
type BlobUpload interface {
	// Write sends the blob read from r, verifying digest and size while it
	// streams, and commits it; on a mismatch nothing is committed. One attempt:
	// after an error the upload is gone (unless a ReusableUpload says otherwise).
	Write(ctx context.Context, r io.Reader) error
	// Cancel abandons an upload that will not be written.
	Cancel(ctx context.Context)
}

// ReusableUpload is a BlobUpload that can tell when a failed Write left the
// session open for another Write (the registry, or a proxy in front of it,
// answered the commit with 429 or 5xx without taking it): the next attempt of
// the transfer then costs one request instead of a new session and the commit.
type ReusableUpload interface {
	BlobUpload
	Reusable() bool
}

// RepoHost is the registry host of a repository named as Sources and
// Destinations name them ("quay.io/ns/name" → "quay.io").
func RepoHost(repo string) string {
	if i := strings.IndexByte(repo, '/'); i > 0 {
		return repo[:i]
	}
	return repo
}

// Expecter is implemented by endpoints that do better when told in advance
// which repositories a run will use (a registry client asks one token for a
// group of them instead of one per repository: see registry.Client.Expect).
type Expecter interface {
	// Expect says the run will use repos, for push (and pull) when push is set.
	Expect(repos []string, push bool)
}

// TagLister is implemented by endpoints that can list a repository's tags (a
// registry's tags/list, paginated): one listing answers for many tags at once,
// where asking for each costs a request.
type TagLister interface {
	// TagsUpTo lists the tags of repo if that takes at most pages pages
	// (complete is false otherwise, and tags is then what was read).
	TagsUpTo(ctx context.Context, repo string, pages int) (tags []string, complete bool, err error)
}
