package ch_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/core/coretest"
	"github.com/libacp/libacp/ml/ch"
)

// Three ranks talk over all six channels at once, each following its own
// random schedule: messages of random sizes across every protocol
// boundary (empty, one slot, several, the largest eager message,
// streamed, rendezvous, shared copies), receive buffers shorter and
// longer than their messages, several sends and receives outstanding per
// channel, and requests looked at in random order without blocking. Every
// message must arrive whole, in order, truncated where its buffer was
// short, with the guard behind each receive buffer untouched.
//
// ACP_RANDOM_CH_SEED=N draws other schedules (a soak); a failure names
// the seed.
func TestRandomSchedules(t *testing.T) {
	seed := coretest.EnvNumber(t, "ACP_RANDOM_CH_SEED", 20261128)
	for _, c := range []struct{ name, transport, settings string }{
		{"memnet", "memnet", "memnet-shuffle=1"},
		{"memnet, rings in starter memory", "memnet", "size-smem-cl=1048576"},
		{"shm", "shm", ""},
		{"shm, rings in slabs", "shm", "size-cl-rings=0"},
		{"udp", "udp", ""},
		{"udp under faults", "udp", "udp-faults=loss=0.05,dup=0.02,reorder=0.05,seed=3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var settings []string
			if c.settings != "" {
				settings = append(settings, c.settings)
			}
			randomSchedules(t, c.transport, seed, settings...)
		})
	}
}

// chMsg is message k of a channel: its size, the receive buffer's, and
// the seed of its bytes.
type chMsg struct {
	size, recv int
	seed       uint64
}

// chScript is what one channel carries and how many requests each end
// keeps outstanding.
type chScript struct {
	msgs           []chMsg
	sendWin, rcvWn int
}

// drawSize picks a message size near one of the channel's boundaries.
func drawSize(rng *rand.Rand) int {
	switch k := rng.IntN(100); {
	case k < 5:
		return 0
	case k < 35:
		return 1 + rng.IntN(64)
	case k < 55:
		return 65 + rng.IntN(4000)
	case k < 75: // one slot's payload, two, the eager limit
		edges := []int{4031, 4032, 4033, 8064, 8065, 16383, 16384, 16385}
		return edges[rng.IntN(len(edges))] + rng.IntN(3) - 1
	case k < 92:
		return 16386 + rng.IntN(48*1024)
	case k < 99:
		return 64*1024 + rng.IntN(448*1024)
	default:
		return 1<<20 + rng.IntN(1<<20)
	}
}

