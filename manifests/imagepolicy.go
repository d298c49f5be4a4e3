package manifests

import (
	"bytes"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sort"

	"sigs.k8s.io/yaml"
)

// KindClusterImagePolicy is config.openshift.io/v1 ClusterImagePolicy (OpenShift
// 4.20 and later): CRI-O on every node requires a sigstore signature by a key
// for the images of its scopes, and finds it as a "sha256-<hex>.sig"
// attachment in the mirror the image is pulled from.
const KindClusterImagePolicy = "ClusterImagePolicy"

// MaxPolicyScopes is the most scopes one ClusterImagePolicy may hold (its CRD's
// maxItems); more are split into -0, -1, ….
const MaxPolicyScopes = 256

// ClusterImagePolicy is the part of config.openshift.io/v1 ClusterImagePolicy
// airlock writes: a public-key root of trust for the mirrored source
// repositories.
type ClusterImagePolicy struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   ObjectMeta `json:"metadata"`
	Spec       struct {
		Scopes []string `json:"scopes"`
		Policy struct {
			RootOfTrust struct {
				PolicyType string `json:"policyType"`
				PublicKey  struct {
					// KeyData is the PEM public key (base64 in YAML: the CRD's
					// format is byte).
					KeyData []byte `json:"keyData"`
				} `json:"publicKey"`
			} `json:"rootOfTrust"`
			SignedIdentity struct {
				MatchPolicy string `json:"matchPolicy"`
			} `json:"signedIdentity"`
		} `json:"policy"`
	} `json:"spec"`
}

// LoadSignatureKey reads the PEM public key at path (--signature-key) and
// checks it is one. Without a path it takes fallback's key, if fallback is
// set (the one sigstore key --policy requires, and where it comes from); nil
// is no key (no ClusterImagePolicy).
func LoadSignatureKey(path string, fallback func() ([]byte, string)) ([]byte, error) {
	if path == "" {
		if fallback == nil {
			return nil, nil
		}
		return checkSignatureKey(fallback())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--signature-key: %w", err)
	}
	return checkSignatureKey(b, "--signature-key "+path)
}

// checkSignatureKey returns key if it is one PEM public key (nil for none);
// from names where it comes from, for the error.
func checkSignatureKey(key []byte, from string) ([]byte, error) {
	if key == nil {
		return nil, nil
	}
	if err := checkPublicKey(key); err != nil {
		return nil, fmt.Errorf("%s: %w", from, err)
	}
	return key, nil
}

// checkPublicKey refuses what the CRD would: keyData must be one PEM "PUBLIC
// KEY" block ending with a newline.
func checkPublicKey(key []byte) error {
	b, rest := pem.Decode(key)
	if b == nil || b.Type != "PUBLIC KEY" || len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("the signature key is not one PEM public key (-----BEGIN PUBLIC KEY-----, as `cosign generate-key-pair` writes cosign.pub)")
	}
	return nil
}

// buildImagePolicies returns the ClusterImagePolicy objects requiring a
// signature by key for the repositories of images (catalogs are rebuilt by
// airlock, so they carry no vendor signature and are left out).
func buildImagePolicies(images []Image, key []byte) ([]ClusterImagePolicy, []File, error) {
	if len(key) == 0 {
		return nil, nil, nil
	}
	if err := checkPublicKey(key); err != nil {
		return nil, nil, err
	}
	if !bytes.HasSuffix(key, []byte("\n")) {
		key = append(append([]byte(nil), key...), '\n')
	}
	seen := map[string]bool{}
	var scopes []string
	for _, im := range images {
		if im.Kind == KindCatalog {
			continue
		}
		r, err := parseRef(im.Source)
		if err != nil {
			continue // no mirror rule either: Set.Skipped lists it
		}
		if !seen[r.repo] {
			seen[r.repo] = true
			scopes = append(scopes, r.repo)
		}
	}
	sort.Strings(scopes)
	var objs []ClusterImagePolicy
	var files []File
	for i := 0; i*MaxPolicyScopes < len(scopes); i++ {
		part := scopes[i*MaxPolicyScopes : min((i+1)*MaxPolicyScopes, len(scopes))]
		name := fmt.Sprintf("cip-mirrored-%d", i)
		var o ClusterImagePolicy
		o.APIVersion, o.Kind, o.Metadata.Name = APIVersionConfig, KindClusterImagePolicy, name
		o.Spec.Scopes = part
		o.Spec.Policy.RootOfTrust.PolicyType = "PublicKey"
		o.Spec.Policy.RootOfTrust.PublicKey.KeyData = key
		// cosign's signatures name the repository only, which
		// MatchRepoDigestOrExact refuses (containers-policy.json(5)):
		// MatchRepository accepts them, as the CRD allows.
		o.Spec.Policy.SignedIdentity.MatchPolicy = "MatchRepository"
		data, err := yaml.Marshal(o)
		if err != nil {
			return nil, nil, err
		}
		objs = append(objs, o)
		files = append(files, File{Name: name + ".yaml", APIVersion: APIVersionConfig, Kind: KindClusterImagePolicy, ObjectName: name, Rules: len(part), Data: data})
	}
	return objs, files, nil
}
