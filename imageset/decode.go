package imageset

import (
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	yaml "go.yaml.in/yaml/v3"
)

// The decoder maps a YAML node tree onto the configuration types itself (driven by
// their json tags), so that every problem can be reported with its line, column and
// field path, and so that unknown fields and wrong types are errors, never ignored.

// maxNodes bounds the work done on one document (YAML aliases can make a small file
// expand to a huge tree).
const maxNodes = 200_000

type decoder struct {
	*errorList
	pos     map[string]position // field path -> position of its value
	visited int
	aborted bool
	// skip names root-level keys that were already reported (delete:/mirror: in the
	// wrong kind of document).
	skip map[string]bool
}

func newDecoder(file string) *decoder {
	return &decoder{
		errorList: &errorList{file: file},
		pos:       map[string]position{},
	}
}

func nodePos(n *yaml.Node) position { return position{n.Line, n.Column} }

// fieldInfo is one serialised field of a struct type.
type fieldInfo struct {
	name  string
	index []int
}

type structInfo struct {
	byName map[string]fieldInfo
	names  []string // in declaration order
}

var structCache sync.Map // reflect.Type -> *structInfo

func structFields(t reflect.Type) *structInfo {
	if si, ok := structCache.Load(t); ok {
		return si.(*structInfo)
	}
	si := &structInfo{byName: map[string]fieldInfo{}}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if tag == "-" || (!f.IsExported() && !f.Anonymous) {
				continue
			}
			name, _, _ := strings.Cut(tag, ",")
			idx := append(append([]int(nil), prefix...), i)
			if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				name = f.Name
			}
			si.byName[name] = fieldInfo{name: name, index: idx}
			si.names = append(si.names, name)
		}
	}
	walk(t, nil)
	structCache.Store(t, si)
	return si
}

// restrictedFields lists the only fields accepted in some places where the Go type is
// shared with a richer entry (blockedImages and samples entries have only a name).
func restrictedFields(path string) []string {
	p := parentPath(path)
	if strings.HasSuffix(p, ".blockedImages") || strings.HasSuffix(p, ".samples") {
		return []string{"name"}
	}
	return nil
}

// resolve follows aliases and counts the work done.
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n == nil || n.Kind == yaml.AliasNode {
		return nil
	}
	d.visited++
	if d.visited > maxNodes && !d.aborted {
		d.aborted = true
		d.add(nodePos(n), "", ErrInvalid, "the document expands to more than %d values (YAML aliases?); write a smaller configuration", maxNodes)
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return "the string " + quote(n.Value)
		case "!!int", "!!float":
			return "the number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
		return "the value " + quote(n.Value)
	}
	return "something else"
}

// quote is strconv.Quote limited to a readable length.
func quote(s string) string {
	if len(s) > 80 {
		s = strings.ToValidUTF8(s[:77], "") + "..."
	}
	return strconv.Quote(s)
}

// decode stores the YAML node n into v (a settable value) at field path path.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if d.aborted {
		return
	}
	n = d.resolve(n)
	if n == nil || d.aborted {
		return
	}
	d.pos[path] = nodePos(n)
	if n.Kind == yaml.ScalarNode {
		switch t := n.ShortTag(); t {
		case "!!str", "!!int", "!!float", "!!bool", "!!null", "!!timestamp":
		default:
			d.add(nodePos(n), path, ErrInvalid, "unsupported YAML tag %s; remove the tag", t)
			return
		}
	}
	if isNull(n) {
		return // an empty value leaves the zero value
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decodeValue(n, v.Elem(), path)
	default:
		d.decodeValue(n, v, path)
	}
}

