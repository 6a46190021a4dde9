package ch_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/ch"
	_ "github.com/libacp/libacp/udp"
)

// BenchmarkChannelPingpongUDP8: round trips of an 8-byte channel message
// over udp, as acpbench chpingpong runs them; allocations per round trip
// are the garbage the channel path leaves behind.
func BenchmarkChannelPingpongUDP8(b *testing.B) {
	w := newWorldOn(b, "udp", 2)
	defer w.close()
	p := openPingpong(b, w)
	b.ReportAllocs()
	b.ResetTimer()
	p.run(b.N)
	b.StopTimer()
	p.close()
}

// TestChannelPingpongAllocations: an 8-byte channel message over udp
// allocates nothing once warm when its requests are handed back after the
// wait, as the C layer does (Request.Release): no request, queue, datagram
// or operation of the layers below.
func TestChannelPingpongAllocations(t *testing.T) {
	w := newWorldOn(t, "udp", 2)
	defer w.close()
	p := openPingpong(t, w)
	defer p.close()
	p.run(500)
	const rounds = 2000
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	p.run(rounds)
	runtime.ReadMemStats(&after)
	perRound := float64(after.Mallocs-before.Mallocs) / rounds
	t.Logf("%.2f allocations per round trip", perRound)
	assert.LessOrEqual(t, perRound, 0.5, "allocations per round trip of an 8-byte channel pingpong")
}

// chPingpong is a pair of channels between ranks 0 and 1, one each way,
// for round trips of an 8-byte message.
type chPingpong struct {
	w    *world
	out  [2]*ch.Channel // out[r]: r sends on it
	in   [2]*ch.Channel // in[r]: r receives on it
	bufs [2][]byte
}

func openPingpong(tb testing.TB, w *world) *chPingpong {
	p := &chPingpong{w: w, bufs: [2][]byte{coretest.CMem(tb, 8), coretest.CMem(tb, 8)}}
	w.Run(func(r int, _ *core.Engine) error {
		var err error
		if p.out[r], err = w.ch[r].Create(r, 1-r); err != nil {
			return err
		}
		p.in[r], err = w.ch[r].Create(1-r, r)
		return err
	})
	return p
}

func (p *chPingpong) run(rounds int) {
	p.w.Run(func(r int, _ *core.Engine) error {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		send := func() error {
			q, err := p.out[r].Send(ptr(p.bufs[r]), 8)
			if err == nil {
				_, err = q.Wait()
				q.Release()
			}
			return err
		}
		for i := 0; i < rounds; i++ {
			if r == 0 {
				if err := send(); err != nil {
					return err
				}
			}
			q, err := p.in[r].Recv(ptr(p.bufs[r]), 8)
			if err != nil {
				return err
			}
			n, err := q.Wait()
			q.Release()
			if err := check(err == nil && n == 8, "received %d bytes (%v), want 8", n, err); err != nil {
				return err
			}
			if r == 1 {
				if err := send(); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

func (p *chPingpong) close() {
	p.w.Run(func(r int, _ *core.Engine) error { return freeBoth(p.out[r], p.in[r]) })
}
