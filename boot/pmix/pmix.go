//go:build cgo

// Package pmix is libacp's client of PMIx, the process-management interface
// that Open MPI's mpirun, PRRTE and Slurm's srun --mpi=pmix serve. libpmix
// is opened with dlopen when a PMIx launcher started the job, so libacp
// neither links it nor needs its headers to build: on a machine without
// PMIx everything else works, and Open says why PMIx does not.
//
// The types and functions used are declared in pmix_dl.h (see there why
// that is safe); C trampolines in pmix_dl.c call through the pointers that
// dlsym found. PMIx_Init is reference-counted by libpmix, so a process in
// which an MPI library initialised PMIx already gets a second, independent
// handle.
package pmix

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "pmix_dl.h"
*/
import "C"

import (
	"fmt"
	"strings"
	"sync"
	"unsafe"
)

// Library is a loaded libpmix.
type Library struct {
	api  C.bootpmix_api
	name string
}

var loaded struct {
	sync.Mutex
	libs map[string]*Library
	errs map[string]error
}

// Open loads the first of the named libraries that is a PMIx client library
// (DefaultLibraries when none are named). Outcomes are remembered: the
// library is never unloaded, since it starts threads.
func Open(names ...string) (*Library, error) {
	if len(names) == 0 {
		names = DefaultLibraries
	}
	loaded.Lock()
	defer loaded.Unlock()
	if loaded.libs == nil {
		loaded.libs, loaded.errs = map[string]*Library{}, map[string]error{}
	}
	var failures []string
	for _, name := range names {
		if l := loaded.libs[name]; l != nil {
			return l, nil
		}
		err := loaded.errs[name]
		if err == nil {
			l := &Library{name: name}
			cname := C.CString(name)
			var msg [512]C.char
			rc := C.bootpmix_load(cname, &l.api, &msg[0], C.size_t(len(msg)))
			C.free(unsafe.Pointer(cname))
			if rc == 0 {
				loaded.libs[name] = l
				return l, nil
			}
			err = fmt.Errorf("%s", C.GoString(&msg[0]))
			loaded.errs[name] = err
		}
		failures = append(failures, err.Error())
	}
	return nil, fmt.Errorf("no PMIx library could be loaded (%s); install libpmix2 (Debian) or the PMIx of your MPI", strings.Join(failures, "; "))
}

// Name is the library name that was loaded.
func (l *Library) Name() string { return l.name }

// Version is what the library says it is, e.g. "OpenPMIx 4.2.2 (...)".
func (l *Library) Version() string { return C.GoString(C.bootpmix_version(&l.api)) }

// Error is a PMIx call that failed.
type Error struct {
	Call   string
	Status int
	Text   string
}

func (e *Error) Error() string { return fmt.Sprintf("%s failed: %s (%d)", e.Call, e.Text, e.Status) }

func (l *Library) check(call string, rc C.int) error {
	switch rc {
	case C.BOOTPMIX_SUCCESS:
		return nil
	case -1:
		if call == "PMIx_Get" {
			return &Error{Call: call, Status: -1, Text: "no value"}
		}
	case -2:
		if call == "PMIx_Get" {
			return &Error{Call: call, Status: -2, Text: "a value of an unexpected type"}
		}
	}
	return &Error{Call: call, Status: int(rc), Text: C.GoString(C.bootpmix_error_string(&l.api, rc))}
}

// Client is this process's connection to its PMIx server.
type Client struct {
	lib *Library
	me  C.bootpmix_proc_t
}

// Init connects to the local PMIx server (PMIx_Init).
func (l *Library) Init() (*Client, error) {
	c := &Client{lib: l}
	if err := l.check("PMIx_Init", C.bootpmix_init(&l.api, &c.me)); err != nil {
		return nil, err
	}
	return c, nil
}

// Rank is this process's rank in its namespace.
func (c *Client) Rank() int { return int(c.me.rank) }

// Namespace is the job's namespace.
func (c *Client) Namespace() string { return C.GoString(&c.me.nspace[0]) }

