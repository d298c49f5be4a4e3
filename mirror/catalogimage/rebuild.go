package catalogimage

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"

	"sort"
	"strings"
	"time"

	"github.com/airlock-mirror/airlock/mirror/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	ggcrlayout "github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/match"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"
)

// DefaultCacheDir is where `opm generate dockerfile` images keep their
// pre-built serve cache; a rebuilt catalog removes it (it no longer matches).
const DefaultCacheDir = "/tmp/cache"

// rebuildEpoch is the modification time of every entry of the pruned-catalog layer.
var rebuildEpoch = time.Unix(0, 0).UTC()

// RebuildOptions tunes Rebuild.
type RebuildOptions struct {
	// LayoutDir is the OCI image layout the rebuilt catalog is written to. It is
	// created if missing; an existing layout is reused (blobs it already holds
	// are not written again) and its index.json is updated.
	LayoutDir string
	// Tag names the rebuilt manifest in the layout's index.json (annotation
	// org.opencontainers.image.ref.name). Default: the source tag, else "latest".
	Tag string
	// Logger receives progress; nil discards it.
	Logger *slog.Logger
}

// Rebuilt is a catalog image rebuilt around a pruned catalog.
type Rebuilt struct {
	// Digest and MediaType describe the top-level manifest (an index when the
	// source catalog was multi-arch).
	Digest    digest.Digest
	MediaType types.MediaType
	Size      int64
	// LayoutDir and Tag locate it in the OCI layout (see layout.NewSource).
	LayoutDir string
	Tag       string
	// Image is set for a single-image catalog, Index for a multi-arch one. Both
	// read from the layout.
	Image v1.Image
	Index v1.ImageIndex
	// LayerDigest is the digest of the layer holding the pruned catalog.
	LayerDigest digest.Digest
}

// Rebuild builds a new catalog image from base (the catalog fetched by
// Fetch) and the pruned catalog in prunedDir: every image of base (every
// platform of a multi-arch index) gets one more layer that replaces the catalog
// folder (an opaque whiteout plus the pruned files) and deletes the stale opm
// serve cache (/tmp/cache and any --cache-dir of the command), and its command
// becomes `serve <folder>` without a cache, so opm builds its cache at start-up.
// Labels are kept. The layer is deterministic (sorted entries, fixed times,
// owner 0:0, modes 0644/0755, gzip without timestamp), and so is the config
// (creation time and history time are the base image's), so the same base and
// pruned catalog always give the same digest.
//
// The result is written to opts.LayoutDir, from where layout.NewSource serves it.
// A catalog mirrored with `full: true` and no packages is not rebuilt: callers
// copy the original image.
func Rebuild(ctx context.Context, base *Fetched, prunedDir string, opts RebuildOptions) (*Rebuilt, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if base == nil || base.Image == nil || base.Label == "" {
		return nil, errors.New("rebuild catalog: base catalog not fetched (use Fetch first)")
	}
	if opts.LayoutDir == "" {
		return nil, fmt.Errorf("rebuild catalog %s: no layout directory given", base.Ref)
	}
	if st, err := os.Stat(prunedDir); err != nil || !st.IsDir() {
		return nil, fmt.Errorf("rebuild catalog %s: pruned catalog folder %s: not a directory", base.Ref, prunedDir)
	}
	tag := opts.Tag
	if tag == "" {
		tag = base.Source.Tag
	}
	if tag == "" {
		tag = "latest"
	}
	lp, err := openOrCreateLayout(opts.LayoutDir)
	if err != nil {
		return nil, fmt.Errorf("rebuild catalog %s: %w", base.Ref, err)
	}

	baseCfg, err := base.Image.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("rebuild catalog %s: reading the config: %w", base.Ref, err)
	}
	wipe := cacheDirs(baseCfg, base.Label)
	if base.Database != "" {
		// A SQLite-based catalog becomes a file-based one: its database goes.
		wipe = append(wipe, base.Database)
		sort.Strings(wipe)
	}
	layer, err := writeCatalogLayer(ctx, opts.LayoutDir, prunedDir, base.Label, wipe)
	if err != nil {
		return nil, fmt.Errorf("rebuild catalog %s: building the catalog layer from %s: %w", base.Ref, prunedDir, err)
	}
	log.Debug("pruned catalog layer built", "catalog", base.Ref, "digest", layer.digest)

	b := &rebuilder{op: "rebuild catalog", label: base.Label, database: base.Database, wipe: wipe, catalogLayer: layer, layers: map[types.MediaType]v1.Layer{}, log: log, ref: base.Ref}
	return b.write(ctx, base, lp, opts.LayoutDir, tag)
}

