package segbuf

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/libacp/libacp/core"
)

// Segbuf is one end of a segmented buffer (acp_segbuf_t): the application's
// buffer of segNum segments of segSize bytes, mirrored from the source to
// the destination.
//
// Counters grow without bound; the API shows them modulo segNum. On the
// source: tail = segments acknowledged (acp_ack_segbuf), head = segments the
// destination released (it adds to our control block), sent = data copies
// completed. On the destination: head = segments released
// (acp_ready_segbuf), tail = segments whose data landed (the source adds to
// our control block after each copy completed), and sent = tail.
type Segbuf struct {
	l        *Lib
	mu       sync.Mutex
	p        *Pair
	key      core.GA // registration of the application's buffer
	tail     uint64  // source
	head     uint64  // destination
	sent     uint64  // source
	inflight []core.Handle
	freed    bool
	idle     int // calls in a row that found nothing new
}

// Errors of the segmented-buffer calls that are about the ring's state
// rather than bad arguments.
var (
	ErrNotConnected = errors.New("the segmented buffer is not connected")
	ErrFull         = errors.New("every segment holds data the destination has not released (ring full)")
	ErrEmpty        = errors.New("no segment holds data (nothing acknowledged by the source)")
	ErrFreed        = errors.New("the segmented buffer was freed")
)

// CreateSegbuf creates this process's end of a segmented buffer with peer
// and registers buf (segNum*segSize bytes). Connection proceeds in the
// background; several segmented buffers between the same two processes are
// matched in creation order.
func (l *Lib) CreateSegbuf(role Role, peer int, buf unsafe.Pointer, segSize, segNum uint64) (*Segbuf, error) {
	what := "destination rank"
	if role == Dest {
		what = "source rank"
	}
	if err := l.CheckPeer(what, peer); err != nil {
		return nil, err
	}
	if buf == nil {
		return nil, errors.New("buffer is NULL")
	}
	if segSize == 0 || segNum == 0 {
		return nil, fmt.Errorf("segment size %d and count %d must both be at least 1", segSize, segNum)
	}
	if segSize > ^uint64(0)/segNum {
		return nil, fmt.Errorf("%d segments of %d bytes overflow the address space", segNum, segSize)
	}
	key, err := l.e.Register(buf, segSize*segNum, 0)
	if err != nil {
		return nil, fmt.Errorf("cannot register the buffer: %v", err)
	}
	p, err := l.NewPair(KindSegbuf, role, peer, key, segSize, segNum)
	if err != nil {
		_ = l.e.Unregister(key)
		return nil, err
	}
	s := &Segbuf{l: l, p: p, key: key}
	l.Add(s)
	return s, nil
}

// Role is this end's role.
func (s *Segbuf) Role() Role { return s.p.role }

// Progress implements Poller.
func (s *Segbuf) Progress(bool) (changed, pending bool) {
	if !s.mu.TryLock() {
		return false, true
	}
	defer s.mu.Unlock()
	changed = s.progress()
	return changed, !s.freed && s.p.Pending()
}

func (s *Segbuf) progress() bool {
	if s.freed {
		return false
	}
	changed := s.p.Progress()
	for len(s.inflight) > 0 && s.l.done(s.inflight[0]) {
		s.sent++
		s.inflight = s.inflight[1:]
		changed = true
	}
	return changed
}

func (s *Segbuf) step() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.progress()
}

// Abandon implements Poller.
func (s *Segbuf) Abandon() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.freed {
		s.freed = true
		_ = s.l.e.Unregister(s.key)
		s.p.Release()
	}
}

// usable checks the state every ring operation needs, after a progress
// step.
func (s *Segbuf) usable() error {
	if s.freed {
		return ErrFreed
	}
	if s.progress() {
		s.idle = 0
	} else {
		s.idle++
	}
	if s.p.disconnected {
		return errors.New("the segmented buffer was disconnected")
	}
	if err := s.p.Err(); err != nil {
		return err
	}
	if !s.p.connected {
		return ErrNotConnected
	}
	return nil
}

// unlockPaced unlocks, wakes the background progress when something is
// left to do (a count to publish, a notice to send), and, when the
// application keeps asking without anything changing, yields the CPU now
// and then: programs poll these calls in tight loops, and on a busy
// machine the processes that would change the answer need the core.
func (s *Segbuf) unlockPaced() {
	y, turn := s.idle%16 == 15, s.idle/16
	pending := !s.freed && s.p.Pending()
	s.mu.Unlock()
	if pending {
		s.l.Kick()
	}
	if y {
		core.YieldTurn(turn)
	}
}

