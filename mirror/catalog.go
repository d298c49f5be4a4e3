package mirror

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/mirror/endpoint"
)

// CatalogConfigsLabel is the image-config label of a file-based catalog image that
// names the folder holding the catalog (conventionally "/configs").
const CatalogConfigsLabel = "operators.operatorframework.io.index.configs.v1"

// CatalogDatabaseLabel is the image-config label of an old SQLite-based catalog
// image (`opm index add`) that names its database file ("/database/index.db").
const CatalogDatabaseLabel = "operators.operatorframework.io.index.database.v1"

// sqliteConfigsDir is the catalog folder of the file-based catalog image rebuilt
// from a SQLite-based one.
const sqliteConfigsDir = "/configs"

// ErrNotFBCImage is returned (wrapped) when an image is not a file-based catalog
// image: it has no CatalogConfigsLabel, or nothing under the folder it names.
var ErrNotFBCImage = errors.New("not a file-based catalog image")

// ErrUnsafeLayer is returned (wrapped) when a layer of a catalog image holds a
// path that would escape the extraction folder.
var ErrUnsafeLayer = errors.New("unsafe path in image layer")

// OCIPrefix marks a catalog held in a local OCI image layout directory.
const OCIPrefix = "oci://"

// completeMarker is written last into a fetched catalog's folder; its presence
// means the extraction finished.
const completeMarker = "complete.json"

// FetchedCatalog is a catalog image resolved to a digest, with its file-based
// catalog extracted to disk.
type FetchedCatalog struct {
	// Ref is the reference as given ("quay.io/ns/cat:v1", or "oci://PATH").
	Ref string
	// Source is the parsed reference; zero for an OCI layout.
	Source Reference
	// LayoutPath is the OCI layout directory for an oci:// catalog, else "".
	LayoutPath string
	// Digest is the digest of the top-level manifest (the index for a multi-arch
	// catalog). It is resolved once; use it, not the tag, for everything else.
	Digest digest.Digest
	// MediaType is the media type of the top-level manifest.
	MediaType types.MediaType
	// ConfigsDir is the local folder holding the extracted catalog. For a
	// SQLite-based catalog (Database set) it is "" until the caller converts
	// DatabaseFile to a file-based catalog and sets it.
	ConfigsDir string
	// Label is the folder, inside the image, that holds the catalog (the value of
	// CatalogConfigsLabel, cleaned: "/configs"). For a SQLite-based catalog it is
	// the folder the rebuilt file-based catalog image uses ("/configs").
	Label string
	// Database is, for a SQLite-based catalog image, the path inside the image of
	// its database (the value of CatalogDatabaseLabel, cleaned), else "".
	Database string
	// DatabaseFile is the extracted database of a SQLite-based catalog, else "".
	DatabaseFile string
	// Image is the single-platform image the catalog was extracted from.
	Image v1.Image
	// Index is the top-level index when the catalog is multi-arch, else nil.
	Index v1.ImageIndex
	// Platform is the platform of Image when it was chosen from an index, else nil.
	Platform *v1.Platform
	// ImageLayout is the OCI layout holding a copy of the whole catalog image
	// (FetchOptions.Registry set), else "".
	ImageLayout string
	// Cached is true when the catalog was already extracted by an earlier run and
	// nothing was downloaded but the manifests and the config.
	Cached bool
}

// PinnedRef is the catalog's reference by digest: "repo@sha256:…" for a registry,
// "oci://PATH@sha256:…" for a layout.
func (c *FetchedCatalog) PinnedRef() string {
	if c.LayoutPath != "" {
		return OCIPrefix + c.LayoutPath + "@" + c.Digest.String()
	}
	return c.Source.Repository() + "@" + c.Digest.String()
}

