// Package reuse keeps objects and queue arrays for reuse, so that the
// paths every message takes allocate nothing once warm (the garbage
// collector, a millisecond of every CPU each time, would otherwise run
// every few thousand messages).
package reuse

// Take removes and returns the last object of list (cleared when it was
// kept), or a new one when the list is empty.
func Take[T any](list *[]*T) *T {
	n := len(*list)
	if n == 0 {
		return new(T)
	}
	x := (*list)[n-1]
	(*list)[n-1] = nil
	*list = (*list)[:n-1]
	return x
}

// Keep clears x and adds it to list, unless the list holds max already
// (then x is left to the collector). Nothing may refer to x any more.
func Keep[T any](list *[]*T, x *T, max int) {
	if len(*list) < max {
		var zero T
		*x = zero
		*list = append(*list, x)
	}
}

// DropFront removes the first n elements of a queue, clearing them. A
// queue left empty or short (8 elements) moves back to where it begins
// instead of advancing: one that only advanced would run off the end of
// its array and allocate a new one every few elements when it never quite
// empties (a channel's messages and count updates in flight together). A
// longer queue advances (a stream's datagrams in flight), and the array's
// front is lost to it until append replaces the array.
func DropFront[T any](q []T, n int) []T {
	clear(q[:n])
	left := len(q) - n
	switch {
	case left == 0:
		return q[:0]
	case left <= 8 && n > 0:
		copy(q, q[n:])
		clear(q[left:])
		return q[:left]
	}
	return q[n:]
}

// Emptied returns the array of an emptied queue for its next elements,
// or nil when it can hold more than max: a queue that is emptied after
// every message (a pingpong's) keeps its small array; one that grew for a
// burst lets the collector have it. Its elements were cleared as they
// left (DropFront).
func Emptied[T any](q []T, max int) []T {
	if cap(q) > max {
		return nil
	}
	return q[:0]
}
