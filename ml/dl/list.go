package dl

import (
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/libacp/libacp/core"
	"github.com/libacp/libacp/ml/heap"
)

// List is acp_list_t. Its control block {head, tail, count} is the sentinel
// of a circular doubly linked list: an element is {next, prev, value size,
// value bytes...}, the first element's prev and the last one's next are the
// control block's GA, and an empty list's head and tail are its own GA.
// Word 0 of any node (element or control block) is "next", word 8 "prev".
type List struct{ GA core.GA }

// ListIt is acp_list_it_t; the end iterator is {list, list.GA}.
type ListIt struct {
	List List
	Elem core.GA
}

const elemHeader = 24

type listCB struct{ head, tail, count uint64 }

func readList(a *heap.Access, l List) (listCB, error) {
	w, err := block(a, "list", l.GA, 3)
	if err != nil {
		return listCB{}, err
	}
	cb := listCB{w[1], w[2], w[3]}
	empty := cb.count == 0
	if cb.head == 0 || cb.tail == 0 || empty != (cb.head == uint64(l.GA)) || empty != (cb.tail == uint64(l.GA)) || cb.count > maxElems {
		return listCB{}, fmt.Errorf("%#x is not a list (head %#x, tail %#x, count %d)", uint64(l.GA), cb.head, cb.tail, cb.count)
	}
	return cb, nil
}

// node is an element as read: its links and value size.
type node struct {
	ga         core.GA
	next, prev core.GA
	size       uint64
}

// maxElems is more elements than any heap holds (each takes a block of
// at least 40 bytes): a larger count is no list's.
const maxElems = heap.MaxSize / 40

// readNode reads the element at ga and checks that the value size it
// claims fits its heap block: a GA that is no element must not lend its
// words as links, nor a size to read or copy.
func readNode(a *heap.Access, ga core.GA) (node, error) {
	if ga == core.GANull {
		return node{}, errors.New("the element GA is ACP_GA_NULL")
	}
	w, err := block(a, "list element", ga, 3)
	if err != nil {
		return node{}, err
	}
	n := node{ga, core.GA(w[1]), core.GA(w[2]), w[3]}
	if room, _ := heap.BlockBytes(w[0]); n.size > room-elemHeader {
		return node{}, fmt.Errorf("%#x is no list element: it claims %d value bytes, its heap block holds %d", uint64(ga), n.size, room-elemHeader)
	}
	return n, nil
}

func (n node) value() Element { return Element{n.ga + elemHeader, n.size} }

// walk returns the elements from `from` up to (not including) `to` or the
// end of the list. It fails when the chain does not lead back to the
// control block within count steps (a broken or foreign chain).
func walk(a *heap.Access, l List, cb listCB, from, to core.GA) ([]node, error) {
	var out []node
	for ga := from; ga != l.GA && ga != to; {
		if uint64(len(out)) >= cb.count {
			return nil, fmt.Errorf("the chain of list %#x is longer than its count %d, or %#x is not one of its elements", uint64(l.GA), cb.count, uint64(from))
		}
		n, err := readNode(a, ga)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
		ga = n.next
	}
	return out, nil
}

func setNext(a *heap.Access, node, next core.GA) { a.PutWords(node, uint64(next)) }
func setPrev(a *heap.Access, node, prev core.GA) { a.PutWords(node+8, uint64(prev)) }
func setCount(a *heap.Access, l List, c uint64)  { a.PutWords(l.GA+16, c) }

// CreateList is acp_create_list.
func (lb *Library) CreateList(rank int) (l List, err error) {
	err = lb.call(func(a *heap.Access) error {
		cb, err := malloc(a, 24, rank)
		if err != nil {
			return err
		}
		l = List{cb}
		return a.PutWords(cb, uint64(cb), uint64(cb), 0)
	})
	return l, err
}

// clearList frees every element.
func clearList(a *heap.Access, l List) error {
	cb, err := readList(a, l)
	if err != nil {
		return err
	}
	ns, err := walk(a, l, cb, core.GA(cb.head), l.GA)
	if err != nil {
		return err
	}
	a.PutWords(l.GA, uint64(l.GA), uint64(l.GA), 0)
	if err := a.Flush(); err != nil {
		return err
	}
	for _, n := range ns {
		free(a, n.ga)
	}
	return a.Err()
}

