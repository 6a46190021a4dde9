/*
 * acp.h - ACP (Advanced Communication Primitives) 3.0, basic layer.
 *
 * Source-compatible with the ACP 3.0 public header for the functions this
 * library implements: a program written for the original compiles
 * unchanged. Only what libacp implements is declared here; the middle layer
 * (channels, segmented buffers, global heap, containers) is added to this
 * header together with its implementation.
 *
 * Conventions of every function below:
 *  - Calls before acp_init() or after acp_finalize() return the error value
 *    named in the function's comment; with ACP_VERBOSE >= 1 a line on stderr
 *    says so.
 *  - With ACP_VERBOSE >= 1 every failing call prints one line on stderr with
 *    its arguments and the reason.
 *  - Every function may be called from several threads at once.
 */
#ifndef __ACP_H__
#define __ACP_H__

#include <stdint.h>
#include <stddef.h>

#define ACP_VERSION_MAJOR 3
#define ACP_VERSION_MINOR 0
#define ACP_VERSION_PATCH 0

#define ACP_ATKEY_NULL   0LLU
#define ACP_GA_NULL      0LLU
#define ACP_HANDLE_ALL   0xffffffffffffffffLLU
#define ACP_HANDLE_CONT  0xfffffffffffffffeLLU
#define ACP_HANDLE_NULL  0x0000000000000000LLU

/* Address translation key of a registered memory region (opaque). */
typedef uint64_t acp_atkey_t;
/* Global address: one byte of registered memory anywhere in the job. */
typedef uint64_t acp_ga_t;
/* Handle of a global memory access; consecutive per process from 1. */
typedef int64_t acp_handle_t;

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Infrastructure ---------------------------------------------------- */

/*
 * Initialises the library. Collective and blocking: returns when every
 * process of the job has initialised. Removes the "--acp-NAME VALUE" pairs
 * from argv, keeps the other arguments in order, updates *argc and sets
 * (*argv)[*argc] = NULL. argc/argv may be NULL (nothing to parse). Without
 * a launcher the program runs as rank 0 of 1.
 * Returns 0, or -1 (with a message on stderr) on an invalid option, a
 * failed start-up, a second call, or a call after acp_finalize()
 * (initialising again after acp_finalize() is not supported; use
 * acp_reset()).
 */
int acp_init(int *argc, char ***argv);

/*
 * Completes every outstanding operation and ends the library. Collective
 * and blocking. Returns 0, or -1 when not initialised or when the job could
 * not be brought to rest (the library is finalised all the same).
 */
int acp_finalize(void);

/*
 * Re-numbers the ranks: every process names its new rank; the names must
 * form a permutation of 0..acp_procs()-1. Collective and blocking. All
 * registrations and outstanding operations are dropped, all starter memory
 * is cleared and handles restart at 1. Returns 0, or -1 on every process
 * when the ranks are not a permutation (nothing changes) or when not
 * initialised.
 */
int acp_reset(int rank);

/*
 * Ends the calling process after an error: prints str (NULL is accepted)
 * with the rank on stderr, releases what would outlive the process and
 * exits with status 255. Does not return. Other processes are stopped by
 * the launcher where it can.
 */
void acp_abort(const char* str);

/*
 * Completes the caller's outstanding operations, then waits until every
 * process has called acp_sync() (barrier). Blocking. Returns 0, or -1 when
 * not initialised or when the barrier failed.
 */
int acp_sync(void);

/* The caller's rank, 0..acp_procs()-1; -1 when not initialised. */
int acp_rank(void);

/* The number of processes (>= 1); -1 when not initialised. */
int acp_procs(void);

/* ---- Global memory management ------------------------------------------ */

/*
 * GA of byte 0 of rank's starter memory (zero-filled at start, size set by
 * --acp-size-smem). Local computation, non-blocking. Returns ACP_GA_NULL
 * when rank is out of range or when not initialised.
 */
acp_ga_t acp_query_starter_ga(int rank);

/*
 * Makes [addr, addr+size) accessible to every process with colour color
 * (0..acp_colors()-1). Every call creates an independent registration, even
 * for identical or overlapping ranges. Non-blocking. Returns the key, or
 * ACP_ATKEY_NULL for a NULL addr, size 0, an invalid colour, a full
 * registration table, or when not initialised.
 */
acp_atkey_t acp_register_memory(void *addr, size_t size, int color);

