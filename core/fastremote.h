/*
 * fastremote.h - how a transport lends the C fast path its own C code for
 * copies to and from peers' starter memory (core/fast.go, fastRemote).
 *
 * The fast path (capi/fastpath.c) decodes the GA, checks the order and
 * finds the local end; the transport checks the remote end, posts, and
 * later reports the operation finished. Handles stay the command queue's:
 * the transport takes one through take() only once it will post, and
 * hands back the handles of operations that finished without an error.
 * Everything else (an error, a full queue, memory it cannot reach) the
 * transport declines or reports to its Go side, which finishes the handle
 * through core Engine.FinishFast.
 */
#ifndef ACP_CORE_FASTREMOTE_H
#define ACP_CORE_FASTREMOTE_H

#include <stdint.h>

/* Takes the next handle of the command queue for an operation now in
 * flight (it waits while the ring is full). */
typedef int64_t (*acpf_take_fn)(void *state);

typedef struct acpf_remote acpf_remote;
struct acpf_remote {
	/* Starts a copy between local memory (local, n bytes, reachable by the
	 * caller) and starter segment seg at offset off of logical rank rank;
	 * get: from the remote end into local, else from local to it. Returns
	 * the handle taken through take, or 0: declined, nothing was done. */
	int64_t (*copy)(acpf_remote *r, void *state, acpf_take_fn take, int get, int rank, uint32_t seg,
	                uint64_t off, uint64_t ga, void *local, uint64_t n);
	/* Looks for finished operations once, without blocking; stores up to
	 * max handles that finished without an error and returns their count.
	 * *pending becomes 1 when only the transport's Go side can finish
	 * what remains: completions wait for it, or none of the C code's
	 * operations is in flight (a wait then enters Go at once). */
	int (*poll)(acpf_remote *r, int64_t *handles, int max, int *pending);
};

#endif
