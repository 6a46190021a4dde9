package core

import "fmt"

// Status is the outcome of an access checked at the owner of the memory. It
// is small enough to travel in one byte of any transport's reply.
type Status uint8

// Statuses. StatusOK is zero so that a zeroed reply means success.
const (
	StatusOK          Status = iota
	StatusWrongRank          // the GA's rank field names another process
	StatusBadSegment         // no live registration has this segment number
	StatusOutOfBounds        // [offset, offset+size) leaves the registered region
	StatusMisaligned         // atomic target not aligned to its width
	StatusBadRequest         // malformed request (unknown operation, bad size)
	StatusPeerGone           // the peer finalized or failed before answering
	StatusFault              // the registered memory faulted (read-only, or protected or unmapped since its registration)
)

var statusText = [...]string{
	StatusOK:          "ok",
	StatusWrongRank:   "address belongs to another rank",
	StatusBadSegment:  "no registered memory with that segment (unregistered, or never registered)",
	StatusOutOfBounds: "range leaves the registered region",
	StatusMisaligned:  "atomic target is not aligned to its width",
	StatusBadRequest:  "malformed request",
	StatusPeerGone:    "peer is gone",
	StatusFault:       "the memory faulted: registered read-only, or protected or unmapped since its registration",
}

func (s Status) String() string {
	if int(s) < len(statusText) {
		return statusText[s]
	}
	return fmt.Sprintf("status %d", uint8(s))
}

// Err turns a status into an error (nil for StatusOK).
func (s Status) Err() error {
	if s == StatusOK {
		return nil
	}
	return &AccessError{Status: s, Rank: -1}
}

// AccessError reports a rejected access. The engine adds which operation and
// which address; the transport only knows the status.
type AccessError struct {
	Status Status
	Rank   int    // rank that rejected the access, -1 if local
	GA     GA     // start of the rejected range, 0 if unknown
	Size   uint64 // size of the rejected range
	Hint   string // what to change, when the engine knows (a starter memory's size setting)
}

func (e *AccessError) Error() string {
	where := "here"
	if e.Rank >= 0 {
		where = fmt.Sprintf("by rank %d", e.Rank)
	}
	hint := ""
	if e.Hint != "" {
		hint = " (" + e.Hint + ")"
	}
	if e.GA != 0 {
		return fmt.Sprintf("access to GA %#x size %d rejected %s: %s%s", uint64(e.GA), e.Size, where, e.Status, hint)
	}
	return fmt.Sprintf("access rejected %s: %s%s", where, e.Status, hint)
}

// StatusOf extracts a status from an error returned by a transport or the
// registration table (StatusBadRequest for anything unexpected).
func StatusOf(err error) Status {
	if err == nil {
		return StatusOK
	}
	if ae, ok := err.(*AccessError); ok {
		return ae.Status
	}
	return StatusBadRequest
}
