package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/legacy"
	"github.com/airlock-mirror/airlock/fbc/validate"
	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/mirror/catalogimage"
)

// LoadBundle renders the bundle src: an unpacked bundle folder (manifests/ and
// metadata/; no image) or a bundle image (a registry reference or
// oci://PATH), fetched through mirror's one fetch path into workDir (a
// temporary folder when empty). The image of the rendered bundle is src as
// given, as opm render writes it; pinned is its reference by digest ("" for a
// folder).
func LoadBundle(ctx context.Context, src, workDir string, fetch catalogimage.FetchOptions) (info *legacy.BundleInfo, pinned string, err error) {
	switch legacy.Detect(src) {
	case legacy.KindBundleDir:
		info, err := legacy.RenderBundleDir(src, "")
		return info, "", err
	case legacy.NotLocal:
	default:
		return nil, "", fmt.Errorf("%s: %w: a folder must hold manifests/ and metadata/ (an unpacked bundle image)", src, legacy.ErrNotBundle)
	}
	if workDir == "" {
		tmp, err := os.MkdirTemp("", "airlock-bundle-")
		if err != nil {
			return nil, "", err
		}
		defer os.RemoveAll(tmp)
		workDir = tmp
	}
	fb, err := catalogimage.FetchBundle(ctx, src, workDir, fetch)
	if err != nil {
		return nil, "", err
	}
	info, err = legacy.RenderBundleDir(fb.Dir, src)
	if err != nil {
		return nil, "", fmt.Errorf("bundle image %s: %w", src, err)
	}
	return info, fb.PinnedRef, nil
}

// RenderOptions is `airlock catalog render`.
type RenderOptions struct {
	// Sources are rendered in order into one stream: file-based catalog
	// folders, SQLite index databases, package-manifest folders, unpacked
	// bundles, and images (a bundle image gives its olm.bundle; a catalog image
	// its whole catalog).
	Sources []string
	Format  string
	WorkDir string
	Fetch   catalogimage.FetchOptions
}

// Render writes every source of o, converted to file-based catalog documents,
// to w.
func Render(ctx context.Context, o RenderOptions, w io.Writer) error {
	log := o.Fetch.Logger
	for _, src := range o.Sources {
		if legacy.Detect(src) != legacy.NotLocal {
			if err := legacy.RenderLocal(ctx, src, w, o.Format, log); err != nil {
				return err
			}
			continue
		}
		if err := renderImage(ctx, src, o, w); err != nil {
			return err
		}
	}
	return nil
}

