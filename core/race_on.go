//go:build race

package core

import "sync/atomic"

// The queue lock lives outside the Go heap (shared with C), where the race
// detector does not see atomics as synchronisation. Under the detector the
// lock therefore also publishes through a Go variable, so that data the
// lock guards is not reported as racing.
var raceLockEdge atomic.Int64

func raceAcquire() { raceLockEdge.Load() }
func raceRelease() { raceLockEdge.Add(1) }