// DestroyList is acp_destroy_list.
func (lb *Library) DestroyList(l List) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error {
		if err := clearList(a, l); err != nil {
			return err
		}
		free(a, l.GA)
		return nil
	})
}

// ClearList is acp_clear_list.
func (lb *Library) ClearList(l List) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error { return clearList(a, l) })
}

// SizeList is acp_size_list: the number of elements.
func (lb *Library) SizeList(l List) (uint64, error) {
	defer lb.hold(l.GA)()
	var cb listCB
	err := lb.call(func(a *heap.Access) (err error) { cb, err = readList(a, l); return })
	return cb.count, err
}

// BeginList is acp_begin_list.
func (lb *Library) BeginList(l List) (ListIt, error) {
	defer lb.hold(l.GA)()
	var cb listCB
	err := lb.call(func(a *heap.Access) (err error) { cb, err = readList(a, l); return })
	if err != nil {
		return ListIt{l, core.GANull}, err
	}
	return ListIt{l, core.GA(cb.head)}, nil
}

// EndList is acp_end_list (no communication).
func EndList(l List) ListIt { return ListIt{l, l.GA} }

// newElem allocates a copy of the value on rank; its links are set later.
func newElem(a *heap.Access, v Element, rank int) (core.GA, error) {
	if _, err := callerBytes(a, "the element", v); err != nil {
		return core.GANull, err
	}
	size, err := blockSize(elemHeader, v.Size)
	if err != nil {
		return core.GANull, err
	}
	ga, err := malloc(a, size, rank)
	if err != nil {
		return core.GANull, err
	}
	a.PutWords(ga+16, v.Size)
	a.Copy(ga+elemHeader, v.GA, v.Size)
	if err := landed(a, ga); err != nil {
		return core.GANull, err
	}
	return ga, nil
}

// linkBefore links the chain first..last (already linked among themselves)
// before pos, whose predecessor is prev, and adds k to the count.
func linkBefore(a *heap.Access, l List, cb listCB, pos, prev, first, last core.GA, k uint64) error {
	setPrev(a, first, prev)
	setNext(a, last, pos)
	setNext(a, prev, first)
	setPrev(a, pos, last) // pos or prev may be the control block: its head/tail
	setCount(a, l, cb.count+k)
	return a.Flush()
}

// prevOf reads the predecessor of pos (the tail when pos is the end).
func prevOf(a *heap.Access, l List, cb listCB, pos core.GA) (core.GA, error) {
	if pos == l.GA {
		return core.GA(cb.tail), nil
	}
	n, err := readNode(a, pos)
	return n.prev, err
}

// insertValue inserts a copy of v, allocated on rank, before pos.
func insertValue(a *heap.Access, l List, pos core.GA, v Element, rank int) (core.GA, error) {
	cb, err := readList(a, l)
	if err != nil {
		return core.GANull, err
	}
	prev, err := prevOf(a, l, cb, pos)
	if err != nil {
		return core.GANull, err
	}
	e, err := newElem(a, v, rank)
	if err != nil {
		return core.GANull, err
	}
	return e, linkBefore(a, l, cb, pos, prev, e, e, 1)
}

// PushBackList is acp_push_back_list: a copy of elem, allocated on rank.
func (lb *Library) PushBackList(l List, elem Element, rank int) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error {
		_, err := insertValue(a, l, l.GA, elem, rank)
		return err
	})
}

// PushFrontList is acp_push_front_list.
func (lb *Library) PushFrontList(l List, elem Element, rank int) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error {
		cb, err := readList(a, l)
		if err != nil {
			return err
		}
		_, err = insertValue(a, l, core.GA(cb.head), elem, rank)
		return err
	})
}

// InsertList is acp_insert_list: inserts a copy of elem before it.Elem and
// returns an iterator to it ({list, ACP_GA_NULL} on failure).
func (lb *Library) InsertList(it ListIt, elem Element, rank int) (ListIt, error) {
	defer lb.hold(it.List.GA)()
	var e core.GA
	err := lb.call(func(a *heap.Access) (err error) {
		e, err = insertValue(a, it.List, it.Elem, elem, rank)
		return err
	})
	return ListIt{it.List, e}, err
}

