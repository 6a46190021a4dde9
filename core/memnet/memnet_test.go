package memnet_test

import (
	"testing"

	"github.com/libacp/libacp/core/conformance"
	_ "github.com/libacp/libacp/core/memnet"
)

func TestConformance(t *testing.T) { conformance.Run(t, "memnet") }

func TestConformanceShuffled(t *testing.T) { conformance.Run(t, "memnet", "memnet-shuffle=1") }
