package oci

import (
	"encoding/json"
	"fmt"
	"mime"

	"github.com/opencontainers/go-digest"
)

// Refs is what a manifest references.
type Refs struct {
	// Manifests are the children of an index or manifest list, with their platform
	// ("os/arch[/variant]", empty when absent).
	Manifests []ChildManifest
	// Blobs are the config and the distributable layers of an image manifest
	// (config first, each digest once).
	Blobs []Descriptor
	// Foreign are layers with URLs (non-distributable); they are not copied.
	Foreign []Descriptor
	// Subject is the manifest this one refers to (OCI referrers), if any.
	Subject *Descriptor
}

// ChildManifest is one entry of an index.
type ChildManifest struct {
	Descriptor
	Platform string `json:"platform,omitempty"`
	// Annotations of the index entry (for example the attestation markers).
	Annotations map[string]string `json:"annotations,omitempty"`
	// ArtifactType of the entry (referrers indexes list it).
	ArtifactType string `json:"artifactType,omitempty"`
}

type descriptorJSON struct {
	MediaType   string            `json:"mediaType"`
	Digest      digest.Digest     `json:"digest"`
	Size        int64             `json:"size"`
	URLs        []string          `json:"urls,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	// ArtifactType is set on referrers index entries.
	ArtifactType string `json:"artifactType,omitempty"`
	Platform     *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
		Variant      string `json:"variant"`
	} `json:"platform,omitempty"`
}

type manifestJSON struct {
	SchemaVersion int              `json:"schemaVersion"`
	MediaType     string           `json:"mediaType"`
	Config        *descriptorJSON  `json:"config"`
	Layers        []descriptorJSON `json:"layers"`
	Manifests     []descriptorJSON `json:"manifests"`
	Subject       *descriptorJSON  `json:"subject"`
}

var foreignLayerTypes = map[string]bool{
	"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip":    true,
	"application/vnd.oci.image.layer.nondistributable.v1.tar":      true,
	"application/vnd.oci.image.layer.nondistributable.v1.tar+gzip": true,
	"application/vnd.oci.image.layer.nondistributable.v1.tar+zstd": true,
}

// MediaTypeOf picks a manifest's media type from the Content-Type header a
// registry sent (may be empty), else from the document itself; "" when raw is not
// JSON.
func MediaTypeOf(contentType string, raw []byte) string {
	if mt, _, err := mime.ParseMediaType(contentType); err == nil {
		switch mt {
		case MediaTypeDockerManifest, MediaTypeDockerManifestList, MediaTypeOCIManifest, MediaTypeOCIIndex,
			MediaTypeDockerSchema1, MediaTypeDockerSchema1Signed:
			return mt
		}
	}
	var probe struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Manifests     []json.RawMessage `json:"manifests"`
	}
	if json.Unmarshal(raw, &probe) != nil {
		return ""
	}
	switch {
	case probe.MediaType != "":
		return probe.MediaType
	case probe.SchemaVersion == 1:
		return MediaTypeDockerSchema1
	case probe.Manifests != nil:
		return MediaTypeOCIIndex
	}
	return MediaTypeOCIManifest
}

// Parse lists what m references. Docker schema 1 manifests and unknown media types
// are refused with ErrUnsupportedManifest; bad digests and negative sizes are
// errors naming the manifest.
func Parse(m Manifest) (Refs, error) {
	var mj manifestJSON
	if err := json.Unmarshal(m.Raw, &mj); err != nil {
		return Refs{}, fmt.Errorf("decode manifest %s: %w", m.Digest, err)
	}
	mt := m.MediaType
	if mt == "" {
		mt = MediaTypeOf("", m.Raw)
	}
	var out Refs
	check := func(d descriptorJSON, what string) error {
		if err := d.Digest.Validate(); err != nil {
			return fmt.Errorf("manifest %s: %s has a bad digest %q: %w", m.Digest, what, d.Digest, err)
		}
		if d.Size < 0 {
			return fmt.Errorf("manifest %s: %s %s has a negative size", m.Digest, what, d.Digest)
		}
		return nil
	}
	switch {
	case mj.SchemaVersion == 1 || mt == MediaTypeDockerSchema1 || mt == MediaTypeDockerSchema1Signed:
		return Refs{}, fmt.Errorf("manifest %s is Docker schema 1 (convert it to schema 2 first): %w", m.Digest, ErrUnsupportedManifest)
	case IsIndex(mt):
		for _, c := range mj.Manifests {
			if err := check(c, "child manifest"); err != nil {
				return Refs{}, err
			}
			cm := ChildManifest{Descriptor: Descriptor{MediaType: c.MediaType, Digest: c.Digest, Size: c.Size}, Annotations: c.Annotations, ArtifactType: c.ArtifactType}
			if p := c.Platform; p != nil {
				cm.Platform = p.OS + "/" + p.Architecture
				if p.Variant != "" {
					cm.Platform += "/" + p.Variant
				}
			}
			out.Manifests = append(out.Manifests, cm)
		}
	case mt == MediaTypeOCIManifest || mt == MediaTypeDockerManifest || mj.Config != nil:
		if mj.Config == nil {
			return Refs{}, fmt.Errorf("manifest %s has no config", m.Digest)
		}
		if err := check(*mj.Config, "config"); err != nil {
			return Refs{}, err
		}
		out.Blobs = append(out.Blobs, Descriptor{MediaType: mj.Config.MediaType, Digest: mj.Config.Digest, Size: mj.Config.Size})
		seen := map[digest.Digest]bool{mj.Config.Digest: true}
		for _, l := range mj.Layers {
			if err := check(l, "layer"); err != nil {
				return Refs{}, err
			}
			d := Descriptor{MediaType: l.MediaType, Digest: l.Digest, Size: l.Size}
			if len(l.URLs) > 0 || foreignLayerTypes[l.MediaType] {
				out.Foreign = append(out.Foreign, d)
				continue
			}
			if !seen[l.Digest] {
				seen[l.Digest] = true
				out.Blobs = append(out.Blobs, d)
			}
		}
	default:
		return Refs{}, fmt.Errorf("manifest %s has media type %q: %w", m.Digest, mt, ErrUnsupportedManifest)
	}
	if mj.Subject != nil {
		s := Descriptor{MediaType: mj.Subject.MediaType, Digest: mj.Subject.Digest, Size: mj.Subject.Size}
		out.Subject = &s
	}
	return out, nil
}

// Digests returns every digest m references: children, config and distributable
// layers (and the subject when withSubject). It is Parse flattened for callers
// that only need to walk a graph.
func (r Refs) Digests() []digest.Digest {
	out := make([]digest.Digest, 0, len(r.Manifests)+len(r.Blobs))
	for _, c := range r.Manifests {
		out = append(out, c.Digest)
	}
	for _, b := range r.Blobs {
		out = append(out, b.Digest)
	}
	return out
}
