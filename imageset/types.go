// Package imageset holds the ImageSetConfiguration and DeleteImageSetConfiguration
// types (apiVersion mirror.openshift.io/v2alpha1, the oc-mirror v2 format) and their
// strict loader. It knows nothing about registries or file-based catalogs.
package imageset

// APIVersion is the apiVersion airlock writes and expects.
const APIVersion = "mirror.openshift.io/v2alpha1"

// Kinds of configuration documents.
const (
	KindImageSetConfiguration       = "ImageSetConfiguration"
	KindDeleteImageSetConfiguration = "DeleteImageSetConfiguration"
)

// DefaultArchiveSizeGiB is the archive chunk size used when archiveSize is 0.
const DefaultArchiveSizeGiB = 500

// TypeMeta is the apiVersion/kind header of a configuration document.
type TypeMeta struct {
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
}

// ImageSetConfiguration says what to mirror.
type ImageSetConfiguration struct {
	TypeMeta `json:",inline"`
	// ArchiveSize is the maximum size of one archive chunk in GiB (0: DefaultArchiveSizeGiB).
	ArchiveSize int                       `json:"archiveSize,omitempty"`
	Mirror      ImageSetConfigurationSpec `json:"mirror"`

	// Source is the file name the configuration was loaded from (not serialised).
	Source string `json:"-"`
}

// ImageSetConfigurationSpec is the mirror: stanza.
type ImageSetConfigurationSpec struct {
	Platform         *Platform     `json:"platform,omitempty"`
	Operators        []Operator    `json:"operators,omitempty"`
	AdditionalImages []Image       `json:"additionalImages,omitempty"`
	Helm             *Helm         `json:"helm,omitempty"`
	BlockedImages    []Image       `json:"blockedImages,omitempty"`
	Samples          []SampleImage `json:"samples,omitempty"`
}

// DeleteImageSetConfiguration says what to delete from a mirror registry.
type DeleteImageSetConfiguration struct {
	TypeMeta `json:",inline"`
	Delete   DeleteImageSetConfigurationSpec `json:"delete"`

	Source string `json:"-"`
}

// DeleteImageSetConfigurationSpec is the delete: stanza (no blockedImages).
type DeleteImageSetConfigurationSpec struct {
	Platform         *Platform  `json:"platform,omitempty"`
	Operators        []Operator `json:"operators,omitempty"`
	AdditionalImages []Image    `json:"additionalImages,omitempty"`
	Helm             *Helm      `json:"helm,omitempty"`
	// BlockedImages are Go regular expressions of references to leave alone
	// (oc-mirror v2 accepts them here too).
	BlockedImages []Image       `json:"blockedImages,omitempty"`
	Samples       []SampleImage `json:"samples,omitempty"`
}

// Operator is one entry of mirror.operators: a catalog and what to take from it.
type Operator struct {
	// Catalog is a docker reference (registry/ns/name:tag or @digest) or oci://PATH.
	Catalog string `json:"catalog"`
	// TargetCatalog replaces the catalog's namespace/name at the destination.
	TargetCatalog string `json:"targetCatalog,omitempty"`
	// TargetTag replaces the catalog's tag at the destination.
	TargetTag string `json:"targetTag,omitempty"`
	// TargetCatalogSourceTemplate is the path of a CatalogSource YAML used as a template.
	TargetCatalogSourceTemplate string `json:"targetCatalogSourceTemplate,omitempty"`
	// Full selects every bundle (of the listed packages, or of the whole catalog).
	Full bool `json:"full,omitempty"`
	// SkipDependencies turns off dependency resolution.
	SkipDependencies bool `json:"skipDependencies,omitempty"`
	// Platforms is the platform subset of the catalog image, its bundles and their
	// related images: of an index only these platforms are mirrored (PlatformList).
	Platforms []PlatformSpec `json:"platforms,omitempty"`
	// Packages selects packages; empty means every package.
	Packages []IncludePackage `json:"packages,omitempty"`

	// Line is the 1-based line of this entry in the source file (0 if unknown).
	Line int `json:"-"`
}

// IncludePackage selects one package of a catalog.
type IncludePackage struct {
	Name           string           `json:"name"`
	DefaultChannel string           `json:"defaultChannel,omitempty"`
	Channels       []IncludeChannel `json:"channels,omitempty"`
	// SelectedBundles names bundles to keep exactly (oc-mirror 4.16-4.17 "bundles").
	SelectedBundles []SelectedBundle `json:"bundles,omitempty"`
	IncludeBundle   `json:",inline"`

	Line int `json:"-"`
}

// IncludeChannel selects one channel of a package.
type IncludeChannel struct {
	Name          string `json:"name"`
	IncludeBundle `json:",inline"`

	Line int `json:"-"`
}

// IncludeBundle is a semver range of bundle versions (inclusive bounds).
type IncludeBundle struct {
	MinVersion string `json:"minVersion,omitempty"`
	MaxVersion string `json:"maxVersion,omitempty"`
}

// SelectedBundle names one bundle.
type SelectedBundle struct {
	Name string `json:"name"`
}

// Image is an additional or blocked image.
type Image struct {
	// Name is an image reference (additionalImages) or a Go regular expression (blockedImages).
	Name       string         `json:"name"`
	TargetRepo string         `json:"targetRepo,omitempty"`
	TargetTag  string         `json:"targetTag,omitempty"`
	Platforms  []PlatformSpec `json:"platforms,omitempty"`

	Line int `json:"-"`
}

// PlatformSpec is an os/architecture pair.
type PlatformSpec struct {
	OS           string `json:"os,omitempty"`
	Architecture string `json:"architecture,omitempty"`
}

// SampleImage is declared by oc-mirror but not implemented there either.
type SampleImage struct {
	Image `json:",inline"`
}

// Platform is the OpenShift release stanza (see platform.go for its rules).
type Platform struct {
	Graph             bool             `json:"graph,omitempty"`
	Channels          []ReleaseChannel `json:"channels,omitempty"`
	Architectures     []string         `json:"architectures,omitempty"`
	Platforms         []PlatformSpec   `json:"platforms,omitempty"`
	Release           string           `json:"release,omitempty"`
	KubeVirtContainer bool             `json:"kubeVirtContainer,omitempty"`
}

// ReleaseChannel is one OpenShift update channel.
type ReleaseChannel struct {
	Name         string `json:"name"`
	Type         string `json:"type,omitempty"`
	MinVersion   string `json:"minVersion,omitempty"`
	MaxVersion   string `json:"maxVersion,omitempty"`
	ShortestPath bool   `json:"shortestPath,omitempty"`
	Full         bool   `json:"full,omitempty"`

	// Line is the 1-based line of this entry in the source file (0 if unknown).
	Line int `json:"-"`
}

// Helm is the helm chart stanza (not supported by airlock yet).
type Helm struct {
	Repositories []HelmRepository `json:"repositories,omitempty"`
	Local        []HelmChart      `json:"local,omitempty"`
}

// HelmRepository is a remote chart repository.
type HelmRepository struct {
	Name   string      `json:"name"`
	URL    string      `json:"url"`
	Charts []HelmChart `json:"charts,omitempty"`
}

// HelmChart is one chart.
type HelmChart struct {
	Name       string         `json:"name"`
	Version    string         `json:"version,omitempty"`
	Path       string         `json:"path,omitempty"`
	ImagePaths []string       `json:"imagePaths,omitempty"`
	Platforms  []PlatformSpec `json:"platforms,omitempty"`
}