// renderImage renders a bundle image, or else a catalog image.
func renderImage(ctx context.Context, src string, o RenderOptions, w io.Writer) error {
	work := o.WorkDir
	if work == "" {
		tmp, err := os.MkdirTemp("", "airlock-render-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		work = tmp
	}
	info, _, err := LoadBundle(ctx, src, work, o.Fetch)
	if err == nil {
		return legacy.RenderBundle(ctx, info, w, o.Format)
	}
	if !errors.Is(err, catalogimage.ErrNotBundleImage) {
		return err
	}
	dir, cleanup, cerr := CatalogDir(ctx, src, work, o.Fetch)
	if cerr != nil {
		return fmt.Errorf("%s is neither a bundle image (%v) nor a catalog image (%w)", src, err, cerr)
	}
	defer cleanup()
	return fbc.RenderDir(ctx, dir, w, o.Format, o.Fetch.Logger)
}

// AddBundleOptions is `airlock catalog add`.
type AddBundleOptions struct {
	// Bundle is an unpacked bundle folder or a bundle image reference.
	Bundle string
	// Catalog is the file-based catalog folder to add it to.
	Catalog string
	// OutDir, when set, receives the result (it must be empty or absent) and
	// Catalog is left alone; otherwise Catalog is replaced by the result.
	OutDir string
	// Format of the written catalog (json or yaml).
	Format string
	// Add says where the bundle goes.
	Add     legacy.AddOptions
	WorkDir string
	Fetch   catalogimage.FetchOptions
}

// AddBundleResult is what AddBundle did.
type AddBundleResult struct {
	*legacy.AddResult
	// Image is the bundle image recorded in the catalog ("" for a folder);
	// Dir the folder written.
	Image string
	Dir   string
	// Counts are those of the written catalog.
	Counts fbc.CatalogCounts
}

// AddBundle adds a bundle (folder or image) to a file-based catalog folder:
// the bundle is rendered as opm render does (an image is recorded by digest),
// added to its package and to the channel asked for (both created when
// missing), the result validated with every opm validate rule and written
// deterministically (one <package>/catalog.json per package).
func AddBundle(ctx context.Context, o AddBundleOptions) (*AddBundleResult, error) {
	log := o.Fetch.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if legacy.Detect(o.Catalog) != legacy.KindFBC {
		return nil, fmt.Errorf("%s: not a file-based catalog folder (for a new catalog, create an empty folder; convert an index database or package manifests first with `airlock catalog render SRC --output-dir DIR`)", o.Catalog)
	}
	info, pinned, err := LoadBundle(ctx, o.Bundle, o.WorkDir, o.Fetch)
	if err != nil {
		return nil, err
	}
	if pinned != "" {
		// Record the image by digest: the catalog then names exactly what was
		// rendered, whatever the tag points at later.
		info.Bundle.Image = pinned
		for i, r := range info.Bundle.RelatedImages {
			if r.Image == o.Bundle {
				info.Bundle.RelatedImages[i].Image = pinned
			}
		}
	}
	cat, err := fbc.LoadDir(ctx, o.Catalog, fbc.LoadOptions{ElideHeavy: true, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", o.Catalog, err)
	}
	if err := validate.Catalog(cat); err != nil {
		return nil, fmt.Errorf("catalog %s is not valid before the change (fix it first; `airlock catalog validate` lists the problems): %w", o.Catalog, err)
	}
	res, err := legacy.AddBundle(cat, info, o.Add)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", o.Catalog, err)
	}
	out := &AddBundleResult{AddResult: res, Image: info.Bundle.Image}
	if o.OutDir != "" {
		if err := fbc.Write(ctx, cat, o.OutDir, fbc.WriteOptions{Format: o.Format}); err != nil {
			return nil, err
		}
		out.Dir = o.OutDir
	} else {
		if err := replaceDir(ctx, cat, o.Catalog, o.Format); err != nil {
			return nil, err
		}
		out.Dir = o.Catalog
	}
	out.Counts = fbc.CountCatalog(cat)
	return out, nil
}

// replaceDir writes cat next to dir, then swaps it in: a failure leaves dir as
// it was.
func replaceDir(ctx context.Context, cat *fbc.Catalog, dir, format string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	parent := filepath.Dir(abs)
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(abs)+".new-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := fbc.Write(ctx, cat, filepath.Join(tmp, "catalog"), fbc.WriteOptions{Format: format}); err != nil {
		return err
	}
	old := filepath.Join(tmp, "old")
	if err := os.Rename(abs, old); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(tmp, "catalog"), abs); err != nil {
		// Put the original back.
		if rerr := os.Rename(old, abs); rerr != nil {
			return fmt.Errorf("%w; and restoring %s failed: %v (it is in %s)", err, abs, rerr, old)
		}
		return err
	}
	atomicfile.SyncDir(parent)
	return nil
}

// String is one line about what AddBundle did.
func (r *AddBundleResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "added bundle %s to channel %s of package %s", r.Bundle, r.Channel, r.Package)
	var notes []string
	if r.NewPackage {
		notes = append(notes, "new package")
	}
	if r.NewChannel {
		notes = append(notes, "new channel")
	}
	if r.Replaces != "" {
		notes = append(notes, "replaces "+r.Replaces)
	}
	if len(r.Skips) > 0 {
		notes = append(notes, "skips "+strings.Join(r.Skips, ","))
	}
	if r.SkipRange != "" {
		notes = append(notes, "skipRange "+r.SkipRange)
	}
	if len(notes) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(notes, "; "))
	}
	return b.String()
}
