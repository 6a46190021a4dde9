/*
 * fastpath.c - see fastpath.h. The rules mirror core/queue.go's readyNow
 * and completed, core/atomic.go's ApplyAtomic, and core/barrier.go's
 * hierarchical barrier and core/queue.go's waitUntil for acp_sync.
 */
#include <immintrin.h>
#include <sched.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "fastpath.h"
#include "fastremote.h"
#include "_cgo_export.h"

static void *current; /* the running engine's fast state */

void acpfast_set(void *state) { __atomic_store_n(&current, state, __ATOMIC_SEQ_CST); }

#define U32(f, off) ((uint32_t *)((char *)(f) + (off)))
#define U64(f, off) ((uint64_t *)((char *)(f) + (off)))
#define I64(f, off) ((int64_t *)((char *)(f) + (off)))
#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

static void *state_of(void *state)
{
    char *f = state ? state : __atomic_load_n(&current, __ATOMIC_ACQUIRE);
    if (f == NULL || LOAD(U32(f, ACPF_ENABLED)) == 0)
        return NULL;
    return f;
}

/* Layout.Rank: -1 for GAs whose rank field is not 1..nprocs. */
static int rank_of(char *f, acp_ga_t ga)
{
    uint64_t field = ga >> LOAD(U32(f, ACPF_RANK_SHIFT));
    return field >= 1 && field <= LOAD(U32(f, ACPF_NPROCS)) ? (int)(field - 1) : -1;
}

/* Decodes ga when its rank is valid (Layout.Decode); 0 otherwise. */
static int end_of(char *f, acp_ga_t ga, acpf_end *at)
{
    at->rank = rank_of(f, ga);
    if (at->rank < 0)
        return 0;
    uint64_t cm = LOAD(U64(f, ACPF_COLOR_MASK));
    at->color = cm == 0 ? 0 : (uint32_t)((ga & cm) >> __builtin_ctzll(cm));
    at->seg = (uint32_t)((ga >> LOAD(U32(f, ACPF_SEG_SHIFT))) & LOAD(U64(f, ACPF_SEG_MASK)));
    at->off = ga & LOAD(U64(f, ACPF_OFF_MASK));
    return 1;
}

/* Segments of core/ga.go. */
enum { SEG_STARTER_CL = 1, SEG_STARTER_DL = 2, SEG_ENGINE = 3, SEG_FIRST_USER = 4 };

/* Whether a decoded end names starter memory (colour 0, segments 0-2). */
static int is_starter(const acpf_end *at) { return at->color == 0 && at->seg <= SEG_STARTER_DL; }

/* Decodes ga when it names starter memory; 0 otherwise. */
static int starter_of(char *f, acp_ga_t ga, acpf_end *at) { return end_of(f, ga, at) && is_starter(at); }

/* end_of for the program's copies: the communication library's starter
 * memory (segment 1) and the engine's words (segment 3) are the library's
 * own, and Go refuses them with a message (Engine.ProgramCopy). */
static int program_end_of(char *f, acp_ga_t ga, acpf_end *at)
{
    return end_of(f, ga, at) && at->seg != SEG_STARTER_CL && at->seg != SEG_ENGINE;
}

/* starter_of for the program's atomics. */
static int program_starter_of(char *f, acp_ga_t ga, acpf_end *at)
{
    return program_end_of(f, ga, at) && is_starter(at);
}

/* The memory of n bytes at at when this process can touch it directly. */
static void *reach_at(char *f, const acpf_end *at, uint64_t n)
{
    uint64_t i = (uint64_t)at->rank - LOAD(U32(f, ACPF_WIN_BASE));
    if (i >= LOAD(U32(f, ACPF_WIN_LEN)))
        return NULL;
    uint64_t *entry = U64(f, ACPF_TABLE + i * ACPF_ENTRY_SIZE + at->seg * 16);
    char *base = (char *)(uintptr_t)LOAD(&entry[0]);
    if (base == NULL)
        return NULL;
    uint64_t size = LOAD(&entry[1]);
    if (at->off > size || n > size - at->off)
        return NULL;
    return base + at->off;
}

