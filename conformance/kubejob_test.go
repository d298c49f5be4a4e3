package conformance

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/apis/batch"
	batchinstall "k8s.io/kubernetes/pkg/apis/batch/install"
	api "k8s.io/kubernetes/pkg/apis/core"
	coreinstall "k8s.io/kubernetes/pkg/apis/core/install"
	jobregistry "k8s.io/kubernetes/pkg/registry/batch/job"
	configmapregistry "k8s.io/kubernetes/pkg/registry/core/configmap"
	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/kube"
	"github.com/airlock-mirror/airlock/location"
)

// TestKubeJobManifests decodes what airlock kube job prints with the Kubernetes
// API types (k8s.io/api core/v1 and batch/v1), strictly (a field the API does
// not have is an error), and checks it against the rules of the apiserver's
// validation that apply (object metadata through apimachinery's own validation;
// the apiserver's own validation (k8s.io/kubernetes/pkg/apis/batch/validation
// and core/validation, on the objects defaulted and converted to the internal
// types as the apiserver does): the golden file and manifests built for several
// shard counts and options.
func TestKubeJobManifests(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "kube", "testdata", "job.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{"golden": golden}
	cfg, _ := os.ReadFile(filepath.Join("..", "kube", "testdata", "imageset.yaml"))
	plan, _ := os.ReadFile(filepath.Join("..", "kube", "testdata", "plan.json"))
	regconf, _ := os.ReadFile(filepath.Join("..", "kube", "testdata", "registries.conf"))
	for _, n := range []int{1, 2, 4, 16} {
		for _, ns := range []string{"", "mirror-system"} {
			o := kube.JobOptions{
				Name: "airlock-" + strconv.Itoa(n), Namespace: ns, Image: "registry.example/tools/airlock@sha256:" + strings.Repeat("ab", 32),
				Destination: location.Docker("registry.example:5000/ocp"), Shards: n, Parallelism: (n + 1) / 2,
				Config: cfg, Plan: plan, Args: []string{"--dest-tls-verify=false"},
			}
			if ns != "" { // and a registries.conf carried
				o.RegistriesConf = regconf
			}
			out, err := kube.Job(o)
			if err != nil {
				t.Fatal(err)
			}
			cases[fmt.Sprintf("n=%d ns=%q", n, ns)] = out
		}
	}
	// Plans over the ConfigMap limit: compressed, and compressed and split.
	for name, size := range map[string]int{"compressed plan": 3 << 20, "split plan": 5 << 20} {
		big := bytes.Repeat([]byte("0123456789abcdef"), size/16)
		if name == "split plan" {
			r := rand.New(rand.NewPCG(1, 2))
			for i := range big {
				big[i] = byte(r.Uint32())
			}
		}
		out, err := kube.Job(kube.JobOptions{Image: "registry.example/tools/airlock:v1", Destination: location.Docker("registry.example:5000/ocp"),
			Shards: 4, Config: cfg, Plan: big})
		if err != nil {
			t.Fatal(err)
		}
		cases[name] = out
	}
	for name, stream := range cases {
		t.Run(name, func(t *testing.T) { checkKubeStream(t, stream) })
	}
}

