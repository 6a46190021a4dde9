package main

import (
	"fmt"
	"sort"

	"github.com/libacp/libacp/core"
)

// A layer is a library built on the basic layer (the data library, the
// communication library): started after the engine in acp_init, stopped
// before it in acp_finalize, and restarted around acp_reset. Its start and
// stop are collective, like the calls that run them.
type layer struct {
	name  string
	order int // lower starts first and stops last
	start func(e *core.Engine) error
	stop  func(e *core.Engine) error
}

var layers []layer

// registerLayer adds a layer; the files that implement layers call it from
// init (a slice append, nothing else).
func registerLayer(l layer) {
	layers = append(layers, l)
	sort.SliceStable(layers, func(i, j int) bool { return layers[i].order < layers[j].order })
}

// startLayers starts every layer in order; on a failure it stops the ones
// already started.
func startLayers(e *core.Engine) error {
	for i, l := range layers {
		if err := l.start(e); err != nil {
			stopLayers(e, i)
			return fmt.Errorf("%s: %v", l.name, err)
		}
	}
	return nil
}

// stopLayers stops the first n layers in reverse order and returns the
// first error.
func stopLayers(e *core.Engine, n int) error {
	var first error
	for i := n - 1; i >= 0; i-- {
		if err := layers[i].stop(e); err != nil && first == nil {
			first = fmt.Errorf("%s: %v", layers[i].name, err)
		}
	}
	return first
}
