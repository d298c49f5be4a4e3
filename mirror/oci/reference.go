package oci

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
)

// ErrInvalidReference is returned (wrapped) for image references that cannot be parsed.
var ErrInvalidReference = errors.New("invalid image reference")

// Reference is a parsed docker image reference, normalised the way docker and
// podman do it: a missing registry is docker.io, and a single-component docker.io
// path gets "library/".
type Reference struct {
	// Registry is the registry host, with its port if any ("quay.io", "localhost:5000").
	Registry string
	// Path is the repository path inside the registry ("library/busybox").
	Path string
	// Tag is the tag, "" if the reference has none.
	Tag string
	// Digest is the manifest digest, "" if the reference has none.
	Digest digest.Digest
	// DefaultedTag is true when the reference had neither tag nor digest and Tag
	// was set to "latest"; callers should warn that the reference is not pinned.
	DefaultedTag bool
}

// ParseReference parses an image reference, with or without its docker://
// transport (location.ImageRef). A reference with neither tag nor digest gets the tag "latest" and
// DefaultedTag set.
func ParseReference(s string) (Reference, error) {
	in := location.ImageRef(strings.TrimSpace(s))
	if in == "" {
		return Reference{}, fmt.Errorf("%w: empty reference", ErrInvalidReference)
	}
	if err := RefuseCredentials(in); err != nil {
		return Reference{}, err
	}
	if r, ok := parsePlain(in); ok {
		return r, nil
	}
	return parseNamed(in, s)
}

// parseNamed is ParseReference's general way, through distribution/reference;
// in is s without its transport.
func parseNamed(in, s string) (Reference, error) {
	named, err := reference.ParseNormalizedNamed(in)
	if err != nil {
		return Reference{}, fmt.Errorf("%w %q: %v (expected [registry/]path[:tag][@sha256:digest])", ErrInvalidReference, s, err)
	}
	r := Reference{Registry: reference.Domain(named), Path: reference.Path(named)}
	if t, ok := named.(reference.Tagged); ok {
		r.Tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		r.Digest = d.Digest()
		if err := r.Digest.Validate(); err != nil {
			return Reference{}, fmt.Errorf("%w %q: digest: %v", ErrInvalidReference, s, err)
		}
	}
	if r.Tag == "" && r.Digest == "" {
		r.Tag = "latest"
		r.DefaultedTag = true
	}
	return r, nil
}

// Repository is the repository name with its registry ("quay.io/ns/name").
func (r Reference) Repository() string { return r.Registry + "/" + r.Path }

// Identifier is what to fetch the manifest by: the digest when there is one
// (a reference with both tag and digest is pulled by digest), else the tag.
func (r Reference) Identifier() string {
	if r.Digest != "" {
		return r.Digest.String()
	}
	return r.Tag
}

// String is the fully-qualified reference: repository, ":tag" if any, "@digest" if any.
func (r Reference) String() string {
	s := r.Repository()
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest.String()
	}
	return s
}

// DestinationTag is the tag an image gets at the destination: its own tag if it
// has one (a reference with both tag and digest keeps the tag; the copy is made
// by digest), else "sha256-<hex>" for a digest-only reference, so that registries
// do not garbage-collect the manifest as untagged.
func (r Reference) DestinationTag() string {
	if r.Tag != "" {
		return r.Tag
	}
	return DigestTag(r.Digest)
}

// DigestTag turns a digest into the tag oc-mirror uses for digest-only images:
// "sha256:abc…" → "sha256-abc…".
func DigestTag(d digest.Digest) string {
	return d.Algorithm().String() + "-" + d.Encoded()
}

var anchoredTagRE = regexp.MustCompile(`^(?:` + reference.TagRegexp.String() + `)$`)

// ValidTag reports whether s is a valid image tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127}).
func ValidTag(s string) bool { return anchoredTagRE.MatchString(s) }

// IsLoopbackHost reports whether a registry host ("host[:port]") is localhost
// or a loopback address: the registries that may be reached over plain HTTP
// without --*-tls-verify=false (as docker and go-containerregistry allow).
func IsLoopbackHost(host string) bool {
	h := host
	if hh, _, err := net.SplitHostPort(host); err == nil {
		h = hh
	}
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && ip.IsLoopback()
}
