package mirror

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/oci"
)

var anchoredDomainRE = regexp.MustCompile(`^(?:` + reference.DomainRegexp.String() + `)$`)

func anchoredDomain(s string) bool { return anchoredDomainRE.MatchString(s) }

// DestinationRepo maps a source reference to its destination repository:
// registryNS ("REGISTRY[/NAMESPACE…]", with or without docker://) followed
// by the source path without its registry host. With maxNestedPaths > 0 a
// destination path (everything after the destination host) longer than
// maxNestedPaths components is flattened as oc-mirror does: the first
// maxNestedPaths-1 components are kept and the rest are joined with "-" into the
// last one. 0 means no limit.
//
//	DestinationRepo("quay.io/a/b/c:v1", "reg:5000/mirror", 0) = "reg:5000/mirror/a/b/c"
//	DestinationRepo("quay.io/a/b/c:v1", "reg:5000/mirror", 2) = "reg:5000/mirror/a-b-c"
func DestinationRepo(src string, registryNS string, maxNestedPaths int) (string, error) {
	r, err := oci.ParseReference(src)
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
		return "", fmt.Errorf("%w: destination repository %q is not valid: %v", oci.ErrInvalidReference, repo, err)
	}
	return repo, nil
}

// splitRegistryNS splits "docker://host[:port][/ns/…]" into host and namespace.
func splitRegistryNS(registryNS string) (host, ns string, err error) {
	if err := oci.RefuseCredentials(registryNS); err != nil {
		return "", "", err
	}
	s := strings.TrimSuffix(location.ImageRef(strings.TrimSpace(registryNS)), "/")
	host, ns, _ = strings.Cut(s, "/")
	if host == "" {
		return "", "", fmt.Errorf("%w: destination %q has no registry host: use REGISTRY[:PORT][/NAMESPACE]", oci.ErrInvalidReference, registryNS)
	}
	if !anchoredDomain(host) {
		return "", "", fmt.Errorf("%w: destination registry %q is not a valid host[:port]", oci.ErrInvalidReference, host)
	}
	if strings.ContainsAny(ns, ":@") {
		return "", "", fmt.Errorf("%w: destination %q must not have a tag or digest: use REGISTRY[:PORT][/NAMESPACE]", oci.ErrInvalidReference, registryNS)
	}
	return host, ns, nil
}

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
// (see DestinationRepo) and tag (see oci.Reference.DestinationTag).
func ImageDestination(src, registryNS string, maxNestedPaths int) (DestRef, error) {
	r, err := oci.ParseReference(src)
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
	r, err := oci.ParseReference(src)
	if err != nil {
		return DestRef{}, err
	}
	p := r.Path
	if targetCatalog != "" {
		tc := strings.Trim(targetCatalog, "/")
		if strings.ContainsAny(tc, ":@") {
			return DestRef{}, fmt.Errorf("%w: targetCatalog %q of catalog %s must be a path without tag or digest (set the tag with targetTag)", oci.ErrInvalidReference, targetCatalog, src)
		}
		if _, err := reference.WithName("example.com/" + tc); err != nil || tc == "" {
			return DestRef{}, fmt.Errorf("%w: targetCatalog %q of catalog %s is not a valid repository path (lower-case letters, digits, '.', '_', '-', '/')", oci.ErrInvalidReference, targetCatalog, src)
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
		if !oci.ValidTag(tag) {
			return DestRef{}, fmt.Errorf("%w: targetTag %q of catalog %s is not a valid tag ([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})", oci.ErrInvalidReference, targetTag, src)
		}
	case r.Tag != "":
		tag = r.Tag
	case rebuilt != "":
		tag = oci.DigestTag(rebuilt)
	default:
		tag = oci.DigestTag(r.Digest)
	}
	return DestRef{Repository: repo, Tag: tag}, nil
}

// destHost is the registry part of the destination used for mirror-to-disk paths:
// a placeholder host stripped again, so that repository paths stay relative.
const m2dHost = "airlock.archive"

func (p *Plan) imageDest(req PlanRequest, r oci.Reference, target *ImageRequest) (DestRef, error) {
	path := r.Path
	tag := r.DestinationTag()
	if target != nil {
		if target.TargetRepo != "" {
			path = strings.Trim(target.TargetRepo, "/")
		}
		if target.TargetTag != "" {
			tag = target.TargetTag
		}
	}
	if req.Workflow == MirrorToDisk {
		return DestRef{Repository: path, Tag: tag}, nil
	}
	repo, err := destinationRepo(path, req.Destination, req.MaxNestedPaths)
	if err != nil {
		return DestRef{}, err
	}
	return DestRef{Repository: repo, Tag: tag}, nil
}

// DestinationRepoPath places a repository path (no registry host) under
// destination ("REGISTRY[:PORT][/NAMESPACE]"), flattened by maxNestedPaths.
func DestinationRepoPath(path, destination string, maxNestedPaths int) (string, error) {
	return destinationRepo(path, destination, maxNestedPaths)
}

// markConflicts fails images whose destination tag another image of the plan
// (with another digest) already takes: the second push would silently replace
// the first. Catalogs come first in the plan, so they win over the images they
// name; among the others, the first in plan order wins.
func (p *Plan) markConflicts() {
	owner := map[string]int{}
	for i := range p.Images {
		im := &p.Images[i]
		if im.Error != "" || im.Digest == "" {
			continue
		}
		for _, t := range im.Tags {
			key := im.DestRepo + ":" + t
			j, taken := owner[key]
			if !taken {
				owner[key] = i
				continue
			}
			if other := p.Images[j]; other.Digest != im.Digest {
				im.Error = fmt.Sprintf("destination %s is already the destination of %s (%s); give one of them another targetRepo/targetTag or targetCatalog/targetTag", key, other.Source, other.Digest)
			}
		}
	}
}
