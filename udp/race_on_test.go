//go:build race

package udp

// raceDetector: the race detector adds to every allocation, so tests that
// count bytes allocated do not apply.
const raceDetector = true