func checkKubeStream(t *testing.T, stream []byte) {
	docs := bytes.Split(stream, []byte("\n---\n"))[1:] // the comment header first
	if len(docs) < 3 {
		t.Fatalf("%d objects, want the ConfigMap(s) and two Jobs", len(docs))
	}
	cms := make([]corev1.ConfigMap, len(docs)-2)
	for i := range cms {
		if err := yaml.UnmarshalStrict(docs[i], &cms[i]); err != nil {
			t.Fatalf("ConfigMap does not decode strictly: %v", err)
		}
		if cms[i].APIVersion != "v1" || cms[i].Kind != "ConfigMap" {
			t.Fatalf("object %d is %s/%s, want a ConfigMap", i, cms[i].APIVersion, cms[i].Kind)
		}
	}
	cm := cms[0]
	var shards, finish batchv1.Job
	if err := yaml.UnmarshalStrict(docs[len(docs)-2], &shards); err != nil {
		t.Fatalf("Job does not decode strictly: %v", err)
	}
	if err := yaml.UnmarshalStrict(docs[len(docs)-1], &finish); err != nil {
		t.Fatalf("finish Job does not decode strictly: %v", err)
	}
	if shards.APIVersion != "batch/v1" || shards.Kind != "Job" || finish.Kind != "Job" {
		t.Fatalf("kinds: %s/%s %s/%s", shards.APIVersion, shards.Kind, finish.APIVersion, finish.Kind)
	}
	// kubectl fills in the namespace of its context when a manifest has none.
	metas := []*metav1.ObjectMeta{&shards.ObjectMeta, &finish.ObjectMeta}
	for i := range cms {
		metas = append(metas, &cms[i].ObjectMeta)
	}
	for _, m := range metas {
		if m.Namespace == "" {
			m.Namespace = "default"
		}
	}
	names := map[string]bool{}
	var errs field.ErrorList
	for i := range cms {
		names[cms[i].Name] = true
		errs = append(errs, validateConfigMap(t, &cms[i])...)
	}
	for _, j := range []*batchv1.Job{&shards, &finish} {
		errs = append(errs, validateJob(t, j, names)...)
	}
	for _, e := range errs {
		t.Error(e)
	}

	// What makes it airlock's sharded mirror.
	s := shards.Spec
	if s.CompletionMode == nil || *s.CompletionMode != batchv1.IndexedCompletion {
		t.Errorf("completionMode %v, want Indexed", s.CompletionMode)
	}
	args := shards.Spec.Template.Spec.Containers[0].Args
	i := slices.Index(args, "--shards")
	if i < 0 || i+1 >= len(args) || args[i+1] != strconv.Itoa(int(*s.Completions)) {
		t.Errorf("shard pods run %v: want --shards %d (the index comes from JOB_COMPLETION_INDEX)", args, *s.Completions)
	}
	if s.BackoffLimitPerIndex == nil {
		t.Error("no backoffLimitPerIndex: one shard's failures would count against every shard")
	}
	fargs := finish.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(fargs, "--finish") || slices.Contains(fargs, "--shards") {
		t.Errorf("finish pod runs %v", fargs)
	}
	if args[len(args)-1] != fargs[len(fargs)-1] || !strings.HasPrefix(args[len(args)-1], "docker://") {
		t.Errorf("shards and finish go to %s and %s", args[len(args)-1], fargs[len(fargs)-1])
	}
	_, plain := cm.Data[kube.PlanKey]
	_, packed := cm.BinaryData[kube.PlanGzKey]
	if !plain && !packed && len(cms) == 1 {
		t.Errorf("ConfigMap lacks %s and %s", kube.PlanKey, kube.PlanGzKey)
	}
	if _, ok := cm.Data[kube.ConfigKey]; !ok {
		t.Errorf("ConfigMap lacks %s", kube.ConfigKey)
	}
}

// apiScheme converts the versioned API types to the apiserver's internal ones
// and applies the defaults the apiserver applies.
var apiScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	batchinstall.Install(s)
	coreinstall.Install(s)
	return s
}()

// apiserverCreate runs what the apiserver runs on a create before storing the
// object: defaulting, conversion to the internal type, then rest.BeforeCreate
// with the resource's registry strategy (the Job strategy generates the
// selector and the template labels, then ValidateJob; the ConfigMap strategy
// runs ValidateConfigMap, 1 MiB included).
func apiserverCreate(t *testing.T, obj runtime.Object, internal runtime.Object, strategy rest.RESTCreateStrategy, namespace string) error {
	t.Helper()
	v := obj.DeepCopyObject()
	apiScheme.Default(v)
	if err := apiScheme.Convert(v, internal, nil); err != nil {
		t.Fatalf("convert %T: %v", obj, err)
	}
	// The create handler fills in the uid and creation time first.
	om, err := meta.Accessor(internal)
	if err != nil {
		t.Fatal(err)
	}
	rest.FillObjectMetaSystemFields(om)
	ctx := genericapirequest.WithNamespace(context.Background(), namespace)
	return rest.BeforeCreate(strategy, ctx, internal)
}