// write gives every image of base the rebuilder's layer and writes the result
// into the layout lp (at dir) under tag, unless it already holds it whole.
func (b *rebuilder) write(ctx context.Context, base *Fetched, lp ggcrlayout.Path, dir, tag string) (*Rebuilt, error) {
	log := b.log
	layerDigest := digest.Digest(b.catalogLayer.digest.String())
	out := &Rebuilt{LayoutDir: dir, Tag: tag, LayerDigest: layerDigest}
	var top mutate.Appendable
	if base.Index != nil {
		idx, err := b.index(ctx, base.Index, 0)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", b.op, base.Ref, err)
		}
		top = idx
	} else {
		img, err := b.image(base.Image)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", b.op, base.Ref, err)
		}
		top = img
	}
	d, err := top.Digest()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", b.op, base.Ref, err)
	}
	out.Digest = digest.Digest(d.String())

	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !layoutHas(lp, d, tag) || layoutComplete(lp, top) != nil {
		log.Info("writing the built image", "image", base.Ref, "operation", b.op, "digest", out.Digest, "layout", dir)
		m := match.Annotation(oci.AnnotationRefName, tag)
		ann := ggcrlayout.WithAnnotations(map[string]string{oci.AnnotationRefName: tag})
		switch t := top.(type) {
		case v1.ImageIndex:
			err = lp.ReplaceIndex(t, m, ann)
		case v1.Image:
			err = lp.ReplaceImage(t, m, ann)
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: writing the OCI layout %s: %w", b.op, base.Ref, dir, err)
		}
		if err := removeUnreferencedBlobs(lp); err != nil {
			log.Warn("could not remove stale blobs from the layout", "layout", dir, "error", err)
		}
	}

	if err := readBack(lp, base.Index != nil, out); err != nil {
		return nil, fmt.Errorf("%s %s: %w", b.op, base.Ref, err)
	}
	return out, nil
}

// readBack fills out.Image or out.Index (with media type and size) from the
// layout, by out.Digest: objects independent of the base.
func readBack(lp ggcrlayout.Path, isIndex bool, out *Rebuilt) error {
	h, err := v1.NewHash(out.Digest.String())
	if err != nil {
		return err
	}
	ii, err := lp.ImageIndex()
	if err != nil {
		return err
	}
	if isIndex {
		out.Index, err = ii.ImageIndex(h)
		if err == nil {
			out.MediaType, err = out.Index.MediaType()
		}
		if err == nil {
			out.Size, err = out.Index.Size()
		}
	} else {
		out.Image, err = ii.Image(h)
		if err == nil {
			out.MediaType, err = out.Image.MediaType()
		}
		if err == nil {
			out.Size, err = out.Image.Size()
		}
	}
	if err != nil {
		return fmt.Errorf("reading back %s from %s: %w", out.Digest, lp, err)
	}
	return nil
}

// OpenRebuilt reopens a catalog image that Rebuild wrote earlier
// from base into layoutDir under tag, by its digest: the layout must hold it
// under that tag with every blob it references, at the right size; otherwise
// it returns an error (and the caller rebuilds).
func OpenRebuilt(base *Fetched, layoutDir, tag string, d, layerDigest digest.Digest) (*Rebuilt, error) {
	if base == nil || base.Image == nil {
		return nil, errors.New("reopen catalog: base catalog not fetched")
	}
	h, err := v1.NewHash(d.String())
	if err != nil {
		return nil, err
	}
	lp := ggcrlayout.Path(layoutDir)
	if !layoutHas(lp, h, tag) {
		return nil, fmt.Errorf("reopen catalog: %s holds no %s tagged %s", layoutDir, d, tag)
	}
	out := &Rebuilt{LayoutDir: layoutDir, Tag: tag, Digest: d, LayerDigest: layerDigest}
	if err := readBack(lp, base.Index != nil, out); err != nil {
		return nil, fmt.Errorf("reopen catalog: %w", err)
	}
	var top any = out.Image
	if out.Index != nil {
		top = out.Index
	}
	if err := layoutComplete(lp, top); err != nil {
		return nil, fmt.Errorf("reopen catalog: %w", err)
	}
	return out, nil
}

