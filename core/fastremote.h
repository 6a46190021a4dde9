/*
 * fastremote.h - how a transport lends the C fast path its own C code for
 * copies to and from peers' memory (core/fast.go, fastRemote).
 *
 * The fast path (capi/fastpath.c) decodes the GAs, checks the order and
 * finds the local end when it is starter memory; the transport finds a
 * local end in registered memory, checks the remote end, posts, and
 * later reports the operation finished. Handles stay the command queue's:
 * the transport takes one through take() only once it will post, and
 * hands back the handles of operations that finished without an error.
 * Everything else (an error, a full queue, memory it cannot reach) the
 * transport declines or reports to its Go side, which finishes the handle
 * through core Engine.FinishFast.
 */
#ifndef ACP_CORE_FASTREMOTE_H
#define ACP_CORE_FASTREMOTE_H

#include <sched.h>
#include <stdint.h>

/* The spin lock of the fast state's lock word (core/fast.go takes it too,
 * handing its P over now and then: core SpinWait) and of the transports'
 * C records: a holder keeps it for a few hundred nanoseconds at most,
 * unless the scheduler preempted it. */
static inline void acpf_lock(int32_t *w)
{
	for (int i = 0;; i++) {
		int32_t zero = 0;
		if (__atomic_compare_exchange_n(w, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			return;
		if (i > 64)
			sched_yield();
	}
}

static inline void acpf_unlock(int32_t *w) { __atomic_store_n(w, 0, __ATOMIC_RELEASE); }

/* Takes the next handle of the command queue for an operation now in
 * flight (it waits while the ring is full). */
typedef int64_t (*acpf_take_fn)(void *state);

#define ACPF_FULL (-1)

/* One end of a copy, decoded from its GA (Layout.Decode). */
typedef struct acpf_end {
	int rank; /* logical */
	uint32_t seg, color;
	uint64_t off;
} acpf_end;

typedef struct acpf_remote acpf_remote;
struct acpf_remote {
	/* Starts a copy of n bytes between local memory and remote, the end in
	 * another rank's memory (its starter memory or a registration; ga is
	 * its GA); get: from the remote end into the local one, else from the
	 * local end to it. The local end is local, memory the caller can
	 * reach, or, when local is NULL, the registration of this process that
	 * mine names (a user segment). Returns the handle taken through take,
	 * or 0: declined, nothing was done, or ACPF_FULL: nothing was done
	 * because the transport's C code has as much in flight as it may; poll
	 * may make room. */
	int64_t (*copy)(acpf_remote *r, void *state, acpf_take_fn take, int get, const acpf_end *remote, uint64_t ga,
	                void *local, const acpf_end *mine, uint64_t n);
	/* Looks for finished operations once, without blocking; stores up to
	 * max handles that finished without an error and returns their count.
	 * *pending becomes 1 when only the transport's Go side can finish
	 * what remains: completions wait for it, or none of the C code's
	 * operations is in flight (a wait then enters Go at once). */
	int (*poll)(acpf_remote *r, int64_t *handles, int max, int *pending);
	/* Starts an 8-byte fetch-and-add (cas 0: add a) or compare-and-swap
	 * (cas 1: a expected, b new) on the word at remote, whose old value
	 * goes to the local end as by a get of 8 bytes. Only when the engine
	 * sends every 8-byte atomic to this transport's device (fast state
	 * ACPF_DEV_ATOMICS); remote may then be this process. NULL: never. */
	int64_t (*atomic)(acpf_remote *r, void *state, acpf_take_fn take, int cas, const acpf_end *remote, uint64_t ga,
	                  void *local, const acpf_end *mine, uint64_t a, uint64_t b);
	/* Starts a write of the 8-byte value to remote (GA ga, another rank's
	 * starter memory, the engine's area included) that takes no handle of
	 * the command queue: a barrier's arrival, which the barrier's own wait
	 * stands for. The value is copied before it returns. Returns 1 when
	 * posted, 0 when declined, or ACPF_FULL as copy does. NULL: never. */
	int (*signal)(acpf_remote *r, const acpf_end *remote, uint64_t ga, uint64_t value);
};

#endif
