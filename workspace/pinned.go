package workspace

import (
	"fmt"
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

// WritePinned writes cfg, the configuration of a workflow's run at t, pinned
// to the digests the run resolved (pins, which each content source filled
// for its stanza: imageset.Pin), at once (never half-written), and returns
// its path.
func WritePinned(d Dir, cfg *imageset.ImageSetConfiguration, workflow mirror.Workflow, pins imageset.Pins, t time.Time) (string, error) {
	header := fmt.Sprintf("%s, pinned by airlock after its %s run at %s:\nevery catalog and additional image is pinned by digest, so that mirroring with this file selects exactly the same images.", cfg.Source, workflow, t.UTC().Format(time.RFC3339))
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