// FetchOptions tunes FetchCatalogWithOptions.
type FetchOptions struct {
	// Remote are the go-containerregistry options (auth, transport) for registry access.
	Remote []remote.Option
	// Insecure allows plain HTTP (and is what --src-tls-verify=false means for
	// reference parsing; pair it with a transport that skips verification).
	Insecure bool
	// Platform is the preferred platform in a multi-arch catalog (default linux/amd64).
	Platform *v1.Platform
	// Logger receives warnings and progress; nil discards them.
	Logger *slog.Logger
	// Retry is the backoff for transient failures (zero: 5 retries).
	Retry RetryPolicy
	// Registry, when set, is used to copy the catalog image (every platform)
	// into an OCI layout in the work directory with the copy engine (retries,
	// resumed downloads, digests verified) before anything is read from it;
	// extraction and rebuild then work offline from that layout.
	Registry endpoint.Source
}

// FetchCatalog resolves ref (a registry reference, with or without "docker://", or
// "oci://PATH" for an OCI image layout) to a digest and extracts its file-based
// catalog under workDir/catalogs/<name>/<digest-hex>/configs. A catalog already
// extracted by an earlier run is not downloaded again.
func FetchCatalog(ctx context.Context, ref string, workDir string, opts ...remote.Option) (*FetchedCatalog, error) {
	return FetchCatalogWithOptions(ctx, ref, workDir, FetchOptions{Remote: opts})
}

// FetchCatalogWithOptions is FetchCatalog with every option. A fetch that fails
// for a transient reason (429, 5xx, a connection reset, a body cut short) is
// retried from the start with exponential backoff, o.Retry.Times times.
func FetchCatalogWithOptions(ctx context.Context, ref string, workDir string, o FetchOptions) (*FetchedCatalog, error) {
	p := o.Retry
	if p.Times == 0 {
		p.Times = defaultRetryTimes
	}
	p = p.withDefaults()
	for attempt := 0; ; attempt++ {
		fc, err := fetchCatalogOnce(ctx, ref, workDir, o)
		if err == nil || attempt >= p.Times || !isRetryable(err) {
			return fc, err
		}
		if o.Logger != nil {
			o.Logger.Warn("fetching the catalog failed, retrying", "catalog", ref, "attempt", attempt+1, "error", err)
		}
		if err := sleepCtx(ctx, p.delay(attempt+1, 0, false)); err != nil {
			return nil, err
		}
	}
}

