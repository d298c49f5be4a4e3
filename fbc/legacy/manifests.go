package legacy

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// ErrBadManifests is returned (wrapped, in a *ManifestError) when opm v1.73's
// loader would report problems with a package-manifest folder.
var ErrBadManifests = errors.New("package-manifest folder does not load")

// ManifestError lists every problem opm's loader would report for a
// package-manifest folder, in the order it meets them.
type ManifestError struct {
	Dir      string
	Problems []error
}

func (e *ManifestError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %v (%d problem(s); fix them, or convert what loads with --permissive):", e.Dir, ErrBadManifests, len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n  - ")
		b.WriteString(p.Error())
	}
	return b.String()
}

func (e *ManifestError) Unwrap() error { return ErrBadManifests }

// ManifestOptions tune ConvertManifests.
type ManifestOptions struct {
	// Logger receives warnings; nil discards them.
	Logger *slog.Logger
	// Permissive converts what opm's loader manages to load when it reports
	// problems (as the `--permissive` loaders of operator-registry did), logging
	// each problem; by default any problem is an error.
	Permissive bool
}

// manifestSuffixes name the files that make a folder a package-manifest folder.
var manifestSuffixes = []string{".clusterserviceversion.yaml", ".clusterserviceversion.yml", ".clusterserviceversion.json"}

// IsManifestDir reports whether dir is a package-manifest folder: it (or a
// folder under it that is not hidden) holds a file named
// *.clusterserviceversion.yaml (.yml, .json), which a file-based catalog never
// has.
func IsManifestDir(dir string) bool {
	found := false
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || found {
			return filepath.SkipDir
		}
		if d.IsDir() {
			if p != dir && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		for _, s := range manifestSuffixes {
			if strings.HasSuffix(strings.ToLower(d.Name()), s) {
				found = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found
}

// ConvertManifests converts the package-manifest folder dir
// (<package>/<version>/*.clusterserviceversion.yaml with the bundle's CRDs and
// other objects, and a *.package.yaml naming the channels, their heads and the
// default channel) into a file-based catalog written to outDir, as opm v1.73
// did: its directory loader (NewSQLLoaderForDirectory) filled an index
// database, which `opm migrate` converted. airlock builds the same tables in
// memory, with the loader's rules, and converts them as ConvertSQLite does:
//
//   - every non-hidden file whose first document is a ClusterServiceVersion
//     makes a bundle of the objects of its folder (other CSVs left out), without
//     an image: its manifests are its olm.bundle.object properties;
//   - every file whose first document is a package manifest makes a package:
//     its channels start at their currentCSV and follow each CSV's replaces,
//     with its skips as extra edges; a package manifest met later replaces an
//     earlier one of the same package.
//
// Problems the loader reports (a file that does not decode, a CSV that
// replaces a CSV the folder lacks, a channel head without a CSV, an owned CRD
// missing…) are collected in a *ManifestError; with opts.Permissive they are
// logged and the rest is converted.
func ConvertManifests(ctx context.Context, dir, outDir string, opts ManifestOptions) (Stats, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return Stats{}, err
	}
	if !st.IsDir() {
		return Stats{}, fmt.Errorf("%s: not a folder", dir)
	}
	m := newManifestDB()
	if err := m.populate(ctx, dir); err != nil {
		return Stats{}, err
	}
	if len(m.problems) > 0 {
		if !opts.Permissive {
			return Stats{}, &ManifestError{Dir: dir, Problems: m.problems}
		}
		for _, p := range m.problems {
			log.Warn("package-manifest folder: left out", "dir", dir, "problem", p)
		}
	}
	return convertTables(ctx, m, m.tables(), dir, outDir, log)
}

// memBundle is an operatorbundle row.
type memBundle struct {
	name, csv, bundle, version, skipRange, replaces string
	skips                                           []string
}

// manifestDB holds the tables opm's directory loader writes, in memory.
type manifestDB struct {
	bundles  map[string]*memBundle
	csvs     map[string]bool // operatorbundle.csv is unique
	packages []pkgRow
	channels []channelRow
	entries  []entryRow
	props    map[string][]kv
	deps     map[string][]kv
	related  map[string][]string
	problems []error
	// docs caches the first document of each file (as JSON), read once for
	// the three times opm's loader reads it.
	docs map[string]docResult
}

type docResult struct {
	doc []byte
	err error
}

func newManifestDB() *manifestDB {
	return &manifestDB{bundles: map[string]*memBundle{}, csvs: map[string]bool{}, props: map[string][]kv{}, deps: map[string][]kv{}, related: map[string][]string{}, docs: map[string]docResult{}}
}

// document is firstDocument(p), read once.
func (m *manifestDB) document(p string) ([]byte, error) {
	if r, ok := m.docs[p]; ok {
		return r.doc, r.err
	}
	doc, err := firstDocument(p)
	m.docs[p] = docResult{doc, err}
	return doc, err
}

// cannotBePackage reports whether the JSON document doc surely decodes to a
// package manifest without a packageName and without error: an object (or
// null) none of whose keys matches a field of a package manifest (encoding/json
// matches keys without regard to case).
func cannotBePackage(doc []byte) bool {
	var top map[string]json.RawMessage
	if json.Unmarshal(doc, &top) != nil {
		return false
	}
	for k := range top {
		for _, f := range []string{"packageName", "channels", "defaultChannel", "deprecation"} {
			if strings.EqualFold(k, f) {
				return false
			}
		}
	}
	return true
}

func (m *manifestDB) tables() *tables {
	return &tables{packages: m.packages, channels: m.channels, entries: m.entries, props: m.props, deps: m.deps, related: m.related}
}

func (m *manifestDB) read(_ context.Context, name string) (bundleContent, error) {
	b, ok := m.bundles[name]
	if !ok {
		return bundleContent{}, nil
	}
	return bundleContent{found: true, bundle: str(b.bundle), path: str(""), version: str(b.version), skipRng: str(b.skipRange)}, nil
}

func (m *manifestDB) readLight(ctx context.Context, name string) (bundleContent, error) {
	c, err := m.read(ctx, name)
	c.bundle = sql.NullString{}
	return c, err
}

func (m *manifestDB) readCSV(_ context.Context, name string) (string, bool, error) {
	b, ok := m.bundles[name]
	if !ok {
		return "", false, nil
	}
	return b.csv, true, nil
}

func str(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }

// populate walks dir twice, as opm's loader does: bundles first, then package
// manifests. Problems are collected; only a failure to walk is returned.
func (m *manifestDB) populate(ctx context.Context, dir string) error {
	walk := func(each func(p string) error) error {
		return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				m.problems = append(m.problems, err)
				return nil
			}
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if strings.HasPrefix(d.Name(), ".") && p != dir {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			if d.IsDir() {
				return nil
			}
			if err := each(p); err != nil {
				m.problem(err)
			}
			return nil
		})
	}
	if err := walk(m.loadBundleFile); err != nil {
		return err
	}
	return walk(m.loadPackageFile)
}

