package imageset

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// MaxConfigSize is the largest configuration file Load accepts.
const MaxConfigSize = 8 << 20

// Load reads an ImageSetConfiguration (YAML or JSON) from r. name is used in error
// messages (usually the file name). Decoding is strict: unknown fields, wrong types,
// a wrong kind or apiVersion, invalid values and fields airlock does not support yet
// are all errors. All problems found are returned together as an Errors value whose
// lines each start with "name:line:column:"; every FieldError wraps ErrInvalid or
// ErrNotSupported. On success the Line fields of operators, packages, channels and
// images are set and Source is name.
func Load(r io.Reader, name string) (*ImageSetConfiguration, error) {
	d, root, err := parseDocument(r, name, KindImageSetConfiguration)
	if err != nil {
		return nil, err
	}
	c := &ImageSetConfiguration{}
	d.decode(root, reflect.ValueOf(c).Elem(), "")
	c.Source = name
	v := &validator{errorList: d.errorList, pos: d.pos}
	v.isc(c)
	if err := d.errs.sorted(); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadDelete reads a DeleteImageSetConfiguration (YAML or JSON) from r, with the same
// strictness and error reporting as Load.
func LoadDelete(r io.Reader, name string) (*DeleteImageSetConfiguration, error) {
	d, root, err := parseDocument(r, name, KindDeleteImageSetConfiguration)
	if err != nil {
		return nil, err
	}
	c := &DeleteImageSetConfiguration{}
	d.decode(root, reflect.ValueOf(c).Elem(), "")
	c.Source = name
	v := &validator{errorList: d.errorList, pos: d.pos}
	v.disc(c)
	if err := d.errs.sorted(); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadFile opens path and calls Load with path as the name.
func LoadFile(path string) (*ImageSetConfiguration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open image set configuration: %w", err)
	}
	defer f.Close()
	return Load(f, path)
}

// LoadDeleteFile opens path and calls LoadDelete with path as the name.
func LoadDeleteFile(path string) (*DeleteImageSetConfiguration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open delete image set configuration: %w", err)
	}
	defer f.Close()
	return LoadDelete(f, path)
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a go-yaml error into a FieldError with its line.
func syntaxError(file string, data []byte, err error) error {
	msg := err.Error()
	fe := &FieldError{File: file, Err: ErrInvalid}
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		fe.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
		// go-yaml often names the line where the enclosing block starts; the first
		// line whose addition breaks the document is where the mistake is.
		if bad := firstBadLine(data, fe.Line); bad > fe.Line {
			msg += fmt.Sprintf(" (in the block starting on line %d)", fe.Line)
			fe.Line = bad
		}
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	fe.Msg = "invalid YAML: " + oneLine(msg) + "; check the indentation and quoting on this line"
	return Errors{fe}
}

// firstBadLine returns the smallest n >= from such that the first n lines of data do
// not parse as YAML (0 if none is found within a small window).
func firstBadLine(data []byte, from int) int {
	if len(data) > 256<<10 {
		return 0 // too costly; keep go-yaml's line
	}
	lines := bytes.SplitAfter(data, []byte("\n"))
	if from < 1 {
		from = 1
	}
	for n := from; n <= len(lines) && n < from+200; n++ {
		prefix := bytes.Join(lines[:n], nil)
		if !parses(prefix) {
			return n
		}
	}
	return 0
}

func parses(data []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			return true
		}
		if err != nil {
			return false
		}
	}
}

