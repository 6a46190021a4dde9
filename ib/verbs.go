package ib

/*
#cgo CFLAGS: -O2 -Wall -I${SRCDIR}/../core
#cgo LDFLAGS: -ldl
#include <errno.h>
#include <stdlib.h>
#include "verbs.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"syscall"
	"unsafe"
)

// Thin Go wrappers over verbs.c. Every function here is one cgo call; the
// data path batches (a chain of work requests per post, up to 32
// completions per poll).

var loadOnce struct {
	sync.Once
	err error
}

// loadVerbs opens libibverbs.so.1 once per process.
func loadVerbs() error {
	loadOnce.Do(func() {
		var buf [512]C.char
		if C.acpib_load(&buf[0], C.int(len(buf))) != 0 {
			loadOnce.err = fmt.Errorf("cannot load libibverbs.so.1 (%s): install the libibverbs1 and ibverbs-providers packages (Debian) or rdma-core to use InfiniBand or RoCE",
				C.GoString(&buf[0]))
		}
	})
	return loadOnce.err
}

// deviceNames lists the verbs devices of this host.
func deviceNames() ([]string, error) {
	buf := make([]byte, 8192)
	n := C.acpib_device_names((*C.char)(unsafe.Pointer(&buf[0])), C.int(len(buf)))
	if n < 0 {
		return nil, fmt.Errorf("ibv_get_device_list: %w", syscall.Errno(-n))
	}
	var names []string
	for i, start := 0, 0; len(names) < int(n) && i < len(buf); i++ {
		if buf[i] == 0 {
			names = append(names, string(buf[start:i]))
			start = i + 1
		}
	}
	return names, nil
}

func errText(b []C.char) error { return errors.New(C.GoString(&b[0])) }

// vdev is an open device (C memory).
type vdev = C.acpib_dev

func openDevice(name string) (*vdev, error) {
	var d *C.acpib_dev
	var buf [256]C.char
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	if C.acpib_open(cname, &d, &buf[0], C.int(len(buf))) != 0 {
		return nil, errText(buf[:])
	}
	return d, nil
}

func setupDevice(d *vdev, cqSize, srqSize int) error {
	var buf [256]C.char
	if C.acpib_setup(d, C.int(cqSize), C.int(srqSize), &buf[0], C.int(len(buf))) != 0 {
		return errText(buf[:])
	}
	return nil
}

func closeDevice(d *vdev) { C.acpib_close(d) }

type portAttr struct {
	state, linkLayer, lid, activeMTU, gidTableLen int
	maxMsg                                        uint32
}

// Port states and link layers of ibv_port_attr.
const (
	portActive        = C.IBV_PORT_ACTIVE
	linkLayerIB       = C.IBV_LINK_LAYER_INFINIBAND
	linkLayerEthernet = C.IBV_LINK_LAYER_ETHERNET
	atomicGlob        = C.IBV_ATOMIC_GLOB
)

func queryPort(d *vdev, port int) (portAttr, error) {
	var a C.acpib_port
	if rc := C.acpib_query_port(d, C.int(port), &a); rc != 0 {
		return portAttr{}, fmt.Errorf("ibv_query_port(%d): %v", port, syscall.Errno(rc))
	}
	return portAttr{state: int(a.state), linkLayer: int(a.link_layer), lid: int(a.lid),
		activeMTU: int(a.active_mtu), gidTableLen: int(a.gid_tbl_len), maxMsg: uint32(a.max_msg_sz)}, nil
}

func queryGID(d *vdev, port, index int) ([16]byte, error) {
	var g [16]byte
	if rc := C.acpib_query_gid(d, C.int(port), C.int(index), (*C.uint8_t)(unsafe.Pointer(&g[0]))); rc != 0 {
		return g, fmt.Errorf("ibv_query_gid(port %d, index %d): %v", port, index, syscall.Errno(rc))
	}
	return g, nil
}

// GID types of ibv_gid_entry.
const (
	gidTypeIB     = C.IBV_GID_TYPE_IB
	gidTypeRoCEv1 = C.IBV_GID_TYPE_ROCE_V1
	gidTypeRoCEv2 = C.IBV_GID_TYPE_ROCE_V2
)

// gidTable returns the valid GID entries of one port.
func gidTable(d *vdev, port, max int) ([]gidEntry, error) {
	out := make([]C.acpib_gid, max)
	n := C.acpib_gid_table(d, &out[0], C.int(max))
	switch {
	case n == -C.ENOSYS:
		return nil, errors.New("this libibverbs cannot list GID tables (rdma-core 32 or later can); set --acp-ib-gid-index / ACP_IB_GID_INDEX")
	case n < 0:
		return nil, fmt.Errorf("reading the GID table: %v", syscall.Errno(-n))
	}
	var es []gidEntry
	for _, g := range out[:n] {
		if int(g.port) != port {
			continue
		}
		e := gidEntry{index: int(g.index), typ: int(g._type), ifindex: int(g.ifindex)}
		copy(e.gid[:], C.GoBytes(unsafe.Pointer(&g.gid[0]), 16))
		es = append(es, e)
	}
	return es, nil
}

type vmr = C.struct_ibv_mr

// regMR registers [p, p+n) for every access, or, readOnly, for peers'
// reads only.
func regMR(d *vdev, p unsafe.Pointer, n uint64, readOnly bool) (*vmr, error) {
	var e C.int
	mr := C.acpib_reg_mr(d, p, C.size_t(n), C.int(cBool(readOnly)), &e)
	if mr == nil {
		return nil, syscall.Errno(e)
	}
	return mr, nil
}

func deregMR(mr *vmr) error {
	if rc := C.acpib_dereg_mr(mr); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

func mrKeys(mr *vmr) (lkey, rkey uint32) {
	return uint32(C.acpib_mr_lkey(mr)), uint32(C.acpib_mr_rkey(mr))
}

type vqp = C.struct_ibv_qp

func createQP(d *vdev, port, depth int, inline uint32) (qp *vqp, qpn, granted uint32, err error) {
	var buf [256]C.char
	in := C.uint32_t(inline)
	var n C.uint32_t
	qp = C.acpib_create_qp(d, C.int(port), C.int(depth), &in, &n, &buf[0], C.int(len(buf)))
	if qp == nil {
		return nil, 0, 0, errText(buf[:])
	}
	return qp, uint32(n), uint32(in), nil
}

func qpToRTR(qp *vqp, port int, remote *qpInfo, mtu int, useGRH bool, sgidIndex, maxDestRd int) error {
	var buf [256]C.char
	grh := 0
	if useGRH {
		grh = 1
	}
	g := remote.gid
	if C.acpib_qp_rtr(qp, C.int(port), C.uint32_t(remote.qpn), C.uint32_t(remote.psn), C.int(mtu), C.int(remote.lid),
		(*C.uint8_t)(unsafe.Pointer(&g[0])), C.int(grh), C.int(sgidIndex), C.int(maxDestRd), &buf[0], C.int(len(buf))) != 0 {
		return errText(buf[:])
	}
	return nil
}

func qpToRTS(qp *vqp, psn uint32, maxRd, timeout, retry int) error {
	var buf [256]C.char
	if C.acpib_qp_rts(qp, C.uint32_t(psn), C.int(maxRd), C.int(timeout), C.int(retry), &buf[0], C.int(len(buf))) != 0 {
		return errText(buf[:])
	}
	return nil
}

func destroyQP(qp *vqp) { C.acpib_destroy_qp(qp) }

// sendWR is one work request as the transport builds it.
type sendWR struct {
	id, laddr, raddr, compareAdd, swap uint64
	len, lkey, rkey                    uint32
	opcode, flags                      uint8
}

// Work request opcodes and flags (verbs.h).
const (
	opWrite       = C.ACPIB_WRITE
	opRead        = C.ACPIB_READ
	opSend        = C.ACPIB_SEND
	opFetchAdd    = C.ACPIB_FETCH_ADD
	opCmpSwap     = C.ACPIB_CMP_SWAP
	flagInline    = C.ACPIB_INLINE
	flagSolicited = C.ACPIB_SOLICITED
)

func postSend(qp *vqp, w *sendWR) error {
	c := C.acpib_wr{wr_id: C.uint64_t(w.id), laddr: C.uint64_t(w.laddr), raddr: C.uint64_t(w.raddr),
		compare_add: C.uint64_t(w.compareAdd), swap: C.uint64_t(w.swap), len: C.uint32_t(w.len),
		lkey: C.uint32_t(w.lkey), rkey: C.uint32_t(w.rkey), opcode: C.uint8_t(w.opcode), flags: C.uint8_t(w.flags)}
	if rc := C.acpib_post_send(qp, &c, 1); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

func postRecv(d *vdev, tag uint64, idx []uint32, base uintptr, size, lkey uint32) error {
	if len(idx) == 0 {
		return nil
	}
	if rc := C.acpib_post_recv(d, C.uint64_t(tag), (*C.uint32_t)(unsafe.Pointer(&idx[0])), C.int(len(idx)),
		C.uint64_t(base), C.uint32_t(size), C.uint32_t(lkey)); rc != 0 {
		return syscall.Errno(rc)
	}
	return nil
}

// wc is one completion (C layout).
type wc = C.acpib_wc

const pollBatch = 32

func pollCQ(d *vdev, out *[pollBatch]wc) int {
	return int(C.acpib_poll(d, &out[0], C.int(pollBatch)))
}

func armCQ(d *vdev, solicitedOnly bool) {
	so := 0
	if solicitedOnly {
		so = 1
	}
	C.acpib_arm(d, C.int(so))
}

func channelFD(d *vdev) int { return int(C.acpib_channel_fd(d)) }
func asyncFD(d *vdev) int   { return int(C.acpib_async_fd(d)) }

func takeCQEvent(d *vdev) { C.acpib_take_cq_event(d) }

func takeAsyncEvent(d *vdev) (typ int, qpn uint32, ok bool) {
	var t C.int
	var n C.uint32_t
	if C.acpib_take_async_event(d, &t, &n) == 0 {
		return 0, 0, false
	}
	return int(t), uint32(n), true
}

func wcStatusText(status uint32) string { return C.GoString(C.acpib_wc_status_str(C.int(status))) }
func eventText(typ int) string          { return C.GoString(C.acpib_event_type_str(C.int(typ))) }

// Completion statuses the transport tells apart.
const (
	wcSuccess     = C.IBV_WC_SUCCESS
	wcFlushErr    = C.IBV_WC_WR_FLUSH_ERR
	wcRetryExc    = C.IBV_WC_RETRY_EXC_ERR
	wcRNRRetryExc = C.IBV_WC_RNR_RETRY_EXC_ERR
)

// Asynchronous events that end a connection.
const (
	eventQPFatal     = C.IBV_EVENT_QP_FATAL
	eventQPReqErr    = C.IBV_EVENT_QP_REQ_ERR
	eventQPAccessErr = C.IBV_EVENT_QP_ACCESS_ERR
)
