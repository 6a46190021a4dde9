/*
 * acp.h - ACP (Advanced Communication Primitives) 3.0: the basic layer
 * (global memory, its accesses and atomics) and the middle layer: the
 * communication library (segmented buffers, channels) and the data
 * library (workspaces, the global heap, vector, deque, list, set,
 * multiset, map).
 *
 * Source-compatible with the ACP 3.0 public header for the functions this
 * library implements: a program written for the original compiles
 * unchanged. Only what libacp implements is declared here.
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
 * form a permutation of 0..acp_procs()-1. Collective and blocking. Every
 * process's outstanding operations are completed first; then all
 * registrations are dropped, all starter memory is cleared and handles
 * restart at 1. Returns 0, or -1 on every process
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
 * ACP_ATKEY_NULL for a NULL addr, size 0, a range that is not all mapped
 * memory (size larger than the allocation), an invalid colour, a full
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

/*
 * Channels, requests and segmented buffers are opaque handles; NULL is
 * the failure value of every call that returns one (ACP_CH_NULL,
 * ACP_REQUEST_NULL and ACP_SEGBUF_NULL name it). A handle used after its
 * object was freed, or kept across acp_reset(), is refused like NULL.
 * With --acp-size-smem-cl 0 (or a program that defines
 * iacp_starter_memory_size_cl = 0 and sets no size) the communication
 * library is off and every call fails. Both ends of a channel or a
 * segmented buffer must be different processes. Connections and transfers
 * progress in the background: a peer busy elsewhere does not hold them up.
 */
typedef struct chreqitem *acp_request_t;
typedef struct chitem *acp_ch_t;
typedef struct segbufitem *acp_segbuf_t;

#ifndef ACP_CH_NULL
#define ACP_CH_NULL      ((acp_ch_t)NULL)
#endif
#ifndef ACP_REQUEST_NULL
#define ACP_REQUEST_NULL ((acp_request_t)NULL)
#endif
#ifndef ACP_SEGBUF_NULL
#define ACP_SEGBUF_NULL  ((acp_segbuf_t)NULL)
#endif

/*
 * Segmented buffer: a ring of segnum segments of segsize bytes in buf,
 * mirrored from a source process to a destination process. Counters grow
 * from 0: the source's tail counts acp_ack_segbuf() calls, the
 * destination's head counts acp_ready_segbuf() calls; segments in
 * [head, tail) hold data. The queries show counters modulo segnum. Calls
 * that find the segmented buffer not connected (yet, or any more), freed,
 * or called on the wrong end return -1.
 */

/*
 * Creates the source end towards dst_rank over buf (segsize * segnum
 * bytes, registered here; it must stay valid until acp_free_segbuf()).
 * Non-blocking: the connection completes in the background; several
 * segmented buffers between the same two processes are matched in
 * creation order. Returns NULL for a rank out of range or equal to the
 * caller's, a NULL buf, segsize or segnum 0, a buffer that cannot be
 * registered.
 */
acp_segbuf_t acp_create_src_segbuf(int dst_rank, void *buf, size_t segsize, size_t segnum);

/*
 * Creates the destination end; dst_rank is the SOURCE rank (the name is
 * the original header's). Both ends must give the same segsize and
 * segnum, or the connection fails on both. Otherwise as
 * acp_create_src_segbuf().
 */
acp_segbuf_t acp_create_dst_segbuf(int dst_rank, void *buf, size_t segsize, size_t segnum);

/* Blocks until connected. 0, or -1 (bad handle, connection refused). */
int acp_connect_segbuf(acp_segbuf_t segbuf);

/* Makes progress once: 0 connected, 1 not yet, -1 bad handle or refused. */
int acp_isconnected_segbuf(acp_segbuf_t segbuf);

/*
 * Destination: releases segment head % segnum, which the source may then
 * write again. 0, or -1 when no segment holds data.
 */
int acp_ready_segbuf(acp_segbuf_t segbuf);

