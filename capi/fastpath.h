/*
 * fastpath.h - the C fast path of libacp.
 *
 * Copies and atomics whose both ends this process can touch directly (its
 * own starter memory, and starter memory of processes on the same host,
 * mapped through shared memory) are completed here without calling into
 * Go, when their start condition already holds. Copies between such memory
 * (or a registration of this process) and another rank's memory go to the
 * C code a transport lent the fast state (core/fastremote.h), which posts
 * them; waits poll it. Everything else, and every
 * error, takes the ordinary path through Go, where the semantics are
 * defined; this code repeats only the cheapest case, under the same lock
 * and with the same counters (core/fast.go keeps the layout below).
 */
#ifndef ACP_FASTPATH_H
#define ACP_FASTPATH_H

#include <stddef.h>
#include <stdint.h>

#include "acp.h"

/* Offsets into the fast state (core/fast.go). */
#define ACPF_LOCK        0
#define ACPF_ISSUED      64
#define ACPF_DONE        128
#define ACPF_ENABLED     192
#define ACPF_ME          196
#define ACPF_NPROCS      200
#define ACPF_RANK_SHIFT  204
#define ACPF_SEG_SHIFT   208
#define ACPF_SEG_MASK    216
#define ACPF_OFF_MASK    224
#define ACPF_COLOR_MASK  232
#define ACPF_DEPTH       240
#define ACPF_WIN_BASE    244
#define ACPF_WIN_LEN     248
#define ACPF_BAR_LOCK    256
#define ACPF_BAR_ON      260
#define ACPF_BAR_LAST    264
#define ACPF_BAR_LOCALS  268
#define ACPF_BAR_EPOCH   272
#define ACPF_BAR_ARRIVE  280
#define ACPF_BAR_RELEASE 288
#define ACPF_BAR_SPIN    296
#define ACPF_BAR_YIELD   304
#define ACPF_BAR_ROUNDS  312
#define ACPF_BAR_MINE    320
#define ACPF_WAITING     400
#define ACPF_DEV_ATOMICS 404
#define ACPF_REMOTE      408
#define ACPF_BAR_GAMASK  416
#define ACPF_BAR_LEAD    420
#define ACPF_BAR_PENDING 424
#define ACPF_BAR_PEERS   512
#define ACPF_TABLE       768
#define ACPF_ENTRY_SIZE  48
#define ACPF_MAX_WINDOW  4096

/* The fast state of the running engine, or NULL (set by capi/infra.go). */
void acpfast_set(void *state);

/* memmove, with the copy this machine does fastest for large copies
 * between non-overlapping ranges (fastpath.c, vector_copy_min). */
void acpfast_move(void *d, const void *s, size_t n);
/* acpfast_move copies n bytes and more with AVX2 loads and stores (Go's
 * decision, internal/memcopy; SIZE_MAX, never, until set). */
void acpfast_vector_copies_from(size_t n);
/* The large copy itself, whatever the CPU's vendor, where it has AVX2 (1;
 * 0: not run). For tests. */
int acpfast_vector_copy(void *d, const void *s, size_t n);

/* Each returns a completed handle, or ACP_HANDLE_NULL: take the ordinary
 * path (which also reports errors). state NULL means the process-wide one. */
acp_handle_t acpfast_copy(void *state, acp_ga_t dst, acp_ga_t src, size_t size, acp_handle_t order);
/* acpfast_copy for the library's own copies, whose ends may be in its
 * own starter memory too (a channel's release of slots). */
acp_handle_t acpfast_lib_copy(void *state, acp_ga_t dst, acp_ga_t src, size_t size, acp_handle_t order);
acp_handle_t acpfast_atomic(void *state, int op, acp_ga_t dst, acp_ga_t src, uint64_t a, uint64_t b, acp_handle_t order);

/* 1 when every operation up to handle is complete (nothing to wait for),
 * 0 when the ordinary path must decide: acpfast_test after looking once
 * for finished operations of a transport's C code (acp_inquire),
 * acpfast_wait after polling it for up to the spin time (acp_complete). */
int acpfast_test(void *state, acp_handle_t handle);
int acpfast_wait(void *state, acp_handle_t handle);

/* 1 when the operation of handle itself completed, whatever ran before it
 * (its done flag, or the done mark past it), after looking once for
 * finished operations of a transport's C code; 0 otherwise, also for
 * handles never issued. For the library's own reuse of memory that one
 * operation read (a channel's staging slot), which must not wait for
 * unrelated operations issued earlier: those may be the Go side's, seen
 * complete only when its progress runs. */
int acpfast_op_done(void *state, acp_handle_t handle);

/* acp_sync when nothing is outstanding and this process's part of the
 * barrier is stores into memory mapped here, writes the transport's C code
 * posts (its signal), and waits in our own memory: a dissemination over
 * everybody or, hierarchically, an arrival at the host's leader, whose
 * part adds the dissemination among the hosts' leaders. Returns 0 when the
 * barrier is over; -1 when the ordinary path must run it (nothing was
 * done); an epoch > 0 when this process entered that barrier but could not
 * finish it here (others are slow to arrive, or a write was declined): the
 * ordinary path must finish it (core Engine.FinishSync), which also
 * releases the barrier's lock. */
int64_t acpfast_sync(void *state);

/* Queries answered from the fast state while the engine runs (core
 * Engine.Rank, Procs, StarterGA, QueryRank, QueryColor, and QueryAddress
 * for this process's starter memories). Each returns 1 with the answer in
 * *out, or 0: the ordinary path must answer (and report any error). */
int acpfast_rank(void *state, int *out);
int acpfast_procs(void *state, int *out);
int acpfast_starter_ga(void *state, int rank, acp_ga_t *out);
int acpfast_query_rank(void *state, acp_ga_t ga, int *out);
int acpfast_query_color(void *state, acp_ga_t ga, int *out);
int acpfast_query_address(void *state, acp_ga_t ga, void **out);

/* How long waits spin before they yield, in ns (core Engine.SpinTime). */
uint64_t acpfast_spin(void);

#endif
