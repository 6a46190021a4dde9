package heap

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/libacp/libacp/core"
)

// Scratch buffers are how the data library reads and writes global memory:
// a GMA needs a registered local end, and the original took one from the
// caller's own heap on every call (so a full heap made every container call
// fail, Q-DL-1). These live outside the Go heap (mmap), are registered once
// and are reused; a call holds one for its duration, so threads never share.
const (
	slotSize  = 32 << 10
	wordOff   = 0                   // result word of atomics
	readOff   = 64                  // reads land in [readOff, writeOff)
	writeOff  = 16 << 10            // staged writes fill [writeOff, slotSize)
	readArea  = writeOff - readOff  // largest single read
	writeArea = slotSize - writeOff // largest single staged write
)

// ErrFailed reports that a global memory access of the call failed at
// its owner; the error that wraps it names the range and the reason.
var ErrFailed = errors.New("a global memory access failed")

// keepIdle is how many scratch buffers stay registered while no call uses
// them. A call that finds none idle registers another; one given back
// when keepIdle are idle already is unregistered. Each took a
// registration for good, so every thread that had once been in the data
// library at the same time as others kept one (32 threads: 31 fewer
// registrations for the program, t_thr_scratch).
const keepIdle = 4

// Scratch is the pool of registered scratch buffers of one process.
type Scratch struct {
	e    *core.Engine
	mu   sync.Mutex
	free []*slot
	all  []*slot
}

type slot struct {
	mem []byte
	ga  core.GA // GA of mem[0], also the registration key
}

// NewScratch registers the first scratch buffer; more are made when several
// threads are inside the data library at once.
func NewScratch(e *core.Engine) (*Scratch, error) {
	s := &Scratch{e: e}
	sl, err := s.newSlot()
	if err != nil {
		return nil, err
	}
	s.free = append(s.free, sl)
	return s, nil
}

func (s *Scratch) newSlot() (*slot, error) {
	mem, err := unix.Mmap(-1, 0, slotSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("cannot map %d bytes of scratch memory: %v", slotSize, err)
	}
	ga, err := s.e.Register(unsafe.Pointer(&mem[0]), slotSize, 0)
	if err != nil {
		_ = unix.Munmap(mem)
		return nil, fmt.Errorf("cannot register scratch memory: %v", err)
	}
	sl := &slot{mem: mem, ga: ga}
	s.all = append(s.all, sl)
	return sl, nil
}

// Close unregisters and unmaps every buffer. No call may be in progress.
func (s *Scratch) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range s.all {
		_ = s.e.Unregister(sl.ga)
		_ = unix.Munmap(sl.mem)
	}
	s.all, s.free = nil, nil
}

// Begin starts a call: it takes a buffer for the calling thread.
func (s *Scratch) Begin() (*Access, error) {
	s.mu.Lock()
	var sl *slot
	if n := len(s.free); n > 0 {
		sl = s.free[n-1]
		s.free = s.free[:n-1]
	} else {
		var err error
		if sl, err = s.newSlot(); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	s.mu.Unlock()
	return &Access{e: s.e, s: s, sl: sl, wpos: writeOff}, nil
}

// Access is one call's view of global memory. Reads wait for their data;
// writes are staged in the scratch buffer and issued at once but waited for
// only by Flush (or by the next read), so several small updates cost one
// round trip. Writes that overlap a write not yet completed, and every
// read, first complete what was issued: nothing is reordered. The call
// fails only for its own operations' failures (report), never for those
// of other threads or of the program.
type Access struct {
	e       *core.Engine
	s       *Scratch
	sl      *slot
	wpos    int
	pending []span      // destinations of issued, unwaited writes
	last    core.Handle // the latest operation issued
	report  core.Report // failures of the operations issued
	err     error       // first failure; later operations do nothing
}

type span struct{ ga, end core.GA }

// Engine is the basic layer this access works on.
func (a *Access) Engine() *core.Engine { return a.e }

// End completes the call's writes and gives the buffer back. It returns
// the first failure of the call.
func (a *Access) End() error {
	a.Flush()
	a.s.put(a.sl)
	a.sl = nil
	return a.err
}

// put gives a buffer back: to the idle ones, or, with keepIdle of them
// there already, back to the system. The call's operations on it are
// complete (the engine also waits for any still in flight when it
// unregisters).
func (s *Scratch) put(sl *slot) {
	s.mu.Lock()
	if len(s.free) < keepIdle || s.all == nil {
		if s.all != nil {
			s.free = append(s.free, sl)
		}
		s.mu.Unlock()
		return
	}
	for i, x := range s.all {
		if x == sl {
			s.all = append(s.all[:i], s.all[i+1:]...)
			break
		}
	}
	s.mu.Unlock()
	_ = s.e.Unregister(sl.ga)
	_ = unix.Munmap(sl.mem)
}

// Registered is how many scratch buffers are registered now.
func (s *Scratch) Registered() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.all)
}