func fetchCatalogOnce(ctx context.Context, ref string, workDir string, o FetchOptions) (*FetchedCatalog, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	want := v1.Platform{OS: "linux", Architecture: "amd64"}
	if o.Platform != nil {
		want = *o.Platform
	}
	fc := &FetchedCatalog{Ref: ref}
	var top any // v1.Image or v1.ImageIndex
	var key string
	if strings.HasPrefix(ref, OCIPrefix) {
		p, tag, err := splitOCIRef(strings.TrimPrefix(ref, OCIPrefix))
		if err != nil {
			return nil, err
		}
		fc.LayoutPath = p
		desc, t, err := openLayoutTop(p, tag)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", ref, err)
		}
		top, fc.Digest, fc.MediaType = t, digest.Digest(desc.Digest.String()), desc.MediaType
		sum := sha256.Sum256([]byte(p))
		key = "oci_" + catalogDirName(filepath.Base(p)) + "_" + hex.EncodeToString(sum[:6])
	} else {
		r, err := ParseReference(ref)
		if err != nil {
			return nil, fmt.Errorf("catalog %q: %w", ref, err)
		}
		if r.DefaultedTag {
			log.Warn("catalog reference has neither tag nor digest; using :latest", "catalog", ref)
		}
		fc.Source = r
		var nopts []name.Option
		if o.Insecure {
			nopts = append(nopts, name.Insecure)
		}
		nref, err := name.ParseReference(r.Repository()+refSep(r)+r.Identifier(), nopts...)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", ref, err)
		}
		ropts := append(append([]remote.Option{}, o.Remote...), remote.WithContext(ctx))
		desc, err := remote.Get(nref, ropts...)
		if err != nil {
			return nil, fmt.Errorf("catalog %s: fetching the manifest: %w (check the reference, your credentials (--authfile) and TLS settings)", ref, err)
		}
		fc.Digest, fc.MediaType = digest.Digest(desc.Digest.String()), desc.MediaType
		if r.Digest != "" && r.Digest != fc.Digest {
			return nil, fmt.Errorf("catalog %s: registry returned manifest %s, not the requested digest", ref, fc.Digest)
		}
		key = catalogDirName(r.Repository())
		switch {
		case !desc.MediaType.IsIndex() && !desc.MediaType.IsImage():
			err = fmt.Errorf("%w: manifest media type %q is neither an image nor an index", ErrNotFBCImage, desc.MediaType)
		case o.Registry != nil:
			fc.ImageLayout = filepath.Join(workDir, "catalogs", key, fc.Digest.Encoded(), "image")
			top, err = copyToLayout(ctx, o, r.Repository(), fc.Digest, fc.ImageLayout)
		case desc.MediaType.IsIndex():
			top, err = desc.ImageIndex()
		default:
			top, err = desc.Image()
		}
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", ref, err)
		}
	}
	if err := fc.Digest.Validate(); err != nil {
		return nil, fmt.Errorf("catalog %s: invalid digest %q: %w", ref, fc.Digest, err)
	}
	log.Debug("catalog resolved", "catalog", ref, "digest", fc.Digest)

	switch t := top.(type) {
	case v1.ImageIndex:
		fc.Index = t
		img, plat, err := selectPlatformImage(t, want)
		if err != nil {
			return nil, fmt.Errorf("catalog %s@%s: %w", ref, fc.Digest, err)
		}
		fc.Image, fc.Platform = img, plat
	case v1.Image:
		fc.Image = t
	}

	cfg, err := fc.Image.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("catalog %s@%s: reading the image config: %w", ref, fc.Digest, err)
	}
	label, db, err := catalogLabel(cfg)
	if err != nil {
		return nil, fmt.Errorf("catalog %s@%s: %w", ref, fc.Digest, err)
	}
	fc.Label, fc.Database = label, db

	dir := filepath.Join(workDir, "catalogs", key, fc.Digest.Encoded())
	fc.ConfigsDir = filepath.Join(dir, "configs")
	extracted := fc.ConfigsDir
	if db != "" {
		// A SQLite catalog: extract the database's folder; the caller converts it.
		label = path.Dir(db)
		fc.ConfigsDir = ""
		extracted = filepath.Join(dir, "database")
		fc.DatabaseFile = filepath.Join(extracted, path.Base(db))
	}
	if ok, err := cacheComplete(dir, extracted, fc); err != nil {
		return nil, err
	} else if ok {
		fc.Cached = true
		log.Info("catalog already extracted", "catalog", ref, "digest", fc.Digest, "dir", extracted)
		return fc, nil
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("catalog %s: creating %s: %w", ref, dir, err)
	}
	tmp, err := os.MkdirTemp(dir, ".configs-")
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", ref, err)
	}
	defer os.RemoveAll(tmp)
	log.Info("extracting catalog", "catalog", ref, "digest", fc.Digest, "label", label)
	layers, err := fc.Image.Layers()
	if err != nil {
		return nil, fmt.Errorf("catalog %s@%s: listing layers: %w", ref, fc.Digest, err)
	}
	if err := extractLayers(ctx, layers, label, tmp, log); err != nil {
		return nil, fmt.Errorf("catalog %s@%s: %w", ref, fc.Digest, err)
	}
	if db != "" {
		if st, err := os.Lstat(filepath.Join(tmp, path.Base(db))); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("catalog %s@%s: %w: the label %s names the database %s, but the image holds no such file", ref, fc.Digest, ErrNotFBCImage, CatalogDatabaseLabel, db)
		}
	}
	if err := os.RemoveAll(extracted); err != nil {
		return nil, fmt.Errorf("catalog %s: removing an incomplete earlier extraction: %w", ref, err)
	}
	if err := os.Rename(tmp, extracted); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", ref, err)
	}
	if err := writeMarker(dir, fc); err != nil {
		return nil, fmt.Errorf("catalog %s: %w", ref, err)
	}
	return fc, nil
}

