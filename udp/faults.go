package udp

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// faultyConn wraps a socket and mistreats outgoing datagrams the way a bad
// network would: it loses, duplicates and reorders them. It exists to test
// the protocol (ACP_UDP_FAULTS), in Go tests and in whole C programs alike.
type faultyConn struct {
	packetConn
	loss, dup, reorder float64
	rng                *rand.Rand
	held               []packet // datagrams delayed behind later ones
}

func newFaultyConn(c packetConn, spec string) (*faultyConn, error) {
	f := &faultyConn{packetConn: c}
	seed := uint64(1)
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return nil, fmt.Errorf("%q is not name=value", kv)
		}
		if k == "seed" {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("seed %q: %v", v, err)
			}
			seed = n
			continue
		}
		x, err := strconv.ParseFloat(v, 64)
		if err != nil || x < 0 || x >= 1 {
			return nil, fmt.Errorf("%s=%q: want a probability in [0, 1)", k, v)
		}
		switch k {
		case "loss":
			f.loss = x
		case "dup":
			f.dup = x
		case "reorder":
			f.reorder = x
		default:
			return nil, fmt.Errorf("unknown fault %q (loss, dup, reorder, seed)", k)
		}
	}
	f.rng = rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15+1))
	return f, nil
}

func (f *faultyConn) send(pkts []packet) error {
	var out []packet
	for _, p := range pkts {
		r := f.rng.Float64()
		switch {
		case r < f.loss:
			continue
		case r < f.loss+f.reorder:
			// Hold a copy: the caller may rewrite the buffer before we
			// release it.
			f.held = append(f.held, packet{to: p.to, data: append(append([]byte(nil), p.data...), p.tail...)})
			continue
		}
		out = append(out, p)
		if f.rng.Float64() < f.dup {
			out = append(out, p)
		}
	}
	// Release held datagrams behind the ones just sent (reordering), or
	// all of them when too many wait.
	if len(f.held) > 0 && (len(out) > 0 || len(f.held) > 8) {
		out = append(out, f.held...)
		f.held = nil
	}
	if len(out) == 0 {
		return nil
	}
	return f.packetConn.send(out)
}
