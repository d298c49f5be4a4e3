package oci

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/opencontainers/go-digest"
)

// Attachment kinds: cosign's tag scheme (a manifest tagged
// "sha256-<hex>.sig", ".att" or ".sbom" in the repository of the image it is
// attached to) and OCI 1.1 referrers (a manifest whose subject is the image).
const (
	AttachmentSignature   = "sig"
	AttachmentAttestation = "att"
	AttachmentSBOM        = "sbom"
	AttachmentReferrer    = "referrer"
)

// TagSuffixes are cosign's tag-scheme suffixes, in the order they are looked for.
var TagSuffixes = []string{AttachmentSignature, AttachmentAttestation, AttachmentSBOM}

// Artifact types of referrers that are signatures: cosign's OCI 1.1 signature
// and sigstore bundles (any version).
const (
	ArtifactTypeCosignSignature = "application/vnd.dev.cosign.artifact.sig.v1+json"
	artifactTypeSigstoreBundle  = "application/vnd.dev.sigstore.bundle"
)

// MediaTypeEmptyJSON is the OCI empty descriptor's media type ("{}").
const MediaTypeEmptyJSON = "application/vnd.oci.empty.v1+json"

// EmptyJSONDigest is the digest of the OCI empty descriptor's content, "{}"
// (the config of artifacts, and the blob the registry client's mount probe
// commits).
const EmptyJSONDigest = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"

// EmptyJSON returns the OCI empty descriptor's content.
func EmptyJSON() []byte { return []byte("{}") }

// Attachment says what a manifest is to the image it is attached to. It is
// recorded with the plan and in archives, so that disk-to-mirror pushes an
// attachment with its image and can rebuild a referrers index.
type Attachment struct {
	// Of is the source reference of the image the attachment belongs to (as
	// the plan names the image; for an attachment of an attachment, the same
	// top image).
	Of string `json:"of"`
	// Subject is the digest the attachment is attached to: the image, a child
	// of its index, or another attachment.
	Subject digest.Digest `json:"subject"`
	// Kind is AttachmentSignature, AttachmentAttestation, AttachmentSBOM or
	// AttachmentReferrer.
	Kind string `json:"kind"`
	// Size of the attachment's manifest, MediaType its media type, ArtifactType
	// and Annotations those of its referrers descriptor: what a referrers index
	// lists.
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// IsSignature reports whether the attachment is a signature of its subject: a
// cosign ".sig" tag, or a referrer whose artifact type is a cosign signature or
// a sigstore bundle.
func (a Attachment) IsSignature() bool {
	if a.Kind == AttachmentSignature {
		return true
	}
	return a.Kind == AttachmentReferrer && (a.ArtifactType == ArtifactTypeCosignSignature ||
		strings.HasPrefix(a.ArtifactType, artifactTypeSigstoreBundle))
}

// AttachmentTag is the cosign tag of an attachment of d: "sha256-<hex>.<suffix>".
func AttachmentTag(d digest.Digest, suffix string) string {
	return DigestTag(d) + "." + suffix
}

// ReferrersTag is the tag of the referrers index of d on a registry without
// the referrers API (OCI distribution 1.1's fallback): "sha256-<hex>". It is
// the same tag DigestTag gives digest-only images.
func ReferrersTag(d digest.Digest) string { return DigestTag(d) }

// referrerJSON is one entry of a referrers index.
type referrerJSON struct {
	MediaType    string            `json:"mediaType"`
	Digest       digest.Digest     `json:"digest"`
	Size         int64             `json:"size"`
	ArtifactType string            `json:"artifactType,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
}

// Referrer is one entry of a referrers index: a manifest whose subject is the
// index's digest.
type Referrer struct {
	Descriptor
	ArtifactType string
	Annotations  map[string]string
}

// ReferrersIndex builds the OCI image index that lists referrers, as the
// referrers API answers and as the fallback tag holds it; entries are sorted by
// digest and de-duplicated so that the same referrers give the same bytes.
func ReferrersIndex(refs []Referrer) (Manifest, error) {
	sorted := append([]Referrer(nil), refs...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Digest < sorted[j].Digest })
	entries := make([]referrerJSON, 0, len(sorted))
	for i, r := range sorted {
		if i > 0 && sorted[i-1].Digest == r.Digest {
			continue
		}
		entries = append(entries, referrerJSON{MediaType: r.MediaType, Digest: r.Digest, Size: r.Size, ArtifactType: r.ArtifactType, Annotations: r.Annotations})
	}
	raw, err := json.Marshal(struct {
		SchemaVersion int            `json:"schemaVersion"`
		MediaType     string         `json:"mediaType"`
		Manifests     []referrerJSON `json:"manifests"`
	}{2, MediaTypeOCIIndex, entries})
	if err != nil {
		return Manifest{}, err
	}
	return Manifest{MediaType: MediaTypeOCIIndex, Digest: digest.FromBytes(raw), Raw: raw}, nil
}
