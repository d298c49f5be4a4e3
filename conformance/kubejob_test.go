package conformance

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/kube"
)

// TestKubeJobManifests decodes what airlock kube job prints with the Kubernetes
// API types (k8s.io/api core/v1 and batch/v1), strictly (a field the API does
// not have is an error), and checks it against the rules of the apiserver's
// validation that apply (object metadata through apimachinery's own validation;
// the batch/v1 Job and pod rules that k8s.io/kubernetes/pkg/apis/batch/validation
// enforces, restated, since that package cannot be imported): the golden file
// and manifests built for several shard counts and options.
func TestKubeJobManifests(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "kube", "testdata", "job.golden.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string][]byte{"golden": golden}
	cfg, _ := os.ReadFile(filepath.Join("..", "kube", "testdata", "imageset.yaml"))
	plan, _ := os.ReadFile(filepath.Join("..", "kube", "testdata", "plan.json"))
	for _, n := range []int{1, 2, 4, 16} {
		for _, ns := range []string{"", "mirror-system"} {
			out, err := kube.Job(kube.JobOptions{
				Name: "airlock-" + strconv.Itoa(n), Namespace: ns, Image: "registry.example/tools/airlock@sha256:" + strings.Repeat("ab", 32),
				Destination: "docker://registry.example:5000/ocp", Shards: n, Parallelism: (n + 1) / 2,
				Config: cfg, Plan: plan, Args: []string{"--dest-tls-verify=false"},
			})
			if err != nil {
				t.Fatal(err)
			}
			cases[fmt.Sprintf("n=%d ns=%q", n, ns)] = out
		}
	}
	for name, stream := range cases {
		t.Run(name, func(t *testing.T) { checkKubeStream(t, stream) })
	}
}

func checkKubeStream(t *testing.T, stream []byte) {
	docs := bytes.Split(stream, []byte("\n---\n"))
	if len(docs) != 4 { // the comment header, then three objects
		t.Fatalf("%d documents, want the header and 3 objects", len(docs))
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(docs[1], &cm); err != nil {
		t.Fatalf("ConfigMap does not decode strictly: %v", err)
	}
	var shards, finish batchv1.Job
	if err := yaml.UnmarshalStrict(docs[2], &shards); err != nil {
		t.Fatalf("Job does not decode strictly: %v", err)
	}
	if err := yaml.UnmarshalStrict(docs[3], &finish); err != nil {
		t.Fatalf("finish Job does not decode strictly: %v", err)
	}
	if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || shards.APIVersion != "batch/v1" || shards.Kind != "Job" || finish.Kind != "Job" {
		t.Fatalf("kinds: %s/%s %s/%s %s/%s", cm.APIVersion, cm.Kind, shards.APIVersion, shards.Kind, finish.APIVersion, finish.Kind)
	}
	// kubectl fills in the namespace of its context when a manifest has none.
	for _, m := range []*metav1.ObjectMeta{&cm.ObjectMeta, &shards.ObjectMeta, &finish.ObjectMeta} {
		if m.Namespace == "" {
			m.Namespace = "default"
		}
	}
	var errs field.ErrorList
	errs = append(errs, apivalidation.ValidateObjectMeta(&cm.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, field.NewPath("configmap", "metadata"))...)
	errs = append(errs, validateConfigMap(&cm)...)
	for _, j := range []*batchv1.Job{&shards, &finish} {
		p := field.NewPath(j.Name)
		errs = append(errs, apivalidation.ValidateObjectMeta(&j.ObjectMeta, true, apivalidation.NameIsDNSSubdomain, p.Child("metadata"))...)
		errs = append(errs, validateJob(j, cm.Name, p.Child("spec"))...)
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
	if _, ok := cm.Data[kube.PlanKey]; !ok {
		t.Errorf("ConfigMap lacks %s", kube.PlanKey)
	}
	if _, ok := cm.Data[kube.ConfigKey]; !ok {
		t.Errorf("ConfigMap lacks %s", kube.ConfigKey)
	}
}

// validateConfigMap restates ValidateConfigMap: valid keys, at most 1 MiB.
func validateConfigMap(cm *corev1.ConfigMap) field.ErrorList {
	var errs field.ErrorList
	size := 0
	for k, v := range cm.Data {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(k), k, msg))
		}
		size += len(k) + len(v)
	}
	if size > corev1.MaxSecretSize { // the ConfigMap limit is the same 1 MiB
		errs = append(errs, field.TooLong(field.NewPath("data"), "", corev1.MaxSecretSize))
	}
	return errs
}

