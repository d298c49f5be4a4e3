package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"

	configv1 "github.com/openshift/api/config/v1"
	operatorv1alpha1 "github.com/openshift/api/operator/v1alpha1"
	olmv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	ocv1 "github.com/operator-framework/operator-controller/api/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/listtype"
	schemaobjectmeta "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/objectmeta"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiextvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	celconfig "k8s.io/apiserver/pkg/apis/cel"
	"sigs.k8s.io/yaml"
)

// The CRDs airlock's cluster resources are checked against, as their projects ship
// them inside their Go modules (versions pinned in go.mod).
var crdSources = []struct{ module, path string }{
	{"github.com/openshift/api", "config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagedigestmirrorsets.crd.yaml"},
	{"github.com/openshift/api", "config/v1/zz_generated.crd-manifests/0000_10_config-operator_01_imagetagmirrorsets.crd.yaml"},
	{"github.com/openshift/api", "operator/v1alpha1/zz_generated.crd-manifests/0000_10_config-operator_01_imagecontentsourcepolicies.crd.yaml"},
	{"github.com/operator-framework/api", "crds/operators.coreos.com_catalogsources.yaml"},
	{"github.com/operator-framework/operator-controller", "config/base/catalogd/crd/bases/olm.operatorframework.io_clustercatalogs.yaml"},
	// The OpenShift Update Service operator's CRD, copied into testdata (its
	// module is not a dependency; testdata/crds/SOURCES.md).
	{"", "testdata/crds/updateservice.operator.openshift.io_updateservices.yaml"},
}

// Size limits an object must fit in to be applied.
const (
	// lastAppliedAnnotation is what `kubectl apply` / `oc apply` (client side)
	// stores the whole object in; annotations are limited to 256 KiB in total.
	lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	// etcdMaxRequestBytes is etcd's default --max-request-bytes (1.5 MiB): a larger
	// object cannot be stored.
	etcdMaxRequestBytes = 1536 * 1024
)

var moduleDirs sync.Map // module path → directory

// moduleDir returns the directory of a module of this module's build list, from
// the module cache (downloaded first when it is not there yet).
func moduleDir(t testing.TB, module string) string {
	t.Helper()
	if d, ok := moduleDirs.Load(module); ok {
		return d.(string)
	}
	list := func() string {
		out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go list -m %s: %v: %s (the module must stay required in conformance/go.mod)", module, err, stderr)
		}
		return strings.TrimSpace(string(out))
	}
	dir := list()
	if dir == "" {
		if out, err := exec.Command("go", "mod", "download", module).CombinedOutput(); err != nil {
			t.Fatalf("go mod download %s: %v: %s", module, err, out)
		}
		dir = list()
	}
	if dir == "" {
		t.Fatalf("module %s has no directory in the module cache", module)
	}
	moduleDirs.Store(module, dir)
	return dir
}

// crdValidator validates custom resources of one kind and version the way the API
// server does on create: type meta, unknown fields (rejected, as `kubectl apply`'s
// default --validate=strict asks the server to), defaults, object meta, the
// OpenAPI schema, list-type invariants and the x-kubernetes-validations (CEL) rules.
type crdValidator struct {
	crd        string // file it came from
	group      string
	version    string
	kind       string
	namespaced bool
	structural *structuralschema.Structural
	schema     apiextvalidation.SchemaValidator
	cel        *cel.Validator
}

var (
	crdOnce       sync.Once
	crdValidators map[string]*crdValidator // "apiVersion/Kind"
	crdErr        error
)

// loadCRDValidators reads every CRD of crdSources and builds a validator for each
// served version.
func loadCRDValidators(t testing.TB) map[string]*crdValidator {
	t.Helper()
	crdOnce.Do(func() {
		crdValidators = map[string]*crdValidator{}
		for _, src := range crdSources {
			p := filepath.FromSlash(src.path)
			if src.module != "" {
				p = filepath.Join(moduleDir(t, src.module), p)
			}
			vs, err := validatorsFromCRD(p)
			if err != nil {
				crdErr = err
				return
			}
			for _, v := range vs {
				crdValidators[v.group+"/"+v.version+"/"+v.kind] = v
			}
		}
	})
	if crdErr != nil {
		t.Fatal(crdErr)
	}
	return crdValidators
}