/*
 * Source: copies segment tail % segnum of buf to the same place of the
 * destination's buffer; the destination's tail grows once the data has
 * landed. Non-blocking. 0, or -1 when every segment holds data (ring full).
 */
int acp_ack_segbuf(acp_segbuf_t segbuf);

/* 0 when a segment can be written (tail - head < segnum), 1 when full. */
int acp_isready_segbuf(acp_segbuf_t segbuf);

/* 0 when a segment holds data (tail > head), 1 when none does. */
int acp_isacked_segbuf(acp_segbuf_t segbuf);

/*
 * Counters modulo segnum, after one progress step, or -1. sent is the
 * source's count of completed segment copies; on the destination it
 * equals tail.
 */
int64_t acp_query_segbuf_head(acp_segbuf_t segbuf);
int64_t acp_query_segbuf_tail(acp_segbuf_t segbuf);
int64_t acp_query_segbuf_sent(acp_segbuf_t segbuf);

/*
 * Ends this side's use: the peer learns it after everything this side
 * did before. Afterwards only acp_free_segbuf() is allowed. 0, or -1 when
 * not connected.
 */
int acp_disconnect_segbuf(acp_segbuf_t segbuf);

/*
 * Blocks until the peer disconnected too, unregisters buf and frees the
 * handle. 0, or -1 before acp_disconnect_segbuf().
 */
int acp_free_segbuf(volatile acp_segbuf_t segbuf);

/*
 * Channel: a one-directional, in-order pipe of messages from sender to
 * receiver. Messages of any size (0 bytes and up) keep their boundaries.
 * Requests are unlimited in number; each is waited for exactly once with
 * acp_wait_ch() or acp_waitall_ch(), which also releases it.
 */

/*
 * Creates the caller's end of a channel; both processes call it with the
 * same arguments, and the k-th channel created between the same sender
 * and receiver meets the k-th on the other side. Non-blocking: messages
 * may be posted at once. Returns NULL for a rank out of range, sender ==
 * receiver, or a caller that is neither.
 */
acp_ch_t acp_create_ch(int sender, int receiver);

/* acp_nbfree_ch() + acp_wait_ch(). 0, or -1 for a bad handle. */
int acp_free_ch(acp_ch_t ch);

/*
 * Starts freeing the caller's end after every request posted on it
 * before. The request completes on the sender once its messages are
 * written (rendezvous buffers given back), on the receiver once its
 * earlier receives completed: neither end waits for the other's free, so
 * the ends may be freed in any order. The freed end lingers in the
 * background until the other side is done with it; messages that still
 * arrive at a freed receiver are dropped, and receives that a freed
 * sender never matches fail. The channel takes no new requests. Returns
 * NULL for a bad handle or a second call. Requests that are never waited
 * for still finish; acp_finalize() copes with them.
 */
acp_request_t acp_nbfree_ch(acp_ch_t ch);

/*
 * Posts a message of size bytes from buf (sender's end). buf must not
 * change until the request is waited for. Returns NULL for a bad handle,
 * the receiver's end, a channel being freed, or a NULL buf with size > 0.
 */
acp_request_t acp_nbsend_ch(acp_ch_t ch, void * buf, size_t size);

/*
 * Posts a receive into buf of size bytes (receiver's end). Messages are
 * taken in order; of a longer message the first size bytes are kept.
 * Returns NULL as acp_nbsend_ch() does.
 */
acp_request_t acp_nbrecv_ch(acp_ch_t ch, void * buf, size_t size);

/*
 * Blocks until the request completed and releases it. Returns the bytes
 * received (receives: the smaller of the message and the buffer), 0
 * (sends and frees), or (size_t)-1 for a NULL, unknown or already waited
 * request, or one that failed (a receive whose sender freed the channel
 * without a message for it).
 */
size_t acp_wait_ch(acp_request_t request);

/*
 * Waits for request[0..n-1] in order; stores each acp_wait_ch() result
 * into sizes[i] when sizes is not NULL. Returns 0, or -1 when any
 * request failed or was bad, or request is NULL with n > 0, or n < 0.
 */