// problem records err unless the same problem is already recorded (two CSV
// files of one folder both load the folder).
func (m *manifestDB) problem(err error) {
	for _, p := range m.problems {
		if p.Error() == err.Error() {
			return
		}
	}
	m.problems = append(m.problems, err)
}

// loadBundleFile loads the bundle of p's folder when p's first document is a
// ClusterServiceVersion.
func (m *manifestDB) loadBundleFile(p string) error {
	doc, err := m.document(p)
	if err != nil {
		return nil
	}
	o, err := decodeObject(doc)
	if err != nil || o.kind != "ClusterServiceVersion" {
		return nil
	}
	objs, loadErr := m.bundleObjectsIn(filepath.Dir(p), o.name)
	var errs []error
	if loadErr != nil {
		errs = append(errs, fmt.Errorf("%s: loading the bundle's files: %w", filepath.Dir(p), loadErr))
	}
	if len(objs) == 0 {
		return errors.Join(append(errs, fmt.Errorf("%s: no bundle objects found", filepath.Dir(p)))...)
	}
	b, err := newBundleView(objs)
	if err == nil {
		if err := b.checkOwnedAPIs(); err != nil {
			errs = append(errs, fmt.Errorf("bundle %s (%s): %w", o.name, filepath.Dir(p), err))
		}
		err = m.addBundle(b)
	}
	if err != nil {
		errs = append(errs, fmt.Errorf("bundle %s (%s): %w", o.name, filepath.Dir(p), err))
	}
	return errors.Join(errs...)
}

