package pipeline

import (
	"strings"
	"testing"

	"github.com/airlock-mirror/airlock/imageset"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestDeleteNames: the content sources say which wants a
// DeleteImageSetConfiguration names (pipeline/deletion plans with it).
func TestDeleteNames(t *testing.T) {
	const cat = "reg/ns/index:v1"
	cfg := func(y string) *imageset.DeleteImageSetConfiguration {
		t.Helper()
		c, err := imageset.LoadDelete(strings.NewReader("apiVersion: mirror.openshift.io/v2alpha1\nkind: DeleteImageSetConfiguration\ndelete:\n"+y), "delete-isc.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	bundle := func(pkg, name, version string, chans ...string) workspace.Want {
		return workspace.Want{Kind: workspace.WantBundle, Catalog: cat, Package: pkg, Bundle: name, Version: version, Channels: chans}
	}
	tests := []struct {
		name  string
		cfg   string
		want  workspace.Want
		match bool
	}{
		{"whole catalog: bundle", "  operators:\n  - catalog: " + cat + "\n", bundle("a", "a.v1", "1.0.0", "stable"), true},
		{"whole catalog: catalog image", "  operators:\n  - catalog: " + cat + "\n", workspace.Want{Kind: workspace.WantCatalog, Catalog: cat}, true},
		{"package: catalog image stays", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n", workspace.Want{Kind: workspace.WantCatalog, Catalog: cat}, false},
		{"other catalog", "  operators:\n  - catalog: reg/ns/other:v1\n", bundle("a", "a.v1", "1.0.0"), false},
		{"package", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n", bundle("a", "a.v1", "1.0.0"), true},
		{"other package", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: b\n", bundle("a", "a.v1", "1.0.0"), false},
		{"package known by catalog only", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n", workspace.Want{Kind: workspace.WantBundle, Catalog: cat}, false},
		{"maxVersion in", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      maxVersion: 1.2.0\n", bundle("a", "a.v1.2", "1.2.0"), true},
		{"maxVersion out", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      maxVersion: 1.2.0\n", bundle("a", "a.v1.3", "1.3.0"), false},
		{"minVersion out", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      minVersion: 1.2.0\n", bundle("a", "a.v1.1", "1.1.0"), false},
		{"channel", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      channels:\n      - name: fast\n", bundle("a", "a.v1", "1.0.0", "fast", "stable"), true},
		{"other channel", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      channels:\n      - name: fast\n", bundle("a", "a.v1", "1.0.0", "stable"), false},
		{"channel range out", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      channels:\n      - name: fast\n        maxVersion: 0.9.0\n", bundle("a", "a.v1", "1.0.0", "fast"), false},
		{"bundle by name", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      bundles:\n      - name: a.v1\n", bundle("a", "a.v1", "1.0.0"), true},
		{"other bundle by name", "  operators:\n  - catalog: " + cat + "\n    packages:\n    - name: a\n      bundles:\n      - name: a.v2\n", bundle("a", "a.v1", "1.0.0"), false},
		{"additional image", "  additionalImages:\n  - name: docker://reg/tools/debug:1.0\n", workspace.Want{Kind: workspace.WantAdditional, Image: "reg/tools/debug:1.0"}, true},
		{"other additional image", "  additionalImages:\n  - name: reg/tools/debug:2.0\n", workspace.Want{Kind: workspace.WantAdditional, Image: "reg/tools/debug:1.0"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeleteNames(cfg(tc.cfg), tc.want); got != tc.match {
				t.Errorf("match(%+v) = %v, want %v", tc.want, got, tc.match)
			}
		})
	}
}