// copyChain makes linked copies of nodes (each on its source's rank) and
// returns the first and last copy.
func copyChain(a *heap.Access, ns []node) (first, last core.GA, err error) {
	copies := make([]core.GA, 0, len(ns))
	for _, n := range ns {
		c, err := newElem(a, n.value(), rankOf(a, n.ga))
		if err != nil {
			for _, c := range copies {
				free(a, c)
			}
			return core.GANull, core.GANull, err
		}
		copies = append(copies, c)
	}
	for i := 0; i+1 < len(copies); i++ {
		setNext(a, copies[i], copies[i+1])
		setPrev(a, copies[i+1], copies[i])
	}
	return copies[0], copies[len(copies)-1], a.Flush()
}

// rangeNodes returns the elements [start, end) of one list.
func rangeNodes(a *heap.Access, start, end ListIt) ([]node, error) {
	if start.List != end.List {
		return nil, ErrDifferent
	}
	cb, err := readList(a, start.List)
	if err != nil {
		return nil, err
	}
	ns, err := walk(a, start.List, cb, start.Elem, end.Elem)
	if err != nil {
		return nil, err
	}
	if len(ns) > 0 && ns[len(ns)-1].next != end.Elem {
		return nil, fmt.Errorf("end %#x does not follow start %#x in list %#x", uint64(end.Elem), uint64(start.Elem), uint64(start.List.GA))
	}
	return ns, nil
}

// InsertRangeList is acp_insert_range_list: copies of [start, end) before
// it; returns an iterator to the first copy (it itself for an empty range).
func (lb *Library) InsertRangeList(it, start, end ListIt) (ListIt, error) {
	defer lb.hold(it.List.GA, start.List.GA)()
	res := it
	err := lb.call(func(a *heap.Access) error {
		ns, err := rangeNodes(a, start, end)
		if err != nil || len(ns) == 0 {
			return err
		}
		// The destination first: a bad one must not cost the copies.
		cb, err := readList(a, it.List)
		if err != nil {
			return err
		}
		prev, err := prevOf(a, it.List, cb, it.Elem)
		if err != nil {
			return err
		}
		first, last, err := copyChain(a, ns)
		if err != nil {
			return err
		}
		res.Elem = first
		return linkBefore(a, it.List, cb, it.Elem, prev, first, last, uint64(len(ns)))
	})
	return res, err
}

// unlink removes the chain first..last (k elements) from the list.
func unlink(a *heap.Access, l List, cb listCB, first, last node, k uint64) error {
	setNext(a, first.prev, last.next)
	setPrev(a, last.next, first.prev)
	setCount(a, l, cb.count-k)
	return a.Flush()
}

// PopBackList is acp_pop_back_list.
func (lb *Library) PopBackList(l List) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error {
		cb, err := readList(a, l)
		if err != nil || cb.count == 0 {
			return err
		}
		return eraseOne(a, l, cb, core.GA(cb.tail))
	})
}

// PopFrontList is acp_pop_front_list (and frees the element: Q-DL-4).
func (lb *Library) PopFrontList(l List) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error {
		cb, err := readList(a, l)
		if err != nil || cb.count == 0 {
			return err
		}
		return eraseOne(a, l, cb, core.GA(cb.head))
	})
}

func eraseOne(a *heap.Access, l List, cb listCB, ga core.GA) error {
	n, err := readNode(a, ga)
	if err != nil {
		return err
	}
	if err := unlink(a, l, cb, n, n, 1); err != nil {
		return err
	}
	free(a, ga)
	return a.Err()
}