/* The memory of [ga, ga+n) when this process can touch it directly. */
static void *reach(char *f, acp_ga_t ga, uint64_t n)
{
    acpf_end at;
    return starter_of(f, ga, &at) ? reach_at(f, &at, n) : NULL;
}

/* reach for the program's atomics (program_starter_of). */
static void *program_reach(char *f, acp_ga_t ga, uint64_t n)
{
    acpf_end at;
    return program_starter_of(f, ga, &at) ? reach_at(f, &at, n) : NULL;
}

/* Whether an operation with this order may start now (core readyNow). */
static int ready(char *f, acp_handle_t order)
{
    int64_t done = LOAD(I64(f, ACPF_DONE));
    if (order == (acp_handle_t)ACP_HANDLE_NULL)
        return 1;
    if (order == (acp_handle_t)ACP_HANDLE_ALL || order == (acp_handle_t)ACP_HANDLE_CONT)
        return done == LOAD(I64(f, ACPF_ISSUED));
    return order > 0 && order <= done;
}

static void lock(char *f) { acpf_lock((int32_t *)(f + ACPF_LOCK)); }

static void unlock(char *f) { acpf_unlock((int32_t *)(f + ACPF_LOCK)); }

/* Takes the next handle with the lock held, once the ring has room (core
 * queue.issue). */
static int64_t claim(char *f)
{
    int64_t *issued = I64(f, ACPF_ISSUED), *done = I64(f, ACPF_DONE);
    uint32_t depth = LOAD(U32(f, ACPF_DEPTH));
    lock(f);
    while (LOAD(issued) - LOAD(done) >= (int64_t)depth) {
        /* The ring is full of operations still running: their completions
         * come from the progress goroutines; wait for room. */
        unlock(f);
        sched_yield();
        lock(f);
    }
    /* Release stores: every writer of these holds the lock, and readers
     * need only see the copy before the count (a sequentially consistent
     * store is a locked instruction: it made a local copy+complete cost 23
     * ns instead of 13.5). */
    int64_t h = LOAD(issued) + 1;
    __atomic_store_n(issued, h, __ATOMIC_RELEASE);
    return h;
}

static uint32_t *done_flags(char *f) { return U32(f, ACPF_TABLE + ACPF_MAX_WINDOW * ACPF_ENTRY_SIZE); }

/* The handle of an operation that already ran (core completed). */
static acp_handle_t completed(char *f)
{
    int64_t h = claim(f), *done = I64(f, ACPF_DONE);
    if (LOAD(done) == h - 1)
        __atomic_store_n(done, h, __ATOMIC_RELEASE);
    else
        __atomic_store_n(&done_flags(f)[(uint64_t)h % LOAD(U32(f, ACPF_DEPTH))], 1, __ATOMIC_RELEASE);
    unlock(f);
    return h;
}

/* The handle of an operation a transport's C code is about to post. */
static int64_t take(void *state)
{
    int64_t h = claim(state);
    unlock(state);
    return h;
}

/* Finishes handle h, which a transport's C code reported finished without
 * an error (core queue.finish). Operations waiting for their start
 * condition may wait for this one: only Go starts them. */
static void finish_remote(char *f, int64_t h)
{
    lock(f);
    if (LOAD(U32(f, ACPF_WAITING)) != 0) {
        unlock(f);
        goacp_fast_finished(f, h);
        return;
    }
    int64_t *done = I64(f, ACPF_DONE), d = LOAD(done), issued = LOAD(I64(f, ACPF_ISSUED));
    uint64_t depth = LOAD(U32(f, ACPF_DEPTH));
    uint32_t *flags = done_flags(f);
    __atomic_store_n(&flags[(uint64_t)h % depth], 1, __ATOMIC_RELEASE);
    while (d < issued && LOAD(&flags[(uint64_t)(d + 1) % depth])) {
        __atomic_store_n(&flags[(uint64_t)(d + 1) % depth], 0, __ATOMIC_RELAXED);
        d++;
    }
    __atomic_store_n(done, d, __ATOMIC_RELEASE);
    unlock(f);
}