int acp_waitall_ch(acp_request_t *request, int, size_t *);

/* ---- end of the communication library ---------------------------------- */

/* ---- Data library: workspace, global heap, containers ------------------ */

/*
 * Every data-library call is blocking and first completes the caller's
 * outstanding global memory accesses (as acp_complete(ACP_HANDLE_ALL)). A
 * call that cannot do its work (bad argument, heap exhausted) leaves the
 * container as it was and returns the "empty" value named in its comment
 * (ACP_GA_NULL, 0, an unchanged iterator...); ACP_VERBOSE=1 says why.
 * Structures live in the global heap (acp_malloc) with the original ACP's
 * byte layouts, so programs may read them through acp_query_address.
 * Calls on one vector, deque or list from several threads of a process
 * take turns (merge and sort excepted: they call the program's comparison
 * function); from several ranks at once they are not atomic. Sets,
 * multisets and maps lock each hash slot.
 */

/* Workspace descriptor: a byte array spread over consecutive ranks. */
typedef struct {
    size_t size_ws;          /* bytes of the workspace */
    size_t size_default;     /* bytes per chunk */
    size_t size_remainder;   /* size_ws % size_default */
    size_t ngas;             /* number of chunks */
    acp_atkey_t key_data;    /* this rank's chunk (0 when it has none) */
    acp_ga_t ga_data;
    acp_atkey_t *keys;       /* per chunk: its key on its own rank, else 0 */
    acp_ga_t *gas;           /* per chunk: GA */
    int *procs;              /* per chunk: rank */
    int *sizes;              /* per chunk: bytes */
    void *data;              /* this rank's chunk, NULL when it has none */
} acp_wsditem;
typedef acp_wsditem *acp_wsd_t;
#define ACP_WSD_NULL (acp_wsd_t)(-1)

/* A byte range in global memory. */
typedef struct {
    acp_ga_t ga;
    size_t size;
} acp_element_t;

typedef struct {
    acp_element_t first;
    acp_element_t second;
} acp_pair_t;

/* Vector: a byte array; sizes, capacities and indices are in bytes. */
typedef struct {
    acp_ga_t ga;
} acp_vector_t;

typedef struct {
    acp_vector_t vector;
    int index;
} acp_vector_it_t;

/* Deque: a byte ring; indices are logical byte positions. */
typedef struct {
    acp_ga_t ga;
} acp_deque_t;

typedef struct {
    acp_deque_t deque;
    int index;
} acp_deque_it_t;

/* List: doubly linked; the end iterator is {list, list.ga}. */
typedef struct {
    acp_ga_t ga;
} acp_list_t;

typedef struct {
    acp_list_t list;
    acp_ga_t elem;
} acp_list_it_t;

/* Hashed containers: the null (end) iterator is {h, num_ranks, 0, 0}. */
typedef struct {
    acp_ga_t ga;
    uint64_t num_ranks;
    uint64_t num_slots;
} acp_set_t;

typedef struct {
    acp_set_t set;
    int rank;
    int slot;
    acp_ga_t elem;
} acp_set_it_t;

typedef struct {
    acp_ga_t ga;
    uint64_t num_ranks;
    uint64_t num_slots;
} acp_multiset_t;

typedef struct {
    acp_multiset_t set;
    int rank;
    int slot;
    acp_ga_t elem;
} acp_multiset_it_t;

typedef struct {
    acp_ga_t ga;
    uint64_t num_ranks;
    uint64_t num_slots;
} acp_map_t;

typedef struct {
    acp_map_t map;
    int rank;
    int slot;
    acp_ga_t elem;
} acp_map_it_t;

/* Declared for compatibility; no function uses it. */
typedef struct {
    acp_map_it_t it;
    int success;
} acp_map_ib_t;

