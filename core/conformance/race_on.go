//go:build race

package conformance

// raceDetector: the race detector runs atomics in its C runtime, where a
// fault cannot be recovered; the cases leave out atomics on read-only
// memory under it.
const raceDetector = true