// parseDocument reads one YAML (or JSON) document, checks its kind, apiVersion and
// the presence of its stanza, and returns a decoder primed with those checks.
func parseDocument(r io.Reader, name, kind string) (d *decoder, root *yaml.Node, err error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxConfigSize+1))
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > MaxConfigSize {
		return nil, nil, Errors{{File: name, Err: ErrInvalid,
			Msg: fmt.Sprintf("file is larger than %d MiB; an image set configuration is a small YAML file", MaxConfigSize>>20)}}
	}
	defer func() {
		// go-yaml is not expected to panic, but user input must never crash us.
		if p := recover(); p != nil {
			d, root = nil, nil
			err = Errors{{File: name, Err: ErrInvalid, Msg: oneLine(fmt.Sprintf("invalid YAML: %v", p))}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil, Errors{{File: name, Err: ErrInvalid,
				Msg: fmt.Sprintf("the file is empty; it must hold an %s (apiVersion: %s, kind: %s)", kind, APIVersion, kind)}}
		}
		return nil, nil, syntaxError(name, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, nil, Errors{{File: name, Line: extra.Line, Column: extra.Column, Err: ErrInvalid,
			Msg: "the file holds more than one YAML document; keep one configuration per file"}}
	} else if !errors.Is(err, io.EOF) {
		return nil, nil, syntaxError(name, data, err)
	}

	d = newDecoder(name)
	root = &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	root = d.resolve(root)
	if root == nil || isNull(root) {
		return nil, nil, Errors{{File: name, Line: doc.Line, Err: ErrInvalid,
			Msg: fmt.Sprintf("the document is empty; it must hold an %s (apiVersion: %s, kind: %s)", kind, APIVersion, kind)}}
	}
	if root.Kind != yaml.MappingNode {
		return nil, nil, Errors{{File: name, Line: root.Line, Column: root.Column, Err: ErrInvalid,
			Msg: fmt.Sprintf("expected a mapping with apiVersion, kind and %s, got %s", stanzaOf(kind), kindName(root))}}
	}

	keys := map[string]*yaml.Node{} // first occurrence of each top-level key
	vals := map[string]*yaml.Node{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Kind == yaml.ScalarNode {
			if _, dup := keys[k.Value]; !dup {
				keys[k.Value] = k
				vals[k.Value] = root.Content[i+1]
			}
		}
	}

	// kind decides everything else: stop at once when it is wrong.
	kn, ok := vals["kind"]
	if ok {
		kn = d.resolve(kn)
	}
	switch {
	case !ok || kn == nil || isNull(kn):
		return nil, nil, Errors{{File: name, Line: root.Line, Column: root.Column, Field: "kind", Err: ErrInvalid,
			Msg: fmt.Sprintf("kind is missing; add \"kind: %s\"", kind)}}
	case kn.Kind != yaml.ScalarNode || kn.Value != kind:
		msg := fmt.Sprintf("expected kind %s, got %s", kind, kindName(kn))
		switch {
		case kn.Value == KindDeleteImageSetConfiguration:
			msg += "; this file says what to delete, not what to mirror: pass an ImageSetConfiguration here"
		case kn.Value == KindImageSetConfiguration:
			msg += "; this file says what to mirror: pass a DeleteImageSetConfiguration here"
		case strings.EqualFold(kn.Value, kind):
			msg += fmt.Sprintf("; kinds are case-sensitive: write %s", kind)
		default:
			msg += fmt.Sprintf("; set \"kind: %s\"", kind)
		}
		return nil, nil, Errors{{File: name, Line: kn.Line, Column: kn.Column, Field: "kind", Err: ErrInvalid, Msg: msg}}
	}

	// apiVersion: reported, but the rest is still checked.
	if av, ok := vals["apiVersion"]; !ok || isNull(av) {
		d.add(nodePos(root), "apiVersion", ErrInvalid, "apiVersion is missing; add \"apiVersion: %s\"", APIVersion)
	} else if av = d.resolve(av); av != nil && av.Kind == yaml.ScalarNode && av.Value != APIVersion {
		msg := fmt.Sprintf("unsupported apiVersion %s; use %s", quote(av.Value), APIVersion)
		if strings.HasPrefix(av.Value, "mirror.openshift.io/v1") {
			msg = fmt.Sprintf("apiVersion %s is the oc-mirror v1 format; airlock reads the oc-mirror v2 format: set \"apiVersion: %s\" (and remove storageConfig if present)", quote(av.Value), APIVersion)
		}
		d.add(nodePos(av), "apiVersion", ErrInvalid, "%s", msg)
	}

	// The stanza of this kind must be there and the other one must not.
	own, other := stanzaOf(kind), "delete"
	if kind == KindDeleteImageSetConfiguration {
		other = "mirror"
	}
	if _, ok := vals[own]; !ok {
		d.add(nodePos(root), own, ErrInvalid, "the stanza is missing; add \"%s:\" with what to %s (operators, additionalImages, ...)", own, own)
	}
	if k, ok := keys[other]; ok {
		d.skip = map[string]bool{other: true}
		if kind == KindImageSetConfiguration {
			d.add(nodePos(k), other, ErrInvalid, "not allowed in an ImageSetConfiguration; put what to delete in a separate file with \"kind: %s\"", KindDeleteImageSetConfiguration)
		} else {
			d.add(nodePos(k), other, ErrInvalid, "not allowed in a DeleteImageSetConfiguration; use \"delete:\" to list what to delete")
		}
	}
	return d, root, nil
}

func stanzaOf(kind string) string {
	if kind == KindDeleteImageSetConfiguration {
		return "delete"
	}
	return "mirror"
}
