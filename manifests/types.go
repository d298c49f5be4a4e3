// Package manifests holds the cluster resources an administrator applies after
// a mirror run, and builds them: ImageDigestMirrorSet and ImageTagMirrorSet
// (config.openshift.io/v1), ImageContentSourcePolicy
// (operator.openshift.io/v1alpha1, for clusters before 4.13), one CatalogSource (operators.coreos.com/v1alpha1) and one ClusterCatalog
// (olm.operatorframework.io/v1) per mirrored catalog, and, given a public key,
// ClusterImagePolicy (config.openshift.io/v1) for the mirrored source
// repositories.
//
// The package is pure: Build takes the mapping of what was mirrored and returns typed
// objects and their serialised files; the same input always gives the same bytes (no
// clock, no map order, no host names). Set.Write puts the files in a folder. It must
// not know how the images were copied.
package manifests

// Kind says where a mirrored image came from; it decides which mirror-set object
// (operator or generic) holds its rule.
type Kind string

// Image kinds.
const (
	// KindOperator is a bundle image or an image related to a bundle.
	KindOperator Kind = "operator"
	// KindGeneric is an additionalImages entry. The empty Kind means generic too.
	KindGeneric Kind = "generic"
	// KindCatalog is a catalog image. Catalogs get no mirror rule (they are used
	// through CatalogSource and ClusterCatalog); pass them in Build's catalogs.
	KindCatalog Kind = "catalog"
)

// Image is one mirrored image: where the cluster will ask for it and where it is now.
type Image struct {
	// Source is the reference as written in the catalog or the configuration, e.g.
	// quay.io/ns/img:tag, quay.io/ns/img@sha256:…, or both. A digest in Source makes the
	// image a digest reference (ImageDigestMirrorSet, ImageContentSourcePolicy);
	// otherwise it is a tag reference (ImageTagMirrorSet). A docker:// prefix is
	// accepted; other transports (oci:, file:) get no rule and are listed in Set.Skipped.
	Source string
	// Destination is the full mirrored reference (registry/path:tag or @digest).
	Destination string
	// Digest is the resolved manifest digest (informational).
	Digest string
	Kind   Kind
}

// Catalog is one mirrored catalog.
type Catalog struct {
	// Source is the catalog as written in the configuration (docker reference or oci://PATH).
	Source string
	// Destination is the mirrored catalog reference. A tag is preferred (OLM polls tags);
	// when Destination has neither tag nor digest, Digest is appended.
	Destination string
	// Digest is the digest of the mirrored (possibly rebuilt) catalog image.
	Digest string
	// DisplayName and Publisher fill the CatalogSource fields of the same name. Empty
	// DisplayName defaults to "<repository name>:<tag>" of Source, empty Publisher to
	// Source's registry host.
	DisplayName, Publisher string
	// Template is the contents of targetCatalogSourceTemplate (optional), TemplatePath its
	// file name, used in error messages.
	Template     []byte
	TemplatePath string
}

// Options tune Build.
type Options struct {
	// RepositoryScope writes one rule per repository, never per namespace
	// (the --max-nested-paths behaviour).
	RepositoryScope bool
	// SignatureKey, when set, is the PEM public key the cluster requires
	// sigstore signatures by (--signature-key): a ClusterImagePolicy per 256
	// mirrored source repositories.
	SignatureKey []byte
	// MaxObjectBytes is the largest serialised size of one mirror-set object; larger ones
	// are split into -0, -1, …. 0 means DefaultMaxObjectBytes.
	MaxObjectBytes int
	// Objects are cluster resources content sources built themselves (an
	// UpdateService, signature ConfigMaps…): written with the others, listed
	// in README.txt, removed by the next Write like the others. Each Name is a
	// file name of the folder (no '/') ending in .yaml or .json that no other
	// file takes.
	Objects []File
}

// DefaultMaxObjectBytes keeps an object (and the last-applied annotation `oc apply`
// adds) under the API server's 256 KiB annotation limit, like `oc adm catalog mirror`.
const DefaultMaxObjectBytes = 250000

// API versions and kinds written.
const (
	APIVersionConfig     = "config.openshift.io/v1"
	APIVersionICSP       = "operator.openshift.io/v1alpha1"
	APIVersionOLM        = "operators.coreos.com/v1alpha1"
	APIVersionOLMv1      = "olm.operatorframework.io/v1"
	KindIDMS             = "ImageDigestMirrorSet"
	KindITMS             = "ImageTagMirrorSet"
	KindICSP             = "ImageContentSourcePolicy"
	KindCatalogSource    = "CatalogSource"
	KindClusterCatalog   = "ClusterCatalog"
	CatalogNamespace     = "openshift-marketplace"
	DefaultPollInterval  = "30m"
	defaultPollMinutes   = 30
	operatorCatalogLabel = "operators.openshift.org/catalog"
)

// ObjectMeta is the part of metadata airlock writes.
type ObjectMeta struct {
	Name      string            `json:"name"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// MirrorRule maps a source (registry, namespace or repository) to its mirrors.
type MirrorRule struct {
	Source  string   `json:"source"`
	Mirrors []string `json:"mirrors"`
}

// ImageDigestMirrorSet is config.openshift.io/v1 ImageDigestMirrorSet.
type ImageDigestMirrorSet struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       struct {
		ImageDigestMirrors []MirrorRule `json:"imageDigestMirrors"`
	} `json:"spec"`
}

// ImageTagMirrorSet is config.openshift.io/v1 ImageTagMirrorSet.
type ImageTagMirrorSet struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       struct {
		ImageTagMirrors []MirrorRule `json:"imageTagMirrors"`
	} `json:"spec"`
}

// ImageContentSourcePolicy is operator.openshift.io/v1alpha1 ImageContentSourcePolicy.
type ImageContentSourcePolicy struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       struct {
		RepositoryDigestMirrors []MirrorRule `json:"repositoryDigestMirrors"`
	} `json:"spec"`
}

// CatalogSource is one operators.coreos.com/v1alpha1 CatalogSource. Object is the
// complete object written (the template's fields included).
type CatalogSource struct {
	Name      string
	Namespace string
	Image     string
	// Catalog is the Source of the Catalog this was built from.
	Catalog string
	Object  map[string]any
}

// ClusterCatalog is olm.operatorframework.io/v1 ClusterCatalog.
type ClusterCatalog struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       struct {
		Source ClusterCatalogSource `json:"source"`
	} `json:"spec"`
}

// ClusterCatalogSource is spec.source of a ClusterCatalog.
type ClusterCatalogSource struct {
	Type  string              `json:"type"`
	Image ClusterCatalogImage `json:"image"`
}

// ClusterCatalogImage is spec.source.image of a ClusterCatalog.
type ClusterCatalogImage struct {
	Ref string `json:"ref"`
	// PollIntervalMinutes is only set for tag references (OLM rejects it with a digest).
	PollIntervalMinutes int `json:"pollIntervalMinutes,omitempty"`
}

// File is one file of the output folder.
type File struct {
	// Name is the path relative to the folder, with '/' separators.
	Name string
	// APIVersion, Kind and ObjectName identify the object in the file (empty for README.txt).
	APIVersion, Kind, ObjectName string
	// Rules is the number of mirror rules in a mirror-set object.
	Rules int
	Data  []byte
}
