package fbc

import (
	"fmt"
	"io"
	"io/fs"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// Elided reports whether Load elided the value of b.Properties[i] (see
// LoadOptions.ElideHeavy): its Value is nil but the source document has one, and
// Write restores it. A heavy property that has no value in the source is not
// elided.
func (b *Bundle) Elided(i int) bool {
	if i < 0 || i >= len(b.Properties) || b.Properties[i].Value != nil {
		return false
	}
	for _, e := range b.elided {
		if int(e) == i {
			return true
		}
	}
	return false
}

// restorer re-reads bundle documents from their source to restore elided values.
// It keeps the last opened file open, since bundles of a package usually come
// from the same file.
type restorer struct {
	fsys fs.FS
	name string
	f    fs.File
	buf  []byte
	dd   docDecoder
	yc   scan.YAMLConverter
}

func (r *restorer) close() {
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// restore returns b's properties with every elided value restored; b itself is
// not changed.
func (r *restorer) restore(b *Bundle) ([]Property, error) {
	if b.written != nil {
		props, err := b.written()
		if err != nil {
			return nil, fmt.Errorf("write catalog: bundle %q: %w", b.Name, err)
		}
		return props, nil
	}
	missing := false
	for _, p := range b.Properties {
		if p.Value == nil && heavy(p.Type) {
			missing = true
			break
		}
	}
	if !missing || len(b.elided) == 0 {
		return b.Properties, nil
	}
	if b.src == nil {
		return nil, fmt.Errorf("write catalog: bundle %q: property values were elided and the catalog source is unknown", b.Name)
	}
	doc, err := r.read(b.src, b.Origin)
	if err != nil {
		return nil, fmt.Errorf("write catalog: bundle %q: restore elided property values from %s: %w", b.Name, b.Origin.File, err)
	}
	var top []scan.Field
	if b.src.yaml {
		// The same conversion as Load's, so the values are the bytes a
		// load without eliding keeps.
		if doc, top, err = yamlToJSON(&r.yc, doc); err != nil {
			return nil, fmt.Errorf("write catalog: bundle %q: restore elided property values from %s document %d: %w", b.Name, b.Origin.File, b.Origin.Index, err)
		}
	}
	r.dd.noCopy = true
	r.dd.trusted, r.dd.known = b.src.yaml, top
	d, err := r.dd.decode(doc)
	r.dd.known = nil
	if err != nil || d.kind != kindBundle || d.b.Name != b.Name || d.b.Package != b.Package {
		return nil, fmt.Errorf("write catalog: bundle %q: %s document %d is no longer that bundle: the catalog source changed after it was loaded; load it again", b.Name, b.Origin.File, b.Origin.Index)
	}
	// Match heavy properties by their rank among the properties of the same type.
	byType := map[string][]Property{}
	for _, p := range d.b.Properties {
		if heavy(p.Type) {
			byType[p.Type] = append(byType[p.Type], p)
		}
	}
	rank := map[string]int{}
	out := make([]Property, len(b.Properties))
	for i, p := range b.Properties {
		out[i] = p
		if !heavy(p.Type) {
			continue
		}
		k := rank[p.Type]
		rank[p.Type]++
		if p.Value == nil && k < len(byType[p.Type]) {
			out[i].Value = byType[p.Type][k].Value
		}
	}
	return out, nil
}

// read returns the bytes of the document at o in the source.
func (r *restorer) read(src *docSource, o Origin) ([]byte, error) {
	if o.Length <= 0 || o.Offset < 0 {
		return nil, fmt.Errorf("no document position recorded")
	}
	if r.f == nil || r.fsys != src.fsys || r.name != o.File {
		r.close()
		f, err := src.fsys.Open(o.File)
		if err != nil {
			return nil, err
		}
		r.f, r.fsys, r.name = f, src.fsys, o.File
	}
	if int64(cap(r.buf)) < o.Length {
		r.buf = make([]byte, o.Length)
	}
	buf := r.buf[:o.Length]
	if ra, ok := r.f.(io.ReaderAt); ok {
		if _, err := ra.ReadAt(buf, o.Offset); err != nil {
			return nil, err
		}
		return buf, nil
	}
	// No random access: read from the start of a fresh handle.
	r.close()
	f, err := src.fsys.Open(o.File)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := io.CopyN(io.Discard, f, o.Offset); err != nil {
		return nil, err
	}
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, err
	}
	return buf, nil
}
