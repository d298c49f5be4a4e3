package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	k8syaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// readFBC reads the documents of the file-based catalog in fsys for the oracle:
// every .json file as a stream of JSON documents, every .yaml/.yml file as YAML
// documents separated by "---" lines, in lexical order of the paths. It does not
// implement .indexignore (the valid catalogs the comparison runs on have none)
// and refuses a tree that has one.
func readFBC(fsys fs.FS) ([]oDoc, error) {
	var docs []oDoc
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if d.Name() == ".indexignore" {
			return fmt.Errorf("%s: .indexignore is not supported by the oracle's reader", p)
		}
		ext := strings.ToLower(path.Ext(p))
		if ext != ".json" && ext != ".yaml" && ext != ".yml" {
			return nil
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		if ext == ".json" {
			dec := json.NewDecoder(bytes.NewReader(data))
			for {
				var doc oDoc
				if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
					return nil
				} else if err != nil {
					return fmt.Errorf("%s: %w", p, err)
				}
				docs = append(docs, doc)
			}
		}
		r := k8syaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			raw, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			if len(bytes.TrimSpace(raw)) == 0 {
				continue
			}
			var doc oDoc
			if err := yaml.Unmarshal(raw, &doc); err != nil {
				return fmt.Errorf("%s: %w", p, err)
			}
			docs = append(docs, doc)
		}
	})
	return docs, err
}
