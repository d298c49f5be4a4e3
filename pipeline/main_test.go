package pipeline_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/airlockbin"
	"github.com/airlock-mirror/airlock/internal/testutil/testgc"
	"github.com/airlock-mirror/airlock/workspace"
)

// TestMain fails the run when a test left disk-to-mirror's default workspace in
// the source tree (a test that forgot --workspace): it would be committed.
func TestMain(m *testing.M) {
	testgc.Tune()
	_, before := os.Stat(workspace.DefaultName)
	code := m.Run()
	airlockbin.Remove()
	if _, err := os.Stat(workspace.DefaultName); err == nil && before != nil {
		fmt.Fprintf(os.Stderr, "a test wrote ./%s into the source tree: give disk-to-mirror runs a Workspace\n", workspace.DefaultName)
		os.RemoveAll(workspace.DefaultName)
		code = 1
	}
	os.Exit(code)
}