// ClearErr forgets the call's failure so that cleanup can still use the
// access; it returns the failure.
func (a *Access) ClearErr() error {
	err := a.err
	a.err = nil
	return err
}

// Err is the first failure of the call, if any.
func (a *Access) Err() error { return a.err }

func (a *Access) fail(err error) error {
	if a.err == nil {
		a.err = err
	}
	return a.err
}

// wait completes everything issued and notes failures.
func (a *Access) wait() error {
	a.e.Complete(a.last)
	a.pending = a.pending[:0]
	a.wpos = writeOff
	if err := a.report.Take(); err != nil {
		return a.fail(fmt.Errorf("%w: %w", ErrFailed, err))
	}
	return a.err
}

// settle completes the writes issued so far before a read or an atomic,
// which may depend on them; it returns the call's failure.
func (a *Access) settle() error {
	if a.err == nil && len(a.pending) > 0 {
		return a.wait()
	}
	return a.err
}

// Flush waits for every write issued so far.
func (a *Access) Flush() error {
	if len(a.pending) == 0 {
		return a.err
	}
	return a.wait()
}

// copy issues acp_copy(dst, src, n) as one of this access's operations.
func (a *Access) copy(dst, src core.GA, n uint64) error {
	h, err := a.e.CopyFor(&a.report, dst, src, n, core.HandleNull)
	if err == nil {
		a.last = h
	}
	return err
}

func (a *Access) overlapsPending(ga core.GA, n uint64) bool {
	end := ga + core.GA(n)
	for _, p := range a.pending {
		if ga < p.end && p.ga < end {
			return true
		}
	}
	return false
}

// ReadArea is the most one read through the scratch buffer carries:
// streams (Each, Chunks) go this many bytes at a time.
const ReadArea = readArea

// errStop ends a stream early without an error.
var errStop = errors.New("stop")

// Chunks calls fn for consecutive pieces [off, off+k) of [0, n), k at most
// ReadArea, from the front, or from the back when backward: memmove's
// order for a copy through a buffer whose destination lies after its
// source.
func Chunks(n uint64, backward bool, fn func(off, k uint64) error) error {
	return chunks(n, ReadArea, backward, fn)
}

func chunks(n, size uint64, backward bool, fn func(off, k uint64) error) error {
	for done := uint64(0); done < n; {
		k := min(size, n-done)
		off := done
		if backward {
			off = n - done - k
		}
		if err := fn(off, k); err != nil {
			if err == errStop {
				return nil
			}
			return err
		}
		done += k
	}
	return nil
}

// load issues a copy of the n bytes at ga into the scratch buffer at off
// (inside the read area); wait completes it.
func (a *Access) load(off int, ga core.GA, n uint64) error {
	if err := a.copy(a.sl.ga+core.GA(off), ga, n); err != nil {
		return a.fail(fmt.Errorf("reading %d bytes at %#x: %w", n, uint64(ga), err))
	}
	return nil
}

// Each reads the n bytes at ga a read area at a time and calls fn with
// each piece (valid until the access's next operation) until fn returns
// false. However large n is, nothing is allocated: this is how sizes that
// callers give are read.
func (a *Access) Each(ga core.GA, n uint64, fn func(b []byte) bool) error {
	if a.err != nil {
		return a.err
	}
	return chunks(n, readArea, false, func(off, k uint64) error {
		if err := a.settle(); err != nil {
			return err
		}
		if err := a.load(readOff, ga+core.GA(off), k); err != nil {
			return err
		}
		if err := a.wait(); err != nil {
			return err
		}
		if !fn(a.sl.mem[readOff : readOff+int(k)]) {
			return errStop
		}
		return nil
	})
}