/*
 * Workspace. acp_create_ws and acp_destroy_ws are collective. Chunks of
 * size_default bytes (default 1 MiB) live on ranks proc_start,
 * proc_start+1, ... (default 0). acp_setparams_ws returns 0, or 1 for
 * size_default 0 or proc_start outside 0..acp_procs()-1. acp_create_ws
 * returns ACP_WSD_NULL when the chunks need more ranks than follow
 * proc_start. acp_read_ws/acp_write_ws copy between workspace bytes
 * [offset, offset+size) and [ga, ga+size); they return 0, or 1 when the
 * range is outside the workspace or a copy failed. Workspaces need no
 * data-library starter memory. Creations and destructions called by
 * several threads of a process run one at a time, as acp_sync() does: the
 * k-th of every process meet.
 */
acp_wsd_t acp_create_ws(size_t size);
int acp_setparams_ws( size_t proc_start, size_t size_default );
void acp_destroy_ws(acp_wsd_t WSD);
int acp_read_ws(acp_wsd_t WSD, acp_ga_t ga, size_t size, size_t offset);
int acp_write_ws(acp_wsd_t WSD, const acp_ga_t ga, size_t size, size_t offset);

/*
 * Global heap. acp_malloc allocates size bytes (rounded up to a multiple of
 * 8, at least 8; not cleared) in the heap of rank, which lives in that
 * rank's data-library starter memory (--acp-size-smem-dl /
 * ACP_SIZE_SMEM_DL), without the target's help. Any number of ranks may
 * allocate on one rank at once. Returns an 8-byte aligned GA, or
 * ACP_GA_NULL when no block is large enough or rank is invalid.
 * acp_free returns a block; ACP_GA_NULL and GAs that are not the start of
 * an allocated block are ignored.
 */
acp_ga_t acp_malloc(size_t size, int rank);
void acp_free(acp_ga_t ga);

/*
 * Containers (vector, deque, list, set, multiset, map): a call given a
 * size that no memory or no heap holds, or bytes at a GA that cannot be
 * read, returns its empty value (0, ACP_GA_NULL, an unchanged or null
 * iterator) and changes nothing. A call that runs while another thread of
 * the process destroys the container finishes first or finds it destroyed
 * (its empty value). A container handle is only a GA: once the
 * destruction returned, its blocks may be allocated again, and a call
 * with the old handle then works on whatever holds them.
 *
 * Vector. Control block {body GA, size, capacity} on the rank given at
 * creation; the body is on the same rank. acp_create_vector(size, rank)
 * makes a vector that holds size (uninitialised) bytes. Capacity grows to
 * exactly the bytes needed, rounded up to 8. Insert and erase return the
 * iterator they were given; acp_erase_range_vector returns end when the
 * range is empty or spans two vectors. acp_at_vector returns ACP_GA_NULL
 * outside the vector, acp_dereference_vector_it for a negative index only
 * (body + index otherwise, as in the original).
 */
void acp_assign_vector(acp_vector_t vector1, acp_vector_t vector2);
void acp_assign_range_vector(acp_vector_t vector, acp_vector_it_t start, acp_vector_it_t end);
acp_ga_t acp_at_vector(acp_vector_t vector, int index);
acp_vector_it_t acp_begin_vector(acp_vector_t vector);
size_t acp_capacity_vector(acp_vector_t vector);
void acp_clear_vector(acp_vector_t vector);
acp_vector_t acp_create_vector(size_t size, int rank);
void acp_destroy_vector(acp_vector_t vector);
int acp_empty_vector(acp_vector_t vector);
acp_vector_it_t acp_end_vector(acp_vector_t vector);
acp_vector_it_t acp_erase_vector(acp_vector_it_t it, size_t size);
acp_vector_it_t acp_erase_range_vector(acp_vector_it_t start, acp_vector_it_t end);
acp_vector_it_t acp_insert_vector(acp_vector_it_t it, const acp_ga_t ga, size_t size);
acp_vector_it_t acp_insert_range_vector(acp_vector_it_t it, acp_vector_it_t start, acp_vector_it_t end);
void acp_pop_back_vector(acp_vector_t vector, size_t size);
void acp_push_back_vector(acp_vector_t vector, const acp_ga_t ga, size_t size);
void acp_reserve_vector(acp_vector_t vector, size_t size);
size_t acp_size_vector(acp_vector_t vector);
void acp_swap_vector(acp_vector_t vector1, acp_vector_t vector2);
acp_vector_it_t acp_advance_vector_it(acp_vector_it_t it, int n);
acp_ga_t acp_dereference_vector_it(acp_vector_it_t it);
int acp_distance_vector_it(acp_vector_it_t first, acp_vector_it_t last);

