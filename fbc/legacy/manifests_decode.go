package legacy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"sigs.k8s.io/yaml"
)

// This file reads the files of a package-manifest folder the way opm v1.73's
// directory loader does (Kubernetes' YAML-or-JSON decoder): only the first
// document of a file counts; a file is JSON when its first 30 bytes, without
// leading white space, start with "{"; YAML documents are split on lines that
// start with "---".

// sniffLen is how much of a file the decoder looks at to tell JSON from YAML.
const sniffLen = 30

// firstDocument returns the first document of the file at p as JSON (YAML is
// converted). io.EOF means the file holds no document.
func firstDocument(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return firstDocumentOf(f)
}

func firstDocumentOf(r io.Reader) ([]byte, error) {
	br := bufio.NewReaderSize(r, sniffLen)
	head, _ := br.Peek(sniffLen)
	if bytes.HasPrefix(bytes.TrimLeft(head, " \t\r\n"), []byte("{")) {
		var raw json.RawMessage
		if err := json.NewDecoder(br).Decode(&raw); err != nil {
			return nil, err
		}
		return raw, nil
	}
	doc, err := firstYAMLDocument(br)
	if err != nil {
		return nil, err
	}
	return yaml.YAMLToJSON(doc)
}

// firstYAMLDocument reads up to the first document separator that ends a
// non-empty document.
func firstYAMLDocument(r *bufio.Reader) ([]byte, error) {
	var buf bytes.Buffer
	for {
		line, err := readLine(r)
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		if bytes.HasPrefix(line, []byte("---")) {
			rest := strings.TrimSpace(string(line[3:]))
			if rest != "" && rest[0] != '#' {
				return nil, fmt.Errorf("invalid YAML document separator: %s", rest)
			}
			if buf.Len() != 0 {
				return buf.Bytes(), nil
			}
			if errors.Is(err, io.EOF) {
				return nil, io.EOF
			}
		}
		if errors.Is(err, io.EOF) {
			if buf.Len() != 0 {
				return buf.Bytes(), nil
			}
			return nil, io.EOF
		}
		buf.Write(line)
	}
}

// readLine reads one line, its newline included, however long.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, isPrefix, err := r.ReadLine()
		line = append(line, chunk...)
		if err != nil {
			return line, err
		}
		if !isPrefix {
			return append(line, '\n'), nil
		}
	}
}

// object is a decoded Kubernetes object, as Kubernetes' unstructured decoder
// holds it: integers as int64, other numbers as float64.
type object struct {
	m    map[string]any
	kind string
	name string
	// version is the version part of apiVersion.
	version string
}

// decodeObject decodes a JSON document as a Kubernetes object. Like opm's
// decoder, a document without a kind is an error.
func decodeObject(doc []byte) (*object, error) {
	var m map[string]any
	if err := unmarshalPreserveInts(doc, &m); err != nil {
		return nil, err
	}
	o := &object{m: m}
	o.kind, _ = m["kind"].(string)
	if o.kind == "" {
		return nil, errors.New("object has no kind")
	}
	if md, ok := m["metadata"].(map[string]any); ok {
		o.name, _ = md["name"].(string)
	}
	if av, ok := m["apiVersion"].(string); ok {
		o.version = av
		if i := strings.LastIndexByte(av, '/'); i >= 0 {
			o.version = av[i+1:]
		}
	}
	return o, nil
}

// encode is the object as opm stores it: encoding/json of the map (keys
// sorted, HTML characters escaped) and a newline.
func (o *object) encode() ([]byte, error) {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(o.m); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// unmarshalPreserveInts decodes JSON into v with numbers that are integers
// as int64 and the others as float64 (an overflowing float is an error), as
// Kubernetes' JSON decoding does.
func unmarshalPreserveInts(doc []byte, v *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return err
	}
	conv, err := convertNumbers(m)
	if err != nil {
		return err
	}
	if conv == nil {
		*v = nil
		return nil
	}
	*v = conv.(map[string]any)
	return nil
}

func convertNumbers(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		if x == nil {
			return nil, nil
		}
		for k, e := range x {
			c, err := convertNumbers(e)
			if err != nil {
				return nil, err
			}
			x[k] = c
		}
		return x, nil
	case []any:
		for i, e := range x {
			c, err := convertNumbers(e)
			if err != nil {
				return nil, err
			}
			x[i] = c
		}
		return x, nil
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i, nil
		}
		return x.Float64()
	default:
		return v, nil
	}
}

// packageManifest is a *.package.yaml document (opm's registry.PackageManifest,
// decoded the same way).
type packageManifest struct {
	PackageName string           `json:"packageName"`
	Channels    []packageChannel `json:"channels"`
	Default     string           `json:"defaultChannel"`
	Deprecation *struct {
		Message string `json:"message"`
	} `json:"deprecation,omitempty"`
}

type packageChannel struct {
	Name        string `json:"name"`
	CurrentCSV  string `json:"currentCSV"`
	Deprecation *struct {
		Message string `json:"message"`
	} `json:"deprecation,omitempty"`
}

// isDefault is opm's PackageChannel.IsDefaultChannel.
func (c packageChannel) isDefault(pm *packageManifest) bool {
	return c.Name == pm.Default || len(pm.Channels) == 1
}

// decodePackageManifest decodes the first document of the file at p as a
// package manifest, as opm does: YAML through sigs.k8s.io/yaml (so a YAML
// number in a string field stays a string), JSON with encoding/json.
func decodePackageManifest(p string) (*packageManifest, error) {
	var pm packageManifest
	if err := decodeFirstInto(p, &pm); err != nil {
		return nil, err
	}
	return &pm, nil
}
