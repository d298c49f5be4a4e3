package legacy

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unsafe"

	"github.com/blang/semver/v4"

	"github.com/airlock-mirror/airlock/fbc"
	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// gvk is an olm.gvk value (property or dependency), in opm's field order.
type gvk struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// buildBundle makes the olm.bundle of row r from its operatorbundle content c
// and its properties, dependencies and related images.
//
// The values of its olm.bundle.object properties are written into *objBuf when
// objBuf is not nil (and it is grown when needed): a caller that is done with
// the bundle before it builds the next one reuses the memory.
func buildBundle(r *bundleRow, c bundleContent, t *tables, objBuf *[]byte) (*fbc.Bundle, error) {
	if err := checkVersion(c); err != nil {
		return nil, err
	}
	objs, csvJSON, err := bundleObjects(c.bundle.String)
	if err != nil {
		return nil, fmt.Errorf("%w: the manifests it holds (operatorbundle.bundle): %v", ErrBadDatabase, err)
	}
	props, err := bundleProperties(r, c, t, objs, objBuf)
	if err != nil {
		return nil, err
	}
	rel, err := relatedImages(csvJSON, t.related[r.bundle])
	if err != nil {
		return nil, fmt.Errorf("%w: the related images of its CSV: %v", ErrBadDatabase, err)
	}
	return &fbc.Bundle{Name: r.bundle, Package: r.pkg, Image: c.path.String, Properties: props, RelatedImages: rel}, nil
}

// lightBundleOf is buildBundle without what needs the manifests: no
// olm.bundle.object properties and no related images. Its other properties are
// those of buildBundle, in the same order.
func lightBundleOf(r *bundleRow, c bundleContent, t *tables) (*fbc.Bundle, error) {
	if err := checkVersion(c); err != nil {
		return nil, err
	}
	props, err := bundleProperties(r, c, t, nil, nil)
	if err != nil {
		return nil, err
	}
	return &fbc.Bundle{Name: r.bundle, Package: r.pkg, Image: c.path.String, Properties: props}, nil
}

func checkVersion(c bundleContent) error {
	if _, err := semver.Parse(c.version.String); err != nil {
		return fmt.Errorf("%w: version %q (table operatorbundle) is not semver: %v", ErrBadDatabase, c.version.String, err)
	}
	return nil
}

// bundleObjects splits operatorbundle.bundle, a stream of JSON objects, into
// the objects (verbatim) and returns the first ClusterServiceVersion among them.
// A non-empty stream without a CSV is an error, as in opm.
func bundleObjects(s string) (objs []string, csv string, err error) {
	if s == "" {
		return nil, "", nil
	}
	b := readOnlyBytes(s)
	for i := skipSpace(b, 0); i < len(b); i = skipSpace(b, i) {
		if b[i] != '{' {
			return nil, "", fmt.Errorf("manifest %d is not a Kubernetes object (a JSON object)", len(objs)+1)
		}
		end, ok := scan.ValidJSONValue(b, i)
		if !ok {
			// The exact verdict and message of encoding/json, as opm's.
			end = valueEnd(b, i)
			if m := b[i:end]; !json.Valid(m) {
				var v any
				err := json.Unmarshal(m, &v)
				return nil, "", fmt.Errorf("manifest %d: %v", len(objs)+1, err)
			}
		}
		m := b[i:end]
		o := s[i:end]
		objs = append(objs, o)
		i = end
		if csv != "" {
			continue
		}
		if kind, ok := member(m, "kind"); ok && string(kind) == `"ClusterServiceVersion"` {
			csv = o
		}
	}
	if csv == "" && len(objs) > 0 {
		return nil, "", fmt.Errorf("no ClusterServiceVersion among its %d manifests", len(objs))
	}
	return objs, csv, nil
}

