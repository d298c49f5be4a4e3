package fbc

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/airlock-mirror/airlock/fbc/internal/scan"
)

// docKind says which part of the model a document belongs to.
type docKind uint8

const (
	kindPackage docKind = iota
	kindChannel
	kindBundle
	kindDeprecations
	kindMeta
)

// parsedDoc is one decoded document, before it is merged into the catalog.
type parsedDoc struct {
	kind docKind
	pkg  *Package
	ch   *Channel
	b    *Bundle
	dep  *Deprecations
	meta *Meta
}

// heavy reports whether a property type carries a large value that Load may elide.
func heavy(typ string) bool { return typ == PropertyBundleObject || typ == PropertyCSVMetadata }

// docDecoder decodes documents; it reuses its buffers between documents.
type docDecoder struct {
	elide bool
	// noCopy makes property values alias the document instead of compact
	// copies (the restorer uses it: its values live until the next document).
	noCopy bool
	// trusted says documents are valid JSON (converted from YAML): they
	// are not validated again.
	trusted bool
	// known, when set, are the members of the document's object (the fast
	// YAML path found them while writing it).
	known  []scan.Field
	fields []scan.Field
	// hc checks heavy values before they are elided.
	hc heavyChecker
}

// fieldError is a decoding error about one field of a document.
type fieldError struct {
	schema, name, path string
	msg                string
}

func (e *fieldError) Error() string {
	what := e.schema
	if e.name != "" {
		what += fmt.Sprintf(" %q", e.name)
	}
	return fmt.Sprintf("%s: field %q: %s", what, e.path, e.msg)
}

// decode decodes one JSON document (an object, possibly with surrounding space).
func (dd *docDecoder) decode(doc []byte) (parsedDoc, error) {
	i := scan.SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		if i >= len(doc) {
			return parsedDoc{}, scan.Errorf(i, "empty document")
		}
		return parsedDoc{}, scan.Errorf(i, "document is %s, not an object", scan.KindOf(doc[i:]))
	}
	objFields := scan.ObjectFields
	if dd.trusted {
		objFields = scan.TrustedFields
	}
	var err error
	fields, end := dd.known, len(doc)
	if fields == nil {
		fields, end, err = objFields(doc, i, dd.fields[:0])
		dd.fields = fields
		if err != nil {
			return parsedDoc{}, err
		}
	}
	if j := scan.SkipSpace(doc, end); j != len(doc) {
		return parsedDoc{}, scan.Errorf(j, "unexpected data after the document's object")
	}
	// Duplicate keys that differ only by case are an error, as in opm.
	for a := range fields {
		for b := a + 1; b < len(fields); b++ {
			if strings.EqualFold(fields[a].Key, fields[b].Key) {
				return parsedDoc{}, fmt.Errorf("duplicate keys for key %q: [%s %s]", strings.ToLower(fields[a].Key), fields[a].Key, fields[b].Key)
			}
		}
	}
	var schema, pkg, name string
	for _, f := range fields {
		var dst *string
		switch {
		case strings.EqualFold(f.Key, "schema"):
			dst = &schema
		case strings.EqualFold(f.Key, "package"):
			dst = &pkg
		case strings.EqualFold(f.Key, "name"):
			dst = &name
		default:
			continue
		}
		v := doc[f.Start:f.End]
		if v[0] != '"' {
			return parsedDoc{}, fmt.Errorf("expected value for key %q to be a string, got %s", strings.ToLower(f.Key), scan.KindOf(v))
		}
		*dst, _ = scan.Unquote(v)
	}
	if schema == "" {
		return parsedDoc{}, fmt.Errorf("object is missing root schema field")
	}
	fe := func(path string, format string, args ...any) error {
		return &fieldError{schema: schema, name: name, path: path, msg: fmt.Sprintf(format, args...)}
	}
	switch schema {
	case SchemaPackage:
		p := &Package{Name: name, Declared: 1}
		for _, f := range fields {
			v := doc[f.Start:f.End]
			switch {
			case strings.EqualFold(f.Key, "defaultChannel"):
				if p.DefaultChannel, err = str(v); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			case strings.EqualFold(f.Key, "description"):
				if p.Description, err = str(v); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			case strings.EqualFold(f.Key, "icon"):
				if p.Icon, err = decodeIcon(v); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			case strings.EqualFold(f.Key, "properties"):
				if p.Properties, _, _, err = dd.properties(v, false); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			}
		}
		return parsedDoc{kind: kindPackage, pkg: p}, nil
	case SchemaChannel:
		c := &Channel{Name: name, Package: pkg}
		for _, f := range fields {
			v := doc[f.Start:f.End]
			switch {
			case strings.EqualFold(f.Key, "entries"):
				if c.Entries, err = decodeEntries(v); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			case strings.EqualFold(f.Key, "properties"):
				if c.Properties, _, _, err = dd.properties(v, false); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			}
		}
		return parsedDoc{kind: kindChannel, ch: c}, nil
	case SchemaBundle:
		b := &Bundle{Name: name, Package: pkg}
		for _, f := range fields {
			v := doc[f.Start:f.End]
			switch {
			case strings.EqualFold(f.Key, "image"):
				if b.Image, err = str(v); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			case strings.EqualFold(f.Key, "properties"):
				if b.Properties, b.elided, b.propErrs, err = dd.properties(v, dd.elide); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			case strings.EqualFold(f.Key, "relatedImages"):
				if b.RelatedImages, err = decodeRelatedImages(v); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			}
		}
		return parsedDoc{kind: kindBundle, b: b}, nil
	case SchemaDeprecations:
		d := &Deprecations{Package: pkg}
		for _, f := range fields {
			if strings.EqualFold(f.Key, "entries") {
				if d.Entries, err = decodeDeprecationEntries(doc[f.Start:f.End]); err != nil {
					return parsedDoc{}, fe(f.Key, "%v", err)
				}
			}
		}
		return parsedDoc{kind: kindDeprecations, dep: d}, nil
	default:
		m := &Meta{Schema: schema, Package: pkg, Name: name}
		m.Blob = scan.AppendCompact(make([]byte, 0, len(doc)-i), doc[i:end])
		return parsedDoc{kind: kindMeta, meta: m}, nil
	}
}

