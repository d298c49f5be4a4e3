// Package gen writes synthetic package-manifest folders (the operator catalog
// layout before file-based catalogs: PACKAGE/VERSION/*.clusterserviceversion.yaml
// and PACKAGE/PACKAGE.package.yaml) for the conversion benchmarks of fbc/legacy
// and the conformance module, and for `go run ./internal/gen/manifests`.
//
// Test support only: the binary never links it (internal/depcheck).
package gen

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// TemplateName is the CSV of the bundle folder every generated bundle copies:
// the demo operator's 0.3.0 (fbc/legacy/testdata/manifests/demo-operator/0.3.0),
// with its CRD, icon, deployment and related images.
const TemplateName = "demo-operator.v0.3.0"

// Write writes into dir a package-manifest folder of packages packages with
// versions versions each: one channel, stable, each CSV replacing the previous
// one and skipping the one before; packages×versions bundles, each a copy of
// the bundle folder template (TemplateName's CSV and its widgets.crd.yaml)
// renamed.
func Write(dir, template string, packages, versions int) error {
	if packages < 1 || versions < 1 {
		return fmt.Errorf("packages %d, versions %d: both must be at least 1", packages, versions)
	}
	csv, err := os.ReadFile(filepath.Join(template, TemplateName+".clusterserviceversion.yaml"))
	if err != nil {
		return err
	}
	crd, err := os.ReadFile(filepath.Join(template, "widgets.crd.yaml"))
	if err != nil {
		return err
	}
	const edges = "  replaces: demo-operator.v0.2.0\n  skips:\n    - demo-operator.v0.1.0\n"
	if !strings.Contains(string(csv), edges) {
		return fmt.Errorf("%s: not the demo operator's CSV (no replaces/skips to rewrite)", template)
	}
	for p := range packages {
		pkg := fmt.Sprintf("bench-operator-%03d", p)
		name := func(v int) string { return fmt.Sprintf("%s.v1.%d.0", pkg, v) }
		for v := range versions {
			vdir := filepath.Join(dir, pkg, fmt.Sprintf("1.%d.0", v))
			if err := os.MkdirAll(vdir, 0o755); err != nil {
				return err
			}
			c := strings.NewReplacer(TemplateName, name(v), "0.3.0", fmt.Sprintf("1.%d.0", v)).Replace(string(csv))
			e := ""
			if v > 0 {
				e = "  replaces: " + name(v-1) + "\n"
			}
			if v > 1 {
				e += "  skips:\n    - " + name(v-2) + "\n"
			}
			c = strings.Replace(c, edges, e, 1)
			if err := os.WriteFile(filepath.Join(vdir, name(v)+".clusterserviceversion.yaml"), []byte(c), 0o644); err != nil {
				return err
			}
			if err := os.WriteFile(filepath.Join(vdir, "widgets.crd.yaml"), crd, 0o644); err != nil {
				return err
			}
		}
		pm := fmt.Sprintf("packageName: %s\ndefaultChannel: stable\nchannels:\n  - name: stable\n    currentCSV: %s\n", pkg, name(versions-1))
		if err := os.WriteFile(filepath.Join(dir, pkg, pkg+".package.yaml"), []byte(pm), 0o644); err != nil {
			return err
		}
	}
	return nil
}
