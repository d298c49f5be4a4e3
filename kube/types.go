package kube

// The subset of the Kubernetes API the manifests use (core/v1, batch/v1), with
// the API's JSON field names. Optional fields are pointers or omitempty, as in
// k8s.io/api, so that what is not set is not written.

// TypeMeta is apiVersion and kind.
type TypeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

// ObjectMeta is an object's name, namespace and labels.
type ObjectMeta struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// ConfigMap is core/v1 ConfigMap.
type ConfigMap struct {
	TypeMeta   `json:",inline"`
	ObjectMeta ObjectMeta        `json:"metadata"`
	Data       map[string]string `json:"data,omitempty"`
	BinaryData map[string][]byte `json:"binaryData,omitempty"`
}

// BatchJob is batch/v1 Job.
type BatchJob struct {
	TypeMeta   `json:",inline"`
	ObjectMeta ObjectMeta `json:"metadata"`
	Spec       JobSpec    `json:"spec"`
}

// JobSpec is batch/v1 JobSpec.
type JobSpec struct {
	Parallelism          *int32          `json:"parallelism,omitempty"`
	Completions          *int32          `json:"completions,omitempty"`
	BackoffLimit         *int32          `json:"backoffLimit,omitempty"`
	BackoffLimitPerIndex *int32          `json:"backoffLimitPerIndex,omitempty"`
	CompletionMode       string          `json:"completionMode,omitempty"`
	Template             PodTemplateSpec `json:"template"`
}

// PodTemplateSpec is core/v1 PodTemplateSpec.
type PodTemplateSpec struct {
	ObjectMeta ObjectMeta `json:"metadata"`
	Spec       PodSpec    `json:"spec"`
}

// PodSpec is core/v1 PodSpec.
type PodSpec struct {
	RestartPolicy   string              `json:"restartPolicy"`
	SecurityContext *PodSecurityContext `json:"securityContext,omitempty"`
	Containers      []Container         `json:"containers"`
	Volumes         []Volume            `json:"volumes,omitempty"`
}

// PodSecurityContext is core/v1 PodSecurityContext.
type PodSecurityContext struct {
	RunAsNonRoot   *bool           `json:"runAsNonRoot,omitempty"`
	RunAsUser      *int64          `json:"runAsUser,omitempty"`
	RunAsGroup     *int64          `json:"runAsGroup,omitempty"`
	FSGroup        *int64          `json:"fsGroup,omitempty"`
	SeccompProfile *SeccompProfile `json:"seccompProfile,omitempty"`
}

// SeccompProfile is core/v1 SeccompProfile.
type SeccompProfile struct {
	Type string `json:"type"`
}

// Container is core/v1 Container.
type Container struct {
	Name            string           `json:"name"`
	Image           string           `json:"image"`
	Args            []string         `json:"args,omitempty"`
	Env             []EnvVar         `json:"env,omitempty"`
	VolumeMounts    []VolumeMount    `json:"volumeMounts,omitempty"`
	SecurityContext *SecurityContext `json:"securityContext,omitempty"`
}

// EnvVar is core/v1 EnvVar.
type EnvVar struct {
	Name  string `json:"name"`
	Value string `json:"value,omitempty"`
}

// VolumeMount is core/v1 VolumeMount.
type VolumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

// SecurityContext is core/v1 SecurityContext.
type SecurityContext struct {
	AllowPrivilegeEscalation *bool         `json:"allowPrivilegeEscalation,omitempty"`
	ReadOnlyRootFilesystem   *bool         `json:"readOnlyRootFilesystem,omitempty"`
	Capabilities             *Capabilities `json:"capabilities,omitempty"`
}

// Capabilities is core/v1 Capabilities.
type Capabilities struct {
	Drop []string `json:"drop,omitempty"`
}

// Volume is core/v1 Volume (the sources used here).
type Volume struct {
	Name      string                 `json:"name"`
	ConfigMap *ConfigMapVolumeSource `json:"configMap,omitempty"`
	Secret    *SecretVolumeSource    `json:"secret,omitempty"`
	EmptyDir  *EmptyDirVolumeSource  `json:"emptyDir,omitempty"`
	Projected *ProjectedVolumeSource `json:"projected,omitempty"`
}

// ProjectedVolumeSource is core/v1 ProjectedVolumeSource (ConfigMaps only here).
type ProjectedVolumeSource struct {
	Sources []VolumeProjection `json:"sources"`
}

// VolumeProjection is core/v1 VolumeProjection.
type VolumeProjection struct {
	ConfigMap *ConfigMapProjection `json:"configMap,omitempty"`
}

// ConfigMapProjection is core/v1 ConfigMapProjection.
type ConfigMapProjection struct {
	Name string `json:"name"`
}

// ConfigMapVolumeSource is core/v1 ConfigMapVolumeSource.
type ConfigMapVolumeSource struct {
	Name string `json:"name"`
}

// SecretVolumeSource is core/v1 SecretVolumeSource.
type SecretVolumeSource struct {
	SecretName string      `json:"secretName"`
	Items      []KeyToPath `json:"items,omitempty"`
}

// KeyToPath is core/v1 KeyToPath.
type KeyToPath struct {
	Key  string `json:"key"`
	Path string `json:"path"`
}

// EmptyDirVolumeSource is core/v1 EmptyDirVolumeSource.
type EmptyDirVolumeSource struct{}
