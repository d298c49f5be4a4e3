//go:build containers_image_openpgp

package sigpolicy

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
)

// defaultTimeout bounds one image's evaluation when Source.Timeout is 0.
const defaultTimeout = 5 * time.Minute

// requirement is the part of a policy requirement sigpolicy reads itself: the
// sigstore keys (for the cluster) and the key files (checked up front).
type requirement struct {
	Type     string   `json:"type"`
	KeyPath  string   `json:"keyPath"`
	KeyPaths []string `json:"keyPaths"`
	KeyData  string   `json:"keyData"`
	KeyDatas []string `json:"keyDatas"`
}

type policyDoc struct {
	Default    []requirement                       `json:"default"`
	Transports map[string]map[string][]requirement `json:"transports"`
}

// inspect reads the requirements of the policy file (already parsed by
// containers/image): every key file they name must be readable, and the
// sigstore public keys they require are returned, each once, sorted.
func inspect(file string, raw []byte) (sigstoreKeys [][]byte, err error) {
	var doc policyDoc
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("policy %s: %w", file, err)
	}
	reqs := doc.Default
	for _, scopes := range doc.Transports {
		for _, r := range scopes {
			reqs = append(reqs, r...)
		}
	}
	seen := map[string]bool{}
	add := func(k []byte) {
		if !seen[string(k)] {
			seen[string(k)] = true
			sigstoreKeys = append(sigstoreKeys, k)
		}
	}
	for _, r := range reqs {
		for _, p := range append([]string{r.KeyPath}, r.KeyPaths...) {
			if p == "" {
				continue
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("policy %s: a %s requirement names the key file %s, which cannot be read (%v): fix the path in the policy", file, r.Type, p, errors.Unwrap(err))
			}
			if r.Type == "sigstoreSigned" {
				add(b)
			}
		}
		if r.Type != "sigstoreSigned" {
			continue
		}
		for _, d := range append([]string{r.KeyData}, r.KeyDatas...) {
			if d == "" {
				continue
			}
			b, err := base64.StdEncoding.DecodeString(d)
			if err != nil {
				return nil, fmt.Errorf("policy %s: a sigstoreSigned keyData is not base64: %w", file, err)
			}
			add(b)
		}
	}
	sort.Slice(sigstoreKeys, func(i, j int) bool { return string(sigstoreKeys[i]) < string(sigstoreKeys[j]) })
	return sigstoreKeys, nil
}

// checkRegistriesD checks that --registries.d, if given, is a folder.
func (o Options) checkRegistriesD() error {
	if o.RegistriesDir == "" {
		return nil
	}
	st, err := os.Stat(o.RegistriesDir)
	if err != nil {
		return fmt.Errorf("--registries.d %s: %w", o.RegistriesDir, err)
	}
	if !st.IsDir() {
		return fmt.Errorf("--registries.d %s: not a folder: give the folder of *.yaml files (as skopeo's --registries.d)", o.RegistriesDir)
	}
	return nil
}

// writeDefaultRegistriesD writes a registries.d folder at dir that turns
// sigstore attachments on for every registry: where cosign and airlock put
// signatures, beside the image.
func writeDefaultRegistriesD(dir string) error {
	if dir == "" {
		return errors.New("no registries.d folder: give --registries.d DIR")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("registries.d folder: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(dir, "default.yaml"), []byte(defaultRegistriesD), 0o644)
}

// defaultRegistriesD is the registries.d configuration without --registries.d.
const defaultRegistriesD = `# Written by airlock for --policy without --registries.d: sigstore
# signatures are read from the registry, as attachments of each image.
default-docker:
  use-sigstore-attachments: true
`
