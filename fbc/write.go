package fbc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// Output formats of Write and Render.
const (
	FormatJSON = "json"
	FormatYAML = "yaml"
)

// WriteOptions tune Write.
type WriteOptions struct {
	// Format is FormatJSON (the default when empty) or FormatYAML.
	Format string
}

// Write writes c to dir as opm migrate does: one file per package,
// dir/<package>/catalog.json (or .yaml), plus dir/catalog.json for the documents
// of other schemas that name no package. dir must be empty or not exist. The
// output is deterministic: per package the olm.package document, the channels
// sorted by name, the bundles sorted by name, the other documents stable-sorted
// by schema, then the deprecations. JSON is written like opm: 4-space indent, no
// HTML escaping, opm's field order. Property values elided by Load are restored
// from the catalog's source. A package name that is not a single safe path
// element is refused.
func Write(ctx context.Context, c *Catalog, dir string, opts WriteOptions) error {
	format, ext, err := formatOf(opts.Format)
	if err != nil {
		return err
	}
	for _, p := range c.Packages {
		if err := checkPackageDir(p.Name); err != nil {
			return err
		}
		if len(c.Others) > 0 && p.Name == "catalog"+ext {
			return fmt.Errorf("write catalog: package name %q cannot be used as a directory name: it collides with the file of documents that name no package", p.Name)
		}
	}
	if err := emptyDir(dir); err != nil {
		return err
	}
	dw := newDocWriter(format)
	defer dw.close()
	bw := bufio.NewWriterSize(nil, writeBuffer) // one for every file: most are a few KiB
	seen := map[string]bool{}
	for _, p := range sortedPackages(c.Packages) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if seen[p.Name] {
			return fmt.Errorf("write catalog: package %q appears twice in the catalog model", p.Name)
		}
		seen[p.Name] = true
		pdir := filepath.Join(dir, p.Name)
		if err := os.Mkdir(pdir, 0o755); err != nil {
			return fmt.Errorf("write catalog: %w", err)
		}
		if err := writeFile(bw, filepath.Join(pdir, "catalog"+ext), func(w io.Writer) error {
			return dw.writePackage(ctx, w, p)
		}); err != nil {
			return err
		}
	}
	if len(c.Others) > 0 {
		if err := writeFile(bw, filepath.Join(dir, "catalog"+ext), func(w io.Writer) error {
			for _, m := range c.Others {
				if err := dw.writeMeta(w, m); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// Render writes c as one stream of documents to w, in format "json" (the
// default when empty) or "yaml", in the order Write uses, packages sorted by
// name and the documents that name no package last. Property values elided by
// Load are restored from the catalog's source.
func Render(ctx context.Context, c *Catalog, w io.Writer, format string) error {
	format, _, err := formatOf(format)
	if err != nil {
		return err
	}
	dw := newDocWriter(format)
	defer dw.close()
	// A caller that renders many small catalogs into one stream (one bundle at a
	// time) passes its own buffered writer: no 1 MiB buffer per call.
	bw, ok := w.(*bufio.Writer)
	if !ok || bw.Size() < 64<<10 {
		bw = bufio.NewWriterSize(w, 1<<20)
	}
	for _, p := range sortedPackages(c.Packages) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := dw.writePackage(ctx, bw, p); err != nil {
			return err
		}
	}
	for _, m := range c.Others {
		if err := dw.writeMeta(bw, m); err != nil {
			return err
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("render catalog: %w", err)
	}
	return nil
}

// CheckFormat returns an error unless format is a catalog output format Write
// and Render accept ("", json, yaml or yml).
func CheckFormat(format string) error {
	_, _, err := formatOf(format)
	return err
}

func formatOf(f string) (string, string, error) {
	switch strings.ToLower(f) {
	case "", FormatJSON:
		return FormatJSON, ".json", nil
	case FormatYAML, "yml":
		return FormatYAML, ".yaml", nil
	}
	return "", "", fmt.Errorf("unknown catalog output format %q: use json or yaml", f)
}

// checkPackageDir refuses package names that are not a single safe path element.
func checkPackageDir(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\:`) ||
		strings.ContainsRune(name, 0) || !filepath.IsLocal(name) {
		return fmt.Errorf("write catalog: package name %q cannot be used as a directory name: fix the package name in the catalog", name)
	}
	return nil
}

// emptyDir creates dir or checks that it is empty.
func emptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("write catalog: %w", err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("write catalog: %w", err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("write catalog: output directory %s is not empty: choose a new or empty directory", dir)
	}
	return nil
}

// writeBuffer is the buffer a catalog's files are written through.
const writeBuffer = 1 << 20

// writeFile creates file name and writes body into it through bw, which it
// resets onto the file (one buffer for every file of a catalog: a pruned
// catalog of 2,000 packages is 2,000 files of a few KiB, and a 1 MiB buffer
// for each was most of what planning allocated).
func writeFile(bw *bufio.Writer, name string, body func(io.Writer) error) (err error) {
	f, err := os.Create(name)
	if err != nil {
		return fmt.Errorf("write catalog: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("write catalog: %w", cerr)
		}
	}()
	bw.Reset(f)
	defer bw.Reset(nil)
	if err := body(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write catalog: %w", err)
	}
	return nil
}

func sortedPackages(ps []*Package) []*Package {
	out := append([]*Package(nil), ps...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// docWriter encodes documents; it reuses buffers and the restorer's open file.
type docWriter struct {
	format string
	buf    []byte // the document: compact, but property values as they were read
	out    []byte // formatted document
	rs     restorer
}

// freeWriters keeps the buffers of up to two closed docWriters: a caller that
// renders a stream one bundle at a time (legacy's conversions) does not grow
// new ones for each. (A sync.Pool would be emptied by the frequent garbage
// collections of such a stream.)
var freeWriters = make(chan *docWriter, 2)

// maxFreeBuffer bounds the buffers kept in freeWriters.
const maxFreeBuffer = 8 << 20

func newDocWriter(format string) *docWriter {
	select {
	case dw := <-freeWriters:
		dw.format = format
		return dw
	default:
		return &docWriter{format: format}
	}
}

func (dw *docWriter) close() {
	dw.rs.close()
	if cap(dw.buf) > maxFreeBuffer || cap(dw.out) > maxFreeBuffer || cap(dw.rs.buf) > maxFreeBuffer {
		return
	}
	*dw = docWriter{buf: dw.buf[:0], out: dw.out[:0], rs: restorer{buf: dw.rs.buf[:0]}}
	select {
	case freeWriters <- dw:
	default:
	}
}

// emit formats the document in dw.buf (indented JSON or YAML, either way
// without its insignificant space) and writes it.
func (dw *docWriter) emit(w io.Writer) error {
	if dw.format == FormatYAML {
		y, err := yaml.JSONToYAML(dw.buf)
		if err != nil {
			return fmt.Errorf("write catalog: convert to YAML: %w", err)
		}
		if _, err := io.WriteString(w, "---\n"); err != nil {
			return fmt.Errorf("write catalog: %w", err)
		}
		if _, err := w.Write(y); err != nil {
			return fmt.Errorf("write catalog: %w", err)
		}
		return nil
	}
	// Indenting adds about half (room for it at once, not by doublings).
	dw.out = scan.AppendIndent(slices.Grow(dw.out[:0], len(dw.buf)+len(dw.buf)/2), dw.buf, "")
	dw.out = append(dw.out, '\n')
	if _, err := w.Write(dw.out); err != nil {
		return fmt.Errorf("write catalog: %w", err)
	}
	return nil
}

func (dw *docWriter) writePackage(ctx context.Context, w io.Writer, p *Package) error {
	if p.Declared > 0 || p.DefaultChannel != "" || p.Icon != nil || p.Description != "" || len(p.Properties) > 0 {
		dw.buf = appendPackage(dw.buf[:0], p)
		if err := dw.emit(w); err != nil {
			return err
		}
	}
	chs := append([]*Channel(nil), p.Channels...)
	sort.SliceStable(chs, func(i, j int) bool { return chs[i].Name < chs[j].Name })
	for _, ch := range chs {
		dw.buf = appendChannel(dw.buf[:0], ch)
		if err := dw.emit(w); err != nil {
			return err
		}
	}
	bs := append([]*Bundle(nil), p.Bundles...)
	sort.SliceStable(bs, func(i, j int) bool { return bs[i].Name < bs[j].Name })
	for n, b := range bs {
		if n%32 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		props, err := dw.rs.restore(b)
		if err != nil {
			return err
		}
		dw.buf = appendBundle(dw.buf[:0], b, props)
		if err := dw.emit(w); err != nil {
			return err
		}
	}
	others := append([]*Meta(nil), p.Others...)
	sort.SliceStable(others, func(i, j int) bool { return others[i].Schema < others[j].Schema })
	for _, m := range others {
		if err := dw.writeMeta(w, m); err != nil {
			return err
		}
	}
	for _, d := range p.Deprecations {
		dw.buf = appendDeprecations(dw.buf[:0], d)
		if err := dw.emit(w); err != nil {
			return err
		}
	}
	return nil
}

func (dw *docWriter) writeMeta(w io.Writer, m *Meta) error {
	if len(m.Blob) == 0 {
		return fmt.Errorf("write catalog: document of schema %q (%s) has no content", m.Schema, m.Origin.File)
	}
	dw.buf = append(dw.buf[:0], m.Blob...)
	return dw.emit(w)
}

// The append functions write compact JSON documents in opm's field order.

// renderKeepBelow is the catalog size under which RenderDir keeps property
// values in memory (about that much memory more at most).
const renderKeepBelow = 64 << 20

// RenderDir loads the catalog rooted at dir (heavy property values elided, so
// memory stays bounded, unless the catalog's files total at most 64 MiB) and
// renders it to w like Render. It is what `airlock catalog render DIR` runs.
func RenderDir(ctx context.Context, dir string, w io.Writer, format string, log *slog.Logger) error {
	if _, _, err := formatOf(format); err != nil {
		return err
	}
	// Every bundle is written: a catalog small enough is kept whole rather
	// than read and decoded a second time to restore its elided values.
	c, err := LoadDir(ctx, dir, LoadOptions{ElideHeavy: true, KeepBelow: renderKeepBelow, Logger: log})
	if err != nil {
		return err
	}
	return Render(ctx, c, w, format)
}