// bundleObjectsIn decodes the first document of every non-hidden file of dir
// (sorted by name) and keeps the objects, leaving out CSVs other than csvName.
func (m *manifestDB) bundleObjectsIn(dir, csvName string) ([]*object, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var objs []*object
	var errs []error
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		doc, err := m.document(filepath.Join(dir, e.Name()))
		if err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				errs = append(errs, err)
			}
			continue
		}
		o, err := decodeObject(doc)
		if err != nil || o.m == nil {
			continue
		}
		if o.kind == "ClusterServiceVersion" && o.name != csvName {
			continue
		}
		objs = append(objs, o)
	}
	return objs, errors.Join(errs...)
}

// addBundle is opm's AddOperatorBundle for a bundle without an image: all of it
// is stored, or nothing.
func (m *manifestDB) addBundle(b *bundleView) error {
	var stream []byte
	var csvJSON, csvName string
	nCSV := 0
	for _, o := range b.objects {
		enc, err := o.encode()
		if err != nil {
			return err
		}
		stream = append(stream, enc...)
		if o.kind == "ClusterServiceVersion" {
			csvName, csvJSON = o.name, string(enc)
			if nCSV++; nCSV > 1 {
				return errors.New("two CSVs found in one bundle")
			}
		}
	}
	if csvName == "" {
		return errors.New("csv name not found")
	}
	version, err := b.csv.version()
	if err != nil {
		return fmt.Errorf("unable to obtain bundle version: %v", err)
	}
	replaces, err := b.csv.replaces()
	if err != nil {
		return fmt.Errorf("unable to obtain replaces: %v", err)
	}
	skips, err := b.csv.skips()
	if err != nil {
		return fmt.Errorf("unable to obtain skips: %v", err)
	}
	if s := b.csv.annotations["olm.substitutesFor"]; s != "" {
		return fmt.Errorf("annotation olm.substitutesFor (%s) is an alpha feature opm's loader refuses without --enable-alpha; airlock does not support it", s)
	}
	if _, dup := m.bundles[csvName]; dup {
		return fmt.Errorf("failed to add bundle %q: another bundle of the folder has the same CSV name", csvName)
	}
	if m.csvs[csvJSON] {
		return fmt.Errorf("failed to add bundle %q: another bundle of the folder has the same CSV", csvName)
	}
	imgs, err := b.images()
	if err != nil {
		return fmt.Errorf("unable to obtain images: %v", err)
	}
	required, err := b.requiredAPIs()
	if err != nil {
		return fmt.Errorf("failed to add dependencies: %v", err)
	}
	provided, err := b.providedAPIs()
	if err != nil {
		return fmt.Errorf("failed to add properties: %v", err)
	}
	annot, err := b.annotationProperties()
	if err != nil {
		return fmt.Errorf("failed to add properties: %v", err)
	}

	// Commit.
	m.csvs[csvJSON] = true
	m.bundles[csvName] = &memBundle{name: csvName, csv: csvJSON, bundle: string(stream), version: version,
		skipRange: b.csv.annotations["olm.skipRange"], replaces: replaces, skips: splitSkips(skips)}
	for img := range imgs {
		m.related[csvName] = append(m.related[csvName], img)
	}
	sort.Strings(m.related[csvName])
	for _, k := range sortedAPIs(required) {
		m.deps[csvName] = append(m.deps[csvName], kv{str("olm.gvk"), str(gvkValue(k))})
	}
	seen := map[kvString]bool{}
	var props []kvString
	for _, k := range sortedAPIs(provided) {
		props = append(props, kvString{"olm.gvk", gvkValue(k)})
	}
	props = append(props, annot...)
	for _, p := range props {
		if !seen[p] {
			seen[p] = true
			m.props[csvName] = append(m.props[csvName], kv{str(p.typ), str(p.value)})
		}
	}
	return nil
}

// splitSkips is the skips as opm stores and reads them back: joined with
// commas, then split on them.
func splitSkips(skips []string) []string {
	j := strings.Join(skips, ",")
	if j == "" {
		return nil
	}
	return strings.Split(j, ",")
}

func sortedAPIs(in map[apiKey]bool) []apiKey {
	out := make([]apiKey, 0, len(in))
	for k := range in {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.group != b.group {
			return a.group < b.group
		}
		if a.version != b.version {
			return a.version < b.version
		}
		return a.kind < b.kind
	})
	return out
}