/*
 * Withdraws a registration of the caller; accesses in progress finish
 * first. Non-blocking for the job. Returns 0, or -1 for ACP_ATKEY_NULL, a
 * key of another process, a key already unregistered, starter memory, or
 * when not initialised.
 */
int acp_unregister_memory(acp_atkey_t atkey);

/*
 * GA of the byte at addr inside the registration atkey. Local, non-blocking.
 * Returns ACP_GA_NULL unless base <= addr < base + size, or when not
 * initialised.
 */
acp_ga_t acp_query_ga(acp_atkey_t atkey, void *addr);

/*
 * Local pointer for a GA of the caller's own memory. Local, non-blocking.
 * Returns NULL for ACP_GA_NULL, GAs of other ranks, unregistered or
 * out-of-range GAs, or when not initialised.
 */
void* acp_query_address(acp_ga_t ga);

/* Rank owning ga; -1 for ACP_GA_NULL, invalid GAs, or when not initialised. */
int acp_query_rank(acp_ga_t ga);

/* Colour of ga; -1 for ACP_GA_NULL, invalid GAs, or when not initialised. */
int acp_query_color(acp_ga_t ga);

/* Number of colours (>= 1); -1 when not initialised. */
int acp_colors(void);

/* ---- Global memory access ---------------------------------------------- */

/*
 * Every function in this section is non-blocking: it issues the operation
 * and returns its handle (> 0) without waiting for it (it only waits while
 * ACP_QUEUE_DEPTH operations are already in flight), or ACP_HANDLE_NULL when the operation is
 * rejected at the call (invalid GA, range outside the caller's registered
 * memory, misaligned atomic, order handle not yet issued, or not
 * initialised). order is a start condition: ACP_HANDLE_NULL (start at once),
 * a handle h (start after h completed), ACP_HANDLE_ALL (after everything
 * issued before), ACP_HANDLE_CONT (after the previous operation). An access
 * that only the owner of the memory can reject completes its handle and is
 * reported with ACP_VERBOSE >= 1.
 */

/*
 * Copies size bytes from src to dst. Both ends may belong to any ranks,
 * including two ranks other than the caller. size 0 is valid.
 */
acp_handle_t acp_copy(acp_ga_t dst, acp_ga_t src, size_t size, acp_handle_t order);

/*
 * Atomic fetch-and-op on the 4- or 8-byte word at src (any rank); the old
 * value of the word is stored at dst. dst is normally the caller's memory;
 * libacp also accepts a dst of another rank. Both GAs must be aligned to the
 * operand width.
 *   cas:  if (*src == oldval) *src = newval;   (success <=> *dst == oldval)
 *   swap: *src = value;      add: *src += value (wraps around)
 *   xor, or, and: *src = *src OP value
 * Atomic with respect to every other ACP atomic on the same word.
 */
acp_handle_t acp_cas4(acp_ga_t dst, acp_ga_t src, uint32_t oldval, uint32_t newval, acp_handle_t order);
acp_handle_t acp_cas8(acp_ga_t dst, acp_ga_t src, uint64_t oldval, uint64_t newval, acp_handle_t order);
acp_handle_t acp_swap4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order);
acp_handle_t acp_swap8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order);
acp_handle_t acp_add4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order);
acp_handle_t acp_add8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order);
acp_handle_t acp_xor4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order);
acp_handle_t acp_xor8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order);
acp_handle_t acp_or4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order);
acp_handle_t acp_or8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order);
acp_handle_t acp_and4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order);
acp_handle_t acp_and8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order);

/*
 * Blocks until the operation handle and every operation the caller issued
 * before it have completed. ACP_HANDLE_ALL and ACP_HANDLE_CONT wait for
 * everything issued so far; ACP_HANDLE_NULL, completed handles and handles
 * never issued return at once, as does a call when not initialised.
 */
void acp_complete(acp_handle_t handle);

/*
 * Non-blocking test: 0 when the operation handle and every operation issued
 * before it have completed, 1 while one of them is still running.
 * ACP_HANDLE_ALL tests everything issued so far. ACP_HANDLE_NULL, handles
 * never issued, and calls when not initialised give 0.
 */
int acp_inquire(acp_handle_t handle);

/* ---- Communication library: segmented buffers and channels ------------- */

/* ---- end of the communication library ---------------------------------- */

/* ---- Data library: workspace, global heap, containers ------------------ */

/* ---- end of the data library ------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* __ACP_H__ */
