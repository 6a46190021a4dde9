// Command capi is libacp's C face: built with -buildmode=c-shared it becomes
// libacp.so, whose exported acp_* functions are declared by the hand-written
// include/acp.h.
//
// Every acp_* function is defined in acp_shim.c as a one-line forward to a
// goacp_* export of this package. The shim exists because cgo cannot spell
// some of the header's types (const char*), and because compiling it against
// acp.h makes the C compiler check each definition against the public
// prototype. The Go side converts C values, checks that the library is in a
// state to answer, and calls core; ACP semantics live in core, never here.
//
// The linker version script libacp.map exports only acp_* symbols.
package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -I${SRCDIR}/../core
*/
import "C"

// main is required by -buildmode=c-shared and never runs.
func main() {}
