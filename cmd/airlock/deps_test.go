package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The shipped binary links nothing meant for tests: no package testing (nor
// testing/...), no test support (internal/testutil/...), no generators
// (internal/gen/..., bench/...).
func TestBinaryLinksNoTestCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	const module = "github.com/airlock-mirror/airlock"
	forbidden := []string{"testing", "testing/", module + "/internal/testutil/", module + "/internal/gen/", module + "/bench/"}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(pkg, f)) {
				t.Errorf("cmd/airlock links %s, which is for tests only", pkg)
			}
		}
	}
}