static acpf_remote *remote(char *f) { return (acpf_remote *)(uintptr_t)LOAD(U64(f, ACPF_REMOTE)); }

static int poll_remote(char *f, acpf_remote *r);

/* Polls of a copy that found the transport's C code full before it goes
 * to Go, yielding every 64th. */
#define FULL_TRIES 4096

/* Whether the command queue's ring is full: an operation for a transport's
 * C code then waits in Go, which polls for the completions that make room
 * (take would only yield). */
static int ring_full(char *f)
{
    return LOAD(I64(f, ACPF_ISSUED)) - LOAD(I64(f, ACPF_DONE)) >= (int64_t)LOAD(U32(f, ACPF_DEPTH));
}

/* A copy between the local end (memory reachable here, local, or our
 * registration mine) and the end at, GA ga, in another rank's memory,
 * through the transport's C code (n > 0: acpfast_copy completes empty
 * copies itself); get: from at. */
static acp_handle_t remote_copy(char *f, int get, const acpf_end *at, acp_ga_t ga, void *local, const acpf_end *mine,
                                size_t n)
{
    acpf_remote *r = remote(f);
    if (r == NULL || at->rank == (int)LOAD(U32(f, ACPF_ME)))
        return ACP_HANDLE_NULL;
    if (ring_full(f))
        return ACP_HANDLE_NULL;
    for (int i = 1;; i++) {
        int64_t h = r->copy(r, f, take, get, at, ga, local, mine, n);
        if (h != ACPF_FULL)
            return h;
        /* The transport's C code has as much in flight as it may: poll for
         * its completions here, as a verbs program does when its send
         * queue is full. Declined to Go, the copy waited there for an entry
         * the C side frees: over Soft-RoCE a window of 64 puts of 4 KiB
         * took 1.5-2.4 times as long per put as one of 32. Go's turn when
         * completions wait for it there (pending), or after a long while. */
        if (poll_remote(f, r) || i >= FULL_TRIES)
            return ACP_HANDLE_NULL;
        if (i % 64 == 0)
            sched_yield();
    }
}

/* Finishes what one poll of the transport's C code found; returns its
 * pending flag. */
static int poll_remote(char *f, acpf_remote *r)
{
    int64_t hs[16];
    int pending = 0;
    int k = r->poll(r, hs, 16, &pending);
    for (int i = 0; i < k; i++)
        finish_remote(f, hs[i]);
    return pending;
}

/* Copies between memories of this node of this many bytes and more use
 * vector_copy: Go sets it at start, to internal/memcopy's VectorCopyMin
 * where its judgement says vectors pay (Intel CPUs with AVX2 and without
 * fast short `rep movsb`), otherwise never. There glibc's memmove copies
 * them with `rep movsb` (non-temporal stores from 14 MiB), which on a
 * Xeon (Cascade Lake) moved 3.9-4.6 GB/s over the 16 MiB that a 4 MiB put
 * pingpong touches, where 32-byte loads and stores moved 5.1-5.9 (and
 * 5.2-5.5 against 4.1-4.9 at 8-64 MiB); the 4 MiB put pingpong's
 * bandwidth rose by a median 24 % over 20 alternated rounds.
 * BENCHMARKS.md, 2026-11-28, fifth section.
 *
 * The loop is memcopy's too (Go assembly, for the engine's copies). This
 * path keeps its own rather than leave large copies to Go: declined to
 * Go from 1 MiB, the put pingpong's bandwidth fell from 1.72 to 1.43
 * times Open MPI's at 1 MiB and from 1.61 to 1.51 at 4 MiB (12
 * alternated rounds), the return from Go setting the runtime's monitor
 * thread polling on CPUs that run ranks. */
static size_t vector_copy_min = SIZE_MAX;

void acpfast_vector_copies_from(size_t n) { __atomic_store_n(&vector_copy_min, n, __ATOMIC_RELAXED); }

/* Copies n bytes, a multiple of 128 or not, with 32-byte loads and stores,
 * four in flight. The caller makes sure the ranges do not overlap. */
