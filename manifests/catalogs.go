package manifests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"
)

// maxLabel is the DNS-1123 label limit that CatalogSource names must respect.
const maxLabel = 63

// builtCatalog is one catalog with its objects.
type builtCatalog struct {
	cs     CatalogSource
	csData []byte
	cc     ClusterCatalog
	ccData []byte
}

// buildCatalogs builds one CatalogSource and one ClusterCatalog per distinct catalog.
func buildCatalogs(catalogs []Catalog) ([]builtCatalog, error) {
	cats := append([]Catalog(nil), catalogs...)
	sort.SliceStable(cats, func(i, j int) bool { return catalogLess(cats[i], cats[j]) })
	// Drop exact duplicates (the same catalog listed twice gives one CatalogSource).
	uniq := cats[:0]
	for i, c := range cats {
		if i > 0 && catalogEqual(c, cats[i-1]) {
			continue
		}
		uniq = append(uniq, c)
	}

	var (
		out   []builtCatalog
		errs  []error
		taken = map[string]bool{}
	)
	for _, c := range uniq {
		image, dst, err := catalogImage(c)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		suffix := uniqueName(catalogBaseName(dst, c.Digest), taken)
		b := builtCatalog{}
		b.cs, b.csData, err = buildCatalogSource(c, "cs-"+suffix, image)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		b.cc, b.ccData, err = buildClusterCatalog("cc-"+suffix, image, dst)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, b)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func catalogLess(a, b Catalog) bool {
	if a.Destination != b.Destination {
		return a.Destination < b.Destination
	}
	if a.Source != b.Source {
		return a.Source < b.Source
	}
	if a.TemplatePath != b.TemplatePath {
		return a.TemplatePath < b.TemplatePath
	}
	if c := bytes.Compare(a.Template, b.Template); c != 0 {
		return c < 0
	}
	if a.DisplayName != b.DisplayName {
		return a.DisplayName < b.DisplayName
	}
	if a.Publisher != b.Publisher {
		return a.Publisher < b.Publisher
	}
	return a.Digest < b.Digest
}

func catalogEqual(a, b Catalog) bool {
	return !catalogLess(a, b) && !catalogLess(b, a)
}

// catalogImage returns the reference CatalogSource and ClusterCatalog use: the
// destination as given, or destination@digest when it carries neither tag nor digest.
func catalogImage(c Catalog) (string, parsedRef, error) {
	dst, err := parseRef(c.Destination)
	if err != nil {
		return "", parsedRef{}, fmt.Errorf("catalog %q: invalid destination reference %q: %w; the mirrored catalog must be a registry reference", c.Source, c.Destination, err)
	}
	if dst.tag == "" && dst.digest == "" && c.Digest != "" {
		dst.digest = c.Digest
	}
	if dst.digest != "" {
		if _, err := parseRef(dst.repo + "@" + dst.digest); err != nil {
			return "", parsedRef{}, fmt.Errorf("catalog %q: invalid digest %q: %w", c.Source, dst.digest, err)
		}
	}
	return dst.String(), dst, nil
}

// catalogBaseName derives the name suffix shared by cs-… and cc-…: the repository's
// last path element and its tag (or the first 12 hex characters of the digest),
// sanitised to a DNS-1123 label.
func catalogBaseName(dst parsedRef, digest string) string {
	s := lastElement(dst.repo)
	switch {
	case strings.HasPrefix(dst.tag, "sha256-") && len(dst.tag) > len("sha256-")+12:
		// A digest tag (a digest-only or untagged oci:// catalog): its first
		// 12 hex characters, as for a digest.
		s += "-" + dst.tag[len("sha256-"):len("sha256-")+12]
	case dst.tag != "":
		s += "-" + dst.tag
	case dst.digest != "" || digest != "":
		d := dst.digest
		if d == "" {
			d = digest
		}
		if i := strings.IndexByte(d, ':'); i >= 0 {
			d = d[i+1:]
		}
		if len(d) > 12 {
			d = d[:12]
		}
		s += "-" + d
	}
	return sanitizeLabel(s, maxLabel-len("cs-"))
}

// sanitizeLabel lower-cases s, maps every character outside [a-z0-9-] to '-', folds
// runs of '-', trims it to max and strips leading and trailing '-'.
func sanitizeLabel(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			continue
		}
		if str := b.String(); len(str) > 0 && str[len(str)-1] != '-' {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	if out == "" {
		out = "catalog"
	}
	return out
}

// uniqueName returns base, or base-1, base-2, … (shortened so that "cs-" + name stays
// within 63 characters) when taken, and marks the result taken.
func uniqueName(base string, taken map[string]bool) string {
	limit := maxLabel - len("cs-")
	name := base
	for n := 1; taken[name]; n++ {
		suffix := "-" + strconv.Itoa(n)
		b := base
		if len(b)+len(suffix) > limit {
			b = strings.TrimRight(b[:limit-len(suffix)], "-")
		}
		name = b + suffix
	}
	taken[name] = true
	return name
}

// serverFields are metadata fields a live object carries that must not be applied.
var serverFields = []string{"resourceVersion", "uid", "creationTimestamp", "generation", "managedFields", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds", "ownerReferences"}

// buildCatalogSource builds the CatalogSource, starting from the template when given.
func buildCatalogSource(c Catalog, name, image string) (CatalogSource, []byte, error) {
	obj := map[string]any{}
	if len(bytes.TrimSpace(c.Template)) > 0 {
		t, err := parseTemplate(c.Template, c.TemplatePath)
		if err != nil {
			return CatalogSource{}, nil, fmt.Errorf("catalog %q: %w", c.Source, err)
		}
		obj = t
	}
	obj["apiVersion"] = APIVersionOLM
	obj["kind"] = KindCatalogSource
	meta, _ := obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
	}
	for _, f := range serverFields {
		delete(meta, f)
	}
	meta["name"] = name
	meta["namespace"] = CatalogNamespace
	obj["metadata"] = meta
	delete(obj, "status")

	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
	}
	spec["sourceType"] = "grpc"
	spec["image"] = image
	if _, ok := spec["displayName"]; !ok {
		spec["displayName"] = defaultDisplayName(c)
	}
	if _, ok := spec["publisher"]; !ok {
		spec["publisher"] = defaultPublisher(c)
	}
	if _, ok := spec["updateStrategy"]; !ok {
		spec["updateStrategy"] = map[string]any{"registryPoll": map[string]any{"interval": DefaultPollInterval}}
	}
	obj["spec"] = spec

	data, err := yaml.Marshal(obj)
	if err != nil {
		return CatalogSource{}, nil, fmt.Errorf("catalog %q: serialising CatalogSource %s: %w", c.Source, name, err)
	}
	return CatalogSource{Name: name, Namespace: CatalogNamespace, Image: image, Catalog: c.Source, Object: obj}, data, nil
}

