package main

// The transports linked into libacp. Each registers itself with core when
// its package is initialised; acp_init then opens the ones in use.
import (
	_ "github.com/libacp/libacp/ib"
	_ "github.com/libacp/libacp/shm"
	_ "github.com/libacp/libacp/udp"
)
