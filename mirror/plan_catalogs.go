package mirror

import (
	"github.com/airlock-mirror/airlock/mirror/oci"
	"regexp"
	"strings"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/opencontainers/go-digest"
)

// The catalogs' own images in a plan: what a fetched and pruned catalog
// brings (CatalogRequest), and their entries, added once the rebuilt images
// exist (Plan.AddCatalogs).

// CatalogRequest is one operator catalog after fetching and pruning.
type CatalogRequest struct {
	// Catalog is the catalog reference from the configuration.
	Catalog string
	// SourceDigest pins the catalog image the run used.
	SourceDigest digest.Digest
	// TargetCatalog and TargetTag are the configuration's destination overrides.
	TargetCatalog, TargetTag string
	// Rebuilt is the pruned catalog image, nil when the catalog is mirrored untouched.
	Rebuilt *catalogimage.Rebuilt
	// SourceRepo is where the untouched catalog is read from when Rebuilt is nil
	// (a registry repository, or LayoutRepoPrefix+dir for oci:// catalogs).
	SourceRepo string
	// Images are the bundle and related images the (pruned) catalog names.
	Images []string
	// Packages kept in the pruned catalog, for the record.
	Packages []string
	// Platforms is the operator entry's platform subset ("os/arch"), for the
	// catalog image, its bundles and their related images; empty: every platform.
	Platforms []string
}

// AddCatalogs adds the images of req.Catalogs (their digests are known: no
// resolution) to a plan PlanImages made from req, ahead of the others, then
// marks destination conflicts and sorts the plan. Call it once.
func (p *Plan) AddCatalogs(req PlanRequest) {
	var cats []PlanImage
	for _, c := range req.Catalogs {
		pc := PlanCatalog{Catalog: c.Catalog, SourceDigest: c.SourceDigest, Packages: c.Packages, Platforms: c.Platforms}
		im := PlanImage{Source: c.Catalog, Kind: KindCatalog, Origins: []string{c.Catalog}, Platforms: c.Platforms}
		var rebuilt digest.Digest
		if c.Rebuilt != nil {
			rebuilt = c.Rebuilt.Digest
			pc.Rebuilt = true
			pc.Digest = c.Rebuilt.Digest
			im.SourceRepo = LayoutRepoPrefix + c.Rebuilt.LayoutDir
			im.Digest = c.Rebuilt.Digest
			im.MediaType = string(c.Rebuilt.MediaType)
		} else {
			pc.Digest = c.SourceDigest
			im.SourceRepo = c.SourceRepo
			im.Digest = c.SourceDigest
		}
		src := catalogRefForNaming(c.Catalog, c.SourceDigest)
		dst, err := p.catalogDest(req, src, c.TargetCatalog, c.TargetTag, rebuilt)
		if err != nil {
			im.Error = err.Error()
		} else {
			im.DestRepo, im.Tags = dst.Repository, []string{dst.Tag}
			pc.DestRepo, pc.Tag = dst.Repository, dst.Tag
		}
		p.Catalogs = append(p.Catalogs, pc)
		cats = append(cats, im)
	}

	p.Images = append(cats, p.Images...)
	p.settle()
}

// catalogRefForNaming turns an oci:// catalog into a reference that can be named
// at the destination (its last path element, and the tag oci://PATH:TAG names),
// keeping docker references as they are.
func catalogRefForNaming(catalog string, d digest.Digest) string {
	p, ok := location.CutLayout(catalog)
	if !ok {
		return catalog
	}
	p = strings.TrimSuffix(p, "/")
	name := p
	if i := strings.LastIndex(p, "/"); i >= 0 {
		name = p[i+1:]
	}
	tag := ""
	if i := strings.LastIndex(name, ":"); i > 0 && oci.ValidTag(name[i+1:]) {
		name, tag = name[:i], name[i+1:]
	}
	name = strings.ToLower(regexp.MustCompile(`[^a-zA-Z0-9._-]+`).ReplaceAllString(name, "-"))
	name = strings.Trim(name, "-._")
	if name == "" {
		name = "catalog"
	}
	switch {
	case tag != "" && d != "":
		return "localhost/" + name + ":" + tag + "@" + d.String()
	case tag != "":
		return "localhost/" + name + ":" + tag
	case d != "":
		return "localhost/" + name + "@" + d.String()
	}
	return "localhost/" + name + ":latest"
}

func (p *Plan) catalogDest(req PlanRequest, src, targetCatalog, targetTag string, rebuilt digest.Digest) (DestRef, error) {
	if req.Workflow == MirrorToDisk {
		d, err := CatalogDestination(src, m2dHost, targetCatalog, targetTag, 0, rebuilt)
		if err != nil {
			return d, err
		}
		d.Repository = strings.TrimPrefix(d.Repository, m2dHost+"/")
		return d, nil
	}
	return CatalogDestination(src, req.Destination, targetCatalog, targetTag, req.MaxNestedPaths, rebuilt)
}