// EraseList is acp_erase_list: returns an iterator to the following
// element; erasing the end iterator gives {list, ACP_GA_NULL}.
func (lb *Library) EraseList(it ListIt) (ListIt, error) {
	defer lb.hold(it.List.GA)()
	if it.Elem == it.List.GA || it.Elem == core.GANull {
		return ListIt{it.List, core.GANull}, errors.New("the iterator is the end iterator or ACP_GA_NULL")
	}
	var next core.GA
	err := lb.call(func(a *heap.Access) error {
		cb, err := readList(a, it.List)
		if err != nil || cb.count == 0 {
			if err == nil {
				err = errors.New("the list is empty")
			}
			return err
		}
		n, err := readNode(a, it.Elem)
		if err != nil {
			return err
		}
		next = n.next
		if err := unlink(a, it.List, cb, n, n, 1); err != nil {
			return err
		}
		free(a, n.ga)
		return a.Err()
	})
	if err != nil {
		return ListIt{it.List, core.GANull}, err
	}
	return ListIt{it.List, next}, nil
}

// EraseRangeList is acp_erase_range_list: erases [start, end) and returns
// end.
func (lb *Library) EraseRangeList(start, end ListIt) (ListIt, error) {
	defer lb.hold(start.List.GA, end.List.GA)()
	if start.List != end.List || start.Elem == start.List.GA || start.Elem == end.Elem {
		if start.List != end.List {
			return end, ErrDifferent
		}
		return end, nil
	}
	return end, lb.call(func(a *heap.Access) error {
		ns, err := rangeNodes(a, start, end)
		if err != nil || len(ns) == 0 {
			return err
		}
		cb, err := readList(a, start.List)
		if err != nil {
			return err
		}
		if err := unlink(a, start.List, cb, ns[0], ns[len(ns)-1], uint64(len(ns))); err != nil {
			return err
		}
		for _, n := range ns {
			free(a, n.ga)
		}
		return a.Err()
	})
}

// fillList replaces the content of l by copies of ns: the copies are made
// first, so ns may be l's own elements.
func fillList(a *heap.Access, l List, ns []node) error {
	if _, err := readList(a, l); err != nil {
		return err
	}
	var first, last core.GA
	if len(ns) > 0 {
		var err error
		if first, last, err = copyChain(a, ns); err != nil {
			return err
		}
	}
	if err := clearList(a, l); err != nil {
		return err
	}
	if len(ns) == 0 {
		return nil
	}
	return linkBefore(a, l, listCB{uint64(l.GA), uint64(l.GA), 0}, l.GA, l.GA, first, last, uint64(len(ns)))
}

// AssignList is acp_assign_list: list1 becomes a copy of list2 (each copy
// on its source element's rank).
func (lb *Library) AssignList(l1, l2 List) error {
	defer lb.hold(l1.GA, l2.GA)()
	if l1 == l2 {
		return nil
	}
	return lb.call(func(a *heap.Access) error {
		cb, err := readList(a, l2)
		if err != nil {
			return err
		}
		ns, err := walk(a, l2, cb, core.GA(cb.head), l2.GA)
		if err != nil {
			return err
		}
		return fillList(a, l1, ns)
	})
}

// AssignRangeList is acp_assign_range_list.
func (lb *Library) AssignRangeList(l List, start, end ListIt) error {
	defer lb.hold(l.GA, start.List.GA)()
	return lb.call(func(a *heap.Access) error {
		ns, err := rangeNodes(a, start, end)
		if err != nil {
			return err
		}
		return fillList(a, l, ns)
	})
}

// Comparator orders two values like strcmp (the C callback of merge/sort).
type Comparator func(e1, e2 Element) int

// relink rewrites l to hold exactly ns, in order.
func relink(a *heap.Access, l List, ns []node) error {
	if len(ns) == 0 {
		return a.PutWords(l.GA, uint64(l.GA), uint64(l.GA), 0)
	}
	for i, n := range ns {
		prev, next := l.GA, l.GA
		if i > 0 {
			prev = ns[i-1].ga
		}
		if i+1 < len(ns) {
			next = ns[i+1].ga
		}
		a.PutWords(n.ga, uint64(next), uint64(prev))
	}
	a.PutWords(l.GA, uint64(ns[0].ga), uint64(ns[len(ns)-1].ga), uint64(len(ns)))
	return a.Flush()
}

func allNodes(a *heap.Access, l List) ([]node, error) {
	cb, err := readList(a, l)
	if err != nil {
		return nil, err
	}
	return walk(a, l, cb, core.GA(cb.head), l.GA)
}

