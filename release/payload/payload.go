// Package payload reads an OpenShift release payload: the files under
// release-manifests/ of the payload image (image-references, the components
// of the release; release-metadata, its version and the versions it updates
// from; 0000_50_installer_coreos-bootimages.yaml, the KubeVirt container
// image). It is an engine: it reads files the caller extracted from the
// payload image's layers and knows no registry, copying or workflow.
package payload

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
)

// Files of a payload, relative to the image root.
const (
	// ManifestsDir is the only folder of the payload image that is read.
	ManifestsDir = "release-manifests"
	// ImageReferencesFile lists the release's components (an ImageStream).
	ImageReferencesFile = ManifestsDir + "/image-references"
	// MetadataFile holds the release's version and the versions it updates from.
	MetadataFile = ManifestsDir + "/release-metadata"
	// BootImagesFile is the installer's CoreOS boot images ConfigMap (the
	// KubeVirt container image among them).
	BootImagesFile = ManifestsDir + "/0000_50_installer_coreos-bootimages.yaml"
)

// ErrInvalid is returned (wrapped) for a payload file that cannot be read as
// its format says.
var ErrInvalid = errors.New("invalid release payload")

// Payload is what a release payload says about itself.
type Payload struct {
	// Version is the release's version (release-metadata's, else the
	// ImageStream's name).
	Version string
	// Metadata is release-metadata (nil when the payload has none).
	Metadata *Metadata
	// Components are the release's images, sorted by name.
	Components []Component
	// BootImages is 0000_50_installer_coreos-bootimages.yaml as read (nil when
	// the payload has none); KubeVirtImage reads it.
	BootImages []byte
}

// Read reads a payload from fsys, a folder holding the payload image's
// release-manifests/ (as extracted from its layers). image-references is
// required; release-metadata and the boot images are optional. A version in
// release-metadata that differs from the ImageStream's name is an error (the
// payload contradicts itself).
func Read(fsys fs.FS) (*Payload, error) {
	b, err := fs.ReadFile(fsys, ImageReferencesFile)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v (is this a release payload image?)", ErrInvalid, ImageReferencesFile, err)
	}
	refs, err := ParseImageReferences(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ImageReferencesFile, err)
	}
	p := &Payload{Version: refs.Name, Components: refs.Components}
	if b, err := fs.ReadFile(fsys, MetadataFile); err == nil {
		md, err := ParseMetadata(b)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", MetadataFile, err)
		}
		p.Metadata = md
		if refs.Name != "" && refs.Name != md.Version {
			return nil, fmt.Errorf("%w: %s says version %s but %s is named %s", ErrInvalid, MetadataFile, md.Version, ImageReferencesFile, refs.Name)
		}
		p.Version = md.Version
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", MetadataFile, err)
	}
	if b, err := fs.ReadFile(fsys, BootImagesFile); err == nil {
		p.BootImages = b
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", BootImagesFile, err)
	}
	if p.Version == "" {
		return nil, fmt.Errorf("%w: neither %s nor %s names the release's version", ErrInvalid, path.Base(MetadataFile), path.Base(ImageReferencesFile))
	}
	return p, nil
}

// KubeVirtImage is the KubeVirt container image of the release for arch (see
// KubeVirtImage in bootimages.go).
func (p *Payload) KubeVirtImage(arch string) (string, error) {
	if p.BootImages == nil {
		return "", fmt.Errorf("%w: the payload has no %s (kubeVirtContainer needs it)", ErrInvalid, BootImagesFile)
	}
	ref, err := KubeVirtImage(p.BootImages, arch)
	if err != nil {
		return "", fmt.Errorf("%s: %w", BootImagesFile, err)
	}
	return ref, nil
}

// Component returns the component named name.
func (p *Payload) Component(name string) (Component, bool) {
	for _, c := range p.Components {
		if c.Name == name {
			return c, true
		}
	}
	return Component{}, false
}