func refSep(r Reference) string {
	if r.Digest != "" {
		return "@"
	}
	return ":"
}

// splitOCIRef splits "PATH" or "PATH:TAG" of an oci:// reference. PATH wins when
// it is a layout directory as written (paths may contain ':').
func splitOCIRef(s string) (p, tag string, err error) {
	if s == "" {
		return "", "", fmt.Errorf("%w: oci:// needs the path of an OCI image layout directory", ErrInvalidReference)
	}
	if isLayoutDir(s) {
		return filepath.Clean(s), "", nil
	}
	if i := strings.LastIndex(s, ":"); i > 0 && !strings.Contains(s[i+1:], "/") && isLayoutDir(s[:i]) {
		return filepath.Clean(s[:i]), s[i+1:], nil
	}
	return "", "", fmt.Errorf("%w: %s%s is not an OCI image layout directory (no index.json)", ErrInvalidReference, OCIPrefix, s)
}

func isLayoutDir(p string) bool {
	st, err := os.Stat(filepath.Join(p, "index.json"))
	return err == nil && st.Mode().IsRegular()
}

// refNameAnnotation names a manifest in an OCI layout's index.json.
const refNameAnnotation = "org.opencontainers.image.ref.name"

// openLayoutTop returns the descriptor and the image or index of the manifest
// tagged tag in the layout at p, or of its first manifest when tag is "".
func openLayoutTop(p, tag string) (v1.Descriptor, any, error) {
	idx, err := layout.ImageIndexFromPath(p)
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
		if tag == "" || refNameMatches(d.Annotations[refNameAnnotation], tag) {
			desc = d
			break
		}
	}
	if desc == nil {
		if tag != "" {
			return v1.Descriptor{}, nil, fmt.Errorf("the OCI layout %s has no manifest named %q (annotation %s)", p, tag, refNameAnnotation)
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

// catalogLabel returns the cleaned catalog folder named by the config's label
// and, for a SQLite-based catalog image (a database label and no configs label),
// the cleaned path of its database (the folder is then the one its rebuilt
// file-based image uses, /configs).
func catalogLabel(cfg *v1.ConfigFile) (label, database string, err error) {
	v, ok := cfg.Config.Labels[CatalogConfigsLabel]
	if !ok || strings.TrimSpace(v) == "" {
		if d, sqlite := cfg.Config.Labels[CatalogDatabaseLabel]; sqlite {
			db := path.Clean("/" + strings.TrimSpace(d))
			if strings.TrimSpace(d) == "" || path.Dir(db) == "/" {
				return "", "", fmt.Errorf("%w: label %s=%q must name a database file in a folder, such as /database/index.db", ErrNotFBCImage, CatalogDatabaseLabel, d)
			}
			return sqliteConfigsDir, db, nil
		}
		return "", "", fmt.Errorf("%w: the image config has no label %s (is this an operator catalog image?)", ErrNotFBCImage, CatalogConfigsLabel)
	}
	l := path.Clean("/" + strings.TrimSpace(v))
	if l == "/" {
		return "", "", fmt.Errorf("%w: label %s=%q names the image root; expected a folder such as /configs", ErrNotFBCImage, CatalogConfigsLabel, v)
	}
	return l, "", nil
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// catalogDirName makes a repository name usable as one directory name.
func catalogDirName(s string) string {
	s = unsafeNameChars.ReplaceAllString(s, "_")
	s = strings.Trim(s, ".")
	if s == "" {
		return "_"
	}
	return s
}

// catalogMarker is the content of completeMarker.
type catalogMarker struct {
	Ref      string        `json:"ref"`
	Digest   digest.Digest `json:"digest"`
	Label    string        `json:"label"`
	Database string        `json:"database,omitempty"`
}

// cacheComplete reports whether an earlier run extracted fc into the folder
// extracted (below dir) completely.
func cacheComplete(dir, extracted string, fc *FetchedCatalog) (bool, error) {
	b, err := os.ReadFile(filepath.Join(dir, completeMarker))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("catalog %s: reading %s: %w", fc.Ref, filepath.Join(dir, completeMarker), err)
	}
	var m catalogMarker
	if json.Unmarshal(b, &m) != nil || m.Digest != fc.Digest || m.Label != fc.Label || m.Database != fc.Database {
		// A foreign or damaged marker: extract again.
		return false, os.Remove(filepath.Join(dir, completeMarker))
	}
	st, err := os.Stat(extracted)
	return err == nil && st.IsDir(), nil
}

func writeMarker(dir string, fc *FetchedCatalog) error {
	b, err := json.MarshalIndent(catalogMarker{Ref: fc.Ref, Digest: fc.Digest, Label: fc.Label, Database: fc.Database}, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+completeMarker+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, completeMarker))
}

// extractLayers writes into dst the files the image's filesystem holds under
// label. Layers are read top-down: an entry is written only if no upper layer
// already decided that path (holds it, deletes it with a whiteout, or makes its
// folder opaque), so nothing is written twice and layers below an opaque or
// deleted catalog folder are not downloaded at all.
func extractLayers(ctx context.Context, layers []v1.Layer, label, dst string, log *slog.Logger) error {
	root, err := os.OpenRoot(dst)
	if err != nil {
		return err
	}
	defer root.Close()
	x := newExtractor(root, label, log)
	for i := len(layers) - 1; i >= 0 && !x.hidden; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		d, _ := layers[i].Digest()
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return fmt.Errorf("reading layer %s: %w", d, err)
		}
		err = x.layer(ctx, rc)
		if err == nil {
			// Drain so the digest of what was read is verified.
			_, err = io.Copy(io.Discard, rc)
		}
		if cerr := rc.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("layer %s: %w", d, err)
		}
	}
	if !x.found {
		return fmt.Errorf("%w: the label %s says the catalog is in %s, but no layer holds files there", ErrNotFBCImage, CatalogConfigsLabel, label)
	}
	return nil
}

