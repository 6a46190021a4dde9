//go:build !race

package raceedge

// Enabled: the race detector is on (on.go).
const Enabled = false

// Release and Acquire order nothing without the race detector (on.go).
func Release() {}
func Acquire() {}