// orderAttempts is how often merge and sort start again when another
// thread of the process changed a list while the comparator ran.
const orderAttempts = 100

// errChanged reports lists that another thread kept changing.
var errChanged = fmt.Errorf("another thread of this process changed the list while the comparator ran, at each of %d attempts; left as it was", orderAttempts)

// reorder is merge and sort: it reads the lists under their locks, orders
// the elements with the program's comparator with no lock held (it may
// call the library, also on these lists), and writes the order back under
// the locks if the lists are as read; else it starts again. Without the
// check an element another thread pushed while the comparator ran was
// dropped by the write-back (t_thr_lsort: 34 to 527 of 600 pushed
// elements lost).
func (lb *Library) reorder(ls []List, order func(ns [][]node) []node, write func(a *heap.Access, out []node) error) error {
	gas := make([]core.GA, len(ls))
	for i, l := range ls {
		gas[i] = l.GA
	}
	read := func(a *heap.Access) ([][]node, error) {
		ns := make([][]node, len(ls))
		for i, l := range ls {
			var err error
			if ns[i], err = allNodes(a, l); err != nil {
				return nil, err
			}
		}
		return ns, nil
	}
	for attempt := 0; attempt < orderAttempts; attempt++ {
		var ns [][]node
		err := func() error {
			defer lb.hold(gas...)()
			return lb.call(func(a *heap.Access) (err error) { ns, err = read(a); return err })
		}()
		if err != nil {
			return err
		}
		in := make([][]node, len(ns))
		for i := range ns {
			in[i] = append([]node(nil), ns[i]...)
		}
		out := order(in)
		done := false
		err = func() error {
			defer lb.hold(gas...)()
			return lb.call(func(a *heap.Access) error {
				now, err := read(a)
				if err != nil {
					return err
				}
				// The same elements in the same order (their links follow).
				for i := range now {
					if !slices.Equal(now[i], ns[i]) {
						return nil
					}
				}
				done = true
				return write(a, out)
			})
		}()
		if err != nil || done {
			return err
		}
	}
	return errChanged
}

// MergeList is acp_merge_list: moves every element of list2 into list1 in
// merged order (ties: list1's first); list2 becomes empty. The comparator
// runs with no lock held and may call the library.
func (lb *Library) MergeList(l1, l2 List, comp Comparator) error {
	if l1 == l2 {
		return nil
	}
	return lb.reorder([]List{l1, l2}, func(ns [][]node) []node {
		n1, n2 := ns[0], ns[1]
		merged := make([]node, 0, len(n1)+len(n2))
		i, j := 0, 0
		for i < len(n1) && j < len(n2) {
			if comp(n2[j].value(), n1[i].value()) < 0 {
				merged = append(merged, n2[j])
				j++
			} else {
				merged = append(merged, n1[i])
				i++
			}
		}
		return append(append(merged, n1[i:]...), n2[j:]...)
	}, func(a *heap.Access, merged []node) error {
		a.PutWords(l2.GA, uint64(l2.GA), uint64(l2.GA), 0)
		return relink(a, l1, merged)
	})
}

// SortList is acp_sort_list: a stable sort by relinking.
func (lb *Library) SortList(l List, comp Comparator) error {
	return lb.reorder([]List{l}, func(ns [][]node) []node {
		s := ns[0]
		sort.SliceStable(s, func(i, j int) bool { return comp(s[i].value(), s[j].value()) < 0 })
		return s
	}, func(a *heap.Access, sorted []node) error { return relink(a, l, sorted) })
}

// RemoveList is acp_remove_list: removes every element whose value equals
// the bytes of elem (which may be one of the list's values: nothing is
// freed before every element was compared).
func (lb *Library) RemoveList(l List, elem Element) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error {
		want, err := callerBytes(a, "the element", elem)
		if err != nil {
			return err
		}
		return filterList(a, l, func(n node, _ *node) (bool, error) {
			if n.size != want.n {
				return false, nil
			}
			return want.equalAt(a, n.ga+elemHeader)
		})
	})
}