// rebuilder rebuilds the images of one catalog with one shared layer.
type rebuilder struct {
	// op names the operation in errors ("rebuild catalog").
	op  string
	ref string
	// cmd, when set, is the command of every image built (AddLayer): the
	// images need not be catalogs.
	cmd []string
	// history is the created-by text of the layer's history entry (AddLayer).
	history      string
	label        string
	database     string // the database of a SQLite-based base, else ""
	wipe         []string
	catalogLayer *catalogLayer
	layers       map[types.MediaType]v1.Layer
	log          *slog.Logger
}

func (b *rebuilder) layer(mt types.MediaType) (v1.Layer, error) {
	if l, ok := b.layers[mt]; ok {
		return l, nil
	}
	l, err := b.catalogLayer.as(mt)
	if err != nil {
		return nil, err
	}
	b.layers[mt] = l
	return l, nil
}

func (b *rebuilder) index(ctx context.Context, idx v1.ImageIndex, depth int) (v1.ImageIndex, error) {
	if depth > 4 {
		return nil, errors.New("image indexes nested more than 4 deep")
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	mt, err := idx.MediaType()
	if err != nil {
		return nil, err
	}
	out := mutate.IndexMediaType(empty.Index, mt)
	if len(im.Annotations) > 0 {
		out = mutate.Annotations(out, im.Annotations).(v1.ImageIndex)
	}
	var adds []mutate.IndexAddendum
	for _, d := range im.Manifests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		desc := v1.Descriptor{MediaType: d.MediaType, Platform: d.Platform, Annotations: d.Annotations, URLs: d.URLs}
		switch {
		case d.MediaType.IsIndex():
			child, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("reading index %s: %w", d.Digest, err)
			}
			nc, err := b.index(ctx, child, depth+1)
			if err != nil {
				return nil, err
			}
			adds = append(adds, mutate.IndexAddendum{Add: nc, Descriptor: desc})
		case d.MediaType.IsImage() && !isAttestation(d):
			img, err := idx.Image(d.Digest)
			if err != nil {
				return nil, fmt.Errorf("reading manifest %s: %w", d.Digest, err)
			}
			ni, err := b.image(img)
			if err != nil {
				return nil, fmt.Errorf("manifest %s (%s): %w", d.Digest, catalogPlatformString(d.Platform), err)
			}
			adds = append(adds, mutate.IndexAddendum{Add: ni, Descriptor: desc})
		default:
			// Attestations and other artifacts describe the original images; they
			// do not apply to the rebuilt ones.
			b.log.Debug("dropping a non-image entry of the catalog index", "catalog", b.ref, "digest", d.Digest, "mediaType", d.MediaType)
		}
	}
	if len(adds) == 0 {
		return nil, errors.New("the index holds no image to rebuild")
	}
	return mutate.AppendManifests(out, adds...), nil
}

func catalogPlatformString(p *v1.Platform) string {
	if p == nil {
		return "no platform"
	}
	return p.String()
}

