package helm

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/opencontainers/go-digest"
)

// Helm's media types for a chart stored in an OCI registry.
const (
	ConfigMediaType     = "application/vnd.cncf.helm.config.v1+json"
	ChartLayerMediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
	ManifestMediaType   = "application/vnd.oci.image.manifest.v1+json"
)

// Artifact is a chart written as an OCI artifact in an OCI image layout.
type Artifact struct {
	// LayoutDir is the OCI image layout holding it.
	LayoutDir string
	// Digest and MediaType are the manifest's.
	Digest    digest.Digest
	MediaType string
	// Tag is the chart version as a tag ("+" is "_", as Helm pushes it).
	Tag string
	// Size is the bytes of the manifest, config and chart archive.
	Size int64
}

// Tag is version as an OCI tag, as Helm writes it ("+" becomes "_").
func Tag(version string) string { return strings.ReplaceAll(version, "+", "_") }

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      digest.Digest     `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// WriteArtifact writes c into dir (created, or replaced) as the OCI artifact
// `helm push` makes: Chart.yaml as JSON as the config, the archive as the one
// layer. The same chart always gives the same digest.
func WriteArtifact(c *Chart, dir string) (*Artifact, error) {
	cfg, err := c.Metadata()
	if err != nil {
		return nil, err
	}
	layer := descriptor{MediaType: ChartLayerMediaType, Digest: digest.FromBytes(c.Archive), Size: int64(len(c.Archive))}
	config := descriptor{MediaType: ConfigMediaType, Digest: digest.FromBytes(cfg), Size: int64(len(cfg))}
	man, err := json.Marshal(struct {
		SchemaVersion int               `json:"schemaVersion"`
		MediaType     string            `json:"mediaType"`
		Config        descriptor        `json:"config"`
		Layers        []descriptor      `json:"layers"`
		Annotations   map[string]string `json:"annotations"`
	}{2, ManifestMediaType, config, []descriptor{layer}, map[string]string{
		"org.opencontainers.image.title":   c.Name(),
		"org.opencontainers.image.version": c.Version(),
	}})
	if err != nil {
		return nil, err
	}
	tag := Tag(c.Version())
	md := digest.FromBytes(man)
	idx, err := json.Marshal(struct {
		SchemaVersion int          `json:"schemaVersion"`
		Manifests     []descriptor `json:"manifests"`
	}{2, []descriptor{{MediaType: ManifestMediaType, Digest: md, Size: int64(len(man)), Annotations: map[string]string{"org.opencontainers.image.ref.name": tag}}}})
	if err != nil {
		return nil, err
	}
	tmp := dir + ".tmp"
	_ = os.RemoveAll(tmp)
	blobs := filepath.Join(tmp, "blobs", "sha256")
	if err := os.MkdirAll(blobs, 0o755); err != nil {
		return nil, err
	}
	files := map[string][]byte{
		filepath.Join(tmp, "oci-layout"):              []byte(`{"imageLayoutVersion":"1.0.0"}`),
		filepath.Join(tmp, "index.json"):              idx,
		filepath.Join(blobs, md.Encoded()):            man,
		filepath.Join(blobs, config.Digest.Encoded()): cfg,
		filepath.Join(blobs, layer.Digest.Encoded()):  c.Archive,
	}
	for p, b := range files {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			return nil, err
		}
	}
	_ = os.RemoveAll(dir)
	if err := os.Rename(tmp, dir); err != nil {
		return nil, fmt.Errorf("chart %s %s: %w", c.Name(), c.Version(), err)
	}
	return &Artifact{LayoutDir: dir, Digest: md, MediaType: ManifestMediaType, Tag: tag, Size: int64(len(man) + len(cfg) + len(c.Archive))}, nil
}

// ArchiveDigest is the sha256 of a chart archive, as an index gives it.
func ArchiveDigest(data []byte) string {
	s := sha256.Sum256(data)
	return fmt.Sprintf("%x", s[:])
}
