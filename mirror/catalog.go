package mirror

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/airlock-mirror/airlock/mirror/oci"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
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

	// stream and copy are a streamed fetch's copy while it runs (resolveImage).
	stream *streamSource
	copy   *layoutCopy
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
	// Registry reads catalog images from registries (credentials, TLS, the retry
	// policy); nil means a Registry with default options. The whole catalog image
	// (every platform) is copied with the copy engine into an OCI layout in the
	// work directory (retries, resumed downloads, digests verified) before
	// anything is read from it; extraction and rebuild then work offline.
	Registry *Registry
	// Platform is the preferred platform in a multi-arch catalog (default linux/amd64).
	Platform *v1.Platform
	// Logger receives warnings and progress; nil discards them.
	Logger *slog.Logger
	// Limits bound what extracting the catalog may write (zero: the defaults).
	Limits ExtractLimits
	// OnFile, when not nil, is called during the extraction of a file-based
	// catalog for each regular file of the catalog folder once it is completely
	// written: root is the folder being extracted into (renamed to ConfigsDir
	// when the extraction is complete), rel the file's slash-separated path in it.
	// It runs on the extraction's goroutine and must return quickly. What it sees
	// is provisional until the fetch returns: a later entry may replace a file,
	// and a failed fetch discards everything.
	OnFile func(root, rel string)
	// OnRestart, when not nil, is called when the extraction starts over (into
	// a new folder): forget every file OnFile was given.
	OnRestart func()
}

// FetchCatalog resolves ref (a registry reference, with or without "docker://", or
// "oci://PATH" for an OCI image layout) to a digest and extracts its file-based
// catalog under workDir/catalogs/<name>/<digest-hex>/configs, reading registries
// with default options. A catalog already extracted by an earlier run is not
// downloaded again.
func FetchCatalog(ctx context.Context, ref string, workDir string) (*FetchedCatalog, error) {
	return FetchCatalogWithOptions(ctx, ref, workDir, FetchOptions{})
}

// FetchCatalogWithOptions is FetchCatalog with every option. Registry requests
// are retried by o.Registry's policy; nothing retries the fetch as a whole.
func FetchCatalogWithOptions(ctx context.Context, ref string, workDir string, o FetchOptions) (*FetchedCatalog, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	fc, key, err := resolveImage(ctx, ref, workDir, o, "catalog", true)
	if err != nil {
		return nil, err
	}
	if c, s := fc.copy, fc.stream; c != nil {
		// Every return: nothing writes into the workspace after it, and no
		// follower keeps a (maybe deleted) temporary file open.
		defer func() { c.stop(); s.closeUnread() }()
	}
	want := o.platform()
	cfg, err := fc.Image.ConfigFile()
	if err != nil && fc.copy != nil {
		// Read while the copy ran; the copy's own error (retries exhausted)
		// says more, and a config it did write is read again from the layout.
		if _, cerr := fc.settle(want); cerr != nil {
			return nil, fmt.Errorf("catalog %s: %w", ref, cerr)
		}
		cfg, err = fc.Image.ConfigFile()
	}
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
		if _, err := fc.settle(want); err != nil {
			return nil, fmt.Errorf("catalog %s: %w", ref, err)
		}
		fc.Cached = true
		log.Info("catalog already extracted", "catalog", ref, "digest", fc.Digest, "dir", extracted)
		return fc, nil
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("catalog %s: creating %s: %w", ref, dir, err)
	}
	log.Info("extracting catalog", "catalog", ref, "digest", fc.Digest, "label", label)
	tmp, err := fc.extract(ctx, dir, label, o, log)
	if tmp != "" {
		defer os.RemoveAll(tmp)
	}
	if fc.copy != nil {
		clean, cerr := fc.settle(want)
		if cerr != nil {
			return nil, fmt.Errorf("catalog %s: %w", ref, cerr)
		}
		if err != nil && ctx.Err() == nil && !clean {
			// Some bytes read while the copy ran came from a transfer it
			// retried: read the layer again as the copy committed it.
			log.Info("extracting the catalog again from the verified copy", "catalog", ref, "cause", err)
			if o.OnRestart != nil {
				o.OnRestart()
			}
			os.RemoveAll(tmp)
			tmp, err = fc.extract(ctx, dir, label, o, log)
			if tmp != "" {
				defer os.RemoveAll(tmp)
			}
		}
	}
	if err != nil {
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
	return atomicfile.WriteFile(filepath.Join(dir, completeMarker), append(b, '\n'), 0)
}

