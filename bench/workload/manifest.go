package workload

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/opencontainers/go-digest"
)

// Building the manifests and indexes of the workload.

type descriptor struct {
	MediaType string            `json:"mediaType"`
	Digest    digest.Digest     `json:"digest"`
	Size      int64             `json:"size"`
	Platform  *platform         `json:"platform,omitempty"`
	Annot     map[string]string `json:"annotations,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// image builds an image manifest (and its config) over layers, registering
// its blobs.
func (w *Workload) image(layers []*Blob, lmt, cmt, mmt, arch string, labels map[string]string, pl string) (*Manifest, error) {
	diffIDs := make([]digest.Digest, len(layers))
	for i, l := range layers {
		diffIDs[i] = l.diffID
	}
	cfg := map[string]any{
		"architecture": arch,
		"os":           "linux",
		"created":      time.Unix(0, 0).UTC().Format(time.RFC3339),
		"config":       map[string]any{"Labels": labels, "Env": []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": diffIDs},
	}
	return w.imageWithConfig(layers, lmt, cmt, mmt, cfg, pl)
}

func (w *Workload) imageWithConfig(layers []*Blob, lmt, cmt, mmt string, cfg map[string]any, pl string) (*Manifest, error) {
	cb, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	config := w.add(&Blob{Digest: digest.FromBytes(cb), Size: int64(len(cb)), MediaType: cmt, data: cb})
	m := struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Config        descriptor   `json:"config"`
		Layers        []descriptor `json:"layers"`
	}{SchemaVersion: 2, MediaType: mmt, Config: descriptor{MediaType: cmt, Digest: config.Digest, Size: config.Size}}
	var ls []*Blob
	for _, l := range layers {
		l = w.add(l)
		if l.MediaType == "" {
			l.MediaType = lmt
		}
		ls = append(ls, l)
		m.Layers = append(m.Layers, descriptor{MediaType: lmt, Digest: l.Digest, Size: l.Size})
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &Manifest{Digest: digest.FromBytes(raw), MediaType: mmt, Raw: raw, Platform: pl, Config: config, Layers: ls}, nil
}

func (w *Workload) add(b *Blob) *Blob {
	if old, ok := w.blobs[b.Digest]; ok {
		return old
	}
	w.blobs[b.Digest] = b
	return b
}

func index(kids []*Manifest, oci bool) (*Manifest, error) {
	mt := MediaDockerList
	if oci {
		mt = MediaOCIIndex
	}
	m := struct {
		SchemaVersion int          `json:"schemaVersion"`
		MediaType     string       `json:"mediaType"`
		Manifests     []descriptor `json:"manifests"`
	}{SchemaVersion: 2, MediaType: mt}
	for _, k := range kids {
		os, arch, _ := strings.Cut(k.Platform, "/")
		m.Manifests = append(m.Manifests, descriptor{MediaType: k.MediaType, Digest: k.Digest, Size: int64(len(k.Raw)), Platform: &platform{OS: os, Architecture: arch}})
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &Manifest{Digest: digest.FromBytes(raw), MediaType: mt, Raw: raw, Children: kids}, nil
}