__attribute__((target("avx2"))) static void vector_copy(char *d, const char *s, size_t n)
{
    /* Stores that do not straddle a cache line: align the destination. */
    size_t head = (32 - ((uintptr_t)d & 31)) & 31;
    if (head > n)
        head = n;
    memcpy(d, s, head);
    size_t i = head;
    for (; i + 128 <= n; i += 128) {
        __m256i x0 = _mm256_loadu_si256((const __m256i *)(s + i));
        __m256i x1 = _mm256_loadu_si256((const __m256i *)(s + i + 32));
        __m256i x2 = _mm256_loadu_si256((const __m256i *)(s + i + 64));
        __m256i x3 = _mm256_loadu_si256((const __m256i *)(s + i + 96));
        _mm256_store_si256((__m256i *)(d + i), x0);
        _mm256_store_si256((__m256i *)(d + i + 32), x1);
        _mm256_store_si256((__m256i *)(d + i + 64), x2);
        _mm256_store_si256((__m256i *)(d + i + 96), x3);
    }
    memcpy(d + i, s + i, n - i);
}

int acpfast_vector_copy(void *d, const void *s, size_t n)
{
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2"))
        return 0;
    vector_copy(d, s, n);
    return 1;
}

void acpfast_move(void *d, const void *s, size_t n)
{
    const char *dc = d, *sc = s;
    if (n >= __atomic_load_n(&vector_copy_min, __ATOMIC_RELAXED) && (dc + n <= sc || sc + n <= dc))
        vector_copy(d, s, n);
    else
        memmove(d, s, n);
}

/* An end of a 0-byte copy needs no check here when it lies in another
 * rank's memory (core's no-op checks only ours); ours must be in bounds. */
static int empty_end_ok(char *f, const acpf_end *at, const void *p)
{
    return p != NULL || at->rank != (int)LOAD(U32(f, ACPF_ME));
}

/* lib: the library's own starter memory (the communication library's,
 * the engine's) may be an end too; a program's copies may not touch it. */
static acp_handle_t copy_ends(void *state, acp_ga_t dst, acp_ga_t src, size_t size, acp_handle_t order, int lib)
{
    char *f = state_of(state);
    if (f == NULL || !ready(f, order))
        return ACP_HANDLE_NULL;
    acpf_end da, sa;
    int dok = lib ? end_of(f, dst, &da) : program_end_of(f, dst, &da);
    int sok = lib ? end_of(f, src, &sa) : program_end_of(f, src, &sa);
    int dst_starter = dok && is_starter(&da), src_starter = sok && is_starter(&sa);
    void *d = dst_starter ? reach_at(f, &da, size) : NULL, *s = src_starter ? reach_at(f, &sa, size) : NULL;
    /* Zero bytes: nothing to move, and the handle is complete at once, as
     * core's no-op would be once ready. Core checks only this process's
     * ends of a no-op, so an end in another rank's starter memory needs no
     * mapping (entering Go for it cost the ib put pingpong's 0-byte row
     * 31-86 us one way where it takes 16-35 now: Soft-RoCE, 5 alternated
     * rounds, the 1-byte row 20-41 either way). */
    if (size == 0)
        return dst_starter && src_starter && empty_end_ok(f, &da, d) && empty_end_ok(f, &sa, s)
                   ? completed(f)
                   : (acp_handle_t)ACP_HANDLE_NULL;
    if (!dok || !sok)
        return ACP_HANDLE_NULL;
    if (d == NULL && s != NULL)
        return remote_copy(f, 0, &da, dst, s, NULL, size);
    if (s == NULL && d != NULL)
        return remote_copy(f, 1, &sa, src, d, NULL, size);
    if (d == NULL) {
        /* A registration of ours at one end, which the transport finds;
         * remote_copy refuses the other end when it is ours too. */
        int me = (int)LOAD(U32(f, ACPF_ME));
        if (sa.rank == me && sa.seg >= SEG_FIRST_USER)
            return remote_copy(f, 0, &da, dst, NULL, &sa, size);
        if (da.rank == me && da.seg >= SEG_FIRST_USER)
            return remote_copy(f, 1, &sa, src, NULL, &da, size);
        return ACP_HANDLE_NULL;
    }
    acpfast_move(d, s, size);
    return completed(f);
}