// str decodes a string field; null gives "".
func str(v []byte) (string, error) {
	switch v[0] {
	case '"':
		return scan.Unquote(v)
	case 'n':
		return "", nil
	}
	return "", fmt.Errorf("expected a string, got %s", scan.KindOf(v))
}

func expect(v []byte, open byte) (bool, error) {
	if v[0] == 'n' {
		return false, nil
	}
	if v[0] != open {
		want := "an object"
		if open == '[' {
			want = "an array"
		}
		return false, fmt.Errorf("expected %s, got %s", want, scan.KindOf(v))
	}
	return true, nil
}

func decodeIcon(v []byte) (*Icon, error) {
	if ok, err := expect(v, '{'); !ok {
		return nil, err
	}
	ic := &Icon{}
	err := scan.EachMember(v, func(key string, val []byte) error {
		switch {
		case strings.EqualFold(key, "base64data"):
			s, err := str(val)
			if err != nil {
				return fmt.Errorf("base64data: %w", err)
			}
			if val[0] == 'n' {
				ic.Data = nil
				return nil
			}
			b, err := base64.StdEncoding.DecodeString(strings.NewReplacer("\r", "", "\n", "").Replace(s))
			if err != nil {
				return fmt.Errorf("base64data: invalid base64: %w", err)
			}
			ic.Data = b
		case strings.EqualFold(key, "mediatype"):
			s, err := str(val)
			if err != nil {
				return fmt.Errorf("mediatype: %w", err)
			}
			ic.MediaType = s
		}
		return nil
	})
	return ic, err
}