const (
	whiteoutPrefix = ".wh."
	opaqueWhiteout = ".wh..wh..opq"
)

// extract extracts the catalog folder label of fc.Image into a new temporary
// folder of dir, which it returns (also on error, for the caller to remove).
func (fc *FetchedCatalog) extract(ctx context.Context, dir, label string, o FetchOptions, log *slog.Logger) (string, error) {
	tmp, err := os.MkdirTemp(dir, ".configs-")
	if err != nil {
		return "", err
	}
	layers, err := fc.Image.Layers()
	if err != nil {
		return tmp, fmt.Errorf("listing layers: %w", err)
	}
	var onFile func(string)
	if o.OnFile != nil && fc.Database == "" {
		onFile = func(rel string) { o.OnFile(tmp, rel) }
	}
	return tmp, extractLayers(ctx, layers, label, tmp, o.Limits, log, onFile)
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
func copyToLayout(ctx context.Context, reg *Registry, log *slog.Logger, repo string, d digest.Digest, dir string) (any, error) {
	dst, err := NewLayoutDestination(dir)
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
func copyCatalogImage(ctx context.Context, reg *Registry, dst *LayoutDestination, log *slog.Logger, repo string, d digest.Digest) error {
	p := reg.policy
	rep, err := Copy(ctx, reg, dst, []Job{{Source: repo, Digest: d, Dest: "catalog", Tags: []string{layoutTag}}},
		CopyOptions{Retry: &p, Logger: log})
	if err != nil {
		if rep != nil && len(rep.Images) == 1 && rep.Images[0].Err != "" {
			return fmt.Errorf("copying the catalog image into %s: %s", dst.dir, rep.Images[0].Err)
		}
		return fmt.Errorf("copying the catalog image into %s: %w", dst.dir, err)
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
func resolveImage(ctx context.Context, ref string, workDir string, o FetchOptions, what string, stream bool) (*FetchedCatalog, string, error) {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	want := o.platform()
	fc := &FetchedCatalog{Ref: ref}
	var top any // v1.Image or v1.ImageIndex
	var key string
	if strings.HasPrefix(ref, OCIPrefix) {
		p, tag, err := splitOCIRef(strings.TrimPrefix(ref, OCIPrefix))
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
		r, err := ParseReference(ref)
		if err != nil {
			return nil, "", fmt.Errorf("%s %q: %w", what, ref, err)
		}
		if r.DefaultedTag {
			log.Warn(what+" reference has neither tag nor digest; using :latest", what, ref)
		}
		fc.Source = r
		reg := o.Registry
		if reg == nil {
			reg = NewRegistry(RegistryOptions{Logger: o.Logger})
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
func (fc *FetchedCatalog) choose(top any, want v1.Platform) error {
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
	if !isLayoutDir(dir) {
		return false
	}
	dst := &LayoutDestination{dir: dir}
	ok, err := dst.ManifestExists(ctx, "", layoutTag, d)
	return err == nil && ok
}

// settle waits for a streamed fetch's copy (see catalog_stream.go) and
// reopens the image from the complete layout; it does nothing otherwise. It
// reports whether every byte read while streaming came from the copy's one
// committed attempt (clean), so that a failure while reading was the content's,
// not the transfer's.
func (fc *FetchedCatalog) settle(want v1.Platform) (clean bool, err error) {
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
