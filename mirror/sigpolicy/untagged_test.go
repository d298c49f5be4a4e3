//go:build !containers_image_openpgp

package sigpolicy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestUntaggedBuild: a build without containers_image_openpgp refuses a policy
// with what to do, and runs without one.
func TestUntaggedBuild(t *testing.T) {
	p := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(p, []byte(`{"default":[{"type":"reject"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Policy: p}, Source{}); !errors.Is(err, ErrNotBuiltIn) {
		t.Errorf("--policy in an untagged build: %v", err)
	}
	if chk, err := Open(Options{}, Source{}); chk != nil || err != nil {
		t.Errorf("no policy: %v, %v", chk, err)
	}
}