// member returns the raw value of the top-level member key of the JSON object
// obj, which must be valid JSON (it is only scanned, not checked). A key
// written with escapes is not recognised.
func member(obj []byte, key string) ([]byte, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return nil, false
	}
	i++
	for {
		i = skipSpace(obj, i)
		if i >= len(obj) || obj[i] != '"' {
			return nil, false
		}
		kEnd := skipValue(obj, i)
		k := obj[i+1 : kEnd-1]
		i = skipSpace(obj, kEnd)
		if i >= len(obj) || obj[i] != ':' {
			return nil, false
		}
		i = skipSpace(obj, i+1)
		vEnd := skipValue(obj, i)
		if string(k) == key {
			return obj[i:vEnd], true
		}
		i = skipSpace(obj, vEnd)
		if i >= len(obj) || obj[i] != ',' {
			return nil, false
		}
		i++
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the end of the valid JSON value starting at b[i]: with
// fbc's scanner (fast on long strings), else (a value nested near the depth
// limit) with valueEnd.
func skipValue(b []byte, i int) int {
	if end, ok := scan.ValidJSONValue(b, i); ok {
		return end
	}
	return valueEnd(b, i)
}

// valueEnd returns the end of the valid JSON value starting at b[i].
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		for i++; i < len(b); i++ {
			switch b[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return i
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = valueEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
		return i
	default:
		for i < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[i])) {
			i++
		}
		return i
	}
}

// bundleProperties builds the properties of a bundle as opm v1.73 does:
// stored properties (olm.gvk re-encoded, others verbatim), olm.package added
// when missing, olm.gvk and olm.package dependencies as olm.gvk.required and
// olm.package.required (other dependency types are dropped), one
// olm.bundle.object per manifest; values compacted, duplicates removed, sorted
// by type then value, the bundle objects last.
func bundleProperties(r *bundleRow, c bundleContent, t *tables, objs []string, objBuf *[]byte) ([]fbc.Property, error) {
	var out []fbc.Property
	provided := map[gvk]bool{}
	required := map[gvk]bool{}
	hasPackage := false
	for i, p := range unique(t.props[r.bundle]) {
		if !p.value.Valid {
			return nil, fmt.Errorf("%w: property %d (type %q, table properties) has no value", ErrBadDatabase, i+1, p.typ.String)
		}
		switch p.typ.String {
		case fbc.PropertyGVK:
			var g gvk
			if err := json.Unmarshal([]byte(p.value.String), &g); err != nil {
				return nil, fmt.Errorf("%w: property %d (olm.gvk, table properties): %v", ErrBadDatabase, i+1, err)
			}
			provided[g] = true
		default:
			hasPackage = hasPackage || p.typ.String == fbc.PropertyPackage
			var buf bytes.Buffer
			if err := json.Compact(&buf, []byte(p.value.String)); err != nil {
				return nil, fmt.Errorf("%w: the value of property %d (type %q, table properties) is not valid JSON: %v", ErrBadDatabase, i+1, p.typ.String, err)
			}
			out = append(out, fbc.Property{Type: p.typ.String, Value: buf.Bytes()})
		}
	}
	for i, d := range unique(t.deps[r.bundle]) {
		switch d.typ.String {
		case fbc.PropertyGVK:
			var g gvk
			if err := json.Unmarshal([]byte(d.value.String), &g); err != nil {
				return nil, fmt.Errorf("%w: dependency %d (olm.gvk, table dependencies): %v", ErrBadDatabase, i+1, err)
			}
			required[g] = true
		case fbc.PropertyPackage:
			var v struct {
				PackageName string `json:"packageName"`
				Version     string `json:"version"`
			}
			if err := json.Unmarshal([]byte(d.value.String), &v); err != nil {
				return nil, fmt.Errorf("%w: dependency %d (olm.package, table dependencies): %v", ErrBadDatabase, i+1, err)
			}
			out = append(out, mustProp(fbc.PropertyPackageRequired, struct {
				PackageName  string `json:"packageName"`
				VersionRange string `json:"versionRange"`
			}{v.PackageName, v.Version}))
		}
	}
	if !hasPackage {
		out = append(out, mustProp(fbc.PropertyPackage, struct {
			PackageName string `json:"packageName"`
			Version     string `json:"version"`
		}{r.pkg, c.version.String}))
	}
	for g := range provided {
		out = append(out, mustProp(fbc.PropertyGVK, g))
	}
	for g := range required {
		out = append(out, mustProp(fbc.PropertyGVKRequired, g))
	}
	out = append(out, bundleObjectProps(objs, objBuf)...)
	// Sorted by type then value, duplicates removed (equal properties are
	// next to each other once sorted).
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type < out[j].Type
		}
		return string(out[i].Value) < string(out[j].Value)
	})
	out = dedupeSorted(out)
	// opm render moves the bundle objects after every other property.
	var others, heavy []fbc.Property
	for _, p := range out {
		if p.Type == fbc.PropertyBundleObject || p.Type == fbc.PropertyCSVMetadata {
			heavy = append(heavy, p)
		} else {
			others = append(others, p)
		}
	}
	return append(others, heavy...), nil
}

