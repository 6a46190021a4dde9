package ch

// Landed counts the slots that have landed in the receiver's ring and no
// receive has taken yet, for tests that must know the sender's
// announcements are all there before they post (a sleep is not enough on
// a loaded machine).
func (c *Channel) Landed() int {
	c.lock()
	defer c.unlock()
	n := 0
	for ; n < slotCount; n++ {
		if _, ok := landedSlot(slotAt(c.ring.Ptr, c.head+uint64(n)), c.head+uint64(n)+1); !ok {
			break
		}
	}
	return n
}