// properties decodes a properties array. With elide, the values of heavy
// properties are checked as validate.Catalog checks them (the problems are returned)
// but not kept; their indexes are returned. It walks the array, its objects
// and their members in one pass (the array holds most of a bundle's bytes).
func (dd *docDecoder) properties(v []byte, elide bool) ([]Property, []int32, []propertyError, error) {
	if ok, err := expect(v, '['); !ok {
		return nil, nil, nil, err
	}
	props := []Property{}
	var elided []int32
	var perrs []propertyError
	i := scan.SkipSpace(v, 1)
	for n := 0; i < len(v) && v[i] != ']'; n++ {
		switch v[i] {
		case 'n':
			props = append(props, Property{})
			i = scan.SkipValue(v, i)
		case '{':
			p, val, checked, end, err := dd.property(v, i, n, elide)
			if err != nil {
				return nil, nil, nil, err
			}
			if val != nil {
				if elide && heavy(p.Type) {
					if !checked {
						if err := dd.hc.check(p.Type, val, true); err != nil {
							perrs = append(perrs, propertyError{index: int32(len(props)), err: err})
						}
					}
					elided = append(elided, int32(len(props)))
				} else if dd.noCopy {
					p.Value = val
				} else if dd.trusted {
					p.Value = bytes.Clone(val) // converted from YAML: already compact
				} else {
					p.Value = scan.AppendCompact(make([]byte, 0, len(val)), val)
				}
			}
			props = append(props, p)
			i = end
		default:
			return nil, nil, nil, fmt.Errorf("property[%d]: expected an object, got %s", n, scan.KindOf(v[i:scan.SkipValue(v, i)]))
		}
		i = scan.SkipSpace(v, i)
		if i < len(v) && v[i] == ',' {
			i = scan.SkipSpace(v, i+1)
		}
	}
	return props, elided, perrs, nil
}

// property decodes the property object at v[i] (property number n): its type,
// its value's bytes and the offset after the object. checked says the value,
// heavy, was checked and found valid while it was walked (with elide, an
// olm.csv.metadata value whose type came first, as it does in sorted keys).
func (dd *docDecoder) property(v []byte, i, n int, elide bool) (p Property, val []byte, checked bool, end int, err error) {
	i = scan.SkipSpace(v, i+1)
	for i < len(v) && v[i] != '}' {
		ke := scan.StringEnd(v, i)
		isType, isValue, err := propertyKey(v[i:ke])
		if err != nil {
			return p, nil, false, 0, err
		}
		i = scan.SkipSpace(v, ke)
		i = scan.SkipSpace(v, i+1) // ':'
		var ve int
		switch {
		case isValue && elide && p.Type == PropertyCSVMetadata && v[i] == '{':
			if e, ok := decodesAt(v, i, csvMetadataType); ok {
				ve, checked = e, true
			} else {
				ve, checked = scan.SkipValue(v, i), false
			}
			val = v[i:ve]
		case isValue:
			ve, checked = scan.SkipValue(v, i), false
			val = v[i:ve]
		case isType:
			ve = scan.SkipValue(v, i)
			s, err := str(v[i:ve])
			if err != nil {
				return p, nil, false, 0, fmt.Errorf("property[%d].type: %w", n, err)
			}
			if s != p.Type {
				checked = false // a second "type": check the value for this one
			}
			p.Type = s
		default:
			ve = scan.SkipValue(v, i)
		}
		i = scan.SkipSpace(v, ve)
		if i < len(v) && v[i] == ',' {
			i = scan.SkipSpace(v, i+1)
		}
	}
	return p, val, checked, i + 1, nil
}

// propertyKey says whether the JSON string q (quotes included) is "type" or
// "value" as encoding/json matches field names (case folded).
func propertyKey(q []byte) (isType, isValue bool, err error) {
	k := q[1 : len(q)-1]
	if len(k) == 4 || len(k) == 5 {
		ascii := true
		for _, c := range k {
			if c >= 0x80 || c == '\\' {
				ascii = false
				break
			}
		}
		if ascii {
			return len(k) == 4 && asciiEqualFold(k, "type"), len(k) == 5 && asciiEqualFold(k, "value"), nil
		}
	} else if bytes.IndexByte(k, '\\') < 0 && len(k) < 4 {
		return false, false, nil // too short for either, even folded
	}
	key, err := scan.Unquote(q)
	if err != nil {
		return false, false, err
	}
	return strings.EqualFold(key, "type"), strings.EqualFold(key, "value"), nil
}

// asciiEqualFold is strings.EqualFold for an ASCII b and a lower-case ASCII name.
func asciiEqualFold(b []byte, name string) bool {
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != name[i] {
			return false
		}
	}
	return true
}
