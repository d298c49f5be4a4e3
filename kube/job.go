// Package kube builds the Kubernetes manifests that run a sharded airlock mirror
// as an Indexed Job: a ConfigMap holding the configuration and the plan, the
// Indexed batch/v1 Job whose pods each copy one shard, and the finish Job. It is
// a pure builder (bytes in, YAML out); the types below are the subset of the
// Kubernetes API (core/v1, batch/v1) the manifests use, with the API's field
// names, so that the conformance module can decode them strictly with
// k8s.io/api. It must not know what a plan holds: the plan is an opaque file to it.
package kube

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/airlock-mirror/airlock/location"
)

// ConfigMapLimit is the most data a ConfigMap holds (keys and values, 1 MiB).
const ConfigMapLimit = 1 << 20

// ErrTooBig is returned (wrapped) when the configuration and plan do not fit
// the ConfigMaps the manifests may hold.
var ErrTooBig = errors.New("over the 1 MiB ConfigMap limit")

// MaxPlanParts is the most ConfigMaps a compressed plan is split over.
const MaxPlanParts = 32

// Files in the ConfigMaps, and where the pods see them. A plan that does not
// fit one ConfigMap with the configuration goes compressed (PlanGzKey, binary
// data), and when that does not fit either, compressed and split over
// ConfigMaps NAME-plan-000, NAME-plan-001… as PlanGzKey.000, PlanGzKey.001…,
// all mounted in one folder: airlock mirror --plan FILE reads a gzip-compressed
// plan, and a plan FILE it does not find from its parts FILE.000, FILE.001….
const (
	ConfigKey = "imageset.yaml"
	PlanKey   = "plan.json"
	PlanGzKey = "plan.json.gz"
	AuthKey   = "auth.json"
	// RegistriesConfKey holds the registries.conf the plan's sources are read
	// through (JobOptions.RegistriesConf), passed to every pod as --registries-conf.
	RegistriesConfKey = "registries.conf"
	configDir         = "/etc/airlock"
	authDir           = "/etc/airlock-auth"
	workDir           = "/work"
)

// JobOptions are what the manifests are made from.
type JobOptions struct {
	// Name prefixes every object (default "airlock-mirror"); Namespace, when
	// set, is written into each.
	Name, Namespace string
	// Image is the airlock image the pods run (airlock kube image pushes one).
	Image string
	// Destination is docker://REGISTRY/NAMESPACE, as the plan was made for.
	Destination location.Location
	// Shards is the Job's completions; Parallelism how many run at once
	// (default Shards).
	Shards, Parallelism int
	// BackoffLimitPerIndex is how often one shard's pod is retried (default 3).
	BackoffLimitPerIndex int
	// FinishBackoffLimit is how often the finish pod is retried (default 30): it
	// refuses until every shard finished, so applied at the same time as the
	// shards it runs again until they are done.
	FinishBackoffLimit int
	// AuthSecret is the Secret holding auth.json (default Name+"-auth").
	AuthSecret string
	// Config and Plan are the ImageSetConfiguration and the plan.json of
	// airlock mirror --plan-only.
	Config, Plan []byte
	// RegistriesConf, when set, is the registries.conf (mirrors, rewrites,
	// blocked and insecure registries) the pods read the sources through.
	RegistriesConf []byte
	// Args are more airlock mirror flags for every pod (e.g. --dest-tls-verify=false).
	Args []string
	// Comment is written at the top, each line as a YAML comment.
	Comment string

	planParts int // ConfigMaps the plan is split over (0: none)
}

var dns1123 = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate checks what the manifests cannot be made without: a valid name
// and namespace, an image, a registry destination and at least one shard.
func (o *JobOptions) Validate() error {
	// "-finish" and "-auth" are appended, and Job names label pods (63 chars).
	if o.Name != "" && (len(o.Name) > 50 || !dns1123.MatchString(o.Name)) {
		return fmt.Errorf("name %q: want lower-case letters, digits and '-', at most 50 characters", o.Name)
	}
	if o.Namespace != "" && (len(o.Namespace) > 63 || !dns1123.MatchString(o.Namespace)) {
		return fmt.Errorf("namespace %q is not a valid namespace name", o.Namespace)
	}
	if o.Image == "" {
		return errors.New("no image: give --image REF (airlock kube image pushes one)")
	}
	if !o.Destination.Is(location.SchemeDocker) {
		return &location.Error{Flag: "destination", Input: o.Destination.String(), Want: "docker://REGISTRY/NAMESPACE"}
	}
	if o.Shards < 1 {
		return fmt.Errorf("shards %d: want at least 1", o.Shards)
	}
	return nil
}

// defaults validates o and fills in what was left to its default.
func (o *JobOptions) defaults() error {
	if err := o.Validate(); err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = "airlock-mirror"
	}
	if o.Parallelism <= 0 || o.Parallelism > o.Shards {
		o.Parallelism = o.Shards
	}
	if o.BackoffLimitPerIndex <= 0 {
		o.BackoffLimitPerIndex = 3
	}
	if o.FinishBackoffLimit <= 0 {
		o.FinishBackoffLimit = 30
	}
	if o.AuthSecret == "" {
		o.AuthSecret = o.Name + "-auth"
	}
	return nil
}

