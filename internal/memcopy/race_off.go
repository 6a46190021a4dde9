//go:build !race

package memcopy

const raceDetector = false
