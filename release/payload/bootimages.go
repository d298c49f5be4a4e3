package payload

import (
	"encoding/json"
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// archNames maps an architecture as Go and OCI name it to the name releases
// use in their tags and the boot images stream ("4.15.19-x86_64").
var archNames = map[string]string{
	"amd64": "x86_64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x", "multi": "multi",
}

// ArchName is the name release tags use for the architecture arch (amd64 →
// x86_64, arm64 → aarch64; multi for a manifest-list payload). A name
// already in that form is returned as is; ok is false for an unknown one.
func ArchName(arch string) (string, bool) {
	if n, ok := archNames[arch]; ok {
		return n, true
	}
	for _, n := range archNames {
		if n == arch {
			return n, true
		}
	}
	return "", false
}

// bootImages is the part of the boot images ConfigMap read here.
type bootImages struct {
	Kind string `json:"kind"`
	Data struct {
		Stream string `json:"stream"`
	} `json:"data"`
}

type bootStream struct {
	Architectures map[string]struct {
		Images struct {
			KubeVirt struct {
				DigestRef string `json:"digest-ref"`
			} `json:"kubevirt"`
		} `json:"images"`
	} `json:"architectures"`
}

// KubeVirtImage reads 0000_50_installer_coreos-bootimages.yaml (a ConfigMap
// whose data.stream is the CoreOS stream in JSON) and returns the KubeVirt
// container image of arch (amd64 or x86_64, s390x, …) by digest:
// data.stream's architectures.<arch>.images.kubevirt.digest-ref.
func KubeVirtImage(b []byte, arch string) (string, error) {
	key, ok := ArchName(arch)
	if !ok || key == "multi" {
		return "", fmt.Errorf("%w: no boot images for architecture %q", ErrInvalid, arch)
	}
	var cm bootImages
	if err := yaml.Unmarshal(b, &cm); err != nil {
		return "", fmt.Errorf("%w: not a ConfigMap in YAML: %v", ErrInvalid, err)
	}
	if cm.Kind != "ConfigMap" {
		return "", fmt.Errorf("%w: kind %q, want ConfigMap", ErrInvalid, cm.Kind)
	}
	if strings.TrimSpace(cm.Data.Stream) == "" {
		return "", fmt.Errorf("%w: data.stream is empty", ErrInvalid)
	}
	var st bootStream
	if err := json.Unmarshal([]byte(cm.Data.Stream), &st); err != nil {
		return "", fmt.Errorf("%w: data.stream is not JSON: %v", ErrInvalid, err)
	}
	ref := st.Architectures[key].Images.KubeVirt.DigestRef
	if ref == "" {
		return "", fmt.Errorf("%w: data.stream has no architectures.%s.images.kubevirt.digest-ref (this release has no KubeVirt image for %s)", ErrInvalid, key, key)
	}
	c, err := byDigest(ref)
	if err != nil {
		return "", fmt.Errorf("%w: architectures.%s.images.kubevirt.digest-ref: %v", ErrInvalid, key, err)
	}
	return c.Image, nil
}
