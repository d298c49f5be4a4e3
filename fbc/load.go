package fbc

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// LoadOptions tune Load.
type LoadOptions struct {
	// ElideHeavy drops the values of olm.bundle.object and olm.csv.metadata
	// properties of bundles after checking them as validate.Catalog checks kept values
	// (valid JSON, opm's CSVMetadata field types, base64 bundle object data
	// that converts to JSON); the problems found are kept on the bundle for
	// validate.Catalog, so it reports the same in both modes. The Property keeps its
	// Type with a nil Value, and Write restores the value by re-reading the
	// bundle's document from the source fs.FS. This keeps memory
	// bounded on real-scale catalogs; the source must not change until Write.
	// The CLI always sets it.
	ElideHeavy bool
	// KeepBelow, with ElideHeavy, keeps the values after all when the
	// catalog's files total at most KeepBelow bytes: memory stays bounded,
	// and a caller that writes every bundle (RenderDir) does not read and
	// decode the catalog twice. 0 always elides.
	KeepBelow int64
	// Concurrency is the number of files parsed at the same time; 0 means
	// GOMAXPROCS.
	Concurrency int
	// Logger receives debug messages; nil discards them.
	Logger *slog.Logger
}

// LoadError is a decoding error in one document of a catalog file.
type LoadError struct {
	// File is the path of the file (for LoadDir, including the directory).
	File string
	// Index is the 0-based index of the document in the file, -1 if the error
	// is about the file as a whole.
	Index int
	// Line is the 1-based line where the document (or the error) is, 0 if unknown.
	Line int
	// Column is the 1-based column of the error on Line, 0 if unknown
	// (then Line is where the document starts).
	Column int
	Err    error
}

func (e *LoadError) Error() string {
	switch {
	case e.Index < 0:
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("%s:%d:%d: document %d: %v", e.File, e.Line, e.Column, e.Index, e.Err)
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: document %d: %v", e.File, e.Line, e.Index, e.Err)
	default:
		return fmt.Sprintf("%s: document %d: %v", e.File, e.Index, e.Err)
	}
}

func (e *LoadError) Unwrap() error { return e.Err }

// docSource is the file a document came from, kept by bundles so that Write can
// restore elided values.
type docSource struct {
	fsys fs.FS
	yaml bool
}

// LoadDir loads the file-based catalog rooted at the directory dir.
func LoadDir(ctx context.Context, dir string, opts LoadOptions) (*Catalog, error) {
	return loadDir(ctx, dir, opts, nil)
}

func loadDir(ctx context.Context, dir string, opts LoadOptions, pre prefetched) (*Catalog, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("load catalog: %s is not a directory: give the catalog's root directory", dir)
	}
	// Read through an os.Root: a symlink in the catalog (an extracted image layer
	// may hold any) can point anywhere inside dir, never outside it.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("load catalog: %w", err)
	}
	return load(ctx, root.FS(), dir, opts, pre)
}

// Load loads the file-based catalog rooted at fsys. Every file not excluded by an
// .indexignore file (gitignore syntax, patterns relative to the directory the
// .indexignore is in) is read, whatever its extension, in lexical order. A file
// is a stream of JSON objects or a YAML multi-document stream (JSON when its
// first non-space byte is '{'). Each document must be an object with a string
// "schema". Load does not check the graph rules (see validate.Catalog) and keeps
// everything it reads, duplicates included.
func Load(ctx context.Context, fsys fs.FS, opts LoadOptions) (*Catalog, error) {
	return load(ctx, fsys, "", opts, nil)
}

// prefetched returns the documents of a file parsed earlier (see Prefetch) when
// they still hold for the file name of fsys, parsed with eliding set as elide.
type prefetched func(fsys fs.FS, name string, elide bool) ([]parsedDoc, int64, bool)

