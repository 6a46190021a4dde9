package core_test

import (
	"testing"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
)

// BenchmarkLocalCopy8 measures the inline path: an 8-byte copy inside this
// process, issued and completed.
func BenchmarkLocalCopy8(b *testing.B) {
	w := coretest.NewWorld(b, 1, "")
	e := w.Engines[0]
	src, _ := e.StarterGA(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, err := e.Copy(src+64, src, 8, core.HandleNull)
		if err != nil {
			b.Fatal(err)
		}
		e.Complete(h)
	}
}

// BenchmarkLocalAdd8 measures a local fetch-and-add through the engine.
func BenchmarkLocalAdd8(b *testing.B) {
	w := coretest.NewWorld(b, 1, "")
	e := w.Engines[0]
	ga, _ := e.StarterGA(0)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h, err := e.Atomic(core.OpAdd8, ga+8, ga, 1, 0, core.HandleNull)
		if err != nil {
			b.Fatal(err)
		}
		e.Complete(h)
	}
}
