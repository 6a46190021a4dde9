// Package memnet is an in-memory transport for tests: endpoints in one
// process exchange operations through queues served by a progress goroutine
// per endpoint (and by Poll), so operations really are asynchronous, and
// with ACP_MEMNET_SHUFFLE=1 they are served in random order.
//
// It registers itself as transport "memnet" when a test imports it.
package memnet

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/libacp/libacp/core"
)

func init() {
	core.RegisterTransport(core.TransportInfo{
		Name:        "memnet",
		Priority:    40,
		AddressSize: 8,
		Open:        open,
		Colors:      1,
		Settings: []core.Setting{
			{Name: "memnet-shuffle", Kind: core.KindUint, Default: "0", Max: 1, Help: "serve queued operations in random order (tests)"},
			{Name: "memnet-device-atomics", Kind: core.KindUint, Default: "0", Max: 1, Help: "execute every 8-byte atomic on an emulated device whose atomics are not atomic with the CPU's (tests of core.DeviceAtomics)"},
		},
	})
}

var endpoints struct {
	sync.Mutex
	next uint64
	m    map[uint64]*endpoint
}

type endpoint struct {
	id      uint64
	host    core.Host
	shuffle bool
	device  bool // 8-byte atomics on the emulated device (core.DeviceAtomics)
	peers   []*endpoint

	mu      sync.Mutex
	cond    *sync.Cond
	inbox   []func()
	closed  bool
	pending atomic.Int64 // our messages not yet served by their receiver
	stopped chan struct{}
}

func open(cfg core.TransportConfig) (core.Transport, error) {
	ep := &endpoint{host: cfg.Host, shuffle: cfg.Settings.Uint("memnet-shuffle") == 1, stopped: make(chan struct{}),
		device: cfg.Settings.Uint("memnet-device-atomics") == 1}
	ep.cond = sync.NewCond(&ep.mu)
	endpoints.Lock()
	if endpoints.m == nil {
		endpoints.m = map[uint64]*endpoint{}
	}
	endpoints.next++
	ep.id = endpoints.next
	endpoints.m[ep.id] = ep
	endpoints.Unlock()
	go ep.serve()
	return ep, nil
}

func (ep *endpoint) Name() string { return "memnet" }

func (ep *endpoint) Address() []byte { return binary.LittleEndian.AppendUint64(nil, ep.id) }

func (ep *endpoint) Connect(book core.AddressBook, _ uint64) error {
	endpoints.Lock()
	defer endpoints.Unlock()
	ep.peers = make([]*endpoint, book.Len())
	for i := range ep.peers {
		id := binary.LittleEndian.Uint64(book.At(i))
		p, ok := endpoints.m[id]
		if !ok {
			return fmt.Errorf("memnet: no endpoint %d in this process", id)
		}
		ep.peers[i] = p
		if p.device != ep.device {
			return fmt.Errorf("memnet: process %d has memnet-device-atomics=%v, this one %v", i, p.device, ep.device)
		}
	}
	return nil
}

// DeviceAtomic implements core.DeviceAtomics: with memnet-device-atomics=1
// the emulated device executes every 8-byte atomic.
func (ep *endpoint) DeviceAtomic(op core.AtomicOp) bool { return ep.device && op.Width() == 8 }

func (ep *endpoint) DeviceAtomicsSetting() string { return "memnet-device-atomics=1" }

// deviceLock makes the emulated device's atomics atomic with each other,
// and only with each other: like an adapter that reads, modifies and
// writes a word under a lock of its own (Soft-RoCE does), it loads and
// stores in separate steps and yields in between, so that a CPU atomic
// on the same word meanwhile loses its update, or the device's.
var deviceLock sync.Mutex

func deviceAtomic(op core.AtomicOp, p unsafe.Pointer, a, b uint64) (old uint64, ok bool) {
	deviceLock.Lock()
	defer deviceLock.Unlock()
	var w [8]byte
	if !core.GuardedCopy(w[:], unsafe.Slice((*byte)(p), 8)) {
		return 0, false
	}
	old = binary.LittleEndian.Uint64(w[:])
	runtime.Gosched()
	v := old
	core.ApplyAtomic(op, unsafe.Pointer(&v), a, b)
	binary.LittleEndian.PutUint64(w[:], v)
	return old, core.GuardedCopy(unsafe.Slice((*byte)(p), 8), w[:])
}

// post queues f at the endpoint. Work posted to a closed endpoint is
// dropped, as a datagram to a dead process would be.
func (ep *endpoint) post(f func()) {
	ep.mu.Lock()
	if !ep.closed {
		ep.inbox = append(ep.inbox, f)
		ep.cond.Signal()
	}
	ep.mu.Unlock()
}

// send runs f at peer and counts it as ours until it ran.
func (ep *endpoint) send(peer int, f func()) {
	ep.pending.Add(1)
	ep.peers[peer].post(func() {
		f()
		ep.pending.Add(-1)
	})
}

func (ep *endpoint) take(block bool) func() {
	ep.mu.Lock()
	defer ep.mu.Unlock()
	for len(ep.inbox) == 0 {
		if !block || ep.closed {
			return nil
		}
		ep.cond.Wait()
	}
	i := 0
	if ep.shuffle {
		i = rand.IntN(len(ep.inbox))
	}
	f := ep.inbox[i]
	ep.inbox = append(ep.inbox[:i], ep.inbox[i+1:]...)
	return f
}

func (ep *endpoint) serve() {
	defer close(ep.stopped)
	for {
		f := ep.take(true)
		if f == nil {
			return
		}
		f()
	}
}

