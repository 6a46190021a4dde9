package main

// The transports linked into libacp (keep in step with capi/transports.go),
// so that acp_info describes the library as it is built.
import (
	"github.com/libacp/libacp/ib"
	"github.com/libacp/libacp/shm"
	"github.com/libacp/libacp/udp"

	"github.com/libacp/libacp/core"
)

// transportMemory are the transports that estimate their tables.
var transportMemory = map[string]func(nprocs, contacted int) []core.MemoryItem{
	"shm": shm.MemoryUse,
	"udp": udp.MemoryUse,
	"ib":  ib.MemoryUse,
}

// plannedTransports are named when they are not in this build.
var plannedTransports = []string{"shm", "udp", "ib"}
