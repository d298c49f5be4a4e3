//go:build !race

package fbc

const ioRaceDetector = false