/*
 * Deque. Control block {body GA, offset, size, capacity}; logical byte i is
 * at body + (offset + i) % capacity. acp_create_deque(size, rank) makes an
 * empty deque with room for size bytes. A full deque grows to exactly the
 * bytes needed (linearised, offset 0). acp_dereference_deque_it describes
 * up to size bytes from the iterator as at most two physical pieces
 * (all-NULL outside the deque).
 */
void acp_assign_deque(acp_deque_t deque1, acp_deque_t deque2);
void acp_assign_range_deque(acp_deque_t deque, acp_deque_it_t start, acp_deque_it_t end);
acp_ga_t acp_at_deque(acp_deque_t deque, int index);
acp_deque_it_t acp_begin_deque(acp_deque_t deque);
size_t acp_capacity_deque(acp_deque_t deque);
void acp_clear_deque(acp_deque_t deque);
acp_deque_t acp_create_deque(size_t size, int rank);
void acp_destroy_deque(acp_deque_t deque);
int acp_empty_deque(acp_deque_t deque);
acp_deque_it_t acp_end_deque(acp_deque_t deque);
acp_deque_it_t acp_erase_deque(acp_deque_it_t it, size_t size);
acp_deque_it_t acp_erase_range_deque(acp_deque_it_t start, acp_deque_it_t end);
acp_deque_it_t acp_insert_deque(acp_deque_it_t it, const acp_ga_t ga, size_t size);
acp_deque_it_t acp_insert_range_deque(acp_deque_it_t it, acp_deque_it_t start, acp_deque_it_t end);
void acp_pop_back_deque(acp_deque_t deque, size_t size);
void acp_pop_front_deque(acp_deque_t deque, size_t size);
void acp_push_back_deque(acp_deque_t deque, const acp_ga_t ga, size_t size);
void acp_push_front_deque(acp_deque_t deque, const acp_ga_t ga, size_t size);
void acp_reserve_deque(acp_deque_t deque, size_t size);
size_t acp_size_deque(acp_deque_t deque);
void acp_swap_deque(acp_deque_t deque1, acp_deque_t deque2);
acp_deque_it_t acp_advance_deque_it(acp_deque_it_t it, int n);
acp_pair_t acp_dereference_deque_it(acp_deque_it_t it, size_t size);
int acp_distance_deque_it(acp_deque_it_t first, acp_deque_it_t last);

/*
 * List. Control block {head, tail, count}; element {next, prev, value size,
 * value bytes}, each element in the heap of the rank given when it was
 * inserted (copies made by assign and insert_range stay on their source's
 * rank). acp_insert_list returns an iterator to the new element, with elem
 * ACP_GA_NULL on failure; acp_erase_list returns the following element.
 * merge and sort call comp with {value GA, size} pairs; comp returns <0, 0
 * or >0 like strcmp and may call the library (no lock is held). When
 * another thread of the process changes a list while comp runs, merge and
 * sort start again (up to 100 times, then leave the lists as they were):
 * no element is lost.
 * acp_dereference_list_it of the end iterator is {ACP_GA_NULL, 0}.
 */
