package manifests

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
)

// ICSPDir is the sub-folder that holds the ImageContentSourcePolicy files. They are kept
// out of the top folder so that `oc apply -f DIR/` never creates ICSPs next to
// ImageDigestMirrorSets: OpenShift does not allow both kinds on one cluster.
const ICSPDir = "icsp"

// ReadmeName is the name of the explanation written into the folder.
const ReadmeName = "README.txt"

// Set is the result of Build: typed objects and their files.
type Set struct {
	ImageDigestMirrorSets      []ImageDigestMirrorSet
	ImageTagMirrorSets         []ImageTagMirrorSet
	ImageContentSourcePolicies []ImageContentSourcePolicy
	CatalogSources             []CatalogSource
	ClusterCatalogs            []ClusterCatalog
	ClusterImagePolicies       []ClusterImagePolicy
	// Skipped lists image sources that got no mirror rule because they are not registry
	// references (oci:, file:, …), sorted.
	Skipped []string

	files []File
}

// Build builds the cluster resources for a mirror run. It is pure: the same arguments
// give the same objects and bytes whatever their order.
func Build(images []Image, catalogs []Catalog, opts Options) (*Set, error) {
	max := opts.MaxObjectBytes
	if max <= 0 {
		max = DefaultMaxObjectBytes
	}
	rs, skipped, err := buildRules(images, catalogs, opts)
	if err != nil {
		return nil, fmt.Errorf("building mirror rules: %w", err)
	}
	cats, err := buildCatalogs(catalogs)
	if err != nil {
		return nil, fmt.Errorf("building catalog sources: %w", err)
	}

	s := &Set{Skipped: skipped}
	cips, cipFiles, err := buildImagePolicies(images, opts.SignatureKey)
	if err != nil {
		return nil, err
	}
	s.ClusterImagePolicies, s.files = cips, cipFiles
	for _, cat := range rs.categories() {
		digest := sortedRules(rs.digest, cat)
		tag := sortedRules(rs.tag, cat)

		chunks, err := splitRules("idms-"+string(cat), digest, max, renderIDMS)
		if err != nil {
			return nil, fmt.Errorf("splitting ImageDigestMirrorSet: %w", err)
		}
		for _, c := range chunks {
			s.ImageDigestMirrorSets = append(s.ImageDigestMirrorSets, c.obj.(ImageDigestMirrorSet))
			s.files = append(s.files, File{Name: c.name + ".yaml", APIVersion: APIVersionConfig, Kind: KindIDMS, ObjectName: c.name, Rules: len(c.rules), Data: c.data})
		}

		chunks, err = splitRules("itms-"+string(cat), tag, max, renderITMS)
		if err != nil {
			return nil, fmt.Errorf("splitting ImageTagMirrorSet: %w", err)
		}
		for _, c := range chunks {
			s.ImageTagMirrorSets = append(s.ImageTagMirrorSets, c.obj.(ImageTagMirrorSet))
			s.files = append(s.files, File{Name: c.name + ".yaml", APIVersion: APIVersionConfig, Kind: KindITMS, ObjectName: c.name, Rules: len(c.rules), Data: c.data})
		}

		chunks, err = splitRules("icsp-"+string(cat), digest, max, renderICSP(cat == catOperator))
		if err != nil {
			return nil, fmt.Errorf("splitting ImageContentSourcePolicy: %w", err)
		}
		for _, c := range chunks {
			s.ImageContentSourcePolicies = append(s.ImageContentSourcePolicies, c.obj.(ImageContentSourcePolicy))
			s.files = append(s.files, File{Name: ICSPDir + "/" + c.name + ".yaml", APIVersion: APIVersionICSP, Kind: KindICSP, ObjectName: c.name, Rules: len(c.rules), Data: c.data})
		}
	}
	for _, b := range cats {
		s.CatalogSources = append(s.CatalogSources, b.cs)
		s.ClusterCatalogs = append(s.ClusterCatalogs, b.cc)
		s.files = append(s.files,
			File{Name: b.cs.Name + ".yaml", APIVersion: APIVersionOLM, Kind: KindCatalogSource, ObjectName: b.cs.Name, Data: b.csData},
			File{Name: b.cc.Metadata.Name + ".yaml", APIVersion: APIVersionOLMv1, Kind: KindClusterCatalog, ObjectName: b.cc.Metadata.Name, Data: b.ccData},
		)
	}
	taken := map[string]bool{}
	for _, f := range s.files {
		taken[f.Name] = true
	}
	for _, o := range opts.Objects {
		if err := checkObjectName(o.Name, taken); err != nil {
			return nil, err
		}
		taken[o.Name] = true
		s.files = append(s.files, o)
	}
	sort.Slice(s.files, func(i, j int) bool { return s.files[i].Name < s.files[j].Name })
	s.files = append(s.files, File{Name: ReadmeName, Data: readme(s.files, s.Skipped)})
	sort.Slice(s.files, func(i, j int) bool { return s.files[i].Name < s.files[j].Name })
	return s, nil
}