// extractor applies layers, top-down, to a folder, keeping only what the image
// holds under one path (the catalog folder).
type extractor struct {
	root   *os.Root
	prefix string // the catalog folder, relative to the image root ("configs")
	log    *slog.Logger

	// decided maps paths (relative to the catalog folder) that an upper layer
	// decided to true when they hide everything below them in lower layers
	// (a file, a symlink or a whiteout) and false for directories.
	decided map[string]bool
	// opaque holds folders whose lower-layer content an upper layer hid.
	opaque map[string]bool
	// hidden is set once an upper layer hid the whole catalog folder.
	hidden bool
	// found is set once an entry under the catalog folder was seen.
	found bool
}

func newExtractor(root *os.Root, label string, log *slog.Logger) *extractor {
	return &extractor{
		root:    root,
		prefix:  strings.TrimPrefix(path.Clean("/"+label), "/"),
		log:     log,
		decided: map[string]bool{},
		opaque:  map[string]bool{},
	}
}

const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// cleanEntryName validates a tar entry name and returns it cleaned and relative
// to the image root ("." for the root itself).
func cleanEntryName(n string) (string, error) {
	if n == "" || strings.ContainsRune(n, 0) {
		return "", fmt.Errorf("%w: empty or NUL-containing entry name %q", ErrUnsafeLayer, n)
	}
	if strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("%w: absolute entry name %q", ErrUnsafeLayer, n)
	}
	c := path.Clean(n)
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Errorf("%w: entry %q points outside the image root", ErrUnsafeLayer, n)
	}
	return c, nil
}