void acp_assign_list(acp_list_t list1, acp_list_t list2);
void acp_assign_range_list(acp_list_t list, acp_list_it_t start, acp_list_it_t end);
acp_list_it_t acp_begin_list(acp_list_t list);
void acp_clear_list(acp_list_t list);
acp_list_t acp_create_list(int rank);
void acp_destroy_list(acp_list_t list);
int acp_empty_list(acp_list_t list);
acp_list_it_t acp_end_list(acp_list_t list);
acp_list_it_t acp_erase_list(acp_list_it_t it);
acp_list_it_t acp_erase_range_list(acp_list_it_t start, acp_list_it_t end);
acp_list_it_t acp_insert_list(acp_list_it_t it, const acp_element_t elem, int rank);
acp_list_it_t acp_insert_range_list(acp_list_it_t it, acp_list_it_t start, acp_list_it_t end);
void acp_merge_list(acp_list_t list1, acp_list_t list2, int (*comp)(const acp_element_t elem1, const acp_element_t elem2));
void acp_pop_back_list(acp_list_t list);
void acp_pop_front_list(acp_list_t list);
void acp_push_back_list(acp_list_t list, const acp_element_t elem, int rank);
void acp_push_front_list(acp_list_t list, const acp_element_t elem, int rank);
void acp_remove_list(acp_list_t list, const acp_element_t elem);
void acp_reverse_list(acp_list_t list);
size_t acp_size_list(acp_list_t list);
void acp_sort_list(acp_list_t list, int (*comp)(const acp_element_t elem1, const acp_element_t elem2));
void acp_splice_list(acp_list_it_t it1, acp_list_it_t it2);
void acp_splice_range_list(acp_list_it_t it, acp_list_it_t start, acp_list_it_t end);
void acp_swap_list(acp_list_t list1, acp_list_t list2);
void acp_unique_list(acp_list_t list);
acp_list_it_t acp_advance_list_it(acp_list_it_t it, int n);
acp_list_it_t acp_decrement_list_it(acp_list_it_t it);
acp_element_t acp_dereference_list_it(acp_list_it_t it);
int acp_distance_list_it(acp_list_it_t first, acp_list_it_t last);
acp_list_it_t acp_increment_list_it(acp_list_it_t it);

/*
 * Set, multiset, map. acp_create_*(num_ranks, ranks, num_slots, rank):
 * a directory on rank and a table of num_slots slots on each ranks[i];
 * num_ranks 0 means every rank (ranks may be NULL). Keys are byte ranges
 * hashed with CRC-64/ECMA >> 16: table (h / num_slots) % num_ranks, slot
 * h % num_slots. Iteration runs over tables, slots, then insertion order.
 * acp_insert_set returns 1 when the key is in the set afterwards;
 * acp_insert_multiset counts the key; acp_insert_map returns 1 for a new
 * key, 0 when the key exists (its value is kept) or the value is empty
 * (which removes the key). acp_size_* counts distinct keys. The _local
 * variants use only the tables on the caller's rank; assign_local clears
 * only those of the destination. Merge, move, assign and swap of a
 * container with itself change nothing.
 */
