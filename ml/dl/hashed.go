package dl

import (
	"errors"
	"fmt"
	"hash/crc64"
	"sync"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/heap"
)

// Kind selects one of the three hashed containers; they share everything
// but their element headers.
type Kind int

// The hashed containers.
const (
	KindSet      Kind = iota // {next, prev, key length, key}
	KindMultiset             // {next, prev, counter, key length, key}
	KindMap                  // {next, prev, 8 + key length + value length, key length, key, value}
)

func (k Kind) String() string { return [...]string{"set", "multiset", "map"}[k] }

func (k Kind) header() uint64 {
	if k == KindSet {
		return 24
	}
	return 32
}

// Hashed is acp_set_t, acp_multiset_t and acp_map_t. GA names a directory
// of NumRanks GAs (on the creation rank), each the GA of a table of
// NumSlots slots {lock, head, tail, count} on one rank; a slot's elements
// form a NULL-terminated doubly linked chain in the heap of the table's
// rank. The shape lives only in the handle.
type Hashed struct {
	GA                 core.GA
	NumRanks, NumSlots uint64
}

// HashedIt is the iterator of the hashed containers: directory index, slot
// and element. The end ("null") iterator is {h, NumRanks, 0, ACP_GA_NULL}.
type HashedIt struct {
	H          Hashed
	Rank, Slot int
	Elem       core.GA
}

const slotBytes = 32

// Shape limits that keep a garbage handle from asking for absurd reads.
const (
	maxDirectory = 1 << 24
	maxSlots     = 1 << 32
)

var ecma = sync.OnceValue(func() *crc64.Table { return crc64.MakeTable(crc64.ECMA) })

// Hash is the original's key hash: CRC-64/ECMA (as Go's hash/crc64
// computes it) shifted right by 16.
func Hash(key []byte) uint64 { return crc64.Checksum(key, ecma()) >> 16 }

// place gives the directory index and slot of a key's hash.
func (h Hashed) place(x uint64) (int, int) {
	return int((x / h.NumSlots) % h.NumRanks), int(x % h.NumSlots)
}

// hash is Hash of the bytes, read a scratch buffer at a time when they are
// a caller's.
func (b blob) hash(a *heap.Access) (uint64, error) {
	if b.ga == core.GANull {
		return Hash(b.held), nil
	}
	var crc uint64
	err := a.Each(b.ga, b.n, func(p []byte) bool {
		crc = crc64.Update(crc, ecma(), p)
		return true
	})
	return crc >> 16, err
}

// End is the null iterator.
func (h Hashed) End() HashedIt { return HashedIt{H: h, Rank: int(h.NumRanks)} }

func (h Hashed) check() error {
	switch {
	case h.GA == core.GANull:
		return errNull("container")
	case h.NumRanks == 0 || h.NumRanks > maxDirectory:
		return fmt.Errorf("num_ranks %d is out of range 1..%d (is the handle intact?)", h.NumRanks, maxDirectory)
	case h.NumSlots == 0 || h.NumSlots > maxSlots:
		return fmt.Errorf("num_slots %d is out of range 1..%d (is the handle intact?)", h.NumSlots, uint64(maxSlots))
	}
	return nil
}

// directory reads the table GAs.
func directory(a *heap.Access, h Hashed) ([]core.GA, error) {
	if err := h.check(); err != nil {
		return nil, err
	}
	w, err := block(a, "container", h.GA, int(h.NumRanks))
	if err != nil {
		return nil, err
	}
	dir := make([]core.GA, h.NumRanks)
	for i, v := range w[1:] {
		if v == 0 {
			return nil, fmt.Errorf("directory entry %d of %#x is ACP_GA_NULL (not a container?)", i, uint64(h.GA))
		}
		dir[i] = core.GA(v)
	}
	return dir, nil
}

func slotGA(table core.GA, s int) core.GA { return table + core.GA(slotBytes*s) }

// fits checks that table t, whose heap block header is header, holds the
// handle's num_slots slots: a handle whose num_slots is larger than its
// container's would take the words after the table for slots, lock them
// and write them.
func (h Hashed) fits(t core.GA, header uint64) error {
	if room, ok := heap.BlockBytes(header); !ok || room < slotBytes*h.NumSlots {
		return fmt.Errorf("%#x is no table of %d slots (heap block header %#x): num_slots is not the container's (is the handle intact?)",
			uint64(t), h.NumSlots, header)
	}
	return nil
}