func load(ctx context.Context, fsys fs.FS, root string, opts LoadOptions, pre prefetched) (*Catalog, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	t0 := time.Now()
	display := func(name string) string {
		if root == "" {
			return name
		}
		return filepath.Join(root, filepath.FromSlash(name))
	}
	files, err := catalogFiles(fsys, display)
	if err != nil {
		return nil, err
	}
	elide := opts.ElideHeavy
	if elide && opts.KeepBelow > 0 {
		if n, ok := filesSize(fsys, files); ok && n <= opts.KeepBelow {
			elide = false
		}
	}
	workers := opts.Concurrency
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, max(len(files), 1))

	type result struct {
		docs []parsedDoc
		err  error
	}
	results := make([]result, len(files))
	var next atomic.Int64
	var failed atomic.Int64 // lowest failing index + 1, 0 if none
	var wg sync.WaitGroup
	var size atomic.Int64
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fl := &fileLoader{fsys: fsys, elide: elide}
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				if f := failed.Load(); f != 0 && int64(i) >= f-1 {
					return
				}
				if err := ctx.Err(); err != nil {
					results[i].err = err
					return
				}
				docs, n, ok := []parsedDoc(nil), int64(0), false
				if pre != nil {
					docs, n, ok = pre(fsys, files[i], elide)
				}
				var err error
				if !ok {
					docs, n, err = fl.loadFile(ctx, files[i], display(files[i]))
				}
				size.Add(n)
				results[i] = result{docs: docs, err: err}
				if err != nil {
					for {
						f := failed.Load()
						if (f != 0 && f-1 <= int64(i)) || failed.CompareAndSwap(f, int64(i)+1) {
							break
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	for _, r := range results {
		if r.err != nil {
			return nil, r.err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	c := merge(results, func(r result) []parsedDoc { return r.docs })
	log.Debug("loaded catalog", "files", len(files), "bytes", size.Load(), "packages", len(c.Packages), "duration", time.Since(t0))
	return c, nil
}

// catalogFiles lists the files of the catalog in lexical order, without the
// .indexignore files and the files they exclude.
func catalogFiles(fsys fs.FS, display func(string) string) ([]string, error) {
	var files, ignores []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("load catalog: walk %s: %w", display(p), err)
		}
		if d.IsDir() {
			return nil
		}
		if d.Name() == ".indexignore" {
			ignores = append(ignores, p)
			return nil
		}
		if t := d.Type(); t&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice|fs.ModeIrregular) != 0 {
			return nil
		}
		files = append(files, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(ignores) == 0 {
		return files, nil
	}
	var m ignoreMatcher
	for _, p := range ignores {
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("load catalog: read %s: %w", display(p), err)
		}
		m.add(path.Dir(p), data)
	}
	kept := files[:0]
	for _, f := range files {
		if !m.ignored(f) {
			kept = append(kept, f)
		}
	}
	return kept, nil
}

// filesSize returns the total size of the files; ok is false if one cannot be
// stat'ed (the loader then reports it).
func filesSize(fsys fs.FS, files []string) (int64, bool) {
	var n int64
	for _, f := range files {
		st, err := fs.Stat(fsys, f)
		if err != nil {
			return 0, false
		}
		n += st.Size()
	}
	return n, true
}

// merge sorts the documents of every file, in file order, into a catalog.
func merge[R any](results []R, docsOf func(R) []parsedDoc) *Catalog {
	c := &Catalog{}
	byName := map[string]*Package{}
	get := func(name string) *Package {
		p := byName[name]
		if p == nil {
			p = &Package{Name: name}
			byName[name] = p
		}
		return p
	}
	for _, r := range results {
		for _, d := range docsOf(r) {
			switch d.kind {
			case kindPackage:
				p := get(d.pkg.Name)
				if p.Declared == 0 {
					p.DefaultChannel = d.pkg.DefaultChannel
					p.Icon = d.pkg.Icon
					p.Description = d.pkg.Description
					p.Properties = d.pkg.Properties
					p.Origin = d.pkg.Origin
				}
				p.Declared++
			case kindChannel:
				p := get(d.ch.Package)
				p.Channels = append(p.Channels, d.ch)
			case kindBundle:
				p := get(d.b.Package)
				p.Bundles = append(p.Bundles, d.b)
			case kindDeprecations:
				p := get(d.dep.Package)
				p.Deprecations = append(p.Deprecations, d.dep)
			case kindMeta:
				if d.meta.Package == "" {
					c.Others = append(c.Others, d.meta)
				} else {
					p := get(d.meta.Package)
					p.Others = append(p.Others, d.meta)
				}
			}
		}
	}
	c.Packages = make([]*Package, 0, len(byName))
	for _, p := range byName {
		sort.SliceStable(p.Channels, func(i, j int) bool { return p.Channels[i].Name < p.Channels[j].Name })
		sort.SliceStable(p.Bundles, func(i, j int) bool { return p.Bundles[i].Name < p.Bundles[j].Name })
		sort.SliceStable(p.Others, func(i, j int) bool { return p.Others[i].Schema < p.Others[j].Schema })
		c.Packages = append(c.Packages, p)
	}
	sort.Slice(c.Packages, func(i, j int) bool { return c.Packages[i].Name < c.Packages[j].Name })
	return c
}
