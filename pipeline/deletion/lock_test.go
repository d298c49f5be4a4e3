package deletion_test

import (
	"context"
	"errors"
	"testing"

	"github.com/airlock-mirror/airlock/location"
	"github.com/airlock-mirror/airlock/pipeline"
	"github.com/airlock-mirror/airlock/pipeline/deletion"
	"github.com/airlock-mirror/airlock/workspace"
)

// A delete writes the workspace (plans, history): while a mirror run holds it,
// planning and executing are refused, naming the holder.
func TestDeleteRefusedWhileWorkspaceHeld(t *testing.T) {
	dir := t.TempDir()
	wd := workspace.At(dir)
	l, err := wd.Lock(true, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Unlock()
	dest := location.Docker("127.0.0.1:1/ns")
	for name, o := range map[string]deletion.Options{
		"generate": {Generate: true, Stale: true, Workspace: location.File(dir), Destination: dest},
		"execute":  {PlanFile: wd.DeletePlanPath(), Destination: dest},
	} {
		if _, err := pipeline.Delete(context.Background(), o); !errors.Is(err, workspace.ErrLocked) {
			t.Errorf("%s: %v, want it refused while the workspace is held", name, err)
		}
	}
	l.Unlock()
	if _, err := pipeline.Delete(context.Background(), deletion.Options{Generate: true, Stale: true, Workspace: location.File(dir), Destination: dest}); errors.Is(err, workspace.ErrLocked) {
		t.Errorf("refused once the workspace was released: %v", err)
	}
}
