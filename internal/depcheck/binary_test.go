package depcheck

import (
	"os/exec"
	"strings"
	"testing"
)

// TestBinaryLinksNoTestCode: the shipped binary links nothing meant for tests:
// no package testing (nor testing/...), no test support (internal/testutil/...),
// no generators (internal/gen/..., bench/...). It asks the go command, which
// resolves the build exactly as `make build` does (with its tag).
func TestBinaryLinksNoTestCode(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	cmd := exec.Command("go", "list", "-deps", "-tags", "containers_image_openpgp", "./cmd/airlock")
	cmd.Dir = moduleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./cmd/airlock: %v", err)
	}
	forbidden := []string{"testing", "testing/"}
	for _, p := range testSupport {
		dir := module + "/" + strings.TrimSuffix(p, "/...")
		forbidden = append(forbidden, dir, dir+"/") // the folder and everything under it
	}
	linked := strings.Fields(string(out))
	if len(linked) < 50 {
		t.Fatalf("go list -deps ./cmd/airlock named only %d packages: the check is broken", len(linked))
	}
	for _, pkg := range linked {
		for _, f := range forbidden {
			if pkg == f || (strings.HasSuffix(f, "/") && strings.HasPrefix(pkg, f)) {
				t.Errorf("cmd/airlock links %s, which is for tests only", pkg)
			}
		}
	}
}