func validatorsFromCRD(path string) ([]*crdValidator, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var crd apiextv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(b, &crd); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []*crdValidator
	for _, v := range crd.Spec.Versions {
		if !v.Served || v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			continue
		}
		var internal apiextensions.JSONSchemaProps
		if err := apiextv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
			return nil, fmt.Errorf("%s version %s: %w", path, v.Name, err)
		}
		ss, err := structuralschema.NewStructural(&internal)
		if err != nil {
			return nil, fmt.Errorf("%s version %s: %w", path, v.Name, err)
		}
		if errs := structuralschema.ValidateStructural(nil, ss); len(errs) > 0 {
			return nil, fmt.Errorf("%s version %s: not a structural schema: %v", path, v.Name, errs.ToAggregate())
		}
		sv, _, err := apiextvalidation.NewSchemaValidator(&internal)
		if err != nil {
			return nil, fmt.Errorf("%s version %s: %w", path, v.Name, err)
		}
		out = append(out, &crdValidator{
			crd: path, group: crd.Spec.Group, version: v.Name, kind: crd.Spec.Names.Kind,
			namespaced: crd.Spec.Scope == apiextv1.NamespaceScoped,
			structural: ss, schema: sv,
			cel: cel.NewValidator(ss, true, celconfig.PerCallLimit),
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no served version with a schema", path)
	}
	return out, nil
}

// validateObject checks one object (a JSON document) as the API server would on
// `kubectl apply` and returns the problems, each prefixed with the field path.
func validateObject(t testing.TB, doc []byte) []string {
	t.Helper()
	vals := loadCRDValidators(t)
	var problems []string
	var obj map[string]any
	if err := utiljson.Unmarshal(doc, &obj); err != nil {
		return []string{"decode: " + err.Error()}
	}
	u := &unstructured.Unstructured{Object: obj}
	gv, kind := u.GetAPIVersion(), u.GetKind()
	v := vals[gv+"/"+kind]
	if v == nil {
		return []string{fmt.Sprintf("no CRD serves %s %s", gv, kind)}
	}
	if !v.namespaced && u.GetNamespace() != "" {
		problems = append(problems, "metadata.namespace: a cluster-scoped object has no namespace")
	}
	if v.namespaced && u.GetNamespace() == "" {
		problems = append(problems, "metadata.namespace: required for a namespaced object (kubectl apply would use the current namespace)")
	}

	// Sizes: etcd's request limit, and client-side apply's annotation (which holds the
	// whole object and must fit the 256 KiB annotation limit checked below).
	if len(doc) > etcdMaxRequestBytes {
		problems = append(problems, fmt.Sprintf("object is %d bytes, over etcd's default limit of %d", len(doc), etcdMaxRequestBytes))
	}

	// Unknown fields: the server prunes them; with strict field validation (the
	// default of kubectl apply) it refuses the object instead.
	pruneCopy := runtimeDeepCopy(obj)
	if unknown := pruning.PruneWithOptions(pruneCopy, v.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}); len(unknown) > 0 {
		sort.Strings(unknown)
		for _, f := range unknown {
			problems = append(problems, fmt.Sprintf("%s: unknown field (strict field validation)", f))
		}
	}
	defaulting.Default(obj, v.structural)

	withApply := runtimeDeepCopy(obj)
	ua := &unstructured.Unstructured{Object: withApply}
	ann := ua.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[lastAppliedAnnotation] = string(doc)
	ua.SetAnnotations(ann)

	var errs field.ErrorList
	errs = append(errs, apimachineryvalidation.ValidateObjectMetaAccessor(ua, v.namespaced, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))...)
	errs = append(errs, apiextvalidation.ValidateCustomResource(nil, obj, v.schema)...)
	errs = append(errs, schemaobjectmeta.Validate(nil, obj, v.structural, false)...)
	errs = append(errs, listtype.ValidateListSetsAndMaps(nil, v.structural, obj)...)
	if len(errs) == 0 {
		celErrs, _ := v.cel.Validate(context.Background(), nil, v.structural, obj, nil, celconfig.RuntimeCELCostBudget)
		errs = append(errs, celErrs...)
	}
	for _, e := range errs {
		problems = append(problems, e.Error())
	}

	// The projects' own Go types, strictly: a field they do not know is a field
	// their controllers never read.
	if err := strictTyped(kind, doc); err != nil {
		problems = append(problems, "typed decode: "+err.Error())
	}
	return problems
}

func runtimeDeepCopy(m map[string]any) map[string]any {
	return (&unstructured.Unstructured{Object: m}).DeepCopy().Object
}