// image rebuilds one single-platform catalog image.
func (b *rebuilder) image(img v1.Image) (v1.Image, error) {
	mt, err := img.MediaType()
	if err != nil {
		return nil, err
	}
	lmt := types.OCILayer
	if mt == types.DockerManifestSchema2 {
		lmt = types.DockerLayer
	}
	l, err := b.layer(lmt)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("reading the config: %w", err)
	}
	if b.cmd == nil {
		if lbl, db, err := catalogLabel(cfg); err != nil {
			return nil, err
		} else if lbl != b.label || db != b.database {
			return nil, fmt.Errorf("label %s=%s (database %q) differs from the %s (database %q) of the image the catalog was read from", ConfigsLabel, lbl, db, b.label, b.database)
		}
	}
	created := cfg.Created
	if created.IsZero() {
		created = v1.Time{Time: rebuildEpoch}
	}
	what, comment := "replace "+b.label+" with the pruned catalog", "airlock catalog rebuild"
	if len(b.wipe) > 0 {
		what += ", remove " + strings.Join(b.wipe, ", ")
	}
	if b.cmd != nil {
		what, comment = b.history, "airlock image build"
	}
	out, err := mutate.Append(img, mutate.Addendum{
		Layer:     l,
		MediaType: lmt,
		History: v1.History{
			Created:   created,
			CreatedBy: "airlock: " + what,
			Comment:   comment,
		},
	})
	if err != nil {
		return nil, err
	}
	ncfg, err := out.ConfigFile()
	if err != nil {
		return nil, err
	}
	ncfg = ncfg.DeepCopy()
	ncfg.Created = created
	if b.cmd != nil {
		ncfg.Config.Entrypoint, ncfg.Config.Cmd = nil, b.cmd
		return mutate.ConfigFile(out, ncfg)
	}
	ep, cmd, err := serveCommand(ncfg.Config, b.label)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.ref, err)
	}
	ncfg.Config.Entrypoint, ncfg.Config.Cmd = ep, cmd
	if b.database != "" {
		// Labelled as the file-based catalog it now is.
		labels := map[string]string{}
		for k, v := range ncfg.Config.Labels {
			labels[k] = v
		}
		delete(labels, DatabaseLabel)
		labels[ConfigsLabel] = b.label
		ncfg.Config.Labels = labels
	}
	return mutate.ConfigFile(out, ncfg)
}

// serveCommand is the entrypoint and command of a rebuilt catalog: the opm binary,
// then `serve FOLDER` without --cache-dir. The usual layout (entrypoint [opm],
// command [serve /configs --cache-dir=…]) keeps its entrypoint; an entrypoint that
// carries arguments is cut back to the binary; a command that starts with the
// binary keeps it. An image whose command airlock cannot read (a shell, say) is an
// error rather than a catalog that would not start.
func serveCommand(c v1.Config, label string) (entrypoint, cmd []string, err error) {
	serve := []string{"serve", label}
	isOpm := func(s string) bool { return path.Base(s) == "opm" }
	switch {
	case len(c.Entrypoint) > 0 && isOpm(c.Entrypoint[0]):
		return c.Entrypoint[:1], serve, nil
	case len(c.Entrypoint) == 0 && len(c.Cmd) > 0 && isOpm(c.Cmd[0]):
		return nil, append([]string{c.Cmd[0]}, serve...), nil
	case len(c.Entrypoint) == 0 && (len(c.Cmd) == 0 || c.Cmd[0] == "serve" || strings.HasPrefix(c.Cmd[0], "-")):
		// No binary named: the image relies on its runtime (extractContent) or on
		// a default entrypoint; keep that.
		return nil, serve, nil
	default:
		return nil, nil, fmt.Errorf("cannot rewrite the catalog's command (entrypoint %q, command %q) to serve the pruned catalog without its stale cache: expected the opm binary as entrypoint or command; mirror this catalog with full: true, or rebuild it with `opm generate dockerfile`", c.Entrypoint, c.Cmd)
	}
}

// cacheDirs returns, sorted, the folders holding a pre-built opm serve cache that
// the rebuilt image must not keep: /tmp/cache and any --cache-dir of the command.
func cacheDirs(cfg *v1.ConfigFile, label string) []string {
	set := map[string]bool{DefaultCacheDir: true}
	args := append(append([]string{}, cfg.Config.Entrypoint...), cfg.Config.Cmd...)
	for i, a := range args {
		switch {
		case strings.HasPrefix(a, "--cache-dir="):
			set[strings.TrimPrefix(a, "--cache-dir=")] = true
		case a == "--cache-dir" && i+1 < len(args):
			set[args[i+1]] = true
		}
	}
	var out []string
	for d := range set {
		if !strings.HasPrefix(d, "/") {
			continue
		}
		c := path.Clean(d)
		if c == "/" || c == label || strings.HasPrefix(c, label+"/") || strings.HasPrefix(label, c+"/") {
			continue
		}
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