func (d *decoder) decodeValue(n *yaml.Node, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			hint := "write each entry on its own line starting with \"- \""
			if n.Kind == yaml.MappingNode {
				hint = "start the entry with \"- \" to make it a list item"
			}
			d.add(nodePos(n), path, ErrInvalid, "expected a list, got %s; %s", kindName(n), hint)
			return
		}
		if len(n.Content) == 0 {
			return // an empty list is the same as no list
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, c := range n.Content {
			d.decode(c, s.Index(i), indexPath(path, i))
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.add(nodePos(n), path, ErrInvalid, "expected a string, got %s; write a single value", kindName(n))
			return
		}
		if n.ShortTag() == "!!bool" {
			d.add(nodePos(n), path, ErrInvalid, "expected a string, got %s; put it in quotes (%q) if you mean the text", kindName(n), n.Value)
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			hint := "use true or false"
			if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && (n.Value == "true" || n.Value == "false") {
				hint = "remove the quotes"
			}
			d.add(nodePos(n), path, ErrInvalid, "expected true or false, got %s; %s", kindName(n), hint)
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil {
			hint := "write a whole number without quotes"
			d.add(nodePos(n), path, ErrInvalid, "expected a whole number, got %s; %s", kindName(n), hint)
			return
		}
		if v.OverflowInt(i) {
			d.add(nodePos(n), path, ErrInvalid, "number %s is too large", n.Value)
			return
		}
		v.SetInt(i)
	case reflect.Map:
		// Free-form values (a Helm chart's values): any YAML mapping.
		if n.Kind != yaml.MappingNode {
			d.add(nodePos(n), path, ErrInvalid, "expected a mapping of values, got %s; write it as key: value lines", kindName(n))
			return
		}
		m := reflect.New(v.Type())
		if err := n.Decode(m.Interface()); err != nil {
			d.add(nodePos(n), path, ErrInvalid, "values: %v", err)
			return
		}
		v.Set(m.Elem())
	default:
		// Not reachable with the configuration types; never panic on input.
		d.add(nodePos(n), path, ErrInvalid, "cannot store %s here", kindName(n))
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		hint := "write it as key: value lines"
		si := structFields(v.Type())
		if _, ok := si.byName["name"]; ok && n.Kind == yaml.ScalarNode {
			hint = "write it as \"name: " + n.Value + "\""
		}
		d.add(nodePos(n), path, ErrInvalid, "expected a mapping, got %s; %s", kindName(n), hint)
		return
	}
	si := structFields(v.Type())
	valid := si.names
	if r := restrictedFields(path); r != nil {
		valid = r
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.resolve(n.Content[i])
		if k == nil || d.aborted {
			return
		}
		val := n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.add(nodePos(k), path, ErrInvalid, "keys must be field names, got %s", kindName(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			d.add(nodePos(k), path, ErrInvalid, "YAML merge keys (<<) are not supported; write the fields out")
			continue
		}
		name := k.Value
		fp := joinPath(path, name)
		if path == "" && d.skip[name] {
			continue
		}
		if line, dup := seen[name]; dup {
			d.add(nodePos(k), fp, ErrInvalid, "field %s is set twice (first on line %d); keep one", name, line)
			continue
		}
		seen[name] = k.Line
		fi, ok := si.byName[name]
		if ok && !contains(valid, name) {
			ok = false
		}
		if !ok {
			d.add(nodePos(k), fp, ErrInvalid, "%s", unknownFieldMsg(name, valid, path))
			continue
		}
		d.decode(val, v.FieldByIndex(fi.index), fp)
	}
	// Remember where the entry starts for the rest of the program.
	if f := v.FieldByName("Line"); f.IsValid() && f.Kind() == reflect.Int && f.CanSet() {
		f.SetInt(int64(n.Line))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// fieldHints explains fields that are known from oc-mirror v1 or older versions.
var fieldHints = map[string]string{
	"storageConfig":   "storageConfig is an oc-mirror v1 (v1alpha2) field: airlock, like oc-mirror v2, keeps no metadata image; remove it",
	"targetName":      "targetName was replaced by targetCatalog; use targetCatalog (a repository path such as my-ns/my-catalog)",
	"minBundle":       "minBundle is not supported (oc-mirror v2 dropped it too); use minVersion",
	"originalRef":     "originalRef is an oc-mirror v1 field; remove it",
	"headsOnly":       "headsOnly is an old oc-mirror field: channel heads are the default, use full: true for every bundle",
	"selectedBundles": "selected bundles are written as bundles: [{name: ...}]",
	"metadata":        "an image set configuration has no metadata; remove it",
}

// fieldHomes says where a field belongs when it is written at the wrong level.
var fieldHomes = map[string]string{
	"minVersion":       "a package (packages[].minVersion) or a channel (packages[].channels[].minVersion)",
	"maxVersion":       "a package (packages[].maxVersion) or a channel (packages[].channels[].maxVersion)",
	"channels":         "a package (packages[].channels)",
	"defaultChannel":   "a package (packages[].defaultChannel)",
	"bundles":          "a package (packages[].bundles)",
	"packages":         "an operators entry (mirror.operators[].packages)",
	"catalog":          "an operators entry (mirror.operators[].catalog)",
	"full":             "an operators entry (mirror.operators[].full)",
	"targetCatalog":    "an operators entry (mirror.operators[].targetCatalog)",
	"operators":        "the mirror: stanza (mirror.operators)",
	"additionalImages": "the mirror: stanza (mirror.additionalImages)",
	"blockedImages":    "the mirror: stanza (mirror.blockedImages)",
	"helm":             "the mirror: stanza (mirror.helm)",
	"platform":         "the mirror: stanza (mirror.platform)",
	"archiveSize":      "the top level of an ImageSetConfiguration",
}

func unknownFieldMsg(name string, valid []string, path string) string {
	msg := "unknown field " + quote(name)
	if h, ok := fieldHints[name]; ok {
		return msg + ": " + h
	}
	if s := nearest(name, valid); s != "" {
		return msg + "; did you mean " + s + "?"
	}
	if home, ok := fieldHomes[name]; ok {
		return msg + " here; " + name + " belongs in " + home
	}
	if len(valid) == 0 {
		return msg + "; remove it"
	}
	sorted := append([]string(nil), valid...)
	sort.Strings(sorted)
	return msg + "; valid fields here are: " + strings.Join(sorted, ", ")
}

// nearest returns the valid name closest to name (case-insensitive equal, or within a
// small edit distance), or "".
func nearest(name string, valid []string) string {
	best, bestD := "", 1<<30
	ln := strings.ToLower(name)
	for _, v := range valid {
		lv := strings.ToLower(v)
		if lv == ln {
			return v
		}
		dist := editDistance(ln, lv)
		if dist < bestD {
			best, bestD = v, dist
		}
	}
	limit := 2
	if len(name) <= 4 {
		limit = 1
	}
	if bestD <= limit {
		return best
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b (bytes).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