// UniqueList is acp_unique_list: removes elements equal to their
// predecessor (same size and bytes), keeping the first of each run.
func (lb *Library) UniqueList(l List) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error {
		return filterList(a, l, func(n node, kept *node) (bool, error) {
			if kept == nil || kept.size != n.size {
				return false, nil
			}
			return a.Equal(kept.ga+elemHeader, n.ga+elemHeader, n.size)
		})
	})
}

// filterList removes the elements for which drop says so (kept is the
// last element kept, nil at the start) and rewrites the links once.
func filterList(a *heap.Access, l List, drop func(n node, kept *node) (bool, error)) error {
	ns, err := allNodes(a, l)
	if err != nil {
		return err
	}
	var keep, gone []node
	for _, n := range ns {
		var last *node
		if len(keep) > 0 {
			last = &keep[len(keep)-1]
		}
		d, err := drop(n, last)
		if err != nil {
			return err
		}
		if d {
			gone = append(gone, n)
		} else {
			keep = append(keep, n)
		}
	}
	if len(gone) == 0 {
		return nil
	}
	if err := relink(a, l, keep); err != nil {
		return err
	}
	for _, n := range gone {
		free(a, n.ga)
	}
	return a.Err()
}

// ReverseList is acp_reverse_list.
func (lb *Library) ReverseList(l List) error {
	defer lb.hold(l.GA)()
	return lb.call(func(a *heap.Access) error {
		ns, err := allNodes(a, l)
		if err != nil {
			return err
		}
		for i, j := 0, len(ns)-1; i < j; i, j = i+1, j-1 {
			ns[i], ns[j] = ns[j], ns[i]
		}
		return relink(a, l, ns)
	})
}

// SpliceList is acp_splice_list: moves it2's element before it1.
func (lb *Library) SpliceList(it1, it2 ListIt) error {
	defer lb.hold(it1.List.GA, it2.List.GA)()
	if it2.Elem == it2.List.GA || it2.Elem == core.GANull || it1.Elem == it2.Elem {
		return nil
	}
	return lb.call(func(a *heap.Access) error {
		return splice(a, it1, it2.List, it2.Elem, it2.Elem, 1)
	})
}

// splice moves the k elements first..last of list src before it.
func splice(a *heap.Access, it ListIt, src List, first, last core.GA, k uint64) error {
	// The destination is checked before anything moves: a bad one must
	// not leave the elements unlinked from src and linked nowhere.
	dcb, err := readList(a, it.List)
	if err != nil {
		return err
	}
	if _, err := prevOf(a, it.List, dcb, it.Elem); err != nil {
		return err
	}
	scb, err := readList(a, src)
	if err != nil {
		return err
	}
	f, err := readNode(a, first)
	if err != nil {
		return err
	}
	ln := f
	if last != first {
		if ln, err = readNode(a, last); err != nil {
			return err
		}
	}
	if err := unlink(a, src, scb, f, ln, k); err != nil {
		return err
	}
	// Read again: the source may be the destination.
	if dcb, err = readList(a, it.List); err != nil {
		return err
	}
	prev, err := prevOf(a, it.List, dcb, it.Elem)
	if err != nil {
		return err
	}
	return linkBefore(a, it.List, dcb, it.Elem, prev, first, last, k)
}

// SpliceRangeList is acp_splice_range_list: moves [start, end) of one list
// before it (a range reaching the list's end is allowed).
func (lb *Library) SpliceRangeList(it, start, end ListIt) error {
	defer lb.hold(it.List.GA, start.List.GA)()
	return lb.call(func(a *heap.Access) error {
		ns, err := rangeNodes(a, start, end)
		if err != nil || len(ns) == 0 {
			return err
		}
		if it.List == start.List {
			for _, n := range ns {
				if n.ga == it.Elem {
					return fmt.Errorf("the destination %#x lies inside the range", uint64(it.Elem))
				}
			}
		}
		return splice(a, it, start.List, ns[0].ga, ns[len(ns)-1].ga, uint64(len(ns)))
	})
}