func defaultDisplayName(c Catalog) string {
	if c.DisplayName != "" {
		return c.DisplayName
	}
	if src, err := parseRef(c.Source); err == nil {
		s := lastElement(src.repo)
		if src.tag != "" {
			s += ":" + src.tag
		}
		return s
	}
	return c.Source
}

func defaultPublisher(c Catalog) string {
	if c.Publisher != "" {
		return c.Publisher
	}
	if src, err := parseRef(c.Source); err == nil {
		return src.repo[:strings.IndexByte(src.repo, '/')]
	}
	return "airlock"
}

// parseTemplate decodes and checks a targetCatalogSourceTemplate.
func parseTemplate(data []byte, path string) (map[string]any, error) {
	if path == "" {
		path = "targetCatalogSourceTemplate"
	}
	j, err := yaml.YAMLToJSONStrict(data)
	if err != nil {
		return nil, fmt.Errorf("catalog source template %s: not valid YAML: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("catalog source template %s: %w", path, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("catalog source template %s: want a CatalogSource object, got %s", path, describe(v))
	}
	if av, _ := obj["apiVersion"].(string); av != APIVersionOLM {
		return nil, fmt.Errorf("catalog source template %s: apiVersion is %q, want %q", path, obj["apiVersion"], APIVersionOLM)
	}
	if k, _ := obj["kind"].(string); k != KindCatalogSource {
		return nil, fmt.Errorf("catalog source template %s: kind is %q, want %q", path, obj["kind"], KindCatalogSource)
	}
	if m, ok := obj["metadata"]; ok && m != nil {
		if _, ok := m.(map[string]any); !ok {
			return nil, fmt.Errorf("catalog source template %s: metadata must be a mapping, got %s", path, describe(m))
		}
	}
	if s, ok := obj["spec"]; ok && s != nil {
		spec, ok := s.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("catalog source template %s: spec must be a mapping, got %s", path, describe(s))
		}
		for _, f := range []string{"configMap", "address"} {
			if _, ok := spec[f]; ok {
				return nil, fmt.Errorf("catalog source template %s: spec.%s is set; remove it (the mirrored catalog image is served with sourceType grpc)", path, f)
			}
		}
		if us, ok := spec["updateStrategy"]; ok && us != nil {
			if _, ok := us.(map[string]any); !ok {
				return nil, fmt.Errorf("catalog source template %s: spec.updateStrategy must be a mapping, got %s", path, describe(us))
			}
		}
	}
	return obj, nil
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "nothing"
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	}
	return fmt.Sprintf("%T", v)
}

// buildClusterCatalog builds the OLM v1 ClusterCatalog.
func buildClusterCatalog(name, image string, dst parsedRef) (ClusterCatalog, []byte, error) {
	cc := ClusterCatalog{APIVersion: APIVersionOLMv1, Kind: KindClusterCatalog, Metadata: ObjectMeta{Name: name}}
	cc.Spec.Source.Type = "Image"
	cc.Spec.Source.Image.Ref = image
	if dst.digest == "" {
		cc.Spec.Source.Image.PollIntervalMinutes = defaultPollMinutes
	}
	data, err := yaml.Marshal(cc)
	if err != nil {
		return ClusterCatalog{}, nil, fmt.Errorf("serialising ClusterCatalog %s: %w", name, err)
	}
	return cc, data, nil
}

// CheckTemplate checks a targetCatalogSourceTemplate the way the build will use
// it, so that a bad template is reported before anything is copied.
func CheckTemplate(data []byte, path string) error {
	_, err := parseTemplate(data, path)
	return err
}
