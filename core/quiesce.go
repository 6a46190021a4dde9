package core

import "time"

// DrainUntil is the loop of a transport's Quiesce: it makes progress until
// busy (which takes the transport's locks itself) reports no peer with
// unfinished work, a negative value, and returns -1; or, once the deadline
// has passed, returns the peer busy last reported, for the error message.
// After the first hundred turns without progress it naps between turns.
func DrainUntil(deadline time.Time, busy func() int, progress func() bool) int {
	for i := 0; ; i++ {
		p := busy()
		if p < 0 {
			return -1
		}
		if time.Now().After(deadline) {
			return p
		}
		if !progress() && i > 100 {
			time.Sleep(20 * time.Microsecond)
		}
	}
}
