package payload

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/blang/semver/v4"
)

// MetadataKind is the kind of release-metadata.
const MetadataKind = "cincinnati-metadata-v0"

// Metadata is release-manifests/release-metadata.
type Metadata struct {
	Kind string `json:"kind"`
	// Version is the release's version (semver).
	Version string `json:"version"`
	// Previous are the versions that update to this one.
	Previous []string `json:"previous,omitempty"`
	// Next are versions this one updates to (rarely set).
	Next []string `json:"next,omitempty"`
	// Metadata are free-form properties ("url": the errata).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// ParseMetadata reads release-metadata: kind cincinnati-metadata-v0 and a
// semver version are required.
func ParseMetadata(b []byte) (*Metadata, error) {
	var md Metadata
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&md); err != nil {
		return nil, fmt.Errorf("%w: not release metadata in JSON: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON document", ErrInvalid)
	}
	if md.Kind != MetadataKind {
		return nil, fmt.Errorf("%w: kind %q, want %s", ErrInvalid, md.Kind, MetadataKind)
	}
	if _, err := semver.Parse(md.Version); err != nil {
		return nil, fmt.Errorf("%w: version %q is not semver: %v", ErrInvalid, md.Version, err)
	}
	return &md, nil
}