// JobUint reads an unsigned job-level value such as "pmix.job.size"
// (PMIX_JOB_SIZE) or "pmix.local.size" (PMIX_LOCAL_SIZE).
func (c *Client) JobUint(key string) (uint64, error) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var v C.uint64_t
	if err := c.lib.check("PMIx_Get", C.bootpmix_get_job_uint(&c.lib.api, &c.me, ck, &v)); err != nil {
		return 0, fmt.Errorf("%s: %w", key, err)
	}
	return uint64(v), nil
}

// Put publishes data under key to every process (PMIx_Put, PMIX_GLOBAL).
func (c *Client) Put(key string, data []byte) error {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var p unsafe.Pointer
	if len(data) > 0 {
		p = C.CBytes(data)
		defer C.free(p)
	}
	return c.lib.check("PMIx_Put", C.bootpmix_put_bytes(&c.lib.api, ck, p, C.size_t(len(data))))
}

// Commit makes what was put visible (PMIx_Commit).
func (c *Client) Commit() error { return c.lib.check("PMIx_Commit", C.bootpmix_commit(&c.lib.api)) }

// Fence waits for every process of the job; with collect, the values they
// committed are exchanged on the way (PMIX_COLLECT_DATA).
func (c *Client) Fence(collect bool) error {
	flag := C.int(0)
	if collect {
		flag = 1
	}
	return c.lib.check("PMIx_Fence", C.bootpmix_fence(&c.lib.api, flag))
}

// Get reads the bytes rank put under key (PMIx_Get).
func (c *Client) Get(rank int, key string) ([]byte, error) {
	ck := C.CString(key)
	defer C.free(unsafe.Pointer(ck))
	var p unsafe.Pointer
	var n C.size_t
	if err := c.lib.check("PMIx_Get", C.bootpmix_get_bytes(&c.lib.api, &c.me, C.uint32_t(rank), ck, &p, &n)); err != nil {
		return nil, fmt.Errorf("%s of rank %d: %w", key, rank, err)
	}
	defer C.free(p)
	return C.GoBytes(p, C.int(n)), nil
}

// Abort asks the launcher to stop the job (PMIx_Abort).
func (c *Client) Abort(status int, msg string) error {
	cm := C.CString(msg)
	defer C.free(unsafe.Pointer(cm))
	return c.lib.check("PMIx_Abort", C.bootpmix_abort(&c.lib.api, C.int(status), cm))
}

// Finalize ends this handle (PMIx_Finalize); libpmix disconnects when the
// last handle of the process is finalized.
func (c *Client) Finalize() error {
	return c.lib.check("PMIx_Finalize", C.bootpmix_finalize(&c.lib.api))
}

// abi lists the sizes and constants pmix_dl.h declares, so that a test can
// compare them with the real PMIx headers.
func abi() map[string]int {
	return map[string]int{
		"sizeof(pmix_proc_t)":  int(C.sizeof_bootpmix_proc_t),
		"sizeof(pmix_value_t)": int(C.sizeof_bootpmix_value_t),
		"sizeof(pmix_info_t)":  int(C.sizeof_bootpmix_info_t),
		"PMIX_BOOL":            C.BOOTPMIX_BOOL,
		"PMIX_SIZE":            C.BOOTPMIX_SIZE,
		"PMIX_INT":             C.BOOTPMIX_INT,
		"PMIX_INT32":           C.BOOTPMIX_INT32,
		"PMIX_UINT":            C.BOOTPMIX_UINT,
		"PMIX_UINT32":          C.BOOTPMIX_UINT32,
		"PMIX_UINT64":          C.BOOTPMIX_UINT64,
		"PMIX_BYTE_OBJECT":     C.BOOTPMIX_BYTE_OBJECT,
		"PMIX_GLOBAL":          C.BOOTPMIX_GLOBAL,
		"PMIX_MAX_NSLEN":       C.BOOTPMIX_MAX_NSLEN,
		"PMIX_MAX_KEYLEN":      C.BOOTPMIX_MAX_KEYLEN,
	}
}