func (ep *endpoint) Poll() bool {
	any := false
	for i := 0; i < 16; i++ {
		f := ep.take(false)
		if f == nil {
			break
		}
		f()
		any = true
	}
	return any
}

func (ep *endpoint) index() int {
	for i, p := range ep.peers {
		if p == ep {
			return i
		}
	}
	return -1
}

func (ep *endpoint) Put(peer int, dst core.GA, src unsafe.Pointer, n uint64, c core.Completion) {
	data := append([]byte(nil), unsafe.Slice((*byte)(src), n)...)
	target := ep.peers[peer]
	ep.send(peer, func() {
		p, r, st := target.host.Acquire(dst, n)
		if st == core.StatusOK {
			// The program's memory may be read-only, or protected since
			// its registration: the put fails, the owner lives on.
			if !r.CopyInto(unsafe.Slice((*byte)(p), n), data) {
				st = core.StatusFault
			}
			r.Release()
			target.host.Wake()
		}
		ep.post(func() { c.OnComplete(0, st.Err()) })
	})
}

func (ep *endpoint) Get(peer int, src core.GA, dst unsafe.Pointer, n uint64, c core.Completion) {
	ep.read(peer, src, dst, n, c, nil)
}

// read serves a get: the owner copies out of its memory, the issuer into
// dst, both guarded (the program's memory may be protected, or read-only
// at dst). keyFits, when set, refuses a region a carried key does not
// name.
func (ep *endpoint) read(peer int, src core.GA, dst unsafe.Pointer, n uint64, c core.Completion, keyFits func(*core.Region) bool) {
	target := ep.peers[peer]
	ep.send(peer, func() {
		p, r, st := target.host.Acquire(src, n)
		var data []byte
		if st == core.StatusOK {
			data = make([]byte, n)
			switch {
			case keyFits != nil && !keyFits(r):
				st = core.StatusBadSegment // a stale key
			case !core.GuardedCopy(data, unsafe.Slice((*byte)(p), n)):
				st = core.StatusFault
			}
			r.Release()
		}
		ep.post(func() {
			if st == core.StatusOK && !core.GuardedCopy(unsafe.Slice((*byte)(dst), n), data) {
				st = core.StatusFault
			}
			c.OnComplete(0, st.Err())
		})
	})
}

// PackKey implements core.KeyCarrier as an adapter's key would work: the
// packed key names one registration (its segment, first byte and size),
// and a read with it is refused once that registration is gone, even if
// another one took its segment.
func (ep *endpoint) PackKey(r *core.Region, b []byte) int {
	if len(b) < 20 {
		return 0
	}
	binary.LittleEndian.PutUint32(b, uint32(r.Seg))
	binary.LittleEndian.PutUint64(b[4:], uint64(uintptr(r.Base)))
	binary.LittleEndian.PutUint64(b[12:], r.Size)
	return 20
}

// carriedGets counts the reads with a carried key (tests of the layers
// that carry keys).
var carriedGets atomic.Int64

// CarriedGets is how many reads used a key their owner packed.
func CarriedGets() int64 { return carriedGets.Load() }

// GetCarried implements core.KeyCarrier.
func (ep *endpoint) GetCarried(peer int, src core.GA, dst unsafe.Pointer, n uint64, key []byte, c core.Completion) {
	target := ep.peers[peer]
	if len(key) != 20 || int(binary.LittleEndian.Uint32(key)) != target.host.Layout().Seg(src) {
		ep.Get(peer, src, dst, n, c)
		return
	}
	carriedGets.Add(1)
	base, size := uintptr(binary.LittleEndian.Uint64(key[4:])), binary.LittleEndian.Uint64(key[12:])
	ep.read(peer, src, dst, n, c, func(r *core.Region) bool { return uintptr(r.Base) == base && r.Size == size })
}

func (ep *endpoint) Atomic(peer int, op core.AtomicOp, target core.GA, a, b uint64, c core.Completion) {
	t := ep.peers[peer]
	if ep.DeviceAtomic(op) {
		ep.send(peer, func() {
			var old uint64
			p, r, st := t.host.Acquire(target, 8)
			if st == core.StatusOK {
				if uintptr(p)%8 != 0 {
					st = core.StatusMisaligned
				} else if o, ok := deviceAtomic(op, p, a, b); !ok {
					st = core.StatusFault
				} else {
					old = o
				}
				r.Release()
			}
			ep.post(func() { c.OnComplete(old, st.Err()) })
		})
		return
	}
	ep.send(peer, func() {
		old, st := t.host.ApplyAtomic(op, target, a, b)
		ep.post(func() { c.OnComplete(old, st.Err()) })
	})
}

func (ep *endpoint) Send(peer int, msg []byte) {
	m := append([]byte(nil), msg...)
	from := ep.index()
	t := ep.peers[peer]
	ep.send(peer, func() { t.host.Deliver(from, m) })
}

func (ep *endpoint) Quiesce(deadline time.Time) error {
	for ep.pending.Load() != 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("memnet: %d messages not served by the deadline", ep.pending.Load())
		}
		ep.Poll()
		time.Sleep(10 * time.Microsecond)
	}
	return nil
}

func (ep *endpoint) Close() error {
	ep.mu.Lock()
	ep.closed = true
	ep.cond.Broadcast()
	ep.mu.Unlock()
	<-ep.stopped
	endpoints.Lock()
	delete(endpoints.m, ep.id)
	endpoints.Unlock()
	return nil
}