void acp_assign_local_set(acp_set_t set1, acp_set_t set2);
void acp_assign_set(acp_set_t set1, acp_set_t set2);
acp_set_it_t acp_begin_local_set(acp_set_t set);
acp_set_it_t acp_begin_set(acp_set_t set);
void acp_clear_set(acp_set_t set);
acp_set_t acp_create_set(int num_ranks, const int* ranks, int num_slots, int rank);
void acp_destroy_set(acp_set_t set);
int acp_empty_local_set(acp_set_t set);
int acp_empty_set(acp_set_t set);
acp_set_it_t acp_end_local_set(acp_set_t set);
acp_set_it_t acp_end_set(acp_set_t set);
acp_set_it_t acp_find_set(acp_set_t set, acp_element_t key);
int acp_insert_set(acp_set_t set, acp_element_t key);
void acp_merge_local_set(acp_set_t set1, acp_set_t set2);
void acp_merge_set(acp_set_t set1, acp_set_t set2);
void acp_move_local_set(acp_set_t set1, acp_set_t set2);
void acp_move_set(acp_set_t set1, acp_set_t set2);
void acp_remove_set(acp_set_t set, acp_element_t key);
size_t acp_size_local_set(acp_set_t set);
size_t acp_size_set(acp_set_t set);
void acp_swap_set(acp_set_t set1, acp_set_t set2);
acp_element_t acp_dereference_set_it(acp_set_it_t it);
acp_set_it_t acp_increment_set_it(acp_set_it_t it);
void acp_assign_local_multiset(acp_multiset_t set1, acp_multiset_t set2);
void acp_assign_multiset(acp_multiset_t set1, acp_multiset_t set2);
acp_multiset_it_t acp_begin_local_multiset(acp_multiset_t set);
acp_multiset_it_t acp_begin_multiset(acp_multiset_t set);
void acp_clear_multiset(acp_multiset_t set);
acp_multiset_t acp_create_multiset(int num_ranks, const int* ranks, int num_slots, int rank);
void acp_destroy_multiset(acp_multiset_t set);
int acp_empty_local_multiset(acp_multiset_t set);
int acp_empty_multiset(acp_multiset_t set);
acp_multiset_it_t acp_end_local_multiset(acp_multiset_t set);
acp_multiset_it_t acp_end_multiset(acp_multiset_t set);
acp_multiset_it_t acp_find_multiset(acp_multiset_t set, acp_element_t key);
int acp_insert_multiset(acp_multiset_t set, acp_element_t key);
void acp_merge_local_multiset(acp_multiset_t set1, acp_multiset_t set2);
void acp_merge_multiset(acp_multiset_t set1, acp_multiset_t set2);
void acp_move_local_multiset(acp_multiset_t set1, acp_multiset_t set2);
void acp_move_multiset(acp_multiset_t set1, acp_multiset_t set2);
void acp_remove_multiset(acp_multiset_t set, acp_element_t key);
void acp_remove_all_multiset(acp_multiset_t set, acp_element_t key);
uint64_t acp_retrieve_multiset(acp_multiset_t set, acp_element_t key);
size_t acp_size_local_multiset(acp_multiset_t set);
size_t acp_size_multiset(acp_multiset_t set);
void acp_swap_multiset(acp_multiset_t set1, acp_multiset_t set2);
acp_element_t acp_dereference_multiset_it(acp_multiset_it_t it);
acp_multiset_it_t acp_increment_multiset_it(acp_multiset_it_t it);
void acp_assign_local_map(acp_map_t map1, acp_map_t map2);
void acp_assign_map(acp_map_t map1, acp_map_t map2);
acp_map_it_t acp_begin_local_map(acp_map_t map);
acp_map_it_t acp_begin_map(acp_map_t map);
void acp_clear_local_map(acp_map_t map);
void acp_clear_map(acp_map_t map);
acp_map_t acp_create_map(int num_ranks, const int* ranks, int num_slots, int rank);
void acp_destroy_map(acp_map_t map);
int acp_empty_local_map(acp_map_t map);
int acp_empty_map(acp_map_t map);
acp_map_it_t acp_end_local_map(acp_map_t map);
acp_map_it_t acp_end_map(acp_map_t map);
acp_map_it_t acp_find_map(acp_map_t map, acp_element_t key);
int acp_insert_map(acp_map_t map, acp_pair_t pair);
void acp_merge_local_map(acp_map_t map1, acp_map_t map2);
void acp_merge_map(acp_map_t map1, acp_map_t map2);
void acp_move_local_map(acp_map_t map1, acp_map_t map2);
void acp_move_map(acp_map_t map1, acp_map_t map2);
void acp_remove_map(acp_map_t map, acp_element_t key);
size_t acp_retrieve_map(acp_map_t map, acp_pair_t pair);
size_t acp_size_local_map(acp_map_t map);
size_t acp_size_map(acp_map_t map);
void acp_swap_map(acp_map_t map1, acp_map_t map2);
acp_pair_t acp_dereference_map_it(acp_map_it_t it);
acp_map_it_t acp_increment_map_it(acp_map_it_t it);

