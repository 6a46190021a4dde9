//go:build race

package core

// raceDetector: under the race detector sync/atomic operations run inside
// the detector's C runtime, where a memory fault cannot become a Go panic:
// the guarded atomics' fault cases cannot be tested there.
const raceDetector = true