// strictTyped decodes doc into the project's Go type for kind, refusing unknown fields.
func strictTyped(kind string, doc []byte) error {
	var into any
	switch kind {
	case "ImageDigestMirrorSet":
		into = &configv1.ImageDigestMirrorSet{}
	case "ImageTagMirrorSet":
		into = &configv1.ImageTagMirrorSet{}
	case "ImageContentSourcePolicy":
		into = &operatorv1alpha1.ImageContentSourcePolicy{}
	case "CatalogSource":
		into = &olmv1alpha1.CatalogSource{}
	case "ClusterCatalog":
		into = &ocv1.ClusterCatalog{}
	case "UpdateService":
		// The operator's Go module is not a dependency: its CRD's schema
		// (unknown fields refused) is the check.
		return nil
	default:
		return fmt.Errorf("no Go type for kind %s", kind)
	}
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.DisallowUnknownFields()
	return dec.Decode(into)
}

// clusterObject is one object of a cluster-resources folder.
type clusterObject struct {
	file string
	doc  []byte // JSON
	kind string
	name string
}

// readClusterResources reads every YAML file under dir (recursively), one object
// per document.
func readClusterResources(t testing.TB, dir string) []clusterObject {
	t.Helper()
	var out []clusterObject
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, part := range splitYAMLDocs(b) {
			j, err := yaml.YAMLToJSONStrict(part)
			if err != nil {
				return fmt.Errorf("%s document %d: %w", p, i, err)
			}
			if string(j) == "null" {
				continue
			}
			var meta struct {
				Kind     string `json:"kind"`
				Metadata struct {
					Name string `json:"name"`
				} `json:"metadata"`
			}
			if err := json.Unmarshal(j, &meta); err != nil {
				return fmt.Errorf("%s document %d: %w", p, i, err)
			}
			out = append(out, clusterObject{file: p, doc: j, kind: meta.Kind, name: meta.Metadata.Name})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// splitYAMLDocs splits a multi-document YAML stream at its "---" lines.
func splitYAMLDocs(b []byte) [][]byte {
	var docs [][]byte
	var cur []string
	flush := func() {
		s := strings.Join(cur, "\n")
		if strings.TrimSpace(s) != "" {
			docs = append(docs, []byte(s))
		}
		cur = nil
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.TrimRight(line, " \t\r") == "---" {
			flush()
			continue
		}
		cur = append(cur, line)
	}
	flush()
	return docs
}

// checkClusterResources validates every object under dir and returns how many
// objects of each kind it checked.
func checkClusterResources(t *testing.T, dir string) map[string]int {
	t.Helper()
	counts := map[string]int{}
	objs := readClusterResources(t, dir)
	names := map[string]string{}
	for _, o := range objs {
		counts[o.kind]++
		key := o.kind + "/" + o.name
		if prev, ok := names[key]; ok {
			t.Errorf("%s: %s %q already defined in %s (the second apply would overwrite it)", o.file, o.kind, o.name, prev)
		}
		names[key] = o.file
		for _, p := range validateObject(t, o.doc) {
			t.Errorf("%s: %s %q refused: %s", o.file, o.kind, o.name, p)
		}
	}
	return counts
}

// TestClusterResourceGoldens validates the golden cluster resources of package
// manifests (every shape Build writes: namespace and repository scope, split
// mirror sets, CatalogSource templates) against the real CRDs.
func TestClusterResourceGoldens(t *testing.T) {
	dirs, err := filepath.Glob("../manifests/testdata/golden/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no golden folders: %v", err)
	}
	total := map[string]int{}
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			for k, n := range checkClusterResources(t, d) {
				total[k] += n
			}
		})
	}
	t.Logf("objects validated: %v", total)
	for _, k := range []string{"ImageDigestMirrorSet", "ImageTagMirrorSet", "ImageContentSourcePolicy", "CatalogSource", "ClusterCatalog"} {
		if total[k] == 0 {
			t.Errorf("no %s among the goldens: the check covers nothing of that kind", k)
		}
	}
}

