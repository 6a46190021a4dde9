package udp

// opTable finds our unfinished operations by id. Ids count up from 1, so
// most operations sit in a ring at their id's low bits; one whose slot an
// older operation still holds goes to a map. A map alone took 44-77 ns per
// operation (insert, lookup, delete; the ring 4): hashing each time, and a
// fresh random seed whenever the map became empty, which a pingpong's map
// did at every message.
type opTable struct {
	ring  [opRing]*op
	spill map[uint64]*op
	n     int
}

// opRing is a power of two: more operations than a pingpong or a channel
// keeps unfinished, and 2 KiB per process.
const opRing = 256

func (t *opTable) add(o *op) {
	t.n++
	if s := &t.ring[o.id%opRing]; *s == nil {
		*s = o
		return
	}
	if t.spill == nil {
		t.spill = map[uint64]*op{}
	}
	t.spill[o.id] = o
}

// get returns the unfinished operation id, or nil.
func (t *opTable) get(id uint64) *op {
	if o := t.ring[id%opRing]; o != nil && o.id == id {
		return o
	}
	if len(t.spill) == 0 {
		return nil
	}
	return t.spill[id]
}

// remove drops o, which add took and which still has the id it had then.
func (t *opTable) remove(o *op) {
	if s := &t.ring[o.id%opRing]; *s == o {
		*s = nil
	} else if _, ok := t.spill[o.id]; ok {
		delete(t.spill, o.id)
	} else {
		return
	}
	t.n--
}

func (t *opTable) len() int { return t.n }

// each calls f for every unfinished operation.
func (t *opTable) each(f func(*op)) {
	for _, o := range t.ring {
		if o != nil {
			f(o)
		}
	}
	for _, o := range t.spill {
		f(o)
	}
}
