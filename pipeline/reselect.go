package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/archive"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
	"github.com/airlock-mirror/airlock/mirror/endpoint"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/mirror/transfer"
	"github.com/airlock-mirror/airlock/prune"
	"github.com/airlock-mirror/airlock/workspace"
)

// reselected is one archived catalog after the configuration was applied again.
type reselected struct {
	record archive.CatalogRecord
	// narrowed is set when the configuration asks for less than the archive
	// holds: the catalog was re-pruned and rebuilt into the workspace.
	narrowed *narrowedCatalog
}

type narrowedCatalog struct {
	rebuilt  *catalogimage.Rebuilt
	packages []string
	// images are the references the re-pruned catalog names.
	images map[string]bool
}

// reselect applies the configuration's entry op to the catalog c the archive
// holds (made by the entry archived). It returns the gaps when op asks for more
// than the archive's selection, and re-prunes and rebuilds the catalog when op
// asks for less.
func (r *run) reselect(ctx context.Context, ar endpoint.Source, c archive.CatalogRecord, op imageset.Operator, archived *imageset.Operator) (*reselected, []string, error) {
	out := &reselected{record: c}
	if archived == nil {
		// An archive without its configuration: only package names can be compared.
		return out, selectionLacks(op, nil, c.Packages), nil
	}
	if filterHash(op) == filterHash(*archived) {
		return out, nil, nil
	}
	fc, cat, err := r.archivedCatalog(ctx, ar, c)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog %s in the archive: %w", c.Source, err)
	}
	if gaps := prune.SelectionGaps(op, *archived, cat); len(gaps) > 0 {
		return nil, gaps, nil
	}
	pruned, _, err := prune.Filter(cat, op, prune.FilterOptions{Logger: r.log})
	if err != nil {
		return nil, []string{fmt.Sprintf("catalog %s: %v", c.Source, err)}, nil
	}
	if sameBundles(pruned, cat) {
		return out, nil, nil
	}
	base := workspace.Filtered(r.workDir.ArchivedCatalogDir(c.Digest.Encoded()), filterHash(op))
	rb, err := r.rebuildPruned(ctx, pruned, fc, base, c.Tag)
	if err != nil {
		return nil, nil, err
	}
	n := &narrowedCatalog{rebuilt: rb, images: map[string]bool{}}
	images, packages, warnings := catalogImages(pruned)
	r.res.Warnings = append(r.res.Warnings, warnings...)
	for _, im := range images {
		n.images[im] = true
	}
	n.packages = packages
	r.noteWants(c.Source, pruned)
	out.narrowed = n
	r.log.Info("the configuration asks for less than the archive holds: the catalog was pruned again", "catalog", c.Source, "digest", rb.Digest)
	return out, nil, nil
}

// archivedCatalog copies the catalog image c out of the archive into the
// workspace (an OCI layout) and loads its file-based catalog.
func (r *run) archivedCatalog(ctx context.Context, ar endpoint.Source, c archive.CatalogRecord) (*catalogimage.Fetched, *fbc.Catalog, error) {
	const tag = "archived"
	dir := r.workDir.ArchivedCatalogImageDir(c.Digest.Encoded())
	dst, err := layout.NewDestination(dir)
	if err != nil {
		return nil, nil, err
	}
	job := transfer.Job{Source: c.Destination, Digest: c.Digest, Dest: "catalog", Tags: []string{tag}, Platforms: c.Platforms}
	if _, err := transfer.Copy(ctx, ar, dst, []transfer.Job{job}, transfer.Options{Logger: r.log}); err != nil {
		return nil, nil, err
	}
	fc, err := catalogimage.Fetch(ctx, location.OCI(dir).String()+":"+tag, r.workDir.OperatorCatalogsDir(), catalogimage.FetchOptions{Logger: r.log})
	if err != nil {
		return nil, nil, err
	}
	cat, err := fbc.LoadDir(ctx, fc.ConfigsDir, fbc.LoadOptions{ElideHeavy: true, Logger: r.log})
	if err != nil {
		return nil, nil, err
	}
	return fc, cat, nil
}

// sameBundles reports whether a and b hold the same bundles.
func sameBundles(a, b *fbc.Catalog) bool {
	names := func(c *fbc.Catalog) []string {
		var out []string
		for _, p := range c.Packages {
			for _, bd := range p.Bundles {
				out = append(out, p.Name+"/"+bd.Name)
			}
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(names(a), names(b))
}

// gapError is the error for a configuration that asks for more than the archive.
func (r *run) gapError(m *archive.Manifest, dir string, gaps []string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "the archive in %s does not hold everything %s asks for:\n", dir, r.cfg.Source)
	for _, g := range gaps {
		fmt.Fprintf(&b, "  - %s\n", g)
	}
	fmt.Fprintf(&b, "%s was made with this configuration:\n", archive.BatchRef{Batch: m.Batch, ArchiveID: m.ArchiveID})
	b.WriteString(indent(archivedConfigYAML(m), "    "))
	b.WriteString("run mirror-to-disk with the wider configuration on the connected side and carry the new batch, or give disk-to-mirror a configuration within the archive's")
	return fmt.Errorf("%s", b.String())
}

// archivedConfigYAML renders the configuration recorded in the archive.
func archivedConfigYAML(m *archive.Manifest) string {
	if len(m.Config) == 0 {
		return "(not recorded)\n"
	}
	var v any
	if err := json.Unmarshal(m.Config, &v); err != nil {
		return string(m.Config) + "\n"
	}
	y, err := yaml.Marshal(v)
	if err != nil {
		return string(m.Config) + "\n"
	}
	return string(y)
}

func indent(s, prefix string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix + l)
		}
	}
	return b.String()
}