// TestCRDValidatorRefuses proves the validator is not a rubber stamp: each
// mutation of a valid object must be refused, with the expected words.
func TestCRDValidatorRefuses(t *testing.T) {
	idms := `{"apiVersion":"config.openshift.io/v1","kind":"ImageDigestMirrorSet","metadata":{"name":"idms-operator-0"},
"spec":{"imageDigestMirrors":[{"source":"quay.io/ns","mirrors":["mirror.example.com:5000/m/ns"]}]}}`
	cs := `{"apiVersion":"operators.coreos.com/v1alpha1","kind":"CatalogSource","metadata":{"name":"cs-x","namespace":"openshift-marketplace"},
"spec":{"sourceType":"grpc","image":"mirror.example.com/ns/index:v1"}}`
	cc := `{"apiVersion":"olm.operatorframework.io/v1","kind":"ClusterCatalog","metadata":{"name":"cc-x"},
"spec":{"source":{"type":"Image","image":{"ref":"mirror.example.com/ns/index:v1"}}}}`
	itms := `{"apiVersion":"config.openshift.io/v1","kind":"ImageTagMirrorSet","metadata":{"name":"itms-0"},
"spec":{"imageTagMirrors":[{"source":"quay.io/ns/img","mirrors":["mirror.example.com/ns/img"]}]}}`
	icsp := `{"apiVersion":"operator.openshift.io/v1alpha1","kind":"ImageContentSourcePolicy","metadata":{"name":"icsp-0"},
"spec":{"repositoryDigestMirrors":[{"source":"quay.io/ns","mirrors":["mirror.example.com/ns"]}]}}`
	for _, ok := range []string{idms, cs, cc, itms, icsp} {
		if p := validateObject(t, []byte(ok)); len(p) > 0 {
			t.Fatalf("valid object refused: %v\n%s", p, ok)
		}
	}
	big := strings.Repeat("x", 262144)
	cases := []struct{ name, doc, want string }{
		{"mirror source with a tag", strings.Replace(idms, `"quay.io/ns"`, `"quay.io/ns:v1"`, 1), "spec.imageDigestMirrors[0].source"},
		{"mirror with an upper-case path", strings.Replace(idms, `m/ns"`, `M/NS"`, 1), "spec.imageDigestMirrors[0].mirrors[0]"},
		{"duplicate mirrors", strings.Replace(idms, `["mirror.example.com:5000/m/ns"]`, `["a.example.com/x","a.example.com/x"]`, 1), "Duplicate value"},
		{"unknown field", strings.Replace(idms, `"mirrors"`, `"mirorrs":[],"mirrors"`, 1), "unknown field"},
		{"bad mirror source policy", strings.Replace(idms, `"mirrors":`, `"mirrorSourcePolicy":"Sometimes","mirrors":`, 1), "mirrorSourcePolicy"},
		{"name not DNS-1123", strings.Replace(idms, `idms-operator-0`, `IDMS_0`, 1), "metadata.name"},
		{"ITMS under the IDMS kind", strings.Replace(itms, `"ImageTagMirrorSet"`, `"ImageDigestMirrorSet"`, 1), "unknown field"},
		{"ICSP with an ITMS field", strings.Replace(icsp, `repositoryDigestMirrors`, `imageTagMirrors`, 1), "unknown field"},
		{"namespaced CatalogSource without namespace", strings.Replace(cs, `,"namespace":"openshift-marketplace"`, ``, 1), "metadata.namespace"},
		{"CatalogSource bad sourceType type", strings.Replace(cs, `"grpc"`, `7`, 1), "spec.sourceType"},
		{"ClusterCatalog ref without tag or digest", strings.Replace(cc, `index:v1`, `index`, 1), "must end with a digest or a tag"},
		{"ClusterCatalog poll interval with digest", strings.Replace(cc, `index:v1"`, `index@sha256:`+strings.Repeat("a", 64)+`","pollIntervalMinutes":10`, 1), "pollIntervalMinutes"},
		{"ClusterCatalog bad source type", strings.Replace(cc, `"Image"`, `"Git"`, 1), "spec.source.type"},
		{"annotations over 256 KiB", strings.Replace(cs, `"name":"cs-x"`, `"name":"cs-x","annotations":{"a":"`+big+`"}`, 1), "metadata.annotations"},
		{"unknown kind", strings.Replace(cs, `"CatalogSource"`, `"CatalogSauce"`, 1), "no CRD serves"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := validateObject(t, []byte(c.doc))
			if len(p) == 0 {
				t.Fatalf("accepted:\n%s", c.doc)
			}
			if !strings.Contains(strings.Join(p, "\n"), c.want) {
				t.Errorf("refused, but not for %q: %v", c.want, p)
			}
		})
	}
}
