package workspace

import (
	"time"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
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

// WritePinnedConfig writes the pinned configuration data of a run at t, at
// once (never half-written), and returns its path.
func WritePinnedConfig(d Dir, data []byte, t time.Time) (string, error) {
	p := d.PinnedConfigPath(t)
	return p, atomicfile.WriteFile(p, data, 0o644)
}
