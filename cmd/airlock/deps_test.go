package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The shipped binary links nothing meant for tests: no package testing (nor
// testing/...), no test registry or fixture helpers.
func TestBinaryLinksNoTestCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	forbidden := []string{"testing", "testing/", "/internal/registrytest", "/internal/fixtures"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(pkg, f)) || (strings.HasPrefix(f, "/") && strings.HasSuffix(pkg, f)) {
				t.Errorf("cmd/airlock links %s, which is for tests only", pkg)
			}
		}
	}
}
