package manifests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	"sigs.k8s.io/yaml"
)

// Release signature ConfigMaps: what the cluster-version operator reads to
// verify a release it is asked to update to when it cannot reach Red Hat's
// signature store (library-go's pkg/verify/store/configmap: every ConfigMap in
// openshift-config-managed labelled release.openshift.io/verification-signatures,
// binaryData keys "sha256-<hex>-N").
const (
	KindConfigMap                = "ConfigMap"
	APIVersionV1                 = "v1"
	ReleaseSignatureNamespace    = "openshift-config-managed"
	ReleaseSignatureLabel        = "release.openshift.io/verification-signatures"
	ReleaseSignaturesFile        = "release-signatures"
	MaxReleaseSignatureConfigMap = 1000000
)

// ReleaseSignatures are the signatures of one release payload, in order
// (signature-1, 2, …).
type ReleaseSignatures struct {
	// Digest is the payload's manifest digest, "sha256:<hex>".
	Digest string
	// Signatures are the signatures to publish (non-empty).
	Signatures [][]byte
}

// ConfigMap is a v1 ConfigMap holding binary data.
type ConfigMap struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   ObjectMeta        `json:"metadata"`
	BinaryData map[string][]byte `json:"binaryData"`
}

var sha256Digest = regexp.MustCompile(`^sha256:([a-f0-9]{64})$`)

// BuildReleaseSignatures builds one ConfigMap per release, as `oc adm release
// mirror` and library-go's GetSignaturesAsConfigmap do: named "sha256-<hex>",
// in openshift-config-managed, labelled release.openshift.io/verification-signatures: "",
// binaryData "sha256-<hex>-1", "-2", …. One object per release keeps each far
// under etcd's 1 MiB object limit (a release's signature is under 1 KiB) and
// lets each run's ConfigMaps be applied beside earlier runs' without replacing
// them (oc-mirror's single mirrored-release-signatures ConfigMap holds only the
// last run's releases). The same objects are written twice: release-signatures.yaml
// (YAML documents) and release-signatures.json (a v1 List); apply either.
// The output is sorted by digest; the same input gives the same bytes.
func BuildReleaseSignatures(releases []ReleaseSignatures) ([]ConfigMap, []File, error) {
	byDigest := map[string][][]byte{}
	for _, r := range releases {
		m := sha256Digest.FindStringSubmatch(r.Digest)
		if m == nil {
			return nil, nil, fmt.Errorf("release signatures: digest %q is not sha256:<64 hex digits>", r.Digest)
		}
		if len(r.Signatures) == 0 {
			return nil, nil, fmt.Errorf("release signatures of %s: none given", r.Digest)
		}
		if prev, ok := byDigest[r.Digest]; ok && !sameSignatures(prev, r.Signatures) {
			return nil, nil, fmt.Errorf("release signatures of %s: given twice, differently", r.Digest)
		}
		byDigest[r.Digest] = r.Signatures
	}
	digests := make([]string, 0, len(byDigest))
	for d := range byDigest {
		digests = append(digests, d)
	}
	sort.Strings(digests)

	var cms []ConfigMap
	var yamlDoc bytes.Buffer
	for i, d := range digests {
		name := "sha256-" + sha256Digest.FindStringSubmatch(d)[1]
		cm := ConfigMap{APIVersion: APIVersionV1, Kind: KindConfigMap,
			Metadata:   ObjectMeta{Name: name, Namespace: ReleaseSignatureNamespace, Labels: map[string]string{ReleaseSignatureLabel: ""}},
			BinaryData: map[string][]byte{}}
		for n, s := range byDigest[d] {
			cm.BinaryData[fmt.Sprintf("%s-%d", name, n+1)] = s
		}
		data, err := yaml.Marshal(cm)
		if err != nil {
			return nil, nil, err
		}
		if len(data) > MaxReleaseSignatureConfigMap {
			return nil, nil, fmt.Errorf("release signatures of %s: the ConfigMap would be %d bytes, over the %d etcd allows: too many or too large signatures", d, len(data), MaxReleaseSignatureConfigMap)
		}
		if i > 0 {
			yamlDoc.WriteString("---\n")
		}
		yamlDoc.Write(data)
		cms = append(cms, cm)
	}
	if len(cms) == 0 {
		return nil, nil, nil
	}
	list := struct {
		APIVersion string      `json:"apiVersion"`
		Kind       string      `json:"kind"`
		Items      []ConfigMap `json:"items"`
	}{APIVersionV1, "List", cms}
	js, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return nil, nil, err
	}
	objName := cms[0].Metadata.Name
	if len(cms) > 1 {
		objName = fmt.Sprintf("%s … (%d objects)", objName, len(cms))
	}
	files := []File{
		{Name: ReleaseSignaturesFile + ".json", APIVersion: APIVersionV1, Kind: KindConfigMap, ObjectName: objName, Data: append(js, '\n')},
		{Name: ReleaseSignaturesFile + ".yaml", APIVersion: APIVersionV1, Kind: KindConfigMap, ObjectName: objName, Data: yamlDoc.Bytes()},
	}
	return cms, files, nil
}

func sameSignatures(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !bytes.Equal(a[i], b[i]) {
			return false
		}
	}
	return true
}
