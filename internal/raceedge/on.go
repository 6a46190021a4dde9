//go:build race

// Package raceedge tells the race detector about synchronisation it cannot
// see: atomics on memory outside the Go heap (shared segments, blocks shared
// with C) order nothing for it. Under the detector, Release and Acquire also
// go through a Go variable, so that data handed over through such memory is
// not reported as racing; without it they compile to nothing.
//
// One variable serves every edge: it may hide a race between two unrelated
// hand-overs, never report a false one.
//
// Enabled says whether the detector is on, for tests that cannot run
// under it.
package raceedge

import "sync/atomic"

// Enabled: the race detector is on.
const Enabled = true

var edge atomic.Int64

// Release is called before the store that publishes data to another
// thread through memory outside the Go heap.
func Release() { edge.Add(1) }

// Acquire is called after the load that saw such a store.
func Acquire() { edge.Load() }
