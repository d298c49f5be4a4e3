package manifests

import (
	"errors"
	"slices"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

// parsedRef is a registry reference split into its parts. repo is the fully qualified
// repository (host[:port]/path), normalised like CRI-O does it (docker.io/library/…).
type parsedRef struct {
	repo   string
	tag    string
	digest string
}

// errNotRegistry marks a reference that uses a non-registry transport (oci:, file:, …).
var errNotRegistry = errors.New("not a registry reference")

// nonRegistryTransports are the containers/image transports that name no
// registry, written without "//" ("oci:" covers oci:// too); a file://
// location names none either.
var nonRegistryTransports = []string{"oci:", "oci-archive:", "dir:", "docker-archive:"}

// parseRef parses a docker reference, accepting an optional docker:// prefix.
func parseRef(s string) (parsedRef, error) {
	s = strings.TrimSpace(s)
	if location.SchemeOf(s) == location.SchemeFile || slices.ContainsFunc(nonRegistryTransports, func(p string) bool { return strings.HasPrefix(s, p) }) {
		return parsedRef{}, errNotRegistry
	}
	s = location.ImageRef(s)
	if s == "" {
		return parsedRef{}, errors.New("empty reference")
	}
	// oci.ParseReference reads the plain references airlock writes
	// (REGISTRY/PATH@sha256:HEX, REGISTRY/PATH:TAG) without regular
	// expressions and anything else as below; what it refuses is parsed below
	// for the error distribution/reference gives.
	if ref, err := oci.ParseReference(s); err == nil {
		r := parsedRef{repo: ref.Repository(), digest: ref.Digest.String()}
		if !ref.DefaultedTag {
			r.tag = ref.Tag
		}
		return r, nil
	}
	return parseNamed(s)
}

// parseNamed is parseRef's general way, through distribution/reference; s
// is a reference without its transport.
func parseNamed(s string) (parsedRef, error) {
	named, err := reference.ParseNormalizedNamed(s)
	if err != nil {
		return parsedRef{}, err
	}
	r := parsedRef{repo: named.Name()}
	if t, ok := named.(reference.Tagged); ok {
		r.tag = t.Tag()
	}
	if d, ok := named.(reference.Digested); ok {
		r.digest = d.Digest().String()
	}
	return r, nil
}

// refCache parses references by digest whose names repeat (the images of a
// repository) parsing each name once: at 20,000 images parsing every
// source and destination whole cost a re-run 0.4 s.
type refCache map[string]parsedRef

// parse is parseRef(s), the name of a reference by digest taken from the
// cache when it was parsed before.
func (c refCache) parse(s string) (parsedRef, error) {
	i := strings.LastIndexByte(s, '@')
	if i < 0 {
		return parseRef(s)
	}
	d, err := digest.Parse(strings.TrimSpace(s[i+1:]))
	if err != nil {
		return parseRef(s) // which says what is wrong
	}
	name := s[:i]
	r, ok := c[name]
	if !ok {
		if r, err = parseRef(name); err != nil || r.digest != "" {
			return parseRef(s) // two digests are an error too
		}
		c[name] = r
	}
	r.digest = d.String()
	return r, nil
}

// String gives back repo[:tag][@digest].
func (r parsedRef) String() string {
	s := r.repo
	if r.tag != "" {
		s += ":" + r.tag
	}
	if r.digest != "" {
		s += "@" + r.digest
	}
	return s
}

// parentNamespace returns the repository's parent path when it has one below the
// registry host (quay.io/ns/img → quay.io/ns); "" for host/img.
func parentNamespace(repo string) string {
	i := strings.LastIndexByte(repo, '/')
	if i < 0 {
		return ""
	}
	parent := repo[:i]
	if !strings.Contains(parent, "/") {
		return "" // only the registry host: never collapse a whole registry
	}
	return parent
}

// lastElement returns the last path element of a repository.
func lastElement(repo string) string {
	return repo[strings.LastIndexByte(repo, '/')+1:]
}

// covers reports whether a mirror rule for source applies to repo (registries.conf
// prefix semantics: equal, or a parent path).
func covers(source, repo string) bool {
	return repo == source || strings.HasPrefix(repo, source+"/")
}
