package sigpolicy

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
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
	// RegistriesConf is the registries.conf the sources are read through
	// (mirrors, blocked, insecure entries); "": the system's files.
	RegistriesConf string
	// Timeout bounds the evaluation of one image (0: 5 minutes).
	Timeout time.Duration
	// DefaultRegistriesDir is where the registries.d folder used without
	// Options.RegistriesDir is written, on first use (working-dir's).
	DefaultRegistriesDir string
}

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