// validateJob restates the batch/v1 Job rules (ValidateJob and the pod
// template rules it applies) that the manifests touch.
func validateJob(j *batchv1.Job, configMap string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := j.Spec
	nonNeg := func(v *int32, name string) {
		if v != nil && *v < 0 {
			errs = append(errs, field.Invalid(p.Child(name), *v, "must be greater than or equal to 0"))
		}
	}
	nonNeg(s.Parallelism, "parallelism")
	nonNeg(s.Completions, "completions")
	nonNeg(s.BackoffLimit, "backoffLimit")
	nonNeg(s.BackoffLimitPerIndex, "backoffLimitPerIndex")
	indexed := s.CompletionMode != nil && *s.CompletionMode == batchv1.IndexedCompletion
	if s.CompletionMode != nil && *s.CompletionMode != batchv1.IndexedCompletion && *s.CompletionMode != batchv1.NonIndexedCompletion {
		errs = append(errs, field.NotSupported(p.Child("completionMode"), *s.CompletionMode, []string{"Indexed", "NonIndexed"}))
	}
	if indexed {
		if s.Completions == nil {
			errs = append(errs, field.Required(p.Child("completions"), "when completion mode is Indexed"))
		} else if *s.Completions > 100000 {
			errs = append(errs, field.Invalid(p.Child("completions"), *s.Completions, "must be less than or equal to 100000 when completion mode is Indexed"))
		}
		if s.Parallelism != nil && *s.Parallelism > 100000 {
			errs = append(errs, field.Invalid(p.Child("parallelism"), *s.Parallelism, "must be less than or equal to 100000 when completion mode is Indexed"))
		}
	}
	if s.BackoffLimitPerIndex != nil && !indexed {
		errs = append(errs, field.Invalid(p.Child("backoffLimitPerIndex"), *s.BackoffLimitPerIndex, "requires indexed completion mode"))
	}
	if s.BackoffLimitPerIndex != nil && s.Completions != nil && *s.Completions > 100000 {
		errs = append(errs, field.Invalid(p.Child("completions"), *s.Completions, "must be less than or equal to 100000 when backoffLimitPerIndex is set"))
	}
	if s.Selector != nil || s.ManualSelector != nil {
		errs = append(errs, field.Forbidden(p.Child("selector"), "left to the apiserver, which generates it from the Job's uid"))
	}
	tp := p.Child("template", "spec")
	ps := s.Template.Spec
	if ps.RestartPolicy != corev1.RestartPolicyNever && ps.RestartPolicy != corev1.RestartPolicyOnFailure {
		errs = append(errs, field.NotSupported(tp.Child("restartPolicy"), ps.RestartPolicy, []string{"OnFailure", "Never"}))
	}
	if s.BackoffLimitPerIndex != nil && ps.RestartPolicy != corev1.RestartPolicyNever {
		errs = append(errs, field.Invalid(tp.Child("restartPolicy"), ps.RestartPolicy, "must be Never for a per-index backoff to count pod failures"))
	}
	if len(ps.Containers) == 0 {
		errs = append(errs, field.Required(tp.Child("containers"), ""))
	}
	vols := map[string]corev1.Volume{}
	for i, v := range ps.Volumes {
		vp := tp.Child("volumes").Index(i)
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, msg))
		}
		if _, dup := vols[v.Name]; dup {
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		vols[v.Name] = v
		n := 0
		if v.ConfigMap != nil {
			n++
			if v.ConfigMap.Name != configMap {
				errs = append(errs, field.Invalid(vp.Child("configMap", "name"), v.ConfigMap.Name, "not the ConfigMap of the manifests "+configMap))
			}
		}
		if v.Secret != nil {
			n++
			for _, msg := range validation.IsDNS1123Subdomain(v.Secret.SecretName) {
				errs = append(errs, field.Invalid(vp.Child("secret", "secretName"), v.Secret.SecretName, msg))
			}
			for k, it := range v.Secret.Items {
				for _, msg := range validation.IsConfigMapKey(it.Key) {
					errs = append(errs, field.Invalid(vp.Child("secret", "items").Index(k).Child("key"), it.Key, msg))
				}
				if it.Path == "" || strings.HasPrefix(it.Path, "/") || strings.Contains(it.Path, "..") {
					errs = append(errs, field.Invalid(vp.Child("secret", "items").Index(k).Child("path"), it.Path, "must be a relative path without '..'"))
				}
			}
		}
		if v.EmptyDir != nil {
			n++
		}
		if n != 1 {
			errs = append(errs, field.Invalid(vp, v.Name, "must have exactly one volume source"))
		}
	}
	names := map[string]bool{}
	for i, c := range ps.Containers {
		cp := tp.Child("containers").Index(i)
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
		}
		if names[c.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		}
		names[c.Name] = true
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, field.Required(cp.Child("image"), ""))
		}
		for k, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(cp.Child("env").Index(k).Child("name"), e.Name, msg))
			}
		}
		paths := map[string]bool{}
		for k, m := range c.VolumeMounts {
			mp := cp.Child("volumeMounts").Index(k)
			if _, ok := vols[m.Name]; !ok {
				errs = append(errs, field.NotFound(mp.Child("name"), m.Name))
			}
			if !strings.HasPrefix(m.MountPath, "/") || paths[m.MountPath] {
				errs = append(errs, field.Invalid(mp.Child("mountPath"), m.MountPath, "must be an absolute path, mounted once"))
			}
			paths[m.MountPath] = true
		}
	}
	if sc := ps.SecurityContext; sc != nil && sc.RunAsNonRoot != nil && *sc.RunAsNonRoot && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
		errs = append(errs, field.Invalid(tp.Child("securityContext", "runAsUser"), 0, "runAsNonRoot with user 0"))
	}
	return errs
}
