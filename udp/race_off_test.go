//go:build !race

package udp

const raceDetector = false
