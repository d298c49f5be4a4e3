package mirror

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"
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

// ParseReference parses an image reference, with or without a "docker://"
// prefix. A reference with neither tag nor digest gets the tag "latest" and
// DefaultedTag set.
func ParseReference(s string) (Reference, error) {
	in := strings.TrimPrefix(strings.TrimSpace(s), "docker://")
	if in == "" {
		return Reference{}, fmt.Errorf("%w: empty reference", ErrInvalidReference)
	}
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

// DestinationRepo maps a source reference to its destination repository:
// registryNS ("REGISTRY[/NAMESPACE…]", a "docker://" prefix is accepted) followed
// by the source path without its registry host. With maxNestedPaths > 0 a
// destination path (everything after the destination host) longer than
// maxNestedPaths components is flattened as oc-mirror does: the first
// maxNestedPaths-1 components are kept and the rest are joined with "-" into the
// last one. 0 means no limit.
//
//	DestinationRepo("quay.io/a/b/c:v1", "reg:5000/mirror", 0) = "reg:5000/mirror/a/b/c"
//	DestinationRepo("quay.io/a/b/c:v1", "reg:5000/mirror", 2) = "reg:5000/mirror/a-b-c"
func DestinationRepo(src string, registryNS string, maxNestedPaths int) (string, error) {
	r, err := ParseReference(src)
	if err != nil {
		return "", err
	}
	return destinationRepo(r.Path, registryNS, maxNestedPaths)
}

func destinationRepo(srcPath, registryNS string, maxNestedPaths int) (string, error) {
	if maxNestedPaths < 0 {
		return "", fmt.Errorf("invalid --max-nested-paths %d: use 0 (no limit) or a positive number", maxNestedPaths)
	}
	host, ns, err := splitRegistryNS(registryNS)
	if err != nil {
		return "", err
	}
	var comps []string
	if ns != "" {
		comps = strings.Split(ns, "/")
	}
	comps = append(comps, strings.Split(srcPath, "/")...)
	if maxNestedPaths > 0 && len(comps) > maxNestedPaths {
		last := strings.Join(comps[maxNestedPaths-1:], "-")
		comps = append(comps[:maxNestedPaths-1:maxNestedPaths-1], last)
	}
	repo := host + "/" + strings.Join(comps, "/")
	if _, err := reference.WithName(repo); err != nil {
		return "", fmt.Errorf("%w: destination repository %q is not valid: %v", ErrInvalidReference, repo, err)
	}
	return repo, nil
}

// splitRegistryNS splits "docker://host[:port][/ns/…]" into host and namespace.
func splitRegistryNS(registryNS string) (host, ns string, err error) {
	s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(registryNS), "docker://"), "/")
	host, ns, _ = strings.Cut(s, "/")
	if host == "" {
		return "", "", fmt.Errorf("%w: destination %q has no registry host: use REGISTRY[:PORT][/NAMESPACE]", ErrInvalidReference, registryNS)
	}
	if !anchoredDomain(host) {
		return "", "", fmt.Errorf("%w: destination registry %q is not a valid host[:port]", ErrInvalidReference, host)
	}
	if strings.ContainsAny(ns, ":@") {
		return "", "", fmt.Errorf("%w: destination %q must not have a tag or digest: use REGISTRY[:PORT][/NAMESPACE]", ErrInvalidReference, registryNS)
	}
	return host, ns, nil
}

var (
	anchoredDomainRE = regexp.MustCompile(`^(?:` + reference.DomainRegexp.String() + `)$`)
	anchoredTagRE    = regexp.MustCompile(`^(?:` + reference.TagRegexp.String() + `)$`)
)

func anchoredDomain(s string) bool { return anchoredDomainRE.MatchString(s) }

// DestRef is where one image goes.
type DestRef struct {
	// Repository is the destination repository ("reg:5000/ns/path").
	Repository string
	// Tag is the destination tag.
	Tag string
}

// String is "Repository:Tag".
func (d DestRef) String() string { return d.Repository + ":" + d.Tag }

// ImageDestination maps a source image reference to its destination repository
// (see DestinationRepo) and tag (see Reference.DestinationTag).
func ImageDestination(src, registryNS string, maxNestedPaths int) (DestRef, error) {
	r, err := ParseReference(src)
	if err != nil {
		return DestRef{}, err
	}
	repo, err := destinationRepo(r.Path, registryNS, maxNestedPaths)
	if err != nil {
		return DestRef{}, err
	}
	return DestRef{Repository: repo, Tag: r.DestinationTag()}, nil
}

// CatalogDestination maps a catalog reference to its destination, honouring the
// ImageSetConfiguration overrides: targetCatalog replaces the source path
// ("ns/name", no tag or digest), targetTag replaces the tag. Without targetTag a
// tagged catalog keeps its tag; a digest-only catalog is tagged
// "sha256-<hex>" of rebuilt if the catalog was rebuilt (rebuilt != ""), else of
// its source digest. --max-nested-paths applies to the resulting path.
func CatalogDestination(src, registryNS, targetCatalog, targetTag string, maxNestedPaths int, rebuilt digest.Digest) (DestRef, error) {
	r, err := ParseReference(src)
	if err != nil {
		return DestRef{}, err
	}
	p := r.Path
	if targetCatalog != "" {
		tc := strings.Trim(targetCatalog, "/")
		if strings.ContainsAny(tc, ":@") {
			return DestRef{}, fmt.Errorf("%w: targetCatalog %q of catalog %s must be a path without tag or digest (set the tag with targetTag)", ErrInvalidReference, targetCatalog, src)
		}
		if _, err := reference.WithName("example.com/" + tc); err != nil || tc == "" {
			return DestRef{}, fmt.Errorf("%w: targetCatalog %q of catalog %s is not a valid repository path (lower-case letters, digits, '.', '_', '-', '/')", ErrInvalidReference, targetCatalog, src)
		}
		p = tc
	}
	repo, err := destinationRepo(p, registryNS, maxNestedPaths)
	if err != nil {
		return DestRef{}, err
	}
	tag := targetTag
	switch {
	case tag != "":
		if !anchoredTag(tag) {
			return DestRef{}, fmt.Errorf("%w: targetTag %q of catalog %s is not a valid tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", ErrInvalidReference, targetTag, src)
		}
	case r.Tag != "":
		tag = r.Tag
	case rebuilt != "":
		tag = DigestTag(rebuilt)
	default:
		tag = DigestTag(r.Digest)
	}
	return DestRef{Repository: repo, Tag: tag}, nil
}

func anchoredTag(s string) bool { return anchoredTagRE.MatchString(s) }
