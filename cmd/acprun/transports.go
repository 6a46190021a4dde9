package main

// The transports linked here declare their settings, so that acprun can
// check --acp-NAME options the way acp_init will.
import (
	_ "github.com/libacp/libacp/ib"
	_ "github.com/libacp/libacp/shm"
	_ "github.com/libacp/libacp/udp"
)
