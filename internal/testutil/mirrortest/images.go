package mirrortest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
)

// CopyImage copies the manifest named ref (and everything it references) from
// src to dst, children first, as the copy engine does.
func CopyImage(t *testing.T, ctx context.Context, src endpoint.Source, dst endpoint.Destination, ref, dstRef string) endpoint.Manifest {
	t.Helper()
	m, err := src.Manifest(ctx, "repo", ref)
	if err != nil {
		t.Fatalf("Manifest(%s): %v", ref, err)
	}
	var parsed struct {
		Config    *endpoint.Descriptor  `json:"config"`
		Layers    []endpoint.Descriptor `json:"layers"`
		Manifests []endpoint.Descriptor `json:"manifests"`
	}
	if err := json.Unmarshal(m.Raw, &parsed); err != nil {
		t.Fatal(err)
	}
	for _, c := range parsed.Manifests {
		CopyImage(t, ctx, src, dst, c.Digest.String(), c.Digest.String())
	}
	blobs := parsed.Layers
	if parsed.Config != nil {
		blobs = append(blobs, *parsed.Config)
	}
	for _, b := range blobs {
		ok, err := dst.BlobExists(ctx, "repo", b)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			continue
		}
		rc, err := src.Blob(ctx, "repo", b)
		if err != nil {
			t.Fatalf("Blob(%s): %v", b.Digest, err)
		}
		err = dst.PutBlob(ctx, "repo", b, rc)
		rc.Close()
		if err != nil {
			t.Fatalf("PutBlob(%s): %v", b.Digest, err)
		}
	}
	if err := dst.PutManifest(ctx, "repo", dstRef, m); err != nil {
		t.Fatal(err)
	}
	return m
}

// DigestOf is the digest of an image or index, failing the test on error.
func DigestOf(t testing.TB, d interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	h, err := d.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// WriteLayout writes an empty OCI layout at dir and lets add fill it.
func WriteLayout(t testing.TB, dir string, add func(p layout.Path)) {
	t.Helper()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	add(p)
}

// ValidateImage checks that the manifest, config and layers of img agree: each
// layer's content matches its digest, size and diff ID.
func ValidateImage(img v1.Image) error {
	m, err := img.Manifest()
	if err != nil {
		return err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return err
	}
	raw, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	if h, _, _ := v1.SHA256(bytes.NewReader(raw)); h != m.Config.Digest {
		return fmt.Errorf("config digest %s, manifest says %s", h, m.Config.Digest)
	}
	if len(cfg.RootFS.DiffIDs) != len(m.Layers) {
		return fmt.Errorf("%d diff IDs for %d layers", len(cfg.RootFS.DiffIDs), len(m.Layers))
	}
	for i, d := range m.Layers {
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		h, n, err := v1.SHA256(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if h != d.Digest || n != d.Size {
			return fmt.Errorf("layer %d: content %s (%d bytes), manifest says %s (%d bytes)", i, h, n, d.Digest, d.Size)
		}
		urc, err := l.Uncompressed()
		if err != nil {
			return err
		}
		h, _, err = v1.SHA256(urc)
		urc.Close()
		if err != nil {
			return err
		}
		if h != cfg.RootFS.DiffIDs[i] {
			return fmt.Errorf("layer %d: diff ID %s, config says %s", i, h, cfg.RootFS.DiffIDs[i])
		}
	}
	return nil
}

// ValidateIndex checks every image of idx.
func ValidateIndex(idx v1.ImageIndex) error {
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		if err := ValidateImage(img); err != nil {
			return fmt.Errorf("manifest %s: %w", d.Digest, err)
		}
	}
	return nil
}