// rel returns p relative to the catalog folder ("." for the folder itself) and
// whether p is inside it.
func (x *extractor) rel(p string) (string, bool) {
	if p == x.prefix {
		return ".", true
	}
	if strings.HasPrefix(p, x.prefix+"/") {
		return p[len(x.prefix)+1:], true
	}
	return "", false
}

// coversFolder reports whether p is the catalog folder or one of its ancestors.
func (x *extractor) coversFolder(p string) bool {
	return p == "." || p == x.prefix || strings.HasPrefix(x.prefix, p+"/")
}

// shadowed reports whether an upper layer decided r or hid one of its parents.
func (x *extractor) shadowed(r string) bool {
	if _, ok := x.decided[r]; ok {
		return true
	}
	for d := r; d != "."; {
		d = path.Dir(d)
		if x.decided[d] || x.opaque[d] {
			return true
		}
	}
	return false
}

// layer applies one layer (an uncompressed tar stream).
func (x *extractor) layer(ctx context.Context, r io.Reader) error {
	tr := tar.NewReader(r)
	// What this layer decides applies to lower layers only: stage it.
	here := map[string]bool{}       // paths written by this layer
	tombstones := map[string]bool{} // whiteouts of this layer
	opaques := map[string]bool{}    // opaque folders of this layer
	hideAll := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("reading tar: %w", err)
		}
		p, err := cleanEntryName(h.Name)
		if err != nil {
			return err
		}
		base, dir := path.Base(p), path.Dir(p)
		if base == opaqueWhiteout {
			if x.coversFolder(dir) {
				hideAll = true
			} else if r, ok := x.rel(dir); ok {
				opaques[r] = true
			}
			continue
		}
		if strings.HasPrefix(base, whiteoutPrefix) {
			target := path.Join(dir, base[len(whiteoutPrefix):])
			if x.coversFolder(target) {
				hideAll = true
			} else if r, ok := x.rel(target); ok {
				tombstones[r] = true
			}
			continue
		}
		r, inside := x.rel(p)
		if !inside {
			if x.coversFolder(p) && h.Typeflag != tar.TypeDir {
				// A file replaces the catalog folder or one of its parents.
				hideAll = true
			}
			continue
		}
		x.found = true
		if r == "." {
			if h.Typeflag != tar.TypeDir {
				hideAll = true
			}
			continue
		}
		if x.shadowed(r) && !here[r] {
			continue
		}
		if err := x.write(tr, h, r); err != nil {
			return err
		}
		here[r] = true
	}
	for r := range tombstones {
		if _, ok := x.decided[r]; !ok {
			x.decided[r] = true
		}
	}
	for r := range opaques {
		x.opaque[r] = true
	}
	if hideAll {
		x.hidden = true
	}
	return nil
}

