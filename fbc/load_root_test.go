package fbc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadDirStaysInside: a symlink in a catalog directory that points outside it
// (as a crafted image layer could leave behind) is never followed out.
func TestLoadDirStaysInside(t *testing.T) {
	top := t.TempDir()
	secret := filepath.Join(top, "secret.json")
	os.WriteFile(secret, []byte(`{"schema":"olm.package","name":"leaked-secret","defaultChannel":"x"}`), 0o644)
	dir := filepath.Join(top, "configs")
	os.MkdirAll(filepath.Join(dir, "pkg"), 0o755)
	os.WriteFile(filepath.Join(dir, "pkg", "catalog.json"), []byte(`{"schema":"olm.package","name":"pkg","defaultChannel":"x"}`), 0o644)
	if err := os.Symlink("../../secret.json", filepath.Join(dir, "pkg", "l.json")); err != nil {
		t.Skip(err)
	}
	c, err := LoadDir(context.Background(), dir, LoadOptions{ElideHeavy: true})
	if err == nil {
		for _, p := range c.Packages {
			if p.Name == "leaked-secret" {
				t.Fatalf("LoadDir read %s through a symlink pointing outside the catalog", secret)
			}
		}
		t.Fatalf("LoadDir accepted a symlink pointing outside the catalog")
	}
	if !strings.Contains(err.Error(), "l.json") {
		t.Errorf("error does not name the file: %v", err)
	}
	// A symlink that stays inside the catalog still works.
	os.Remove(filepath.Join(dir, "pkg", "l.json"))
	os.MkdirAll(filepath.Join(dir, "o"), 0o755)
	os.WriteFile(filepath.Join(dir, "o", "other.json"), []byte(`{"schema":"olm.package","name":"other","defaultChannel":"x"}`), 0o644)
	os.Symlink("../o/other.json", filepath.Join(dir, "pkg", "l.json"))
	c, err = LoadDir(context.Background(), dir, LoadOptions{ElideHeavy: true})
	if err != nil {
		t.Fatalf("symlink inside the catalog: %v", err)
	}
	if len(c.Packages) != 2 {
		t.Errorf("packages: %d, want pkg and other", len(c.Packages))
	}
}
