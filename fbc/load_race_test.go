//go:build race

package fbc

// ioRaceDetector is true when the tests run with the race detector, which makes
// the multi-megabyte real catalogs too slow to round-trip in the test budget.
const ioRaceDetector = true
