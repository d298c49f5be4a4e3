package payload

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
)

// Component is one image of a release: a tag of image-references.
type Component struct {
	// Name is the tag's name ("machine-config-operator").
	Name string
	// Image is the component's reference by digest ("repo@sha256:…").
	Image string
	// Digest is Image's digest.
	Digest digest.Digest
}

// ImageReferences is release-manifests/image-references: an ImageStream whose
// tags are the release's components.
type ImageReferences struct {
	// Name is the ImageStream's name: the release's version.
	Name string
	// Components are the tags, sorted by name.
	Components []Component
}

// imageStream is the part of an image.openshift.io/v1 ImageStream read here.
type imageStream struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		Tags []struct {
			Name string `json:"name"`
			From *struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"from"`
		} `json:"tags"`
	} `json:"spec"`
}

// componentName is what a component's name may hold: it becomes part of a
// destination tag ("<version>-<arch>-<name>").
var componentName = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}$`)

// ParseImageReferences reads image-references. Every tag must name a
// DockerImage by digest (a payload pins its components; a tag would let the
// mirror hold something else than what was signed), names must be unique
// and usable in a tag, and the release must have at least one component.
func ParseImageReferences(b []byte) (*ImageReferences, error) {
	var is imageStream
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&is); err != nil {
		return nil, fmt.Errorf("%w: not an ImageStream in JSON: %v", ErrInvalid, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON document", ErrInvalid)
	}
	if is.Kind != "ImageStream" || is.APIVersion != "image.openshift.io/v1" {
		return nil, fmt.Errorf("%w: kind %q apiVersion %q, want an ImageStream of image.openshift.io/v1", ErrInvalid, is.Kind, is.APIVersion)
	}
	out := &ImageReferences{Name: is.Metadata.Name}
	seen := map[string]bool{}
	for i, t := range is.Spec.Tags {
		where := fmt.Sprintf("spec.tags[%d]", i)
		if !componentName.MatchString(t.Name) {
			return nil, fmt.Errorf("%w: %s: name %q is not usable in a tag (letters, digits, '_', '.', '-'; at most 100)", ErrInvalid, where, t.Name)
		}
		where += " (" + t.Name + ")"
		if seen[t.Name] {
			return nil, fmt.Errorf("%w: %s: a second tag of that name", ErrInvalid, where)
		}
		seen[t.Name] = true
		if t.From == nil || t.From.Kind != "DockerImage" {
			return nil, fmt.Errorf("%w: %s: from must be a DockerImage", ErrInvalid, where)
		}
		c, err := byDigest(t.From.Name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: from.name: %v", ErrInvalid, where, err)
		}
		c.Name = t.Name
		out.Components = append(out.Components, c)
	}
	if len(out.Components) == 0 {
		return nil, fmt.Errorf("%w: spec.tags lists no component", ErrInvalid)
	}
	sort.Slice(out.Components, func(i, j int) bool { return out.Components[i].Name < out.Components[j].Name })
	return out, nil
}

// byDigest reads a reference that must be "repo@sha256:…" (a tag besides the
// digest is dropped: the digest is what is copied).
func byDigest(s string) (Component, error) {
	r, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return Component{}, fmt.Errorf("%q is not an image reference: %v", s, err)
	}
	d, ok := r.(reference.Digested)
	if !ok {
		return Component{}, fmt.Errorf("%q is not a reference by digest (a payload names its components by digest)", s)
	}
	if err := d.Digest().Validate(); err != nil {
		return Component{}, fmt.Errorf("%q: %v", s, err)
	}
	return Component{Image: r.Name() + "@" + d.Digest().String(), Digest: d.Digest()}, nil
}