// write creates entry h at r (relative to the catalog folder) and records it.
func (x *extractor) write(tr *tar.Reader, h *tar.Header, r string) error {
	switch h.Typeflag {
	case tar.TypeDir:
		if err := x.root.MkdirAll(r, 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", h.Name, err)
		}
		if _, ok := x.decided[r]; !ok {
			x.decided[r] = false
		}
	case tar.TypeReg:
		if err := x.mkParent(r, h.Name); err != nil {
			return err
		}
		_ = x.root.RemoveAll(r) // an earlier entry of this layer with the same name
		f, err := x.root.OpenFile(r, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o644)
		if err != nil {
			return fmt.Errorf("creating %s: %w", h.Name, err)
		}
		_, err = io.CopyN(f, tr, h.Size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fmt.Errorf("writing %s: %w", h.Name, err)
		}
		x.decided[r] = true
	case tar.TypeSymlink:
		target := h.Linkname
		var resolved string
		if strings.HasPrefix(target, "/") {
			resolved = path.Clean(target)[1:]
		} else {
			resolved = path.Join(x.prefix, path.Dir(r), target)
		}
		tr2, ok := x.rel(path.Clean(resolved))
		if target == "" || !ok || strings.HasPrefix(path.Clean(resolved), "..") {
			return fmt.Errorf("%w: symlink %s -> %s points outside %s", ErrUnsafeLayer, h.Name, h.Linkname, "/"+x.prefix)
		}
		// Re-express the target relative to the link, inside the catalog folder.
		relTarget, err := filepath.Rel(filepath.Dir(filepath.FromSlash(r)), filepath.FromSlash(tr2))
		if err != nil {
			return fmt.Errorf("symlink %s: %w", h.Name, err)
		}
		if err := x.mkParent(r, h.Name); err != nil {
			return err
		}
		_ = x.root.RemoveAll(r)
		if err := x.root.Symlink(relTarget, r); err != nil {
			return fmt.Errorf("creating symlink %s: %w", h.Name, err)
		}
		x.decided[r] = true
	case tar.TypeLink:
		lp, err := cleanEntryName(h.Linkname)
		if err != nil {
			return fmt.Errorf("hard link %s: %w", h.Name, err)
		}
		lr, ok := x.rel(lp)
		if !ok || lr == "." {
			x.log.Warn("skipping a hard link to a file outside the catalog folder", "entry", h.Name, "target", h.Linkname)
			return nil
		}
		if err := x.mkParent(r, h.Name); err != nil {
			return err
		}
		_ = x.root.RemoveAll(r)
		if err := x.root.Link(lr, r); err != nil {
			x.log.Warn("skipping a hard link whose target was not extracted", "entry", h.Name, "target", h.Linkname, "error", err)
			return nil
		}
		x.decided[r] = true
	default:
		x.log.Debug("skipping a special file in the catalog folder", "entry", h.Name, "type", string(h.Typeflag))
	}
	return nil
}

// mkParent creates the folders above r. A folder created for an entry is
// decided by this layer as much as one with its own entry: lower layers must not
// put a file or link in its place. A parent that is a symlink is refused, so that
// what is written (and later read) is exactly where its name says.
func (x *extractor) mkParent(r, name string) error {
	d := path.Dir(r)
	if d == "." {
		return nil
	}
	for p := d; p != "."; p = path.Dir(p) {
		if fi, err := x.root.Lstat(p); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
			return fmt.Errorf("%w: entry %s is below a symlink (%s)", ErrUnsafeLayer, name, p)
		}
		if _, ok := x.decided[p]; !ok {
			x.decided[p] = false
		}
	}
	if err := x.root.MkdirAll(d, 0o755); err != nil {
		return fmt.Errorf("creating the folder of %s: %w", name, err)
	}
	return nil
}

// copyToLayout copies the catalog image repo@d (every platform) into the OCI
// layout dir with the copy engine, and opens it from there.
func copyToLayout(ctx context.Context, o FetchOptions, repo string, d digest.Digest, dir string) (any, error) {
	dst, err := NewLayoutDestination(dir)
	if err != nil {
		return nil, fmt.Errorf("creating the OCI layout %s: %w", dir, err)
	}
	const tag = "catalog"
	rep, err := Copy(ctx, o.Registry, dst, []Job{{Source: repo, Digest: d, Dest: "catalog", Tags: []string{tag}}},
		CopyOptions{RetryTimes: o.Retry.Times, Retry: o.Retry, Logger: o.Logger})
	if err != nil {
		if rep != nil && len(rep.Images) == 1 && rep.Images[0].Err != "" {
			return nil, fmt.Errorf("copying the catalog image into %s: %s", dir, rep.Images[0].Err)
		}
		return nil, fmt.Errorf("copying the catalog image into %s: %w", dir, err)
	}
	_, top, err := openLayoutTop(dir, tag)
	return top, err
}
