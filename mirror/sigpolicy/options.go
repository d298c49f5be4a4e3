package sigpolicy

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/airlock-mirror/airlock/internal/atomicfile"
)

// Options are the policy flags.
type Options struct {
	// Policy is --policy FILE: a containers-policy.json.
	Policy string
	// Secure is --secure-policy (oc-mirror's flag): the system's default
	// policy, $HOME/.config/containers/policy.json if it exists, else
	// /etc/containers/policy.json (as containers/image finds it), unless
	// Policy names one.
	Secure bool
	// RegistriesDir is --registries.d DIR: where signatures live (sigstore
	// attachments, lookaside), as skopeo reads it. Empty: sigstore attachments
	// in every registry (use-sigstore-attachments: true), no lookaside.
	RegistriesDir string
}

// Enabled reports whether the flags ask for a policy.
func (o Options) Enabled() bool { return o.Policy != "" || o.Secure }

// Source says how the source registries are reached (the run's own flags).
type Source struct {
	// AuthFile is --authfile ("" : containers/image's defaults,
	// $REGISTRY_AUTH_FILE, auth.json, ~/.docker/config.json).
	AuthFile string
	// Insecure is --src-tls-verify=false (also allows plain HTTP).
	Insecure bool
	// CertDir is --src-cert-dir.
	CertDir string
	// Timeout bounds the evaluation of one image (0: 5 minutes).
	Timeout time.Duration
	// DefaultRegistriesDir is where the registries.d folder used without
	// Options.RegistriesDir is written, on first use (working-dir's).
	DefaultRegistriesDir string
}

// defaultTimeout bounds one image's evaluation when Source.Timeout is 0.
const defaultTimeout = 5 * time.Minute

// policyFile returns the policy file o names (--policy, else the system's
// default for --secure-policy), or an error saying what to do.
func (o Options) policyFile() (string, error) {
	if o.Policy != "" {
		if _, err := os.Stat(o.Policy); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return "", fmt.Errorf("--policy %s: no such file: give the path of a containers-policy.json (man containers-policy.json; docs/signatures.md has examples)", o.Policy)
			}
			return "", fmt.Errorf("--policy %s: %w", o.Policy, err)
		}
		return o.Policy, nil
	}
	var tried []string
	if home, err := os.UserHomeDir(); err == nil {
		tried = append(tried, filepath.Join(home, ".config", "containers", "policy.json"))
	}
	tried = append(tried, systemPolicy)
	for _, p := range tried {
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("--secure-policy: no default policy: neither %s exists; write one (man containers-policy.json) or give --policy FILE", joinOr(tried))
}

// systemPolicy is containers/image's system-wide default policy.
var systemPolicy = "/etc/containers/policy.json"

func joinOr(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	out := s[0]
	for _, x := range s[1 : len(s)-1] {
		out += ", " + x
	}
	return out + " nor " + s[len(s)-1]
}

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