// table checks table t before one of its slots is used. The table's
// heap block header is read once per process (tableRooms) while it is
// large enough for the handles that come: over a network the read is a
// round trip, and a keyed call makes few.
func (h Hashed) table(a *heap.Access, t core.GA) error {
	if err := inHeap(a, "hash table", t); err != nil {
		return err
	}
	k := tableKey{a.Engine(), t}
	if room, ok := tableRooms.get(k); ok && room >= slotBytes*h.NumSlots {
		return nil
	}
	w, err := a.Word(t - 8)
	if err != nil {
		return err
	}
	if room, ok := heap.BlockBytes(w); ok {
		tableRooms.put(k, room)
	}
	return h.fits(t, w)
}

// tableRooms remembers the block sizes of hash tables read by this
// process. A table keeps its block while its container lives, so only a
// handle of another shape is refused by a fresh read; a handle that asks
// for more slots than remembered reads again (a new table may have taken
// the address of a freed one). A container destroyed elsewhere may leave
// a size that is too large, which lets through what a handle of the
// destroyed container would do anyway. Bounded: cleared when full.
var tableRooms = roomCache{m: map[tableKey]uint64{}}

const maxTableRooms = 4096

type tableKey struct {
	e *core.Engine
	t core.GA
}

type roomCache struct {
	mu sync.Mutex
	m  map[tableKey]uint64
}

func (c *roomCache) get(k tableKey) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	room, ok := c.m[k]
	return room, ok
}

func (c *roomCache) put(k tableKey, room uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) >= maxTableRooms {
		clear(c.m)
	}
	c.m[k] = room
}

// forgetEngine drops what e's library learnt: it stops (finalize, or
// acp_reset, which empties every heap).
func (c *roomCache) forgetEngine(e *core.Engine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.e == e {
			delete(c.m, k)
		}
	}
}

func (c *roomCache) forget(k tableKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, k)
}

// slotWords reads the headers of n slots of table t from slot s; from
// slot 0 the read starts one word earlier, at the table's heap block
// header, which is checked with it.
func (h Hashed) slotWords(a *heap.Access, t core.GA, s, n uint64) ([]uint64, error) {
	if s > 0 {
		return a.Words(slotGA(t, int(s)), int(4*n))
	}
	if err := inHeap(a, "hash table", t); err != nil {
		return nil, err
	}
	w, err := a.Words(t-8, int(4*n)+1)
	if err != nil {
		return nil, err
	}
	return w[1:], h.fits(t, w[0])
}

// hnode is an element header as read, with its heap block's header word.
type hnode struct {
	ga, next, prev core.GA
	w2, w3         uint64
	block          uint64
}

func (k Kind) keyLen(n hnode) uint64 {
	if k == KindSet {
		return n.w2
	}
	return n.w3
}

func (k Kind) keyGA(n hnode) core.GA { return n.ga + core.GA(k.header()) }

func (k Kind) valLen(n hnode) uint64 {
	if k != KindMap || n.w3 > n.w2 || n.w2-n.w3 < 8 {
		return 0
	}
	return n.w2 - n.w3 - 8
}

func readHnode(a *heap.Access, ga core.GA) (hnode, error) {
	// Every element is at least 32 bytes (a set's 24-byte header and a key
	// of at least one byte, rounded), so four words can always be read,
	// and the heap block's header before them.
	w, err := block(a, "hash element", ga, 4)
	if err != nil {
		return hnode{}, err
	}
	return hnode{ga, core.GA(w[1]), core.GA(w[2]), w[3], w[4], w[0]}, nil
}

// node reads the element at ga and checks that the lengths its header
// claims fit in its heap block: a stale or garbage GA must not make a read
// of whatever size its words say.
func (k Kind) node(a *heap.Access, ga core.GA) (hnode, error) {
	nd, err := readHnode(a, ga)
	if err != nil {
		return nd, err
	}
	room, ok := heap.BlockBytes(nd.block)
	kl, vl := k.keyLen(nd), k.valLen(nd)
	if !ok || kl > room || vl > room || k.header()+kl+vl > room {
		return nd, fmt.Errorf("%#x is no %s element: %d key and %d value bytes claimed, heap block header %#x", uint64(ga), k, kl, vl, nd.block)
	}
	return nd, nil
}

