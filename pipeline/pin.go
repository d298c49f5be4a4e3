package pipeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/workspace"
)

// writePinned writes the run's configuration pinned to the digests it resolved
// and names the bundles it selected (complete runs that copied or archived;
// not dry runs, --plan-only, shards, or the earlier batches of --from TARGET).
func (r *run) writePinned() error {
	o := r.opts
	if r.res.Plan == nil || r.res.Failed > 0 || r.res.Interrupted || o.DryRun || o.PlanOnly || o.PlanFile != "" || o.batchConfig != nil {
		return nil
	}
	pins := imageset.Pins{Catalogs: map[string]imageset.CatalogPin{}, Images: map[string]string{}}
	for _, c := range r.res.Plan.Catalogs {
		pins.Catalogs[c.Catalog] = imageset.CatalogPin{Digest: c.SourceDigest.String(), Bundles: map[string][]string{}}
	}
	for _, ws := range r.wants {
		for _, w := range ws {
			if p, ok := pins.Catalogs[w.Catalog]; ok && w.Kind == workspace.WantBundle && w.Bundle != "" {
				p.Bundles[w.Package] = append(p.Bundles[w.Package], w.Bundle)
			}
		}
	}
	for _, im := range r.res.Plan.Images {
		if slices.Contains(im.Origins, "additionalImages") {
			pins.Images[im.Source] = im.Digest.String()
		}
	}
	pc, err := imageset.Pin(r.cfg, pins)
	if err != nil {
		return fmt.Errorf("pinned configuration of %s: %w", o.ConfigPath, err)
	}
	now := time.Now()
	y, err := pc.YAML(fmt.Sprintf("%s, pinned by airlock after its %s run at %s:\nevery catalog and additional image is pinned by digest, so that mirroring with this file selects exactly the same images.", o.ConfigPath, r.workflow, now.UTC().Format(time.RFC3339)))
	if err != nil {
		return err
	}
	r.res.PinnedConfig, err = workspace.WritePinnedConfig(r.workDir, y, now)
	return err
}
