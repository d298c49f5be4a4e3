package helm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/Masterminds/semver/v3"
	"github.com/opencontainers/go-digest"
	"sigs.k8s.io/yaml"
)

// ChartLayer reads a chart artifact's manifest (as `helm push` makes it)
// and returns the digest and size of its chart archive layer.
func ChartLayer(manifest []byte, ref string) (digest.Digest, int64, error) {
	var m struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(manifest, &m); err != nil {
		return "", 0, fmt.Errorf("chart %s: manifest: %w", ref, err)
	}
	if m.Config.MediaType != ConfigMediaType {
		return "", 0, fmt.Errorf("chart %s is not a Helm chart (config media type %q, want %s)", ref, m.Config.MediaType, ConfigMediaType)
	}
	for _, l := range m.Layers {
		if l.MediaType == ChartLayerMediaType || l.MediaType == "application/tar+gzip" {
			if err := l.Digest.Validate(); err != nil {
				return "", 0, fmt.Errorf("chart %s: layer digest: %w", ref, err)
			}
			return l.Digest, l.Size, nil
		}
	}
	return "", 0, fmt.Errorf("chart %s has no chart layer (%s)", ref, ChartLayerMediaType)
}

// IndexEntry is one chart version for WriteIndex.
type IndexEntry struct {
	Chart *Chart
	// URL is where the site serves the archive (relative to the index).
	URL string
}

// WriteIndex makes the index.yaml of entries, as helm repo index does, for
// sites that serve the mirrored charts over HTTP.
func WriteIndex(entries []IndexEntry) ([]byte, error) {
	idx := struct {
		APIVersion string                      `json:"apiVersion"`
		Entries    map[string][]map[string]any `json:"entries"`
	}{APIVersion: "v1", Entries: map[string][]map[string]any{}}
	for _, e := range entries {
		var md map[string]any
		b, err := e.Chart.Metadata()
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &md); err != nil {
			return nil, err
		}
		md["urls"] = []string{e.URL}
		md["digest"] = ArchiveDigest(e.Chart.Archive)
		idx.Entries[e.Chart.Name()] = append(idx.Entries[e.Chart.Name()], md)
	}
	return yaml.Marshal(idx)
}

// TagIndex is an index of chart's versions made from the tags of its OCI
// repository: each tag that is a semantic version, "_" read as "+" (Helm
// writes "+" as "_" in tags), so that Index.Select chooses among them as
// among the versions of a chart repository's index.
func TagIndex(chart string, tags []string) *Index {
	idx := &Index{APIVersion: "v1", Entries: map[string][]*ChartVersion{}}
	for _, t := range tags {
		v := strings.ReplaceAll(t, "_", "+")
		if _, err := semver.StrictNewVersion(strings.TrimPrefix(v, "v")); err != nil {
			continue // latest, a digest tag, a signature: not a chart version
		}
		idx.Entries[chart] = append(idx.Entries[chart], &ChartVersion{Name: chart, Version: v})
	}
	return idx
}
