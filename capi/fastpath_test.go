package main

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/conformance"
	"github.com/libacp/libacp/core/coretest"
)

func viaFastPath(e *core.Engine) conformance.Ops { return fastOps{e} }

// The conformance suite through the C fast path: over shared memory most
// operations complete in C; the others, and every error, fall back to Go.
func TestConformanceThroughFastPath(t *testing.T) {
	conformance.RunWithOps(t, "shm", viaFastPath)
}

func TestConformanceThroughFastPathUDP(t *testing.T) {
	conformance.RunWithOps(t, "udp", viaFastPath)
}

// The C path must actually take the operations it can: own and mapped
// starter memory; not registered memory or what it cannot map.
func TestFastPathTakesDirectMemory(t *testing.T) {
	w := coretest.NewWorld(t, 2, "shm")
	e := w.Engines[0]
	me, _ := e.StarterGA(0)
	peer, _ := e.StarterGA(1)
	// First touch of the peer goes through Go, which maps and publishes it.
	h, err := e.Copy(peer, me, 8, core.HandleNull)
	assert.NoError(t, err)
	e.Complete(h)
	assert.True(t, fastCompleted(e, me+64, me), "own starter memory")
	assert.True(t, fastCompleted(e, peer+64, me), "a mapped peer's starter memory")
	assert.False(t, fastCompleted(e, peer+1<<20, me), "beyond the peer's starter memory")
	assert.False(t, fastCompleted(e, core.GANull, me), "ACP_GA_NULL")
	w.Close()
}

// Over shared memory on one host the C path runs acp_sync itself, as long
// as nothing is outstanding: both the flat dissemination and the
// hierarchical barrier (chosen when waits do not spin, as on an
// oversubscribed host).
func TestFastPathTakesSync(t *testing.T) {
	for _, c := range []struct {
		n        int
		settings []string
	}{{2, nil}, {3, nil}, {2, []string{"progress-spin=0"}}, {3, []string{"progress-spin=0"}}} {
		n := c.n
		w := coretest.NewWorld(t, n, "shm", c.settings...)
		w.Run(func(r int, e *core.Engine) error {
			for i := 0; i < 50; i++ {
				took, err := fastSynced(e)
				if err != nil {
					return err
				}
				if !took {
					return fmt.Errorf("rank %d: barrier %d went through Go", r, i)
				}
			}
			return nil
		})
		w.Close()
	}
}