type slotHdr struct {
	head, tail core.GA
	count      uint64
}

func readSlot(a *heap.Access, s core.GA) (slotHdr, error) {
	w, err := a.Words(s+8, 3)
	if err != nil {
		return slotHdr{}, err
	}
	return slotHdr{core.GA(w[0]), core.GA(w[1]), w[2]}, nil
}

func (sh slotHdr) write(a *heap.Access, s core.GA) {
	a.PutWords(s+8, uint64(sh.head), uint64(sh.tail), sh.count)
}

// withSlot runs fn with the slot's lock held.
func withSlot(a *heap.Access, s core.GA, fn func() error) error {
	if err := a.Lock(s, "a hash slot"); err != nil {
		return err
	}
	err := fn()
	if uerr := a.Unlock(s); err == nil {
		err = uerr
	}
	return err
}

// find walks a slot's chain (lock held) for key.
func (k Kind) find(a *heap.Access, sh slotHdr, key blob) (hnode, bool, error) {
	for ga, n := sh.head, uint64(0); ga != core.GANull; n++ {
		if n > sh.count {
			return hnode{}, false, fmt.Errorf("the chain of a hash slot is longer than its count %d", sh.count)
		}
		nd, err := k.node(a, ga)
		if err != nil {
			return hnode{}, false, err
		}
		if k.keyLen(nd) == key.n {
			same, err := key.equalAt(a, k.keyGA(nd))
			if err != nil || same {
				return nd, same, err
			}
		}
		ga = nd.next
	}
	return hnode{}, false, nil
}

// unlinkH removes nd from its slot's chain (lock held).
func unlinkH(a *heap.Access, s core.GA, sh slotHdr, nd hnode) {
	if nd.prev != core.GANull {
		a.PutWords(nd.prev, uint64(nd.next))
	} else {
		sh.head = nd.next
	}
	if nd.next != core.GANull {
		a.PutWords(nd.next+8, uint64(nd.prev))
	} else {
		sh.tail = nd.prev
	}
	sh.count--
	sh.write(a, s)
}

// CreateHashed is acp_create_set/multiset/map. numRanks 0 means every rank
// (ranks may then be nil); the tables are spread over ranks[i], the
// directory lives on rank.
func (l *Library) CreateHashed(k Kind, numRanks int, ranks []int, numSlots, rank int) (Hashed, error) {
	h := Hashed{NumRanks: uint64(numRanks), NumSlots: uint64(numSlots)}
	if numRanks < 0 || numSlots <= 0 {
		return h, fmt.Errorf("num_ranks %d and num_slots %d: num_ranks must be >= 0 (0: every rank) and num_slots > 0", numRanks, numSlots)
	}
	if numRanks == 0 {
		ranks = make([]int, l.e.Procs())
		for i := range ranks {
			ranks[i] = i
		}
		h.NumRanks = uint64(len(ranks))
	}
	if h.NumRanks > maxDirectory || h.NumSlots > maxSlots {
		return h, fmt.Errorf("num_ranks %d or num_slots %d is too large", numRanks, numSlots)
	}
	for i, r := range ranks {
		if r < 0 || r >= l.e.Procs() {
			return h, fmt.Errorf("ranks[%d] = %d is outside 0..%d", i, r, l.e.Procs()-1)
		}
	}
	err := l.call(func(a *heap.Access) error {
		dir, err := malloc(a, 8*h.NumRanks, rank)
		if err != nil {
			return err
		}
		tables := make([]uint64, 0, len(ranks))
		for _, r := range ranks {
			t, err := malloc(a, slotBytes*h.NumSlots, r)
			if err != nil {
				for _, t := range tables {
					free(a, core.GA(t))
				}
				free(a, dir)
				return err
			}
			a.Zero(t, slotBytes*h.NumSlots)
			tables = append(tables, uint64(t))
		}
		a.PutWords(dir, tables...)
		h.GA = dir
		return a.Flush()
	})
	return h, err
}

// entry is an element's content: the caller's, or taken out of a
// container.
type entry struct {
	key   blob
	count uint64 // multiset counter
	val   blob   // map value
}

