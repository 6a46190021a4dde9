package segbuf_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/segbuf"
	_ "github.com/libacp/libacp/udp"
)

// Three ranks stream segments over segmented buffers in all six
// directions at once, each pair with its own segment size and count, the
// sources writing and acknowledging and the destinations checking and
// releasing at random moments: every segment must arrive whole and in
// order, however full or empty each ring runs.
func TestRandomStreams(t *testing.T) {
	for _, c := range []struct{ name, transport, settings string }{
		{"memnet", "memnet", "memnet-shuffle=1"},
		{"shm", "shm", ""},
		{"udp", "udp", ""},
		{"udp under faults", "udp", "udp-faults=loss=0.05,dup=0.02,reorder=0.05,seed=5"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var settings []string
			if c.settings != "" {
				settings = append(settings, c.settings)
			}
			randomStreams(t, newWorldOn(t, c.transport, 3, settings...))
		})
	}
}

// segPattern is the content of segment k of the stream from `from` to `to`.
func segPattern(from, to int, k, size uint64) []byte {
	b := make([]byte, size)
	r := rand.New(rand.NewPCG(uint64(from)<<32|uint64(to), k))
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

func randomStreams(t *testing.T, w *world) {
	const n, segments = 3, 120
	defer w.close()
	shapes := rand.New(rand.NewPCG(7, 11))
	type shape struct{ size, num uint64 }
	shapeOf := map[[2]int]shape{}
	for s := range n {
		for d := range n {
			if s != d {
				shapeOf[[2]int{s, d}] = shape{uint64(1 + shapes.IntN(3000)), uint64(1 + shapes.IntN(6))}
			}
		}
	}
	w.Run(func(me int, e *core.Engine) error {
		type end struct {
			s        *segbuf.Segbuf
			src      bool
			peer     int
			buf      []byte
			sh       shape
			done     uint64 // segments acknowledged (source) or released (destination)
			from, to int
		}
		var ends []*end
		// In one order everywhere: the k-th end of a kind for a peer meets
		// the peer's k-th.
		for s := range n {
			for d := range n {
				if s == d || (s != me && d != me) {
					continue
				}
				x := &end{src: s == me, sh: shapeOf[[2]int{s, d}], from: s, to: d}
				x.peer = d
				role := segbuf.Source
				if !x.src {
					x.peer, role = s, segbuf.Dest
				}
				x.buf = coretest.CMem(t, int(x.sh.size*x.sh.num))
				var err error
				if x.s, err = w.libs[me].CreateSegbuf(role, x.peer, unsafe.Pointer(&x.buf[0]), x.sh.size, x.sh.num); err != nil {
					return err
				}
				if err := x.s.Connect(); err != nil {
					return err
				}
				ends = append(ends, x)
			}
		}
		for _, x := range ends {
			if err := waitFor(func() bool { ok, _ := x.s.IsConnected(); return ok }); err != nil {
				return fmt.Errorf("rank %d: segmented buffer %d->%d never connected: %v", me, x.from, x.to, err)
			}
		}
		rng := rand.New(rand.NewPCG(uint64(me), 3))
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var open []*end
			for _, x := range ends {
				if x.done < segments {
					open = append(open, x)
				}
			}
			if len(open) == 0 {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("rank %d: streams stalled", me)
			}
			x := open[rng.IntN(len(open))]
			seg := x.buf[(x.done%x.sh.num)*x.sh.size:][:x.sh.size]
			if x.src {
				ok, err := x.s.IsReady()
				if err != nil {
					return err
				}
				if !ok {
					runtime.Gosched()
					continue
				}
				copy(seg, segPattern(x.from, x.to, x.done, x.sh.size))
				if err := x.s.Ack(); err != nil {
					return fmt.Errorf("rank %d: ack of segment %d to %d: %v", me, x.done, x.to, err)
				}
			} else {
				ok, err := x.s.IsAcked()
				if err != nil {
					return err
				}
				if !ok {
					runtime.Gosched()
					continue
				}
				if !bytes.Equal(seg, segPattern(x.from, x.to, x.done, x.sh.size)) {
					return fmt.Errorf("rank %d: segment %d from %d (%d bytes, %d in the ring) differs", me, x.done, x.from, x.sh.size, x.sh.num)
				}
				if err := x.s.Ready(); err != nil {
					return fmt.Errorf("rank %d: release of segment %d from %d: %v", me, x.done, x.from, err)
				}
			}
			x.done++
		}
		// Every acknowledged copy lands before the destination's last
		// release, so the sources' counts settle; then both ends go.
		for _, x := range ends {
			if x.src {
				if err := waitFor(func() bool { h, tl, s, _ := x.s.Counters(); return h == tl && s == tl }); err != nil {
					return fmt.Errorf("rank %d: stream to %d never settled: %v", me, x.to, err)
				}
			}
			if err := x.s.Disconnect(); err != nil {
				return err
			}
		}
		for _, x := range ends {
			if err := x.s.Free(); err != nil {
				return err
			}
		}
		return nil
	})
}
