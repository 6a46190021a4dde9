package shm_test

import (
	"testing"

	"github.com/libacp/libacp/core/conformance"
	_ "github.com/libacp/libacp/shm"
)

func TestConformance(t *testing.T) { conformance.Run(t, "shm") }

// Registered memory served by its owner instead of process_vm_writev, as
// where the kernel refuses cross-process copies.
func TestConformanceOwnerServed(t *testing.T) { conformance.Run(t, "shm", "shm-cma=0") }

// A tiny ring forces records to wait for room and copies to be chunked.
func TestConformanceSmallRings(t *testing.T) {
	conformance.Run(t, "shm", "shm-cma=0", "shm-ring-size=4096")
}
