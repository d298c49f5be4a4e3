//go:build race

package fbc

import "github.com/airlock-mirror/airlock/fbc/internal/scan"

// ioRaceDetector is true when the tests run with the race detector, which makes
// the multi-megabyte real catalogs too slow to round-trip in the test budget.
const ioRaceDetector = true