// validateJob is the apiserver's create of the Job, plus that every ConfigMap
// the pods mount is one of the manifests'.
func validateJob(t *testing.T, j *batchv1.Job, configMaps map[string]bool) field.ErrorList {
	t.Helper()
	var errs field.ErrorList
	if err := apiserverCreate(t, j, &batch.Job{}, jobregistry.Strategy, j.Namespace); err != nil {
		errs = append(errs, field.InternalError(field.NewPath(j.Name), err))
	}
	for i, vol := range j.Spec.Template.Spec.Volumes {
		var mounted []string
		if vol.ConfigMap != nil {
			mounted = append(mounted, vol.ConfigMap.Name)
		}
		if vol.Projected != nil {
			for _, s := range vol.Projected.Sources {
				if s.ConfigMap != nil {
					mounted = append(mounted, s.ConfigMap.Name)
				}
			}
		}
		for _, name := range mounted {
			if !configMaps[name] {
				errs = append(errs, field.Invalid(field.NewPath(j.Name, "spec", "template", "spec", "volumes").Index(i), name, "not a ConfigMap of the manifests"))
			}
		}
	}
	return errs
}

// validateConfigMap is the apiserver's create of the ConfigMap.
func validateConfigMap(t *testing.T, cm *corev1.ConfigMap) field.ErrorList {
	t.Helper()
	if err := apiserverCreate(t, cm, &api.ConfigMap{}, configmapregistry.Strategy, cm.Namespace); err != nil {
		return field.ErrorList{field.InternalError(field.NewPath(cm.Name), err)}
	}
	return nil
}

// TestKubeJobValidationRejects: the apiserver's validation, as run above,
// refuses what the apiserver refuses (so that TestKubeJobManifests can fail).
func TestKubeJobValidationRejects(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "kube", "testdata", "job.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(golden, []byte("\n---\n"))
	var cm corev1.ConfigMap
	var job batchv1.Job
	if err := yaml.UnmarshalStrict(docs[1], &cm); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(docs[2], &job); err != nil {
		t.Fatal(err)
	}
	cm.Namespace, job.Namespace = "default", "default"
	own := map[string]bool{cm.Name: true}
	if errs := append(validateConfigMap(t, &cm), validateJob(t, &job, own)...); len(errs) != 0 {
		t.Fatalf("the golden manifests are refused: %v", errs)
	}
	jobs := map[string]func(j *batchv1.Job){
		"restartPolicy Always":                   func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
		"negative completions":                   func(j *batchv1.Job) { n := int32(-1); j.Spec.Completions = &n },
		"name not a DNS subdomain":               func(j *batchv1.Job) { j.Name = "Airlock_Mirror" },
		"mount of a volume that does not exist":  func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].VolumeMounts[0].Name = "nowhere" },
		"per-index backoff without Indexed mode": func(j *batchv1.Job) { m := batchv1.NonIndexedCompletion; j.Spec.CompletionMode = &m },
		"another ConfigMap":                      func(j *batchv1.Job) { j.Spec.Template.Spec.Volumes[0].ConfigMap.Name = "other" },
	}
	for name, edit := range jobs {
		t.Run(name, func(t *testing.T) {
			j := job.DeepCopy()
			edit(j)
			if errs := validateJob(t, j, own); len(errs) == 0 {
				t.Error("accepted")
			}
		})
	}
	cms := map[string]func(c *corev1.ConfigMap){
		"more than 1 MiB": func(c *corev1.ConfigMap) { c.Data["big"] = strings.Repeat("x", 1<<20) },
		"bad key":         func(c *corev1.ConfigMap) { c.Data["a/b"] = "x" },
	}
	for name, edit := range cms {
		t.Run(name, func(t *testing.T) {
			c := cm.DeepCopy()
			edit(c)
			if errs := validateConfigMap(t, c); len(errs) == 0 {
				t.Error("accepted")
			}
		})
	}
}
