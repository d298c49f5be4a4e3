package workspace

import (
	"fmt"
	"slices"
	"time"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror"
)

// PinnedConfigPrefix starts the name of the pinned configuration every run
// writes into its working directory, isc_pinned_TIME.yaml: oc-mirror's name,
// with the colons of the time written as '-' so that the file can live on
// FAT/exFAT media (a mirror-to-disk target) and Windows.
const PinnedConfigPrefix = "isc_pinned_"

// pinnedTimeLayout is RFC 3339 in UTC without colons.
const pinnedTimeLayout = "2006-01-02T15-04-05Z"

// PinnedConfigPath is isc_pinned_TIME.yaml for a run at t.
func (d Dir) PinnedConfigPath(t time.Time) string {
	return d.join(PinnedConfigPrefix + t.UTC().Format(pinnedTimeLayout) + ".yaml")
}

// WritePinned writes cfg, the configuration of a run at t, pinned to the
// digests its plan resolved (imageset.Pin) and naming the bundles it selected
// (wants, by image), at once (never half-written), and returns its path.
func WritePinned(d Dir, cfg *imageset.ImageSetConfiguration, plan *mirror.Plan, wants map[string][]Want, t time.Time) (string, error) {
	header := fmt.Sprintf("%s, pinned by airlock after its %s run at %s:\nevery catalog and additional image is pinned by digest, so that mirroring with this file selects exactly the same images.", cfg.Source, plan.Workflow, t.UTC().Format(time.RFC3339))
	pins := imageset.Pins{Catalogs: map[string]imageset.CatalogPin{}, Images: map[string]string{}}
	for _, c := range plan.Catalogs {
		pins.Catalogs[c.Catalog] = imageset.CatalogPin{Digest: c.SourceDigest.String(), Bundles: map[string][]string{}}
	}
	for _, ws := range wants {
		for _, w := range ws {
			if p, ok := pins.Catalogs[w.Catalog]; ok && w.Kind == WantBundle && w.Bundle != "" {
				p.Bundles[w.Package] = append(p.Bundles[w.Package], w.Bundle)
			}
		}
	}
	for _, im := range plan.Images {
		if slices.Contains(im.Origins, mirror.OriginAdditional) {
			pins.Images[im.Source] = im.Digest.String()
		}
	}
	pc, err := imageset.Pin(cfg, pins)
	if err != nil {
		return "", fmt.Errorf("%s: %w", cfg.Source, err)
	}
	data, err := pc.YAML(header)
	if err != nil {
		return "", err
	}
	p := d.PinnedConfigPath(t)
	if err := atomicfile.WriteFile(p, data, 0o644); err != nil {
		return "", err
	}
	return p, nil
}
