package mirror

import "strings"

// Relocate maps a mirror-to-disk plan (relative destination paths) onto a
// registry destination for disk-to-mirror: every DestRepo becomes
// REGISTRY/NAMESPACE/path, flattened by maxNestedPaths. Source repositories
// become the archive's repository names (the relative paths), but for images
// already read from an OCI layout (a catalog pruned again on this side).
func (p *Plan) Relocate(destination string, maxNestedPaths int) (*Plan, error) {
	if _, _, err := splitRegistryNS(destination); err != nil {
		return nil, err
	}
	out := &Plan{Workflow: DiskToMirror, Destination: destination, Blocked: p.Blocked, Warnings: p.Warnings}
	for _, im := range p.Images {
		rel := im.DestRepo
		if !strings.HasPrefix(im.SourceRepo, LayoutRepoPrefix) {
			im.SourceRepo = rel
		}
		if im.Error == "" {
			repo, err := destinationRepo(rel, destination, maxNestedPaths)
			if err != nil {
				im.Error = err.Error()
			} else {
				im.DestRepo = repo
			}
		}
		out.Images = append(out.Images, im)
	}
	for _, c := range p.Catalogs {
		repo, err := destinationRepo(c.DestRepo, destination, maxNestedPaths)
		if err != nil {
			return nil, err
		}
		c.DestRepo = repo
		out.Catalogs = append(out.Catalogs, c)
	}
	// Flattening (--max-nested-paths) can make two repositories one.
	out.markConflicts()
	return out, nil
}