// collect reads the entries of a slot's chain (lock held).
func (k Kind) collect(a *heap.Access, sh slotHdr) ([]entry, []core.GA, error) {
	var es []entry
	var gas []core.GA
	for ga, n := sh.head, uint64(0); ga != core.GANull; n++ {
		if n > sh.count {
			return nil, nil, fmt.Errorf("the chain of a hash slot is longer than its count %d", sh.count)
		}
		nd, err := k.node(a, ga)
		if err != nil {
			return nil, nil, err
		}
		kl, vl := k.keyLen(nd), k.valLen(nd)
		b, err := a.Read(k.keyGA(nd), kl+vl) // at most the element's block
		if err != nil {
			return nil, nil, err
		}
		es = append(es, entry{key: heldBytes(b[:kl]), count: nd.w2, val: heldBytes(b[kl:])})
		gas = append(gas, ga)
		ga = nd.next
	}
	return es, gas, nil
}

// eachSlot calls fn for every slot of the tables (only the caller's own
// when local) whose count or head says it holds something.
func eachSlot(a *heap.Access, h Hashed, local bool, fn func(i, s int, sga core.GA) error) error {
	dir, err := directory(a, h)
	if err != nil {
		return err
	}
	me := a.Engine().Rank()
	for i, t := range dir {
		if local && rankOf(a, t) != me {
			continue
		}
		err := scanTable(a, h, t, 0, func(s int) (bool, error) {
			return false, fn(i, s, slotGA(t, s))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// scanChunk is how many slot headers a scan reads at once.
const scanChunk = 256

// scanTable calls fn for each non-empty slot of table t from slot `from`
// on, until fn says stop.
func scanTable(a *heap.Access, h Hashed, t core.GA, from int, fn func(s int) (stop bool, err error)) error {
	for s := uint64(from); s < h.NumSlots; {
		n := min(scanChunk, h.NumSlots-s)
		w, err := h.slotWords(a, t, s, n)
		if err != nil {
			return err
		}
		for j := uint64(0); j < n; j++ {
			if w[4*j+1] != 0 || w[4*j+3] != 0 {
				stop, err := fn(int(s + j))
				if err != nil || stop {
					return err
				}
			}
		}
		s += n
	}
	return nil
}

// clearHashed empties the slots (the caller's own when local).
func (k Kind) clear(a *heap.Access, h Hashed, local bool) error {
	return eachSlot(a, h, local, func(_, _ int, s core.GA) error {
		var gas []core.GA
		err := withSlot(a, s, func() error {
			sh, err := readSlot(a, s)
			if err != nil {
				return err
			}
			for ga, n := sh.head, uint64(0); ga != core.GANull && n <= sh.count; n++ {
				gas = append(gas, ga)
				nd, err := readHnode(a, ga)
				if err != nil {
					return err
				}
				ga = nd.next
			}
			slotHdr{}.write(a, s)
			return nil
		})
		for _, ga := range gas {
			free(a, ga)
		}
		return err
	})
}

// ClearHashed is acp_clear_set etc.; local empties only the slots of the
// tables on the caller's rank.
func (l *Library) ClearHashed(k Kind, h Hashed, local bool) error {
	defer l.use(h.GA)()
	return l.call(func(a *heap.Access) error { return k.clear(a, h, local) })
}

// DestroyHashed is acp_destroy_set etc.
func (l *Library) DestroyHashed(k Kind, h Hashed) error {
	defer l.gone(h.GA)()
	return l.call(func(a *heap.Access) error {
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		if err := k.clear(a, h, false); err != nil {
			return err
		}
		for _, t := range dir {
			tableRooms.forget(tableKey{a.Engine(), t})
			free(a, t)
		}
		free(a, h.GA)
		return a.Err()
	})
}

// SizeHashed is acp_size_set etc.: the sum of the slot counts (distinct
// keys for a multiset).
func (l *Library) SizeHashed(h Hashed, local bool) (n uint64, err error) {
	defer l.use(h.GA)()
	err = l.call(func(a *heap.Access) error {
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		me := a.Engine().Rank()
		for _, t := range dir {
			if local && rankOf(a, t) != me {
				continue
			}
			for s := uint64(0); s < h.NumSlots; {
				c := min(scanChunk, h.NumSlots-s)
				w, err := h.slotWords(a, t, s, c)
				if err != nil {
					return err
				}
				for j := uint64(0); j < c; j++ {
					n += w[4*j+3]
				}
				s += c
			}
		}
		return nil
	})
	return n, err
}

// first finds the first element at or after (i, s) in iteration order,
// confirming a slot's head under its lock; only directory entries for which
// want says so are scanned.
func first(a *heap.Access, h Hashed, dir []core.GA, i, s int, want func(i int) bool) (HashedIt, error) {
	it := h.End()
	for ; i < len(dir); i, s = i+1, 0 {
		if !want(i) {
			continue
		}
		err := scanTable(a, h, dir[i], s, func(s int) (bool, error) {
			sga := slotGA(dir[i], s)
			var head core.GA
			err := withSlot(a, sga, func() error {
				sh, err := readSlot(a, sga)
				head = sh.head
				return err
			})
			if err != nil || head == core.GANull {
				return false, err
			}
			it = HashedIt{h, i, s, head}
			return true, nil
		})
		if err != nil || it.Elem != core.GANull {
			return it, err
		}
	}
	return it, nil
}

func all(int) bool { return true }

// BeginHashed is acp_begin_set etc.
func (l *Library) BeginHashed(h Hashed) (it HashedIt, err error) {
	defer l.use(h.GA)()
	it = h.End()
	err = l.call(func(a *heap.Access) error {
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		it, err = first(a, h, dir, 0, 0, all)
		return err
	})
	return it, err
}

// localRange gives the directory entries of the caller's tables: the first
// and one past the last (both 0 when there are none).
func localRange(a *heap.Access, dir []core.GA) (lo, hi int) {
	me := a.Engine().Rank()
	lo = -1
	for i, t := range dir {
		if rankOf(a, t) == me {
			if lo < 0 {
				lo = i
			}
			hi = i + 1
		}
	}
	if lo < 0 {
		return 0, 0
	}
	return lo, hi
}

// EndLocalHashed is acp_end_local_set etc.: the first element after the
// caller's last table, or the null iterator.
func (l *Library) EndLocalHashed(h Hashed) (it HashedIt, err error) {
	defer l.use(h.GA)()
	it = h.End()
	err = l.call(func(a *heap.Access) error {
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		it, err = endLocal(a, h, dir)
		return err
	})
	return it, err
}

func endLocal(a *heap.Access, h Hashed, dir []core.GA) (HashedIt, error) {
	lo, hi := localRange(a, dir)
	if lo == hi {
		return h.End(), nil
	}
	return first(a, h, dir, hi, 0, all)
}

// BeginLocalHashed is acp_begin_local_set etc.: the first element of the
// caller's tables. When they hold none it equals the local end, so that
// [begin_local, end_local) is empty.
func (l *Library) BeginLocalHashed(h Hashed) (it HashedIt, err error) {
	defer l.use(h.GA)()
	it = h.End()
	err = l.call(func(a *heap.Access) error {
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		me := a.Engine().Rank()
		it, err = first(a, h, dir, 0, 0, func(i int) bool { return rankOf(a, dir[i]) == me })
		if err != nil || it.Elem != core.GANull {
			return err
		}
		it, err = endLocal(a, h, dir)
		return err
	})
	return it, err
}

// IncrementHashedIt is acp_increment_set_it etc.: the next element of the
// chain (read under the slot's lock), else the head of the next non-empty
// slot, else the null iterator.
func (l *Library) IncrementHashedIt(it HashedIt) (HashedIt, error) {
	defer l.use(it.H.GA)()
	h := it.H
	if it.Elem == core.GANull || it.Rank < 0 || uint64(it.Rank) >= h.NumRanks || it.Slot < 0 || uint64(it.Slot) >= h.NumSlots {
		return h.End(), errors.New("the iterator is the null iterator or out of range")
	}
	res := h.End()
	err := l.call(func(a *heap.Access) error {
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		if err := h.table(a, dir[it.Rank]); err != nil {
			return err
		}
		sga := slotGA(dir[it.Rank], it.Slot)
		var next core.GA
		err = withSlot(a, sga, func() error {
			nd, err := readHnode(a, it.Elem)
			next = nd.next
			return err
		})
		if err != nil {
			return err
		}
		if next != core.GANull {
			res = HashedIt{h, it.Rank, it.Slot, next}
			return nil
		}
		res, err = first(a, h, dir, it.Rank, it.Slot+1, all)
		return err
	})
	return res, err
}

// DereferenceHashedIt is acp_dereference_set_it, _multiset_it and
// _map_it: the key (and for maps the value) of the element.
func (l *Library) DereferenceHashedIt(k Kind, it HashedIt) (Pair, error) {
	defer l.use(it.H.GA)()
	if it.Elem == core.GANull {
		return Pair{}, errors.New("the iterator is the null iterator")
	}
	var nd hnode
	err := l.call(func(a *heap.Access) (err error) { nd, err = k.node(a, it.Elem); return })
	if err != nil {
		return Pair{}, err
	}
	kl := k.keyLen(nd)
	p := Pair{First: Element{k.keyGA(nd), kl}}
	if k == KindMap {
		p.Second = Element{k.keyGA(nd) + core.GA(kl), k.valLen(nd)}
	}
	return p, nil
}

// callerKey checks the caller's key; it is read only where it is used.
func callerKey(a *heap.Access, key Element) (blob, error) {
	if key.Size == 0 {
		return blob{}, fmt.Errorf("the key {%#x, 0} is empty", uint64(key.GA))
	}
	return callerBytes(a, "the key", key)
}

// slotOf hashes key and gives its directory index, slot and slot GA.
func (h Hashed) slotOf(a *heap.Access, dir []core.GA, key blob) (i, s int, sga core.GA, err error) {
	x, err := key.hash(a)
	if err != nil {
		return 0, 0, core.GANull, fmt.Errorf("reading the key {%#x, %d}: %w", uint64(key.ga), key.n, err)
	}
	i, s = h.place(x)
	return i, s, slotGA(dir[i], s), h.table(a, dir[i])
}

// FindHashed is acp_find_set etc.
func (l *Library) FindHashed(k Kind, h Hashed, key Element) (HashedIt, error) {
	res := h.End()
	err := l.retrieve(k, h, key, func(_ *heap.Access, it HashedIt, _ hnode) error {
		res = it
		return nil
	})
	return res, err
}

// insert adds an entry: a new element, or for a multiset more count on an
// existing key. It reports whether a new element was made (maps and sets)
// or the counter grew (multisets); an existing key of a map keeps its
// value.
func (k Kind) insert(a *heap.Access, h Hashed, dir []core.GA, e entry) (bool, error) {
	kl, vl := e.key.n, e.val.n
	size, err := blockSize(k.header(), kl, vl)
	if err != nil {
		return false, err
	}
	i, _, sga, err := h.slotOf(a, dir, e.key)
	if err != nil {
		return false, err
	}
	done := false
	err = withSlot(a, sga, func() error {
		sh, err := readSlot(a, sga)
		if err != nil {
			return err
		}
		nd, found, err := k.find(a, sh, e.key)
		if err != nil {
			return err
		}
		if found {
			if k == KindMultiset {
				done = true
				return a.PutWords(nd.ga+16, nd.w2+e.count)
			}
			done = k == KindSet
			return nil
		}
		el, err := malloc(a, size, rankOf(a, dir[i]))
		if err != nil {
			return err
		}
		switch k {
		case KindSet:
			a.PutWords(el, 0, uint64(sh.tail), kl)
		case KindMultiset:
			a.PutWords(el, 0, uint64(sh.tail), e.count, kl)
		case KindMap:
			a.PutWords(el, 0, uint64(sh.tail), 8+kl+vl, kl)
		}
		e.key.store(a, el+core.GA(k.header()))
		if k == KindMap {
			e.val.store(a, el+core.GA(k.header()+kl))
		}
		if err := landed(a, el); err != nil {
			return err
		}
		if sh.tail != core.GANull {
			a.PutWords(sh.tail, uint64(el))
		} else {
			sh.head = el
		}
		sh.tail = el
		sh.count++
		sh.write(a, sga)
		done = true
		return a.Err()
	})
	return done, err
}

// InsertHashed is acp_insert_set and acp_insert_multiset (key only) and
// acp_insert_map (key and value). It returns 1 when the set holds the key
// afterwards, the multiset counted it, or the map made a new element.
func (l *Library) InsertHashed(k Kind, h Hashed, key, value Element) (bool, error) {
	if k == KindMap && value.Size == 0 {
		// The original's special case: an empty value removes the key.
		return false, l.RemoveHashed(k, h, key, true)
	}
	defer l.use(h.GA)()
	var ok bool
	err := l.call(func(a *heap.Access) error {
		e := entry{count: 1}
		var err error
		if e.key, err = callerKey(a, key); err != nil {
			return err
		}
		if k == KindMap {
			if e.val, err = callerBytes(a, "the value", value); err != nil {
				return err
			}
		}
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		ok, err = k.insert(a, h, dir, e)
		return err
	})
	return ok, err
}

// RemoveHashed is acp_remove_set, acp_remove_map, acp_remove_multiset
// (all=false: one count) and acp_remove_all_multiset (all=true).
func (l *Library) RemoveHashed(k Kind, h Hashed, key Element, all bool) error {
	defer l.use(h.GA)()
	return l.call(func(a *heap.Access) error {
		kb, err := callerKey(a, key)
		if err != nil {
			return err
		}
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		_, _, sga, err := h.slotOf(a, dir, kb)
		if err != nil {
			return err
		}
		var gone core.GA
		err = withSlot(a, sga, func() error {
			sh, err := readSlot(a, sga)
			if err != nil {
				return err
			}
			nd, found, err := k.find(a, sh, kb)
			if err != nil || !found {
				return err
			}
			if k == KindMultiset && !all && nd.w2 >= 2 {
				return a.PutWords(nd.ga+16, nd.w2-1)
			}
			unlinkH(a, sga, sh, nd)
			gone = nd.ga
			return nil
		})
		free(a, gone)
		return err
	})
}

// RetrieveMultiset is acp_retrieve_multiset: the key's counter, 0 if
// absent.
func (l *Library) RetrieveMultiset(h Hashed, key Element) (n uint64, err error) {
	err = l.retrieve(KindMultiset, h, key, func(_ *heap.Access, _ HashedIt, nd hnode) error {
		n = nd.w2
		return nil
	})
	return n, err
}

// RetrieveMap is acp_retrieve_map: copies at most out.Size bytes of the
// key's value to out.GA and returns the value's full length (0 if absent,
// and 0 when the output cannot take the value: the caller must not believe
// it got one).
func (l *Library) RetrieveMap(h Hashed, key, out Element) (n uint64, err error) {
	err = l.retrieve(KindMap, h, key, func(a *heap.Access, _ HashedIt, nd hnode) error {
		if _, err := callerBytes(a, "the output", out); err != nil {
			return err
		}
		n = KindMap.valLen(nd)
		return a.Copy(out.GA, KindMap.keyGA(nd)+core.GA(nd.w3), min(n, out.Size))
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// retrieve finds key's element and, when there is one, calls fn with it
// (its iterator and node) while its slot is locked.
func (l *Library) retrieve(k Kind, h Hashed, key Element, fn func(a *heap.Access, it HashedIt, nd hnode) error) error {
	defer l.use(h.GA)()
	return l.call(func(a *heap.Access) error {
		kb, err := callerKey(a, key)
		if err != nil {
			return err
		}
		dir, err := directory(a, h)
		if err != nil {
			return err
		}
		i, s, sga, err := h.slotOf(a, dir, kb)
		if err != nil {
			return err
		}
		return withSlot(a, sga, func() error {
			sh, err := readSlot(a, sga)
			if err != nil {
				return err
			}
			nd, found, err := k.find(a, sh, kb)
			if err != nil || !found {
				return err
			}
			return fn(a, HashedIt{h, i, s, nd.ga}, nd)
		})
	})
}

// take reads the entries of every slot (the caller's tables when local);
// with detach the slots are emptied and their elements freed. One slot's
// lock is held at a time, never two: merging a container into one whose
// slots another rank is merging the other way cannot deadlock (Q-DL-5).
func (k Kind) take(a *heap.Access, h Hashed, local, detach bool, each func([]entry) error) error {
	return eachSlot(a, h, local, func(_, _ int, sga core.GA) error {
		var es []entry
		var gas []core.GA
		err := withSlot(a, sga, func() error {
			sh, err := readSlot(a, sga)
			if err != nil {
				return err
			}
			if es, gas, err = k.collect(a, sh); err != nil {
				return err
			}
			if detach {
				slotHdr{}.write(a, sga)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if detach {
			for _, ga := range gas {
				free(a, ga)
			}
		}
		return each(es)
	})
}

func (k Kind) insertAll(a *heap.Access, h Hashed, dir []core.GA, es []entry) error {
	for _, e := range es {
		if _, err := k.insert(a, h, dir, e); err != nil {
			return err
		}
	}
	return nil
}

// MergeHashed is acp_merge_set etc. (and _local): inserts the entries of h2
// into h1, which keeps existing map values and adds multiset counters. A
// container merged into itself stays as it is.
func (l *Library) MergeHashed(k Kind, h1, h2 Hashed, local bool) error {
	return l.transferHashed(k, h1, h2, local, false)
}

// MoveHashed is acp_move_set etc. (and _local): like merge, and h2 (its
// local tables) is emptied.
func (l *Library) MoveHashed(k Kind, h1, h2 Hashed, local bool) error {
	return l.transferHashed(k, h1, h2, local, true)
}

// transferHashed inserts h2's entries into h1, emptying h2's tables when
// empty is set.
func (l *Library) transferHashed(k Kind, h1, h2 Hashed, local, empty bool) error {
	defer l.use(h1.GA, h2.GA)()
	if h1.GA == h2.GA {
		return nil
	}
	return l.call(func(a *heap.Access) error {
		dirs, err := shapes(a, h1, h2)
		if err != nil {
			return err
		}
		return k.take(a, h2, local, empty, func(es []entry) error { return k.insertAll(a, h1, dirs[0], es) })
	})
}

// shapes reads the directories of containers and checks every table
// against its handle, before a call that moves entries between them
// changes anything: a move or an assign must not empty one container
// into another that turns out not to be one (or not of that shape).
func shapes(a *heap.Access, hs ...Hashed) ([][]core.GA, error) {
	dirs := make([][]core.GA, len(hs))
	for i, h := range hs {
		dir, err := directory(a, h)
		if err != nil {
			return nil, err
		}
		for _, t := range dir {
			if err := h.table(a, t); err != nil {
				return nil, err
			}
		}
		dirs[i] = dir
	}
	return dirs, nil
}

// AssignHashed is acp_assign_set etc.: h1 is cleared, then h2 merged in.
// acp_assign_local_* clears only the caller's tables of h1 and merges h2's
// local tables (the original cleared all of h1, Q-DL-5).
func (l *Library) AssignHashed(k Kind, h1, h2 Hashed, local bool) error {
	defer l.use(h1.GA, h2.GA)()
	if h1.GA == h2.GA {
		return nil
	}
	return l.call(func(a *heap.Access) error {
		dirs, err := shapes(a, h1, h2)
		if err != nil {
			return err
		}
		if err := k.clear(a, h1, local); err != nil {
			return err
		}
		return k.take(a, h2, local, false, func(es []entry) error { return k.insertAll(a, h1, dirs[0], es) })
	})
}

// SwapHashed is acp_swap_set etc.: the containers exchange their entries,
// each re-hashed into the other's shape.
func (l *Library) SwapHashed(k Kind, h1, h2 Hashed) error {
	defer l.use(h1.GA, h2.GA)()
	if h1.GA == h2.GA {
		return nil
	}
	return l.call(func(a *heap.Access) error {
		dirs, err := shapes(a, h1, h2)
		if err != nil {
			return err
		}
		dir1, dir2 := dirs[0], dirs[1]
		var e1, e2 []entry
		if err := k.take(a, h1, false, true, func(es []entry) error { e1 = append(e1, es...); return nil }); err != nil {
			return err
		}
		if err := k.take(a, h2, false, true, func(es []entry) error { e2 = append(e2, es...); return nil }); err != nil {
			// Give h1 its entries back.
			_ = k.insertAll(a, h1, dir1, e1)
			return err
		}
		if err := k.insertAll(a, h1, dir1, e2); err != nil {
			return err
		}
		return k.insertAll(a, h2, dir2, e1)
	})
}