// Connect waits until the segmented buffer is connected.
func (s *Segbuf) Connect() error {
	s.l.Wait(waitFunc{func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.freed || s.p.disconnected || !s.p.Connecting()
	}, s.step})
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usable()
}

// IsConnected makes progress once and reports whether the segmented buffer
// is connected (false, nil: not yet).
func (s *Segbuf) IsConnected() (bool, error) {
	s.mu.Lock()
	defer s.unlockPaced()
	switch err := s.usable(); err {
	case nil:
		return true, nil
	case ErrNotConnected:
		return false, nil
	default:
		return false, err
	}
}

// views returns (head, tail, sent) as this end knows them.
func (s *Segbuf) views() (head, tail, sent uint64) {
	if s.p.role == Source {
		return s.p.Count(), s.tail, s.sent
	}
	t := s.p.Count()
	return s.head, t, t
}

// Ack sends the segment at tail % segNum to the same place of the
// destination's buffer (source side). The destination's tail grows after
// the data landed.
func (s *Segbuf) Ack() error {
	s.mu.Lock()
	defer s.unlockPaced()
	if err := s.usable(); err != nil {
		return err
	}
	if s.p.role != Source {
		return errors.New("acknowledging segments is the source's call; this is the destination end")
	}
	head, tail, _ := s.views()
	if tail-head >= s.p.segNum {
		return ErrFull
	}
	off := core.GA((tail % s.p.segNum) * s.p.segSize)
	hd, err := s.l.e.Copy(s.p.remoteBuf+off, s.key+off, s.p.segSize, core.HandleNull)
	if err != nil {
		return err
	}
	s.p.Note(hd)
	// The counter moves only after the data is in place: ordered by handle.
	s.tail++
	s.p.Publish(s.tail, hd, true)
	s.inflight = append(s.inflight, hd)
	s.idle = 0
	return nil
}

// Ready releases the segment at head % segNum (destination side): the
// source may write it again.
func (s *Segbuf) Ready() error {
	s.mu.Lock()
	defer s.unlockPaced()
	if err := s.usable(); err != nil {
		return err
	}
	if s.p.role != Dest {
		return errors.New("releasing segments is the destination's call; this is the source end")
	}
	head, tail, _ := s.views()
	if tail <= head {
		return ErrEmpty
	}
	s.head++
	s.p.Publish(s.head, core.HandleNull, true)
	s.idle = 0
	return nil
}

// IsReady reports whether a segment can be written (tail - head < segNum).
func (s *Segbuf) IsReady() (bool, error) {
	s.mu.Lock()
	defer s.unlockPaced()
	if err := s.usable(); err != nil {
		return false, err
	}
	head, tail, _ := s.views()
	return tail-head < s.p.segNum, nil
}

// IsAcked reports whether a segment holds data (tail > head).
func (s *Segbuf) IsAcked() (bool, error) {
	s.mu.Lock()
	defer s.unlockPaced()
	if err := s.usable(); err != nil {
		return false, err
	}
	head, tail, _ := s.views()
	return tail > head, nil
}

// Counters returns head, tail and sent modulo the segment count.
func (s *Segbuf) Counters() (head, tail, sent int64, err error) {
	s.mu.Lock()
	defer s.unlockPaced()
	if err := s.usable(); err != nil {
		return -1, -1, -1, err
	}
	h, t, n := s.views()
	m := s.p.segNum
	return int64(h % m), int64(t % m), int64(n % m), nil
}

// Disconnect ends this side's use of the ring; the peer learns it after
// everything this side did before.
func (s *Segbuf) Disconnect() error {
	s.mu.Lock()
	defer s.unlockPaced()
	if err := s.usable(); err != nil {
		return err
	}
	return s.p.Disconnect()
}

// Free waits until the peer disconnected too, then unregisters the buffer
// and releases this end. Only after Disconnect.
func (s *Segbuf) Free() error {
	s.mu.Lock()
	if s.freed {
		s.mu.Unlock()
		return ErrFreed
	}
	if !s.p.disconnected {
		s.mu.Unlock()
		return errors.New("acp_disconnect_segbuf must come first")
	}
	s.mu.Unlock()
	s.l.Wait(waitFunc{func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.freed || s.p.Settled()
	}, s.step})
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed {
		return ErrFreed
	}
	s.freed = true
	err := s.l.e.Unregister(s.key)
	s.p.Release()
	s.l.Remove(s)
	return err
}