acp_handle_t acpfast_copy(void *state, acp_ga_t dst, acp_ga_t src, size_t size, acp_handle_t order)
{
    return copy_ends(state, dst, src, size, order, 0);
}

acp_handle_t acpfast_lib_copy(void *state, acp_ga_t dst, acp_ga_t src, size_t size, acp_handle_t order)
{
    return copy_ends(state, dst, src, size, order, 1);
}

/* Operation numbers of core.AtomicOp: odd = 4 bytes, even = 8 bytes. */
enum { CAS4 = 1, CAS8, SWAP4, SWAP8, ADD4, ADD8, XOR4, XOR8, OR4, OR8, AND4, AND8 };

/* An 8-byte atomic when a device executes every one (ACPF_DEV_ATOMICS):
 * the transport's C code posts fetch-and-add and compare-and-swap on a
 * word of starter or registered memory (any rank's, ours included) whose
 * old value goes to our memory; everything else, and whatever it declines
 * (a registration whose key it has not learnt), goes to Go. A full queue
 * declines too: an atomic is one work request, and Go waits for room. */
static acp_handle_t device_atomic(char *f, int op, acp_ga_t dst, acp_ga_t src, uint64_t a, uint64_t b)
{
    acpf_remote *r = remote(f);
    acpf_end ta, da;
    if (r == NULL || r->atomic == NULL || (op != ADD8 && op != CAS8) || !program_end_of(f, src, &ta) ||
        !program_end_of(f, dst, &da) || da.rank != (int)LOAD(U32(f, ACPF_ME)))
        return ACP_HANDLE_NULL;
    void *res = NULL;
    const acpf_end *mine = NULL;
    if (da.seg >= SEG_FIRST_USER)
        mine = &da;
    else if ((res = reach_at(f, &da, 8)) == NULL)
        return ACP_HANDLE_NULL;
    if (ring_full(f))
        return ACP_HANDLE_NULL;
    int64_t h = r->atomic(r, f, take, op == CAS8, &ta, src, res, mine, a, b);
    return h > 0 ? (acp_handle_t)h : (acp_handle_t)ACP_HANDLE_NULL;
}

