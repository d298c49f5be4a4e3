package catalogimage

// Resolving a catalog (or bundle) reference: to a digest, the whole image
// copied into the workspace's layout (or streamed while it is copied, see
// catalog_stream.go), and the platform image picked from an index.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	ggcrlayout "github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/layout"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
	"github.com/airlock-mirror/airlock/mirror/transfer"
)

// splitOCIRef splits "PATH" or "PATH:TAG" of an oci:// reference. PATH wins when
// it is a layout directory as written (paths may contain ':').
func splitOCIRef(s string) (p, tag string, err error) {
	if s == "" {
		return "", "", fmt.Errorf("%w: oci:// needs the path of an OCI image layout directory", oci.ErrInvalidReference)
	}
	if layout.IsDir(s) {
		return filepath.Clean(s), "", nil
	}
	if i := strings.LastIndex(s, ":"); i > 0 && !strings.Contains(s[i+1:], "/") && layout.IsDir(s[:i]) {
		return filepath.Clean(s[:i]), s[i+1:], nil
	}
	return "", "", fmt.Errorf("%w: %s is not an OCI image layout directory (no index.json)", oci.ErrInvalidReference, location.OCI(s))
}

// openLayoutTop returns the descriptor and the image or index of the manifest
// tagged tag in the layout at p, or of its first manifest when tag is "".
func openLayoutTop(p, tag string) (v1.Descriptor, any, error) {
	idx, err := ggcrlayout.ImageIndexFromPath(p)
	if err != nil {
		return v1.Descriptor{}, nil, fmt.Errorf("reading the OCI layout %s: %w", p, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return v1.Descriptor{}, nil, fmt.Errorf("reading %s: %w", filepath.Join(p, "index.json"), err)
	}
	var desc *v1.Descriptor
	for i := range im.Manifests {
		d := &im.Manifests[i]
		if tag == "" || layout.RefNameMatches(d.Annotations[oci.AnnotationRefName], tag) {
			desc = d
			break
		}
	}
	if desc == nil {
		if tag != "" {
			return v1.Descriptor{}, nil, fmt.Errorf("the OCI layout %s has no manifest named %q (annotation %s)", p, tag, oci.AnnotationRefName)
		}
		return v1.Descriptor{}, nil, fmt.Errorf("the OCI layout %s holds no manifest", p)
	}
	switch {
	case desc.MediaType.IsIndex():
		ii, err := idx.ImageIndex(desc.Digest)
		return *desc, ii, err
	case desc.MediaType.IsImage():
		img, err := idx.Image(desc.Digest)
		return *desc, img, err
	}
	return v1.Descriptor{}, nil, fmt.Errorf("%w: manifest %s in %s has media type %q, neither an image nor an index", ErrNotFBCImage, desc.Digest, p, desc.MediaType)
}

// isAttestation reports whether an index entry is a build attestation (BuildKit
// stores them as image manifests of platform unknown/unknown).
func isAttestation(d v1.Descriptor) bool {
	return d.Annotations["vnd.docker.reference.type"] != "" ||
		(d.Platform != nil && d.Platform.OS == "unknown" && d.Platform.Architecture == "unknown")
}

// selectPlatformImage picks the image for want from a (possibly nested) index, or
// else the first image manifest.
func selectPlatformImage(idx v1.ImageIndex, want v1.Platform) (v1.Image, *v1.Platform, error) {
	type cand struct {
		idx  v1.ImageIndex
		desc v1.Descriptor
	}
	var first, match *cand
	var walk func(ii v1.ImageIndex, depth int) error
	walk = func(ii v1.ImageIndex, depth int) error {
		if depth > 4 {
			return fmt.Errorf("image indexes nested more than 4 deep")
		}
		im, err := ii.IndexManifest()
		if err != nil {
			return err
		}
		for _, d := range im.Manifests {
			if match != nil {
				return nil
			}
			switch {
			case d.MediaType.IsImage() && !isAttestation(d):
				c := &cand{ii, d}
				if first == nil {
					first = c
				}
				if d.Platform != nil && d.Platform.Satisfies(want) {
					match = c
				}
			case d.MediaType.IsIndex():
				child, err := ii.ImageIndex(d.Digest)
				if err != nil {
					return err
				}
				if err := walk(child, depth+1); err != nil {
					return err
				}
			}
		}
		return nil
	}
	if err := walk(idx, 0); err != nil {
		return nil, nil, err
	}
	c := match
	if c == nil {
		c = first
	}
	if c == nil {
		return nil, nil, fmt.Errorf("%w: the index holds no image manifest", ErrNotFBCImage)
	}
	img, err := c.idx.Image(c.desc.Digest)
	if err != nil {
		return nil, nil, fmt.Errorf("reading manifest %s: %w", c.desc.Digest, err)
	}
	return img, c.desc.Platform, nil
}

// platform is the platform to pick from a multi-arch image.
func (o FetchOptions) platform() v1.Platform {
	if o.Platform != nil {
		return *o.Platform
	}
	return v1.Platform{OS: "linux", Architecture: "amd64"}
}

// copyToLayout copies the catalog image repo@d (every platform) into the OCI
// layout dir with the copy engine, and opens it from there.
func copyToLayout(ctx context.Context, reg *registry.Client, log *slog.Logger, repo string, d digest.Digest, dir string) (any, error) {
	dst, err := layout.NewDestination(dir)
	if err != nil {
		return nil, fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	if err := copyCatalogImage(ctx, reg, dst, log, repo, d); err != nil {
		return nil, err
	}
	_, top, err := openLayoutTop(dir, layoutTag)
	return top, err
}

// layoutTag names the copied image in its layout's index.json.
const layoutTag = "catalog"

// copyCatalogImage copies repo@d (every platform) into the layout dst with the copy
// engine and tags it layoutTag.
func copyCatalogImage(ctx context.Context, reg *registry.Client, dst *layout.Destination, log *slog.Logger, repo string, d digest.Digest) error {
	p := reg.Policy()
	rep, err := transfer.Copy(ctx, reg, dst, []transfer.Job{{Source: repo, Digest: d, Dest: "catalog", Tags: []string{layoutTag}}},
		transfer.Options{Retry: &p, Logger: log})
	if err != nil {
		if rep != nil && len(rep.Images) == 1 && rep.Images[0].Err != "" {
			return fmt.Errorf("copying the catalog image into %s: %s", dst.Source().Dir(), rep.Images[0].Err)
		}
		return fmt.Errorf("copying the catalog image into %s: %w", dst.Source().Dir(), err)
	}
	return nil
}

// resolveImage resolves ref (a registry reference or "oci://PATH") to a
// digest; for a registry, the whole image (every platform) is first copied
// with the copy engine into an OCI layout under workDir. It picks the platform
// image and returns the key of the work folder. what names the image in errors
// ("catalog", "bundle").
//
// With stream set, a registry image not yet in the layout is copied in the
// background: the returned Image reads its config and layers as the copy
// writes them, and the caller must settle (or stop the copy) before it
// returns.
func resolveImage(ctx context.Context, ref string, workDir string, o FetchOptions, what string, stream bool) (*Fetched, string, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	want := o.platform()
	fc := &Fetched{Ref: ref}
	var top any // v1.Image or v1.ImageIndex
	var key string
	if path, ok := location.CutLayout(ref); ok {
		p, tag, err := splitOCIRef(path)
		if err != nil {
			return nil, "", err
		}
		fc.LayoutPath = p
		desc, t, err := openLayoutTop(p, tag)
		if err != nil {
			return nil, "", fmt.Errorf("%s %s: %w", what, ref, err)
		}
		top, fc.Digest, fc.MediaType = t, digest.Digest(desc.Digest.String()), desc.MediaType
		sum := sha256.Sum256([]byte(p))
		key = "oci_" + catalogDirName(filepath.Base(p)) + "_" + hex.EncodeToString(sum[:6])
	} else {
		r, err := oci.ParseReference(ref)
		if err != nil {
			return nil, "", fmt.Errorf("%s: %w", what, err) // the error names the reference, credentials hidden
		}
		if r.DefaultedTag {
			// As in an ImageSetConfiguration: a catalog is never silently ":latest".
			return nil, "", fmt.Errorf("%s %s has neither a tag nor a digest; add one, e.g. %s:v4.18 or %s@sha256:<digest>", what, ref, ref, ref)
		}
		fc.Source = r
		reg := o.Registry
		if reg == nil {
			reg = registry.New(registry.Options{Logger: o.Logger})
		}
		if err := reg.Probe(ctx, r.Repository(), false); err != nil {
			return nil, "", fmt.Errorf("%s %s: %w", what, ref, err)
		}
		m, err := reg.Manifest(ctx, r.Repository(), r.Identifier())
		if err != nil {
			return nil, "", fmt.Errorf("%s %s: %w", what, ref, err)
		}
		fc.Digest, fc.MediaType = m.Digest, types.MediaType(m.MediaType)
		if r.Digest != "" && r.Digest != fc.Digest {
			return nil, "", fmt.Errorf("%s %s: registry returned manifest %s, not the requested digest", what, ref, fc.Digest)
		}
		key = catalogDirName(r.Repository())
		if !oci.IsManifestType(m.MediaType) {
			return nil, "", fmt.Errorf("%s %s: %w: manifest media type %q is neither an image nor an index", what, ref, ErrNotFBCImage, m.MediaType)
		}
		fc.ImageLayout = filepath.Join(workDir, what+"s", key, fc.Digest.Encoded(), "image")
		if stream && !layoutHolds(ctx, fc.ImageLayout, fc.Digest) {
			if fc.stream, err = newStreamSource(ctx, reg, r.Repository(), fc.ImageLayout); err == nil {
				top, err = fc.stream.top(m)
			}
		} else {
			top, err = copyToLayout(ctx, reg, o.Logger, r.Repository(), fc.Digest, fc.ImageLayout)
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s %s: %w", what, ref, err)
		}
	}
	if err := fc.Digest.Validate(); err != nil {
		return nil, "", fmt.Errorf("%s %s: invalid digest %q: %w", what, ref, fc.Digest, err)
	}
	log.Debug(what+" resolved", what, ref, "digest", fc.Digest)

	if err := fc.choose(top, want); err != nil {
		return nil, "", fmt.Errorf("%s %s@%s: %w", what, ref, fc.Digest, err)
	}
	if fc.stream != nil {
		fc.copy = fc.stream.start(log, fc.Digest)
	}
	return fc, key, nil
}

// choose sets Image (the platform image for want), Index and Platform from
// the top-level index or image.
func (fc *Fetched) choose(top any, want v1.Platform) error {
	switch t := top.(type) {
	case v1.ImageIndex:
		img, plat, err := selectPlatformImage(t, want)
		if err != nil {
			return err
		}
		fc.Index, fc.Image, fc.Platform = t, img, plat
	case v1.Image:
		fc.Image = t
	}
	return nil
}

// layoutHolds reports whether the layout dir holds image d, copied whole.
func layoutHolds(ctx context.Context, dir string, d digest.Digest) bool {
	if !layout.IsDir(dir) {
		return false
	}
	dst, err := layout.NewDestination(dir) // dir is a layout: nothing is written
	if err != nil {
		return false
	}
	ok, err := dst.ManifestExists(ctx, "", layoutTag, d)
	return err == nil && ok
}

// settle waits for a streamed fetch's copy (see catalog_stream.go) and
// reopens the image from the complete layout; it does nothing otherwise. It
// reports whether every byte read while streaming came from the copy's one
// committed attempt (clean), so that a failure while reading was the content's,
// not the transfer's.
func (fc *Fetched) settle(want v1.Platform) (clean bool, err error) {
	if fc.copy == nil {
		return true, nil
	}
	err = fc.copy.wait()
	fc.stream.closeUnread()
	clean = fc.stream.clean()
	fc.copy, fc.stream = nil, nil
	if err != nil {
		return false, err
	}
	_, top, err := openLayoutTop(fc.ImageLayout, layoutTag)
	if err != nil {
		return false, err
	}
	return clean, fc.choose(top, want)
}