// Equal reports whether the n bytes at x and at y (any ranks) are the
// same, reading both half a read area at a time.
func (a *Access) Equal(x, y core.GA, n uint64) (bool, error) {
	const half = readArea / 2
	if a.err != nil {
		return false, a.err
	}
	same := true
	err := chunks(n, half, false, func(off, k uint64) error {
		if err := a.settle(); err != nil {
			return err
		}
		if err := a.load(readOff, x+core.GA(off), k); err != nil {
			return err
		}
		if err := a.load(readOff+half, y+core.GA(off), k); err != nil {
			return err
		}
		if err := a.wait(); err != nil {
			return err
		}
		mx, my := a.sl.mem[readOff:readOff+int(k)], a.sl.mem[readOff+half:readOff+half+int(k)]
		if same = bytes.Equal(mx, my); !same {
			return errStop
		}
		return nil
	})
	return same, err
}

// Read copies n bytes at ga (any rank) into a new Go slice. n must be a
// size this process can hold (a few words, a heap block's bytes, a chunk
// of a stream), never a caller's: those go through Each.
func (a *Access) Read(ga core.GA, n uint64) ([]byte, error) {
	out := make([]byte, n)
	return out, a.ReadInto(out, ga)
}

// ReadInto fills b with the bytes at ga.
func (a *Access) ReadInto(b []byte, ga core.GA) error {
	return a.Each(ga, uint64(len(b)), func(p []byte) bool {
		b = b[copy(b, p):]
		return true
	})
}

// Word reads the 8-byte little-endian word at ga.
func (a *Access) Word(ga core.GA) (uint64, error) {
	var b [8]byte
	err := a.ReadInto(b[:], ga)
	return le64(b[:]), err
}

// Words reads n consecutive words at ga.
func (a *Access) Words(ga core.GA, n int) ([]uint64, error) {
	b, err := a.Read(ga, uint64(8*n))
	if err != nil {
		return nil, err
	}
	w := make([]uint64, n)
	for i := range w {
		w[i] = le64(b[8*i:])
	}
	return w, nil
}

// Write issues a copy of b to ga (any rank); Flush or the next read waits
// for it.
func (a *Access) Write(ga core.GA, b []byte) error {
	for len(b) > 0 && a.err == nil {
		n := min(len(b), writeArea)
		if a.wpos+n > slotSize || a.overlapsPending(ga, uint64(n)) {
			if err := a.wait(); err != nil {
				return err
			}
		}
		copy(a.sl.mem[a.wpos:], b[:n])
		if err := a.copy(ga, a.sl.ga+core.GA(a.wpos), uint64(n)); err != nil {
			return a.fail(fmt.Errorf("writing %d bytes at %#x: %w", n, uint64(ga), err))
		}
		a.pending = append(a.pending, span{ga, ga + core.GA(n)})
		a.wpos += (n + 7) &^ 7
		ga += core.GA(n)
		b = b[n:]
	}
	return a.err
}

// PutWords writes consecutive words at ga.
func (a *Access) PutWords(ga core.GA, w ...uint64) error {
	b := make([]byte, 8*len(w))
	for i, v := range w {
		put64(b[8*i:], v)
	}
	return a.Write(ga, b)
}

// Zero writes n zero bytes at ga.
func (a *Access) Zero(ga core.GA, n uint64) error {
	var zeros [writeArea]byte
	for n > 0 && a.err == nil {
		k := min(n, writeArea)
		a.Write(ga, zeros[:k])
		ga += core.GA(k)
		n -= k
	}
	return a.err
}

// Copy issues acp_copy(dst, src, n) between any two ranks (neither end
// passes through this process). It counts as a write of dst.
func (a *Access) Copy(dst, src core.GA, n uint64) error {
	if n == 0 {
		return a.err
	}
	// src may be something just written, dst something being written.
	if err := a.settle(); err != nil {
		return err
	}
	if err := a.copy(dst, src, n); err != nil {
		return a.fail(fmt.Errorf("copying %d bytes from %#x to %#x: %w", n, uint64(src), uint64(dst), err))
	}
	a.pending = append(a.pending, span{dst, dst + core.GA(n)})
	return nil
}

