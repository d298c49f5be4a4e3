package catalogimage

import (
	"context"
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

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/opencontainers/go-digest"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/mirror/oci"
	"github.com/airlock-mirror/airlock/mirror/registry"
)

// ConfigsLabel is the image-config label of a file-based catalog image that
// names the folder holding the catalog (conventionally "/configs").
const ConfigsLabel = "operators.operatorframework.io.index.configs.v1"

// DatabaseLabel is the image-config label of an old SQLite-based catalog
// image (`opm index add`) that names its database file ("/database/index.db").
const DatabaseLabel = "operators.operatorframework.io.index.database.v1"

// sqliteConfigsDir is the catalog folder of the file-based catalog image rebuilt
// from a SQLite-based one.
const sqliteConfigsDir = "/configs"

// ErrNotFBCImage is returned (wrapped) when an image is not a file-based catalog
// image: it has no ConfigsLabel, or nothing under the folder it names.
var ErrNotFBCImage = errors.New("not a file-based catalog image")

// ErrUnsafeLayer is returned (wrapped) when a layer of a catalog image holds a
// path that would escape the extraction folder.
var ErrUnsafeLayer = errors.New("unsafe path in image layer")

// completeMarker is written last into a fetched catalog's folder; its presence
// means the extraction finished.
const completeMarker = "complete.json"

// Fetched is a catalog image resolved to a digest, with its file-based
// catalog extracted to disk.
type Fetched struct {
	// Ref is the reference as given ("quay.io/ns/cat:v1", or "oci://PATH").
	Ref string
	// Source is the parsed reference; zero for an OCI layout.
	Source oci.Reference
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
	// ConfigsLabel, cleaned: "/configs"). For a SQLite-based catalog it is
	// the folder the rebuilt file-based catalog image uses ("/configs").
	Label string
	// Database is, for a SQLite-based catalog image, the path inside the image of
	// its database (the value of DatabaseLabel, cleaned), else "".
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
func (c *Fetched) PinnedRef() string {
	if c.LayoutPath != "" {
		return location.OCI(c.LayoutPath).String() + "@" + c.Digest.String()
	}
	return c.Source.Repository() + "@" + c.Digest.String()
}

// FetchOptions tunes Fetch.
type FetchOptions struct {
	// Registry reads catalog images from registries (credentials, TLS, the retry
	// policy); nil means a registry.Client with default options. The whole catalog image
	// (every platform) is copied with the copy engine into an OCI layout in the
	// work directory (retries, resumed downloads, digests verified) before
	// anything is read from it; extraction and rebuild then work offline.
	Registry *registry.Client
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

// Fetch resolves ref (a registry reference, with or without docker://, or
// oci://PATH for an OCI image layout) to a digest and extracts its file-based
// catalog under workDir/catalogs/<name>/<digest-hex>/configs. A catalog already
// extracted by an earlier run is not downloaded again. The zero FetchOptions
// read registries with default options. Registry requests are retried by
// o.Registry's policy; nothing retries the fetch as a whole.
func Fetch(ctx context.Context, ref string, workDir string, o FetchOptions) (*Fetched, error) {
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
	log.Debug("extracting catalog", "catalog", ref, "digest", fc.Digest, "label", label, "inflater", inflater)
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
		if errors.Is(err, ErrExtractLimit) || errors.Is(err, ErrUnsafeLayer) {
			// Refused for what it is: fetching it again gives the same
			// refusal, so what was downloaded and extracted is removed.
			fc.discard(dir, log)
		}
		return nil, fmt.Errorf("catalog %s@%s: %w", ref, fc.Digest, err)
	}
	if db != "" {
		if st, err := os.Lstat(filepath.Join(tmp, path.Base(db))); err != nil || !st.Mode().IsRegular() {
			return nil, fmt.Errorf("catalog %s@%s: %w: the label %s names the database %s, but the image holds no such file", ref, fc.Digest, ErrNotFBCImage, DatabaseLabel, db)
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

// catalogLabel returns the cleaned catalog folder named by the config's label
// and, for a SQLite-based catalog image (a database label and no configs label),
// the cleaned path of its database (the folder is then the one its rebuilt
// file-based image uses, /configs).
func catalogLabel(cfg *v1.ConfigFile) (label, database string, err error) {
	v, ok := cfg.Config.Labels[ConfigsLabel]
	if !ok || strings.TrimSpace(v) == "" {
		if d, sqlite := cfg.Config.Labels[DatabaseLabel]; sqlite {
			db := path.Clean("/" + strings.TrimSpace(d))
			if strings.TrimSpace(d) == "" || path.Dir(db) == "/" {
				return "", "", fmt.Errorf("%w: label %s=%q must name a database file in a folder, such as /database/index.db", ErrNotFBCImage, DatabaseLabel, d)
			}
			return sqliteConfigsDir, db, nil
		}
		return "", "", fmt.Errorf("%w: the image config has no label %s (is this an operator catalog image?)", ErrNotFBCImage, ConfigsLabel)
	}
	l := path.Clean("/" + strings.TrimSpace(v))
	if l == "/" {
		return "", "", fmt.Errorf("%w: label %s=%q names the image root; expected a folder such as /configs", ErrNotFBCImage, ConfigsLabel, v)
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
func cacheComplete(dir, extracted string, fc *Fetched) (bool, error) {
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

func writeMarker(dir string, fc *Fetched) error {
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
func (fc *Fetched) extract(ctx context.Context, dir, label string, o FetchOptions, log *slog.Logger) (string, error) {
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

// discard removes dir, the cache folder of a catalog image refused for what
// it holds (an extraction limit, an unsafe entry): the image copied into it and
// the partial extraction. The copy into it is stopped first.
func (fc *Fetched) discard(dir string, log *slog.Logger) {
	if fc.copy != nil {
		fc.copy.stop()
	}
	if err := os.RemoveAll(dir); err != nil {
		log.Warn("cannot remove a refused catalog image from the cache", "dir", dir, "error", err)
	}
}