acp_handle_t acpfast_atomic(void *state, int op, acp_ga_t dst, acp_ga_t src, uint64_t a, uint64_t b, acp_handle_t order)
{
    char *f = state_of(state);
    if (f == NULL || op < CAS4 || op > AND8 || !ready(f, order))
        return ACP_HANDLE_NULL;
    uint64_t w = (op % 2) ? 4 : 8;
    if ((dst | src) % w)
        return ACP_HANDLE_NULL;
    /* 8-byte atomics executed by a device: none may be a CPU atomic. */
    if (w == 8 && LOAD(U32(f, ACPF_DEV_ATOMICS)))
        return device_atomic(f, op, dst, src, a, b);
    void *t = program_reach(f, src, w), *r = program_reach(f, dst, w);
    if (t == NULL || r == NULL || ((uintptr_t)t | (uintptr_t)r) % w)
        return ACP_HANDLE_NULL;
    if (w == 4) {
        uint32_t *p = t, x = (uint32_t)a, old = 0;
        switch (op) {
        case CAS4:
            old = x;
            __atomic_compare_exchange_n(p, &old, (uint32_t)b, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            break;
        case SWAP4: old = __atomic_exchange_n(p, x, __ATOMIC_SEQ_CST); break;
        case ADD4: old = __atomic_fetch_add(p, x, __ATOMIC_SEQ_CST); break;
        case XOR4: old = __atomic_fetch_xor(p, x, __ATOMIC_SEQ_CST); break;
        case OR4: old = __atomic_fetch_or(p, x, __ATOMIC_SEQ_CST); break;
        case AND4: old = __atomic_fetch_and(p, x, __ATOMIC_SEQ_CST); break;
        }
        *(uint32_t *)r = old;
    } else {
        uint64_t *p = t, old = 0;
        switch (op) {
        case CAS8:
            old = a;
            __atomic_compare_exchange_n(p, &old, b, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
            break;
        case SWAP8: old = __atomic_exchange_n(p, a, __ATOMIC_SEQ_CST); break;
        case ADD8: old = __atomic_fetch_add(p, a, __ATOMIC_SEQ_CST); break;
        case XOR8: old = __atomic_fetch_xor(p, a, __ATOMIC_SEQ_CST); break;
        case OR8: old = __atomic_fetch_or(p, a, __ATOMIC_SEQ_CST); break;
        case AND8: old = __atomic_fetch_and(p, a, __ATOMIC_SEQ_CST); break;
        }
        *(uint64_t *)r = old;
    }
    return completed(f);
}

int acpfast_rank(void *state, int *out)
{
    char *f = state_of(state);
    if (f == NULL)
        return 0;
    *out = (int)LOAD(U32(f, ACPF_ME));
    return 1;
}

int acpfast_procs(void *state, int *out)
{
    char *f = state_of(state);
    if (f == NULL)
        return 0;
    *out = (int)LOAD(U32(f, ACPF_NPROCS));
    return 1;
}

/* Layout.Encode(rank, 0, SegStarter, 0). */
int acpfast_starter_ga(void *state, int rank, acp_ga_t *out)
{
    char *f = state_of(state);
    if (f == NULL || rank < 0 || (uint32_t)rank >= LOAD(U32(f, ACPF_NPROCS)))
        return 0;
    *out = (acp_ga_t)((uint64_t)rank + 1) << LOAD(U32(f, ACPF_RANK_SHIFT));
    return 1;
}

int acpfast_query_rank(void *state, acp_ga_t ga, int *out)
{
    char *f = state_of(state);
    if (f == NULL)
        return 0;
    *out = rank_of(f, ga);
    return 1;
}

int acpfast_query_color(void *state, acp_ga_t ga, int *out)
{
    char *f = state_of(state);
    if (f == NULL)
        return 0;
    uint64_t mask = LOAD(U64(f, ACPF_COLOR_MASK));
    if (rank_of(f, ga) < 0)
        *out = -1;
    else
        *out = mask == 0 ? 0 : (int)((ga & mask) >> __builtin_ctzll(mask));
    return 1;
}

/* Our own starter memories only: another process's memory has no address
 * here (Engine.QueryAddress), even where shared memory maps it. */
int acpfast_query_address(void *state, acp_ga_t ga, void **out)
{
    char *f = state_of(state);
    if (f == NULL || rank_of(f, ga) != (int)LOAD(U32(f, ACPF_ME)))
        return 0;
    void *p = reach(f, ga, 1);
    if (p == NULL)
        return 0;
    *out = p;
    return 1;
}

/* The handle a wait for h waits for: 0 when there is nothing to wait for
 * (NULL, garbage and never-issued handles). */
static int64_t target_of(char *f, acp_handle_t h)
{
    int64_t issued = LOAD(I64(f, ACPF_ISSUED));
    if (h == (acp_handle_t)ACP_HANDLE_ALL || h == (acp_handle_t)ACP_HANDLE_CONT)
        return issued;
    if (h <= 0 || h > issued)
        return 0;
    return h;
}

static uint64_t now_ns(void);

/* 1 when every operation up to h is complete; else, while a transport's C
 * code has operations in flight, polls it: once, or for up to the spin time (core waitUntil's
 * busy phase; the clock can cost a system call in virtual machines, so it
 * is read seldom). What only Go can finish, and longer waits, go to the
 * ordinary path. */
static int wait_for(void *state, acp_handle_t h, int once)
{
    char *f = state_of(state);
    if (f == NULL)
        return 0;
    int64_t target = target_of(f, h);
    if (LOAD(I64(f, ACPF_DONE)) >= target)
        return 1;
    acpf_remote *r = remote(f);
    if (r == NULL)
        return 0;
    uint64_t spin = LOAD(U64(f, ACPF_BAR_SPIN)), start = 0;
    for (uint32_t i = 1;; i++) {
        int pending = poll_remote(f, r);
        if (LOAD(I64(f, ACPF_DONE)) >= target)
            return 1;
        if (pending || once)
            return 0;
        if ((i & 63) == 0) {
            uint64_t t = now_ns();
            if (start == 0)
                start = t;
            else if (t - start >= spin)
                return 0;
        }
    }
}

int acpfast_test(void *state, acp_handle_t h) { return wait_for(state, h, 1); }

/* The flag of h's slot is h's own while the done mark is short of h:
 * h - depth was swept (its flag cleared) before the mark passed it, which
 * it did before h could be issued, and h + depth cannot be issued before
 * the mark passes h. A flag read after the mark moved past h may be h +
 * depth's, but then h is complete all the same. */
static int op_done(char *f, int64_t h)
{
    if (h <= LOAD(I64(f, ACPF_DONE)))
        return 1;
    if (h > LOAD(I64(f, ACPF_ISSUED)))
        return 0;
    return LOAD(&done_flags(f)[(uint64_t)h % LOAD(U32(f, ACPF_DEPTH))]) != 0;
}

int acpfast_op_done(void *state, acp_handle_t h)
{
    char *f = state_of(state);
    if (f == NULL || h <= 0)
        return 0;
    if (op_done(f, h))
        return 1;
    acpf_remote *r = remote(f);
    if (r == NULL)
        return 0;
    poll_remote(f, r);
    return op_done(f, h);
}

int acpfast_wait(void *state, acp_handle_t h) { return wait_for(state, h, 0); }

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Whether *w reached want within the wait's busy and yielding phases
 * (core waitUntil's first two): spin for spin ns (0: oversubscribed, the
 * awaited process needs this CPU), then yield for yield ns more. After
 * that the ordinary path sleeps. */
static int await(uint64_t *w, uint64_t want, uint64_t spin, uint64_t yield)
{
    /* The clock costs tens of nanoseconds: look a while before reading it. */
    for (int i = 0; i < 256; i++)
        if (LOAD(w) >= want)
            return 1;
    uint64_t start = now_ns();
    for (uint32_t i = 1;; i++) {
        if (LOAD(w) >= want)
            return 1;
        if ((spin == 0 || (i & 63) == 0) && now_ns() - start >= spin)
            break;
    }
    for (uint32_t i = 1;; i++) {
        sched_yield();
        if (LOAD(w) >= want)
            return 1;
        if ((i & 15) == 0 && now_ns() - start >= spin + yield)
            return 0;
    }
}

/* Writes a barrier's epoch to the slot of round k of a dissemination
 * (core disseminate): a store into mapped memory, or a signal the
 * transport's C code posts (bit k of gamask: the slot's word is its GA).
 * 0 when the signal was declined: the ordinary path must finish. */
static int bar_write(char *f, acpf_remote *r, uint32_t k, uint32_t gamask, uint64_t ep)
{
    uint64_t to = LOAD(U64(f, ACPF_BAR_PEERS + 8 * k));
    if (!(gamask & (1u << k))) {
        __atomic_store_n((uint64_t *)(uintptr_t)to, ep, __ATOMIC_SEQ_CST);
        return 1;
    }
    acpf_end at;
    if (!end_of(f, to, &at))
        return 0;
    for (int i = 1;; i++) {
        int rc = r->signal(r, &at, to, ep);
        if (rc != ACPF_FULL)
            return rc == 1;
        /* The queue pair is full: its completions make room (remote_copy). */
        if (poll_remote(f, r) || i >= FULL_TRIES)
            return 0;
        if (i % 64 == 0)
            sched_yield();
    }
}

/* The rounds of a dissemination barrier of epoch ep; 0 when the ordinary
 * path must finish it (it redoes every round: the writes are idempotent,
 * epochs only grow). Before a round's wait it polls the transport's C code
 * once, which frees the entries earlier writes hold. */
static int disseminate(char *f, acpf_remote *r, uint64_t ep, uint64_t spin, uint64_t yield)
{
    uint32_t rounds = LOAD(U32(f, ACPF_BAR_ROUNDS)), gamask = LOAD(U32(f, ACPF_BAR_GAMASK));
    uint64_t *mine = (uint64_t *)(uintptr_t)LOAD(U64(f, ACPF_BAR_MINE));
    for (uint32_t k = 0; k < rounds; k++) {
        if (!bar_write(f, r, k, gamask, ep))
            return 0;
        if (gamask != 0 && LOAD(&mine[k]) < ep)
            poll_remote(f, r);
        if (!await(&mine[k], ep, spin, yield))
            return 0;
    }
    return 1;
}

int64_t acpfast_sync(void *state)
{
    char *f = state_of(state);
    if (f == NULL || LOAD(U32(f, ACPF_BAR_ON)) == 0)
        return -1;
    /* acp_sync completes our operations first: here only when there are none. */
    if (LOAD(I64(f, ACPF_DONE)) != LOAD(I64(f, ACPF_ISSUED)))
        return -1;
    /* Rounds through a transport need its C code. */
    acpf_remote *r = remote(f);
    if (LOAD(U32(f, ACPF_BAR_GAMASK)) != 0 && (r == NULL || r->signal == NULL))
        return -1;
    int32_t zero = 0, *lk = (int32_t *)(f + ACPF_BAR_LOCK);
    if (!__atomic_compare_exchange_n(lk, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
        return -1; /* another thread is in a barrier: Go queues us */
    /* The Go side's barrier puts must be complete (it waits for them): one
     * still queued there could land after our write of a later epoch to
     * the same slot (core barrier.pending). Only a barrier adds to them. */
    if (LOAD(I64(f, ACPF_BAR_PENDING)) != 0) {
        __atomic_store_n(lk, 0, __ATOMIC_RELEASE);
        return -1;
    }
    uint64_t ep = LOAD(U64(f, ACPF_BAR_EPOCH)) + 1;
    __atomic_store_n(U64(f, ACPF_BAR_EPOCH), ep, __ATOMIC_SEQ_CST);
    uint64_t *arrive = (uint64_t *)(uintptr_t)LOAD(U64(f, ACPF_BAR_ARRIVE));
    uint64_t *release = (uint64_t *)(uintptr_t)LOAD(U64(f, ACPF_BAR_RELEASE));
    uint64_t spin = LOAD(U64(f, ACPF_BAR_SPIN)), yield = LOAD(U64(f, ACPF_BAR_YIELD));
    if (LOAD(U32(f, ACPF_BAR_LEAD))) {
        /* The leader of one of several hosts (core FinishSync): the host's
         * processes arrive, the leaders disseminate, the leader releases. */
        __atomic_add_fetch(arrive, 1, __ATOMIC_SEQ_CST);
        if (!await(arrive, ep * LOAD(U32(f, ACPF_BAR_LOCALS)), spin, yield) || !disseminate(f, r, ep, spin, yield))
            return (int64_t)ep;
        __atomic_store_n(release, ep, __ATOMIC_SEQ_CST);
    } else if (LOAD(U32(f, ACPF_BAR_ROUNDS)) > 0) {
        /* A dissemination over everybody. */
        if (!disseminate(f, r, ep, spin, yield))
            return (int64_t)ep;
    } else {
        /* Arrive; on the only host the last arrival releases (core barrier). */
        uint64_t n = __atomic_add_fetch(arrive, 1, __ATOMIC_SEQ_CST);
        if (LOAD(U32(f, ACPF_BAR_LAST)) && n == ep * LOAD(U32(f, ACPF_BAR_LOCALS)))
            __atomic_store_n(release, ep, __ATOMIC_SEQ_CST);
        else if (!await(release, ep, spin, yield))
            return (int64_t)ep;
    }
    __atomic_store_n(lk, 0, __ATOMIC_RELEASE);
    return 0;
}

uint64_t acpfast_spin(void)
{
    char *f = state_of(NULL);
    return f ? LOAD(U64(f, ACPF_BAR_SPIN)) : 0;
}
