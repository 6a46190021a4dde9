//go:build race

package memcopy

// The race detector sees the accesses of Go's copy and not those of the
// assembly: under it Move copies with copy, so that the engine's copies
// stay visible to it.
const raceDetector = true