// SwapList is acp_swap_list: the lists exchange their element chains.
func (lb *Library) SwapList(l1, l2 List) error {
	defer lb.hold(l1.GA, l2.GA)()
	if l1 == l2 {
		return nil
	}
	return lb.call(func(a *heap.Access) error {
		c1, err := readList(a, l1)
		if err != nil {
			return err
		}
		c2, err := readList(a, l2)
		if err != nil {
			return err
		}
		// A chain's boundary links name its sentinel: point them at the other.
		move := func(c listCB, to List) listCB {
			if c.count == 0 {
				return listCB{uint64(to.GA), uint64(to.GA), 0}
			}
			setPrev(a, core.GA(c.head), to.GA)
			setNext(a, core.GA(c.tail), to.GA)
			return c
		}
		n1, n2 := move(c2, l1), move(c1, l2)
		a.PutWords(l1.GA, n1.head, n1.tail, n1.count)
		a.PutWords(l2.GA, n2.head, n2.tail, n2.count)
		return a.Flush()
	})
}

// EmptyList is acp_empty_list: 1 also when the list cannot be read.
func (lb *Library) EmptyList(l List) (bool, error) {
	n, err := lb.SizeList(l)
	return n == 0, err
}

// AdvanceListIt is acp_advance_list_it: n steps forward (stopping at the
// end) or, for negative n, back (stopping at the first element).
func (lb *Library) AdvanceListIt(it ListIt, n int) (ListIt, error) {
	defer lb.hold(it.List.GA)()
	err := lb.call(func(a *heap.Access) error {
		for ; n > 0 && it.Elem != it.List.GA; n-- {
			nd, err := readNode(a, it.Elem)
			if err != nil {
				return err
			}
			it.Elem = nd.next
		}
		for ; n < 0; n++ {
			p, err := stepBack(a, it)
			if err != nil || p == it.Elem {
				return err
			}
			it.Elem = p
		}
		return nil
	})
	return it, err
}

// stepBack is the element before it; the first element stays where it is.
func stepBack(a *heap.Access, it ListIt) (core.GA, error) {
	if it.Elem == it.List.GA {
		cb, err := readList(a, it.List)
		if err != nil || cb.count == 0 {
			return it.Elem, err
		}
		return core.GA(cb.tail), nil
	}
	nd, err := readNode(a, it.Elem)
	if err != nil {
		return it.Elem, err
	}
	if nd.prev == it.List.GA {
		return it.Elem, nil
	}
	return nd.prev, nil
}

// IncrementListIt is acp_increment_list_it; the end iterator stays.
func (lb *Library) IncrementListIt(it ListIt) (ListIt, error) { return lb.AdvanceListIt(it, 1) }

// DecrementListIt is acp_decrement_list_it: from the end to the last
// element; the first element stays.
func (lb *Library) DecrementListIt(it ListIt) (ListIt, error) { return lb.AdvanceListIt(it, -1) }

// DereferenceListIt is acp_dereference_list_it: {elem + 24, value size};
// {ACP_GA_NULL, 0} for the end iterator (Q-DL-4).
func (lb *Library) DereferenceListIt(it ListIt) (Element, error) {
	defer lb.hold(it.List.GA)()
	if it.Elem == it.List.GA || it.Elem == core.GANull {
		return Element{}, errors.New("the iterator is the end iterator or ACP_GA_NULL")
	}
	var n node
	err := lb.call(func(a *heap.Access) (err error) { n, err = readNode(a, it.Elem); return })
	if err != nil {
		return Element{}, err
	}
	return n.value(), nil
}

// DistanceListIt is acp_distance_list_it: next steps from first to last,
// stopping at the end; 0 for iterators of different lists.
func (lb *Library) DistanceListIt(first, last ListIt) (int, error) {
	defer lb.hold(first.List.GA, last.List.GA)()
	if first.List != last.List {
		return 0, ErrDifferent
	}
	d := 0
	err := lb.call(func(a *heap.Access) error {
		cb, err := readList(a, first.List)
		if err != nil {
			return err
		}
		for ga := first.Elem; ga != last.Elem && ga != first.List.GA; d++ {
			if uint64(d) > cb.count {
				return fmt.Errorf("%#x is not an element of list %#x", uint64(first.Elem), uint64(first.List.GA))
			}
			n, err := readNode(a, ga)
			if err != nil {
				return err
			}
			ga = n.next
		}
		return nil
	})
	return d, err
}
