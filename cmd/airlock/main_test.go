package main

import (
	"os"
	"testing"

	"github.com/airlock-mirror/airlock/internal/testutil/testgc"
)

// TestMain runs the tests, which serve registries and run commands in
// process, with the garbage collector set for that (internal/testutil/testgc).
// The test binary run as airlock (AIRLOCK_TEST_RUN_MAIN, registry_test.go)
// never gets here: it keeps airlock's own policy (gc.go).
func TestMain(m *testing.M) {
	testgc.Tune()
	os.Exit(m.Run())
}