// unique drops repeated (type, value) rows, keeping the first.
func unique(in []kv) []kv {
	seen := map[kv]bool{}
	var out []kv
	for _, p := range in {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// dedupeSorted drops the properties equal to the one before them.
func dedupeSorted(in []fbc.Property) []fbc.Property {
	out := in[:0]
	for _, p := range in {
		if n := len(out); n > 0 && p.Type == out[n-1].Type && bytes.Equal(p.Value, out[n-1].Value) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// bundleObjectProps are the olm.bundle.object properties of the manifests objs:
// the values mustProp gives {"data": o} (base64 of o), built without
// encoding/json, in one buffer: *reuse when it is not nil (grown if needed).
func bundleObjectProps(objs []string, reuse *[]byte) []fbc.Property {
	const head, tail = `{"data":"`, `"}`
	n := 0
	for _, o := range objs {
		n += len(head) + base64.StdEncoding.EncodedLen(len(o)) + len(tail)
	}
	var buf []byte
	switch {
	case reuse == nil:
		buf = make([]byte, 0, n)
	case cap(*reuse) >= n:
		buf = (*reuse)[:0]
	default:
		buf = make([]byte, 0, n)
		*reuse = buf
	}
	out := make([]fbc.Property, len(objs))
	for i, o := range objs {
		start := len(buf)
		buf = append(buf, head...)
		buf = base64.StdEncoding.AppendEncode(buf, readOnlyBytes(o))
		buf = append(buf, tail...)
		out[i] = fbc.Property{Type: fbc.PropertyBundleObject, Value: buf[start:len(buf):len(buf)]}
	}
	return out
}

// readOnlyBytes is s as a byte slice without a copy (the manifests of a bundle
// are a large string): it must only be read.
func readOnlyBytes(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// mustProp encodes v (a struct of strings and bytes, which always encodes) as
// the value of a property of type typ, without HTML escaping.
func mustProp(typ string, v any) fbc.Property {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("encoding a %s value: %v", typ, err))
	}
	return fbc.Property{Type: typ, Value: bytes.TrimRight(buf.Bytes(), "\n")}
}

// relatedImages are the spec.relatedImages of the CSV, then the images of the
// related_image table not among them (without a name), sorted by image (stable).
func relatedImages(csvJSON string, stored []string) ([]fbc.RelatedImage, error) {
	var out []fbc.RelatedImage
	if csvJSON != "" {
		// Only spec.relatedImages is decoded (the CSV is valid JSON); like opm,
		// a spec or a list of the wrong type is an error, null is nothing.
		spec, ok := member(readOnlyBytes(csvJSON), "spec")
		switch {
		case !ok || string(spec) == "null":
		case spec[0] != '{':
			return nil, fmt.Errorf("the CSV's spec is not an object")
		default:
			if ri, ok := member(spec, "relatedImages"); ok {
				if err := json.Unmarshal(ri, &out); err != nil {
					return nil, err
				}
			}
		}
	}
	have := map[string]bool{}
	for _, ri := range out {
		have[ri.Image] = true
	}
	for _, img := range stored {
		if !have[img] {
			have[img] = true
			out = append(out, fbc.RelatedImage{Image: img})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Image < out[j].Image })
	return out, nil
}
