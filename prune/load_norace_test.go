//go:build !race

package prune

const ioRaceDetector = false