// Files returns the files Write writes, sorted by name (README.txt included). The
// slice is a copy; the Data slices are shared and must not be modified.
func (s *Set) Files() []File {
	return append([]File(nil), s.files...)
}

// owned reports whether a file name (relative to the folder) is one Write may delete:
// a file airlock writes, from this or an earlier run.
func owned(rel string) bool {
	if rel == ReadmeName {
		return true
	}
	if dir, base, ok := strings.Cut(rel, "/"); ok {
		return dir == ICSPDir && !strings.Contains(base, "/") && strings.HasPrefix(base, "icsp-") && strings.HasSuffix(base, ".yaml")
	}
	if !strings.HasSuffix(rel, ".yaml") {
		return false
	}
	for _, p := range []string{"idms-", "itms-", "cs-", "cc-", "cip-"} {
		if strings.HasPrefix(rel, p) {
			return true
		}
	}
	return false
}

// Write puts the files into dir (created if needed). Files a previous run wrote
// (README.txt, idms-*.yaml, itms-*.yaml, cs-*.yaml, cc-*.yaml, icsp/icsp-*.yaml) are
// removed first so that nothing stale is applied; other files are left alone. Each
// file is written to a temporary name and renamed into place.
func (s *Set) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating cluster resources folder: %w", err)
	}
	if err := removeOwned(dir); err != nil {
		return err
	}
	icspDir := filepath.Join(dir, ICSPDir)
	for _, f := range s.files {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("creating %s: %w", filepath.Dir(path), err)
		}
		if err := atomicfile.WriteFile(path, f.Data, 0); err != nil {
			return err
		}
	}
	var written strings.Builder
	for _, f := range s.files {
		if !strings.Contains(f.Name, "/") && !owned(f.Name) {
			written.WriteString(f.Name + "\n")
		}
	}
	if written.Len() == 0 {
		if err := os.Remove(filepath.Join(dir, writtenList)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	} else if err := atomicfile.WriteFile(filepath.Join(dir, writtenList), []byte(written.String()), 0); err != nil {
		return err
	}
	// Leave no empty icsp/ behind when this run has no ICSP (a folder that still holds
	// someone else's files is kept: Remove fails on it and that is fine).
	_ = os.Remove(icspDir)
	return nil
}

// writtenList is the file in the folder that lists what the last Write wrote,
// so that the next one removes the objects content sources built (whose names
// owned does not know). oc apply reads .yaml, .yml and .json files only.
const writtenList = ".airlock-written"

// checkObjectName checks the name of a content source's object.
func checkObjectName(name string, taken map[string]bool) error {
	switch {
	case name == "" || strings.ContainsAny(name, "/\\") || strings.HasPrefix(name, "."):
		return fmt.Errorf("cluster resource file %q: a plain file name is needed", name)
	case !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".json"):
		return fmt.Errorf("cluster resource file %q: the name must end in .yaml or .json", name)
	case taken[name] || owned(name):
		return fmt.Errorf("cluster resource file %q: the name is taken by another file airlock writes", name)
	}
	return nil
}

// removeWritten removes what the last Write listed in writtenList.
func removeWritten(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, writtenList))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, name := range strings.Split(string(b), "\n") {
		if name == "" || checkObjectName(name, nil) != nil {
			continue // only plain names of the folder: never a path outside it
		}
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing stale %s: %w", filepath.Join(dir, name), err)
		}
	}
	return nil
}

func removeOwned(dir string) error {
	if err := removeWritten(dir); err != nil {
		return err
	}
	for _, sub := range []string{"", ICSPDir} {
		d := filepath.Join(dir, sub)
		ents, err := os.ReadDir(d)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s: %w", d, err)
		}
		for _, e := range ents {
			rel := e.Name()
			if sub != "" {
				rel = sub + "/" + rel
			}
			if !e.Type().IsRegular() || !owned(rel) {
				continue
			}
			if err := os.Remove(filepath.Join(d, e.Name())); err != nil {
				return fmt.Errorf("removing stale %s: %w", filepath.Join(d, e.Name()), err)
			}
		}
	}
	return nil
}