/*
 * Type-generic forwarding macros of the original header:
 * acp_X(type, args...) is acp_X_type(args...), e.g.
 * acp_push_back(vector, v, ga, n), acp_remove(all_multiset, s, key),
 * acp_advance(list_it, it, n). Some names have no function (reserved).
 */
#define acp_assign(type, ...) acp_assign_##type(__VA_ARGS__)
#define acp_assign_range(type, ...) acp_assign_range_##type(__VA_ARGS__)
#define acp_at(type, ...) acp_at_##type(__VA_ARGS__)
#define acp_back(type, ...) acp_back_##type(__VA_ARGS__)
#define acp_begin(type, ...) acp_begin_##type(__VA_ARGS__)
#define acp_bucket(type, ...) acp_bucket_##type(__VA_ARGS__)
#define acp_bucket_count(type, ...) acp_bucket_count_##type(__VA_ARGS__)
#define acp_bucket_size(type, ...) acp_bucket_size_##type(__VA_ARGS__)
#define acp_capacity(type, ...) acp_capacity_##type(__VA_ARGS__)
#define acp_clear(type, ...) acp_clear_##type(__VA_ARGS__)
#define acp_count(type, ...) acp_count_##type(__VA_ARGS__)
#define acp_create(type, ...) acp_create_##type(__VA_ARGS__)
#define acp_destroy(type, ...) acp_destroy_##type(__VA_ARGS__)
#define acp_empty(type, ...) acp_empty_##type(__VA_ARGS__)
#define acp_end(type, ...) acp_end_##type(__VA_ARGS__)
#define acp_erase(type, ...) acp_erase_##type(__VA_ARGS__)
#define acp_erase_range(type, ...) acp_erase_range_##type(__VA_ARGS__)
#define acp_find(type, ...) acp_find_##type(__VA_ARGS__)
#define acp_front(type, ...) acp_front_##type(__VA_ARGS__)
#define acp_insert(type, ...) acp_insert_##type(__VA_ARGS__)
#define acp_insert_range(type, ...) acp_insert_range_##type(__VA_ARGS__)
#define acp_merge(type, ...) acp_merge_##type(__VA_ARGS__)
#define acp_pop_back(type, ...) acp_pop_back_##type(__VA_ARGS__)
#define acp_pop_front(type, ...) acp_pop_front_##type(__VA_ARGS__)
#define acp_push_back(type, ...) acp_push_back_##type(__VA_ARGS__)
#define acp_push_front(type, ...) acp_push_front_##type(__VA_ARGS__)
#define acp_remove(type, ...) acp_remove_##type(__VA_ARGS__)
#define acp_reserve(type, ...) acp_reserve_##type(__VA_ARGS__)
#define acp_reverse(type, ...) acp_reverse_##type(__VA_ARGS__)
#define acp_size(type, ...) acp_size_##type(__VA_ARGS__)
#define acp_sort(type, ...) acp_sort_##type(__VA_ARGS__)
#define acp_splice(type, ...) acp_splice_##type(__VA_ARGS__)
#define acp_swap(type, ...) acp_swap_##type(__VA_ARGS__)
#define acp_unique(type, ...) acp_unique_##type(__VA_ARGS__)
#define acp_size(type, ...) acp_size_##type(__VA_ARGS__)
#define acp_advance(type, ...) acp_advance_##type(__VA_ARGS__)
#define acp_decrement(type, ...) acp_decrement_##type(__VA_ARGS__)
#define acp_dereference(type, ...) acp_dereference_##type(__VA_ARGS__)
#define acp_dereference_value(type, ...) acp_dereference_value_##type(__VA_ARGS__)
#define acp_distance(type, ...) acp_distance_##type(__VA_ARGS__)
#define acp_increment(type, ...) acp_increment_##type(__VA_ARGS__)
#define acp_size_value(type, ...) acp_size_value_##type(__VA_ARGS__)

/* ---- end of the data library ------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* __ACP_H__ */
