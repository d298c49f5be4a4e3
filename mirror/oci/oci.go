// Package oci is airlock's one vocabulary for OCI and Docker image formats: media
// types, descriptors, manifest and index parsing (what a manifest references), the
// digest-verifying reader, and image references (parsing "[registry/]path[:tag][@digest]",
// digest tags). The copy engine, the registry and layout endpoints, the archive
// and the catalog rebuild all use it; nothing else parses manifests.
//
// It is a leaf package: it imports only the standard library, go-digest and
// distribution/reference (the reference grammar). It knows nothing about where
// images go (destination naming is package mirror's).
package oci

import (
	"errors"

	"github.com/opencontainers/go-digest"
)

// Media types of manifests and indexes.
const (
	MediaTypeDockerManifest      = "application/vnd.docker.distribution.manifest.v2+json"
	MediaTypeDockerManifestList  = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaTypeOCIManifest         = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeOCIIndex            = "application/vnd.oci.image.index.v1+json"
	MediaTypeDockerSchema1       = "application/vnd.docker.distribution.manifest.v1+json"
	MediaTypeDockerSchema1Signed = "application/vnd.docker.distribution.manifest.v1+prettyjws"
)

// ManifestAccept is the Accept header value for manifest requests: every
// manifest type airlock copies, indexes first.
const ManifestAccept = MediaTypeOCIIndex + ", " + MediaTypeDockerManifestList + ", " +
	MediaTypeOCIManifest + ", " + MediaTypeDockerManifest

// MaxManifestSize bounds what is read for one manifest (registries cap at 4 MiB).
const MaxManifestSize = 8 << 20

// ErrDigestMismatch is returned (wrapped) when content does not match the digest
// or size it was announced with.
var ErrDigestMismatch = errors.New("content does not match its digest")

// ErrUnsupportedManifest is returned (wrapped) for manifests airlock does not copy
// (Docker schema 1, unknown media types).
var ErrUnsupportedManifest = errors.New("unsupported manifest type")

// Descriptor identifies a blob or manifest by media type, digest and size.
type Descriptor struct {
	MediaType string        `json:"mediaType,omitempty"`
	Digest    digest.Digest `json:"digest"`
	Size      int64         `json:"size"`
}

// Manifest is a raw manifest (image manifest, index or manifest list) with its
// media type and the digest of Raw.
type Manifest struct {
	MediaType string
	Digest    digest.Digest
	Raw       []byte
}

// IsIndex reports whether mt is an OCI index or a Docker manifest list.
func IsIndex(mt string) bool { return mt == MediaTypeOCIIndex || mt == MediaTypeDockerManifestList }

// IsManifestType reports whether mt names a manifest or index airlock copies.
func IsManifestType(mt string) bool {
	switch mt {
	case MediaTypeDockerManifest, MediaTypeDockerManifestList, MediaTypeOCIManifest, MediaTypeOCIIndex:
		return true
	}
	return false
}

// AnnotationRefName names a manifest in an OCI layout's index.json.
const AnnotationRefName = "org.opencontainers.image.ref.name"