// noValue is in the result word while an atomic is out, so that a result
// that never arrived is not taken for a fetched value (lock words hold 0
// or a rank + 1).
const noValue = ^uint64(0)

// atomic runs op on the word at ga after everything issued before, and
// returns the old value: as fetched even when the call failed meanwhile,
// noValue when none arrived.
func (a *Access) atomic(op core.AtomicOp, ga core.GA, x, y uint64) (uint64, error) {
	if err := a.settle(); err != nil {
		return noValue, err
	}
	put64(a.sl.mem[wordOff:], noValue)
	h, err := a.e.AtomicFor(&a.report, op, a.sl.ga+wordOff, ga, x, y, core.HandleNull)
	if err != nil {
		return noValue, a.fail(fmt.Errorf("%s at %#x: %w", op, uint64(ga), err))
	}
	a.last = h
	err = a.wait()
	return le64(a.sl.mem[wordOff:]), err
}

// CAS8 is acp_cas8 on the word at ga; it returns the old value.
func (a *Access) CAS8(ga core.GA, old, new uint64) (uint64, error) {
	return a.atomic(core.OpCas8, ga, old, new)
}

// Swap8 is acp_swap8 on the word at ga; it returns the old value.
func (a *Access) Swap8(ga core.GA, v uint64) (uint64, error) {
	return a.atomic(core.OpSwap8, ga, v, 0)
}

// lockWaitReport is how long a lock may be held by others before the
// waiter says so (ACP_VERBOSE=1); it keeps waiting.
const lockWaitReport = 10 * time.Second

// Lock takes the spin lock word at ga (0 = free) with acp_cas8: the word
// then holds the caller's rank + 1, so that a report names the holder.
// Waiters back off (yield, then sleep up to a millisecond) so that a
// crowded lock does not flood its owner with atomics.
func (a *Access) Lock(ga core.GA, what string) error {
	me := uint64(a.e.Rank()) + 1
	start := time.Now()
	reported := false
	for i := 0; ; i++ {
		old, err := a.CAS8(ga, 0, me)
		if err != nil {
			if old == 0 {
				// The word was free and is now ours although the call
				// failed: give it back, nobody else would.
				a.release(ga)
			}
			return err
		}
		if old == 0 {
			return nil
		}
		if old > uint64(a.e.Procs()) {
			// Holders write their rank + 1: this word is no lock, and
			// waiting for it to become 0 would wait for ever.
			return fmt.Errorf("%s: the lock word %#x holds %#x, which names no rank: it is no lock (is the handle intact?)", what, uint64(ga), old)
		}
		if !reported && time.Since(start) > lockWaitReport {
			a.e.Logf(1, "data library: waiting for %s (lock word %#x held by rank %d) for %v", what, uint64(ga), int64(old)-1, lockWaitReport)
			reported = true
		}
		switch {
		case i < 4:
			runtime.Gosched()
		default:
			time.Sleep(time.Duration(min(1<<min(i-4, 10), 1000)) * time.Microsecond)
		}
	}
}

// Unlock completes the writes made under the lock, then frees it.
func (a *Access) Unlock(ga core.GA) error {
	err := a.Flush()
	if rerr := a.release(ga); err == nil {
		err = rerr
	}
	return err
}

// release frees the lock word at ga, also after a failure of the call:
// the lock must not stay held. The call's failure stays.
func (a *Access) release(ga core.GA) error {
	saved := a.err
	a.err = nil
	_, err := a.Swap8(ga, 0)
	if saved != nil {
		a.err = saved
	}
	return err
}

func le64(b []byte) uint64 {
	return uint64(b[0]) | uint64(b[1])<<8 | uint64(b[2])<<16 | uint64(b[3])<<24 |
		uint64(b[4])<<32 | uint64(b[5])<<40 | uint64(b[6])<<48 | uint64(b[7])<<56
}

func put64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}