func randomSchedules(t *testing.T, transport string, seed uint64, settings ...string) {
	const n, msgsPerChannel = 3, 40
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	scripts := map[[2]int]*chScript{}
	for s := range n {
		for r := range n {
			if s == r {
				continue
			}
			sc := &chScript{sendWin: 1 + rng.IntN(5), rcvWn: 1 + rng.IntN(5)}
			for k := range msgsPerChannel {
				m := chMsg{size: drawSize(rng), seed: seed ^ uint64(s*1000000+r*10000+k)}
				switch rng.IntN(6) {
				case 0: // short: the first bytes
					m.recv = rng.IntN(m.size + 1)
				case 1: // longer
					m.recv = m.size + 1 + rng.IntN(100)
				default:
					m.recv = m.size
				}
				sc.msgs = append(sc.msgs, m)
			}
			scripts[[2]int{s, r}] = sc
		}
	}
	w := newWorldOn(t, transport, n, settings...)
	defer w.close()
	w.Run(func(me int, e *core.Engine) error {
		l := w.ch[me]
		// Created in the same order everywhere: channel (s, r) for every
		// pair, as the API wants of the two ends.
		type end struct {
			c       *ch.Channel
			sc      *chScript
			send    bool
			peer    int
			next    int           // the next message to post
			pending []*ch.Request // posted, not yet seen done, in order
			bufs    [][]byte      // a receive's buffer, by message
			msgOf   map[*ch.Request]int
		}
		var ends []*end
		for s := range n {
			for r := range n {
				if s == r || (s != me && r != me) {
					continue
				}
				c, err := l.Create(s, r)
				if err != nil {
					return err
				}
				x := &end{c: c, sc: scripts[[2]int{s, r}], send: s == me, peer: r, msgOf: map[*ch.Request]int{}}
				if !x.send {
					x.peer = s
				}
				ends = append(ends, x)
			}
		}
		rng := rand.New(rand.NewPCG(seed, uint64(me)+1))
		sendBufs := map[[2]int][]byte{}
		deadline := time.Now().Add(2 * time.Minute)
		for {
			var live []*end
			for _, x := range ends {
				if x.next < len(x.sc.msgs) || len(x.pending) > 0 {
					live = append(live, x)
				}
			}
			if len(live) == 0 {
				break
			}
			if time.Now().After(deadline) {
				var st []string
				for _, x := range live {
					st = append(st, fmt.Sprintf("send %v peer %d: posted %d, %d pending", x.send, x.peer, x.next, len(x.pending)))
				}
				return fmt.Errorf("seed %d: rank %d made no end of its schedule: %v", seed, me, st)
			}
			x := live[rng.IntN(len(live))]
			win := x.sc.rcvWn
			if x.send {
				win = x.sc.sendWin
			}
			if x.next < len(x.sc.msgs) && len(x.pending) < win && rng.IntN(2) == 0 {
				k := x.next
				m := x.sc.msgs[k]
				var q *ch.Request
				var err error
				if x.send {
					b := coretest.CMem(t, max(m.size, 1))
					fill(b[:m.size], m.seed)
					sendBufs[[2]int{x.peer, k}] = b
					q, err = x.c.Send(ptr(b), uint64(m.size))
				} else {
					b := guarded(t, m.recv)
					x.bufs = append(x.bufs, b)
					q, err = x.c.Recv(ptr(b), uint64(m.recv))
				}
				if err != nil {
					return fmt.Errorf("seed %d: rank %d, message %d (%d bytes) to or from %d: %v", seed, me, k, m.size, x.peer, err)
				}
				x.msgOf[q] = k
				x.pending = append(x.pending, q)
				x.next++
				continue
			}
			if len(x.pending) == 0 {
				continue
			}
			// A random outstanding request: a step of progress, and if it
			// is done, its result (a later one may finish first).
			i := rng.IntN(len(x.pending))
			q := x.pending[i]
			q.Step()
			if !q.Done() {
				continue
			}
			got, err := q.Wait()
			k := x.msgOf[q]
			m := x.sc.msgs[k]
			if err != nil {
				return fmt.Errorf("seed %d: rank %d, message %d (%d bytes) to or from %d: %v", seed, me, k, m.size, x.peer, err)
			}
			if !x.send {
				b := x.bufs[k]
				want := min(m.size, m.recv)
				switch {
				case got != uint64(want):
					return fmt.Errorf("seed %d: rank %d, message %d from %d (%d bytes into %d): received %d", seed, me, k, x.peer, m.size, m.recv, got)
				case !bytes.Equal(b[:want], pattern(m.size, m.seed)[:want]):
					return fmt.Errorf("seed %d: rank %d, message %d from %d (%d bytes into %d): content differs", seed, me, k, x.peer, m.size, m.recv)
				case bytes.Count(b[want:], []byte{guardByte}) != len(b)-want:
					return fmt.Errorf("seed %d: rank %d, message %d from %d (%d bytes into %d): bytes written beyond the message", seed, me, k, x.peer, m.size, m.recv)
				}
				x.bufs[k] = nil
			} else {
				delete(sendBufs, [2]int{x.peer, k})
			}
			delete(x.msgOf, q)
			x.pending = append(x.pending[:i], x.pending[i+1:]...)
		}
		var all []*ch.Channel
		for _, x := range ends {
			all = append(all, x.c)
		}
		return freeBoth(all...)
	})
	var helped, streamed, ahead uint64
	for _, l := range w.ch {
		helped, streamed, ahead = helped+l.Helped(), streamed+l.Streamed(), ahead+l.CopiedAhead()
	}
	t.Logf("%d messages over %d channels; streamed %d, copied ahead %d, pieces copied by senders %d", n*(n-1)*msgsPerChannel, n*(n-1), streamed, ahead, helped)
}
