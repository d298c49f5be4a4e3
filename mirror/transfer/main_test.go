package transfer

import (
	"os"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/testgc"
)

// TestMain runs the tests, which serve registries in process, with the
// garbage collector set for that (internal/testutil/testgc).
func TestMain(m *testing.M) {
	testgc.Tune()
	os.Exit(m.Run())
}