// Job returns the manifests, as one YAML stream for kubectl apply -f -: the
// ConfigMap, the Indexed Job of the shards and the finish Job. The Secret with
// auth.json is referenced, never written (it holds credentials): the header
// says how to make it.
func Job(o JobOptions) ([]byte, error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	cms, planKey, err := o.configMaps()
	if err != nil {
		return nil, err
	}
	o.planParts = len(cms) - 1
	shards := o.job(o.Name, "shard", []string{"--plan", configDir + "/" + planKey, "--shards", strconv.Itoa(o.Shards)})
	shards.Spec.CompletionMode = "Indexed"
	shards.Spec.Completions = ptr(int32(o.Shards))
	shards.Spec.Parallelism = ptr(int32(o.Parallelism))
	shards.Spec.BackoffLimitPerIndex = ptr(int32(o.BackoffLimitPerIndex))
	// The finish pod prints the cluster resources (its working-dir goes with
	// it): kubectl logs job/NAME-finish, with nothing else logged.
	finish := o.job(o.Name+"-finish", "finish", []string{"--plan", configDir + "/" + planKey, "--finish", "--log-level", "error"})
	finish.Spec.Completions = ptr(int32(1))
	finish.Spec.Parallelism = ptr(int32(1))
	finish.Spec.BackoffLimit = ptr(int32(o.FinishBackoffLimit))

	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(o.Comment, "\n"), "\n") {
		if l == "" {
			b.WriteString("#\n")
			continue
		}
		b.WriteString("# " + l + "\n")
	}
	fmt.Fprintf(&b, "# Credentials: the pods read auth.json from the Secret %s, which these manifests\n", o.AuthSecret)
	fmt.Fprintf(&b, "# reference but do not hold. Make it first:\n#   kubectl create secret generic %s%s --from-file=%s=$XDG_RUNTIME_DIR/containers/auth.json\n",
		o.AuthSecret, nsFlag(o.Namespace), AuthKey)
	fmt.Fprintf(&b, "# The finish Job refuses (and is retried, up to %d times) until every shard finished;\n", o.FinishBackoffLimit)
	fmt.Fprintf(&b, "# or apply it after: kubectl wait%s --for=condition=complete --timeout=24h job/%s\n", nsFlag(o.Namespace), o.Name)
	fmt.Fprintf(&b, "# It prints the cluster resources: kubectl logs%s job/%s-finish > cluster-resources.yaml\n", nsFlag(o.Namespace), o.Name)
	if len(cms) > 1 || cms[0].BinaryData != nil || len(o.Plan) > applyAnnotationLimit {
		fmt.Fprintf(&b, "# The plan is large: apply with kubectl apply --server-side -f - (a client-side apply\n# keeps a copy of each object in an annotation, which holds at most 256 KiB).\n")
	}
	var objs []any
	for _, cm := range cms {
		objs = append(objs, cm)
	}
	for _, obj := range append(objs, shards, finish) {
		y, err := yaml.Marshal(obj)
		if err != nil {
			return nil, err
		}
		b.WriteString("---\n")
		b.Write(y)
	}
	return []byte(b.String()), nil
}

func nsFlag(ns string) string {
	if ns == "" {
		return ""
	}
	return " -n " + ns
}

func ptr[T any](v T) *T { return &v }

func (o *JobOptions) meta(name, component string) ObjectMeta {
	return ObjectMeta{Name: name, Namespace: o.Namespace, Labels: map[string]string{
		"app.kubernetes.io/name":       "airlock",
		"app.kubernetes.io/instance":   o.Name,
		"app.kubernetes.io/component":  component,
		"app.kubernetes.io/managed-by": "airlock",
	}}
}

// job is a Job whose pod runs airlock mirror with args.
func (o *JobOptions) job(name, component string, args []string) BatchJob {
	mirrorArgs := append([]string{"mirror", "-c", configDir + "/" + ConfigKey}, args...)
	mirrorArgs = append(mirrorArgs, "--workspace", location.File(workDir).String(), "--authfile", authDir+"/"+AuthKey)
	if o.RegistriesConf != nil {
		mirrorArgs = append(mirrorArgs, "--registries-conf", configDir+"/"+RegistriesConfKey)
	}
	mirrorArgs = append(mirrorArgs, o.Args...)
	mirrorArgs = append(mirrorArgs, o.Destination.String())
	meta := o.meta(name, component)
	return BatchJob{
		TypeMeta:   TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: meta,
		Spec: JobSpec{
			Template: PodTemplateSpec{
				ObjectMeta: ObjectMeta{Labels: meta.Labels},
				Spec: PodSpec{
					RestartPolicy: "Never",
					SecurityContext: &PodSecurityContext{
						RunAsNonRoot: ptr(true), RunAsUser: ptr(int64(65532)), RunAsGroup: ptr(int64(65532)), FSGroup: ptr(int64(65532)),
						SeccompProfile: &SeccompProfile{Type: "RuntimeDefault"},
					},
					Containers: []Container{{
						Name:  "airlock",
						Image: o.Image,
						Args:  mirrorArgs,
						Env: []EnvVar{
							{Name: "HOME", Value: workDir},
							{Name: "TMPDIR", Value: workDir},
						},
						VolumeMounts: []VolumeMount{
							{Name: "config", MountPath: configDir, ReadOnly: true},
							{Name: "auth", MountPath: authDir, ReadOnly: true},
							{Name: "work", MountPath: workDir},
						},
						SecurityContext: &SecurityContext{
							AllowPrivilegeEscalation: ptr(false), ReadOnlyRootFilesystem: ptr(true),
							Capabilities: &Capabilities{Drop: []string{"ALL"}},
						},
					}},
					Volumes: []Volume{
						o.configVolume(),
						{Name: "auth", Secret: &SecretVolumeSource{SecretName: o.AuthSecret, Items: []KeyToPath{{Key: AuthKey, Path: AuthKey}}}},
						{Name: "work", EmptyDir: &EmptyDirVolumeSource{}},
					},
				},
			},
		},
	}
}
