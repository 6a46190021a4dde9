/*
 * t_thr_dl: the data library called from several threads of every rank at
 * once (decisions.md #20: every function may be called from several
 * threads).
 *
 * Phase 1, each thread its own objects: 4 threads per rank, each with a
 * buffer it registers itself, make a vector, a deque and a list on
 * different ranks, fill them with words that name rank, thread and
 * position, check every byte and every size, shrink and destroy them, and
 * acp_malloc/acp_free blocks on every rank in between. Scratch buffers,
 * heap locks and everything the library keeps per process are shared by
 * the threads; a value of another thread, a lost element or a block handed
 * out twice shows as a wrong word.
 *
 * Phase 2, shared objects: one set, one multiset and one map with tables
 * on every rank and only three slots per table (so that threads of every
 * rank meet on the same slot locks). Every thread of every rank inserts its
 * own keys into all three and one common key into all three; then every
 * key must be found with its value, the sizes and the common key's count
 * must be exact, and of all the insertions of the common key into the map
 * exactly one must have been new; then every thread removes half of its keys at once, and
 * exactly the other half must remain.
 *
 * Phase 3, one vector, deque and list per rank shared by its threads: each
 * thread pushes its values onto all three at once (onto the deque's front
 * for odd threads); every value must be there exactly once, each thread's
 * in its own order. Then threads swap two vectors in opposite orders (each
 * an even number of times, so both end as they began). Calls from several ranks on one such container are not
 * atomic (acp.h); calls from the threads of one rank are.
 *
 * Phase 4, moves between two shared sets from every thread of every rank
 * at once, half of them in each direction: a move takes a slot's entries
 * out under the slot's lock and inserts them into the other set, so every
 * key must end up in exactly one of the two.
 *
 * Phase 5, a workspace of a chunk of 8 KiB on every rank: every thread
 * writes its own stripes of it and reads the previous rank's back; then
 * all threads destroy it at once (one call does, the others are refused).
 * Then two threads of every rank create a workspace each at once, as they
 * may call acp_sync at once: each must be a workspace of its own (its
 * chunk here is its own, no chunk shared with the other), and bytes
 * written through one must read back through it, untouched by the other.
 *
 * At the end every heap must be one free block again: nothing leaked,
 * nothing freed twice. Run with ACP_SIZE_SMEM_DL=1048576.
 */
#include <pthread.h>

#include "acptest.h"
#include "thrtest.h"

#define NT 4        /* threads per rank */
#define K 48        /* elements per thread and container */
#define BUF 65536   /* per-thread registered buffer */
#define DLSIZE 1048576ull
#define MAXREQ ((((DLSIZE - 16) & ~7ull) - 80) - 16)

static int me, nprocs;

struct targ {
    int t;
    int failures;
    uint64_t *buf; /* registered; [0, K) values, [K, 2K) results, [2K..) keys */
    acp_ga_t ga;
    acp_set_t set;
    acp_multiset_t ms;
    acp_map_t map;
};

static uint64_t val(int rank, int t, int i) { return (uint64_t)rank << 40 | (uint64_t)t << 32 | (uint64_t)i << 8 | 0x5a; }

/* The word at ga (any rank), through the thread's buffer. */
static uint64_t rd(struct targ *a, acp_ga_t ga)
{
    a->buf[2 * K] = 0xeeeeeeeeeeeeeeeeull;
    acp_complete(acp_copy(a->ga + 16 * K, ga, 8, ACP_HANDLE_NULL));
    return a->buf[2 * K];
}

static acp_ga_t vga(struct targ *a, int i) { return a->ga + 8 * (uint64_t)i; }

static void own_vector(struct targ *a)
{
    int r = (me + a->t) % nprocs;
    acp_vector_t v = acp_create_vector(0, r);
    if (v.ga == ACP_GA_NULL) {
        TFAIL(a, "acp_create_vector(0, %d) failed", r);
        return;
    }
    for (int i = 0; i < K; i++)
        acp_push_back_vector(v, vga(a, i), 8);
    size_t n = acp_size_vector(v);
    if (n != 8 * K)
        TFAIL(a, "vector size %zu after %d push_backs of 8 bytes, want %d", n, K, 8 * K);
    acp_ga_t body = acp_at_vector(v, 0);
    if (body != ACP_GA_NULL && n == 8 * K) {
        acp_complete(acp_copy(a->ga + 8 * K, body, 8 * K, ACP_HANDLE_NULL));
        for (int i = 0; i < K; i++)
            if (a->buf[K + i] != a->buf[i])
                TFAIL(a, "vector word %d is %#" PRIx64 ", want %#" PRIx64, i, a->buf[K + i], a->buf[i]);
    }
    acp_pop_back_vector(v, 8 * K / 2);
    acp_insert_vector(acp_begin_vector(v), vga(a, K - 1), 8);
    if ((n = acp_size_vector(v)) != 8 * (K / 2 + 1))
        TFAIL(a, "vector size %zu after pop_back and insert, want %d", n, 8 * (K / 2 + 1));
    if (rd(a, acp_at_vector(v, 0)) != a->buf[K - 1] || rd(a, acp_at_vector(v, 8)) != a->buf[0])
        TFAIL(a, "vector after insert at its front: words 0, 1 are wrong");
    acp_destroy_vector(v);
}

static void own_deque(struct targ *a)
{
    int r = (me + a->t + 1) % nprocs;
    acp_deque_t d = acp_create_deque(16, r);
    if (d.ga == ACP_GA_NULL) {
        TFAIL(a, "acp_create_deque(16, %d) failed", r);
        return;
    }
    /* push_front the even values, push_back the odd ones: the deque holds
     * ..., 4, 2, 0, 1, 3, 5, ... */
    for (int i = 0; i < K; i++) {
        if (i % 2 == 0)
            acp_push_front_deque(d, vga(a, i), 8);
        else
            acp_push_back_deque(d, vga(a, i), 8);
    }
    size_t n = acp_size_deque(d);
    if (n != 8 * K)
        TFAIL(a, "deque size %zu, want %d", n, 8 * K);
    for (int j = 0; j < K && n == 8 * K; j++) {
        int want = j < K / 2 ? K - 2 - 2 * j : 2 * (j - K / 2) + 1;
        uint64_t got = rd(a, acp_at_deque(d, 8 * j));
        if (got != a->buf[want])
            TFAIL(a, "deque word %d is %#" PRIx64 ", want %#" PRIx64, j, got, a->buf[want]);
    }
    acp_pop_front_deque(d, 8);
    acp_pop_back_deque(d, 8);
    if ((n = acp_size_deque(d)) != 8 * (K - 2))
        TFAIL(a, "deque size %zu after a pop at each end, want %d", n, 8 * (K - 2));
    acp_destroy_deque(d);
}

static void own_list(struct targ *a)
{
    int r = (me + a->t + 2) % nprocs;
    acp_list_t l = acp_create_list(r);
    if (l.ga == ACP_GA_NULL) {
        TFAIL(a, "acp_create_list(%d) failed", r);
        return;
    }
    for (int i = 0; i < K; i++) {
        acp_element_t e = { vga(a, i), 8 };
        acp_push_back_list(l, e, (r + i) % nprocs);
    }
    size_t n = acp_size_list(l);
    if (n != K)
        TFAIL(a, "list size %zu, want %d", n, K);
    acp_list_it_t it = acp_begin_list(l), end = acp_end_list(l);
    int i = 0;
    for (; it.elem != end.elem && i <= K; it = acp_increment_list_it(it), i++) {
        acp_element_t e = acp_dereference_list_it(it);
        uint64_t got = e.size == 8 ? rd(a, e.ga) : 0;
        if (i < K && got != a->buf[i])
            TFAIL(a, "list element %d is %#" PRIx64 " (%zu bytes), want %#" PRIx64, i, got, e.size, a->buf[i]);
    }
    if (i != K)
        TFAIL(a, "walking the list gave %d elements, want %d", i, K);
    acp_pop_front_list(l);
    acp_pop_back_list(l);
    if ((n = acp_size_list(l)) != K - 2)
        TFAIL(a, "list size %zu after a pop at each end, want %d", n, K - 2);
    acp_destroy_list(l);
}

/* Blocks on every rank, half of them on rank 0, filled and checked while
 * the other threads of every rank do the same: a block handed out twice
 * would show. */
static void own_blocks(struct targ *a, int round)
{
    acp_ga_t g[8];
    for (int j = 0; j < 8; j++) {
        int r = j % 2 ? 0 : (me + j) % nprocs; /* every other one on rank 0 */
        g[j] = acp_malloc(8 * (1 + j), r);
        if (g[j] == ACP_GA_NULL || acp_query_rank(g[j]) != r) {
            TFAIL(a, "acp_malloc(%d, %d) gave %#" PRIx64, 8 * (1 + j), r, g[j]);
            g[j] = ACP_GA_NULL;
            continue;
        }
        for (int w = 0; w <= j; w++)
            a->buf[K + w] = val(me, a->t, round * 64 + j * 8 + w);
        acp_complete(acp_copy(g[j], a->ga + 8 * K, 8 * (uint64_t)(j + 1), ACP_HANDLE_NULL));
    }
    for (int j = 0; j < 8; j++) {
        if (g[j] == ACP_GA_NULL)
            continue;
        for (int w = 0; w <= j; w++) {
            uint64_t got = rd(a, g[j] + 8 * (uint64_t)w);
            if (got != val(me, a->t, round * 64 + j * 8 + w))
                TFAIL(a, "block %d word %d is %#" PRIx64 ", want %#" PRIx64, j, w, got, val(me, a->t, round * 64 + j * 8 + w));
        }
        acp_free(g[j]);
    }
}

static void *phase1(void *p)
{
    struct targ *a = p;
    a->buf = calloc(1, BUF);
    acp_atkey_t key = acp_register_memory(a->buf, BUF, 0);
    a->ga = acp_query_ga(key, a->buf);
    if (a->ga == ACP_GA_NULL) {
        TFAIL(a, "cannot register a buffer");
        return NULL;
    }
    for (int i = 0; i < K; i++)
        a->buf[i] = val(me, a->t, i);
    for (int round = 0; round < 3; round++) {
        for (int k = 0; k < 4; k++)
            own_blocks(a, 4 * round + k);
        own_vector(a);
        own_deque(a);
        own_list(a);
    }
    return NULL;
}

/* Key i of thread t of rank r: one word, at [2K + 1 + i] of the buffer. */
static acp_element_t key_of(struct targ *a, int i)
{
    acp_element_t e = { a->ga + 8 * (uint64_t)(2 * K + 1 + i), 8 };
    return e;
}

static int common_new; /* insertions of the common key into the map that were new */

static void *phase2_insert(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < K; i++)
        a->buf[2 * K + 1 + i] = val(me, a->t, i) ^ 0xabcdef;
    a->buf[3 * K + 2] = 0xc0ffee; /* the common key */
    acp_element_t common = { a->ga + 8 * (uint64_t)(3 * K + 2), 8 };
    for (int i = 0; i < K; i++) {
        acp_element_t k = key_of(a, i);
        if (acp_insert_set(a->set, k) != 1)
            TFAIL(a, "acp_insert_set of key %d did not return 1", i);
        acp_insert_multiset(a->ms, k);
        acp_insert_multiset(a->ms, common);
        /* The value of key i is value i of the thread. */
        acp_pair_t pr = { k, { vga(a, i), 8 } };
        if (acp_insert_map(a->map, pr) != 1)
            TFAIL(a, "acp_insert_map of key %d did not return 1 (new key)", i);
    }
    /* The common key once into the map and the set from every thread:
     * only one insertion into the map is new (checked by the caller). */
    acp_pair_t cp = { common, { vga(a, 0), 8 } };
    if (acp_insert_map(a->map, cp) == 1)
        __atomic_fetch_add(&common_new, 1, __ATOMIC_RELAXED);
    if (acp_insert_set(a->set, common) != 1)
        TFAIL(a, "acp_insert_set of the common key did not return 1");
    return NULL;
}

static void *phase2_check(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < K; i++) {
        acp_element_t k = key_of(a, i);
        acp_set_it_t s = acp_find_set(a->set, k);
        if (s.elem == ACP_GA_NULL)
            TFAIL(a, "key %d is not in the set", i);
        else if (rd(a, acp_dereference_set_it(s).ga) != a->buf[2 * K + 1 + i])
            TFAIL(a, "the set's element of key %d holds another key", i);
        uint64_t c = acp_retrieve_multiset(a->ms, k);
        if (c != 1)
            TFAIL(a, "multiset count of key %d is %" PRIu64 ", want 1", i, c);
        acp_map_it_t m = acp_find_map(a->map, k);
        if (m.elem == ACP_GA_NULL) {
            TFAIL(a, "key %d is not in the map", i);
            continue;
        }
        acp_pair_t pr = acp_dereference_map_it(m);
        uint64_t got = pr.second.size == 8 ? rd(a, pr.second.ga) : 0;
        if (got != a->buf[i])
            TFAIL(a, "map value of key %d is %#" PRIx64 " (%zu bytes), want %#" PRIx64, i, got, pr.second.size, a->buf[i]);
    }
    return NULL;
}

static void *phase2_remove(void *p)
{
    struct targ *a = p;
    for (int i = 1; i < K; i += 2) {
        acp_element_t k = key_of(a, i);
        acp_remove_set(a->set, k);
        acp_remove_multiset(a->ms, k);
        acp_remove_map(a->map, k);
    }
    return NULL;
}

static void *phase2_check_removed(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < K; i++) {
        acp_element_t k = key_of(a, i);
        int want = i % 2 == 0;
        if ((acp_find_set(a->set, k).elem != ACP_GA_NULL) != want)
            TFAIL(a, "set: key %d is %s after the removals", i, want ? "missing" : "still there");
        if (acp_retrieve_multiset(a->ms, k) != (uint64_t)want)
            TFAIL(a, "multiset: key %d counts %" PRIu64 " after the removals", i, acp_retrieve_multiset(a->ms, k));
        if ((acp_find_map(a->map, k).elem != ACP_GA_NULL) != want)
            TFAIL(a, "map: key %d is %s after the removals", i, want ? "missing" : "still there");
    }
    return NULL;
}

static void run(struct targ *a, void *(*fn)(void *));

static acp_vector_t sh_vec, sh_vec2;
static acp_deque_t sh_deq;
static acp_list_t sh_list;

static void *phase3_push(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < K; i++) {
        acp_push_back_vector(sh_vec, vga(a, i), 8);
        if (a->t % 2)
            acp_push_front_deque(sh_deq, vga(a, i), 8);
        else
            acp_push_back_deque(sh_deq, vga(a, i), 8);
        acp_element_t e = { vga(a, i), 8 };
        acp_push_back_list(sh_list, e, (me + i) % nprocs);
    }
    return NULL;
}

/* Checks that the n words at w hold every value of every thread once,
 * in the order of i (reversed for threads that rev says). */
static void check_words(const char *what, const uint64_t *w, size_t n, int rev_odd)
{
    int next_i[NT];
    for (int t = 0; t < NT; t++)
        next_i[t] = rev_odd && t % 2 ? K - 1 : 0;
    int bad = 0;
    for (size_t j = 0; j < n && bad < 5; j++) {
        int t = (int)(w[j] >> 32 & 0xff), i = (int)(w[j] >> 8 & 0xffffff);
        if (w[j] >> 40 != (uint64_t)me || t >= NT || w[j] != val(me, t, i) || i != next_i[t]) {
            FAIL("%s word %zu is %#" PRIx64 " (thread %d, value %d; want that thread's value %d next)", what, j, w[j], t, i,
                 t < NT ? next_i[t] : -1);
            bad++;
            continue;
        }
        next_i[t] += rev_odd && t % 2 ? -1 : 1;
    }
}

static void *phase3_swap(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < 20; i++) {
        if (a->t % 2)
            acp_swap_vector(sh_vec, sh_vec2);
        else
            acp_swap_vector(sh_vec2, sh_vec);
    }
    return NULL;
}

static void shared_sequences(struct targ *a)
{
    int r = (me + 1) % nprocs;
    sh_vec = acp_create_vector(0, r);
    sh_vec2 = acp_create_vector(8, me);
    sh_deq = acp_create_deque(0, r);
    sh_list = acp_create_list(r);
    if (sh_vec.ga == ACP_GA_NULL || sh_vec2.ga == ACP_GA_NULL || sh_deq.ga == ACP_GA_NULL || sh_list.ga == ACP_GA_NULL) {
        FAIL("cannot create the shared vector, deque and list");
        return;
    }
    run(a, phase3_push);
    size_t n = NT * K;
    uint64_t *w = calloc(n, 8), *buf = a[0].buf;
    acp_ga_t bufga = a[0].ga;
    CHECK_INT(acp_size_vector(sh_vec), 8 * n, "size of the vector every thread pushed %d words onto", K);
    CHECK_INT(acp_size_deque(sh_deq), 8 * n, "size of the deque every thread pushed %d words onto", K);
    CHECK_INT(acp_size_list(sh_list), n, "size of the list every thread pushed %d elements onto", K);
    if (acp_size_vector(sh_vec) == 8 * n) {
        acp_complete(acp_copy(bufga, acp_at_vector(sh_vec, 0), 8 * n, ACP_HANDLE_NULL));
        memcpy(w, buf, 8 * n);
        check_words("shared vector", w, n, 0);
    }
    if (acp_size_deque(sh_deq) == 8 * n) {
        for (size_t j = 0; j < n; j++) {
            acp_complete(acp_copy(bufga, acp_at_deque(sh_deq, 8 * (int)j), 8, ACP_HANDLE_NULL));
            w[j] = buf[0];
        }
        /* Odd threads pushed onto the front: from the front, theirs come
         * last first. */
        check_words("shared deque", w, n, 1);
    }
    size_t j = 0;
    for (acp_list_it_t it = acp_begin_list(sh_list); it.elem != sh_list.ga && j < n; it = acp_increment_list_it(it), j++) {
        acp_complete(acp_copy(bufga, acp_dereference_list_it(it).ga, 8, ACP_HANDLE_NULL));
        w[j] = buf[0];
    }
    CHECK_INT(j, n, "elements found walking the shared list");
    check_words("shared list", w, j, 0);

    /* Swaps in both orders at once. */
    buf[0] = 0x1234;
    acp_complete(acp_copy(acp_at_vector(sh_vec2, 0), bufga, 8, ACP_HANDLE_NULL));
    run(a, phase3_swap);
    CHECK_INT(acp_size_vector(sh_vec), 8 * n, "size of the first vector after an even number of swaps");
    CHECK_INT(acp_size_vector(sh_vec2), 8, "size of the second vector after an even number of swaps");
    buf[0] = 0;
    acp_complete(acp_copy(bufga, acp_at_vector(sh_vec2, 0), 8, ACP_HANDLE_NULL));
    CHECK_HEX(buf[0], 0x1234, "the second vector's word after an even number of swaps");
    if (acp_size_vector(sh_vec) == 8 * n) {
        acp_complete(acp_copy(bufga, acp_at_vector(sh_vec, 0), 8 * n, ACP_HANDLE_NULL));
        memcpy(w, buf, 8 * n);
        check_words("shared vector after the swaps", w, n, 0);
    }
    free(w);
    acp_destroy_vector(sh_vec);
    acp_destroy_vector(sh_vec2);
    acp_destroy_deque(sh_deq);
    acp_destroy_list(sh_list);
}

static acp_set_t mv_a, mv_b;

static void *phase4_move(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < 6; i++) {
        if ((a->t + i) % 2)
            acp_move_set(mv_a, mv_b);
        else
            acp_move_set(mv_b, mv_a);
    }
    return NULL;
}

static void *phase4_check(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < K; i++) {
        acp_element_t k = key_of(a, i);
        int in_a = acp_find_set(mv_a, k).elem != ACP_GA_NULL, in_b = acp_find_set(mv_b, k).elem != ACP_GA_NULL;
        if (in_a + in_b != 1)
            TFAIL(a, "after the moves key %d is in %d of the two sets", i, in_a + in_b);
    }
    return NULL;
}

static acp_wsd_t ws;
#define WS_STRIPE 512

static void *phase5_ws(void *p)
{
    struct targ *a = p;
    uint8_t *b = (uint8_t *)a->buf;
    size_t per_rank = (size_t)NT * WS_STRIPE * 4;
    for (int k = 0; k < 4; k++) {
        size_t off = (size_t)me * per_rank + (size_t)(k * NT + a->t) * WS_STRIPE;
        acpt_fill(b, WS_STRIPE, off);
        if (acp_write_ws(ws, a->ga, WS_STRIPE, off) != 0)
            TFAIL(a, "acp_write_ws at %zu failed", off);
    }
    return NULL;
}

static void *phase5_check(void *p)
{
    struct targ *a = p;
    uint8_t *b = (uint8_t *)a->buf;
    size_t per_rank = (size_t)NT * WS_STRIPE * 4;
    /* Every stripe of the previous rank's threads. */
    int r = (me + nprocs - 1) % nprocs;
    for (int k = 0; k < 4 * NT; k++) {
        size_t off = (size_t)r * per_rank + (size_t)k * WS_STRIPE;
        memset(b, 0xee, WS_STRIPE);
        if (acp_read_ws(ws, a->ga, WS_STRIPE, off) != 0)
            TFAIL(a, "acp_read_ws at %zu failed", off);
        for (int i = 0; i < WS_STRIPE; i++)
            if (b[i] != acpt_pat(off, (uint64_t)i)) {
                TFAIL(a, "workspace stripe at %zu: byte %d is wrong", off, i);
                break;
            }
    }
    return NULL;
}

static void *phase5_destroy(void *p)
{
    (void)p;
    acp_destroy_ws(ws);
    return NULL;
}

static acp_wsd_t ws2[2];

static void *phase5_create(void *p)
{
    struct targ *a = p;
    if (a->t < 2)
        ws2[a->t] = acp_create_ws((size_t)nprocs * NT * WS_STRIPE * 4);
    return NULL;
}

/* Thread t < 2 writes its pattern over all of workspace t, then (after the
 * others did) reads it all back. */
static void *phase5_fill(void *p)
{
    struct targ *a = p;
    if (a->t >= 2 || ws2[a->t] == ACP_WSD_NULL || ws2[a->t] == NULL)
        return NULL;
    uint8_t *b = (uint8_t *)a->buf;
    size_t off = (size_t)me * NT * WS_STRIPE * 4;
    acpt_fill(b, NT * WS_STRIPE * 4, 9000 + (uint64_t)(me * 2 + a->t));
    if (acp_write_ws(ws2[a->t], a->ga, NT * WS_STRIPE * 4, off) != 0)
        TFAIL(a, "acp_write_ws of my rank's part of the workspace I created");
    return NULL;
}

static void *phase5_refill_check(void *p)
{
    struct targ *a = p;
    if (a->t >= 2 || ws2[a->t] == ACP_WSD_NULL || ws2[a->t] == NULL)
        return NULL;
    uint8_t *b = (uint8_t *)a->buf;
    size_t n = NT * WS_STRIPE * 4, off = (size_t)me * n;
    memset(b, 0, n);
    if (acp_read_ws(ws2[a->t], a->ga, n, off) != 0)
        TFAIL(a, "acp_read_ws of my rank's part of the workspace I created");
    for (size_t i = 0; i < n; i++)
        if (b[i] != acpt_pat(9000 + (uint64_t)(me * 2 + a->t), i)) {
            TFAIL(a, "byte %zu of my rank's part of the workspace I created is another's", i);
            break;
        }
    return NULL;
}

static void run(struct targ *a, void *(*fn)(void *)) { run_threads(a, sizeof *a, NT, fn); }

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    acpt_need_smem(4096);

    struct targ a[NT];
    memset(a, 0, sizeof a);
    for (int t = 0; t < NT; t++)
        a[t].t = t;
    acp_sync();
    run(a, phase1);
    acp_sync();

    uint64_t h[3] = { 0 }, all[64];
    if (me == 0) {
        acp_set_t s = acp_create_set(0, NULL, 3, 0);
        acp_multiset_t m = acp_create_multiset(0, NULL, 3, nprocs - 1);
        acp_map_t p = acp_create_map(0, NULL, 3, nprocs / 2);
        CHECK(s.ga != ACP_GA_NULL && m.ga != ACP_GA_NULL && p.ga != ACP_GA_NULL, "creating the shared containers");
        h[0] = s.ga, h[1] = m.ga, h[2] = p.ga;
    }
    for (int i = 0; i < 3; i++) {
        acpt_allgather_u64(h[i], all, 0);
        h[i] = all[0];
    }
    for (int t = 0; t < NT; t++) {
        a[t].set = (acp_set_t){ h[0], nprocs, 3 };
        a[t].ms = (acp_multiset_t){ h[1], nprocs, 3 };
        a[t].map = (acp_map_t){ h[2], nprocs, 3 };
    }
    run(a, phase2_insert);
    acp_sync();
    uint64_t total = (uint64_t)nprocs * NT * K;
    acpt_allgather_u64((uint64_t)common_new, all, 0);
    uint64_t news = 0;
    for (int r = 0; r < nprocs; r++)
        news += all[r];
    CHECK_INT(news, 1, "insertions of one key into the map from every thread of every rank that were new");
    CHECK_INT(acp_size_set(a[0].set), total + 1, "set size after every thread of every rank inserted %d keys and a common one", K);
    CHECK_INT(acp_size_multiset(a[0].ms), total + 1, "multiset distinct keys");
    CHECK_INT(acp_size_map(a[0].map), total + 1, "map size");
    CHECK_INT(acp_retrieve_multiset(a[0].ms, (acp_element_t){ a[0].ga + 8 * (3 * K + 2), 8 }), total,
              "count of the key every thread inserted %d times", K);
    run(a, phase2_check);
    acp_sync();
    run(a, phase2_remove);
    acp_sync();
    CHECK_INT(acp_size_set(a[0].set), total / 2 + 1, "set size after every thread removed half its keys");
    CHECK_INT(acp_size_multiset(a[0].ms), total / 2 + 1, "multiset distinct keys after the removals");
    CHECK_INT(acp_size_map(a[0].map), total / 2 + 1, "map size after the removals");
    run(a, phase2_check_removed);
    acp_sync();
    if (me == 0) {
        acp_destroy_set(a[0].set);
        acp_destroy_multiset(a[0].ms);
        acp_destroy_map(a[0].map);
    }
    acp_sync();

    shared_sequences(a);
    acp_sync();

    /* Phase 4: my threads' keys start in set A. */
    uint64_t hm[2] = { 0 };
    if (me == 0) {
        mv_a = acp_create_set(0, NULL, 2, 0);
        mv_b = acp_create_set(0, NULL, 5, nprocs - 1);
        hm[0] = mv_a.ga, hm[1] = mv_b.ga;
    }
    acpt_allgather_u64(hm[0], all, 0);
    mv_a = (acp_set_t){ all[0], nprocs, 2 };
    acpt_allgather_u64(hm[1], all, 0);
    mv_b = (acp_set_t){ all[0], nprocs, 5 };
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < K; i++)
            acp_insert_set(mv_a, key_of(&a[t], i));
    acp_sync();
    run(a, phase4_move);
    acp_sync();
    CHECK_INT(acp_size_set(mv_a) + acp_size_set(mv_b), total, "keys in the two sets after the moves");
    run(a, phase4_check);
    acp_sync();
    if (me == 0) {
        acp_destroy_set(mv_a);
        acp_destroy_set(mv_b);
    }

    /* Phase 5. */
    CHECK_INT(acp_setparams_ws(0, NT * WS_STRIPE * 4), 0, "acp_setparams_ws(0, %d)", NT * WS_STRIPE * 4);
    ws = acp_create_ws((size_t)nprocs * NT * WS_STRIPE * 4);
    if (ws == ACP_WSD_NULL || ws == NULL)
        FATAL("acp_create_ws");
    run(a, phase5_ws);
    acp_sync();
    run(a, phase5_check);
    acp_sync();
    /* Every thread destroys it at once: one call destroys it (with the
     * other ranks' one), the others are refused. */
    run(a, phase5_destroy);
    CHECK_INT(acp_read_ws(ws, a[0].ga, 1, 0), 1, "acp_read_ws of the destroyed workspace");
    acp_sync();
    run(a, phase5_create);
    int both = 1;
    for (int t = 0; t < 2; t++) {
        if (ws2[t] == ACP_WSD_NULL || ws2[t] == NULL) {
            FAIL("acp_create_ws in thread %d failed", t);
            both = 0;
            continue;
        }
        CHECK_HEX(ws2[t]->gas[me], ws2[t]->ga_data, "workspace %d of two created at once: its chunk here is its own", t);
    }
    for (int r = 0; both && r < nprocs; r++)
        CHECK(ws2[0]->gas[r] != ws2[1]->gas[r], "two workspaces created at once share rank %d's chunk %#" PRIx64, r, ws2[0]->gas[r]);
    run(a, phase5_fill);
    acp_sync();
    run(a, phase5_refill_check);
    acp_sync();
    for (int t = 0; t < 2; t++)
        if (ws2[t] != ACP_WSD_NULL && ws2[t] != NULL)
            acp_destroy_ws(ws2[t]);

    /* Nothing leaked and nothing was freed twice: my heap is one block. */
    acp_ga_t whole = acp_malloc(MAXREQ, me);
    CHECK(whole != ACP_GA_NULL, "after everything was destroyed my heap is one free block again");
    acp_free(whole);
    for (int t = 0; t < NT; t++)
        CHECK_INT(a[t].failures, 0, "failures of thread %d", t);
    int rc = acpt_finish("t_thr_dl");
    for (int t = 0; t < NT; t++)
        free(a[t].buf);
    return rc;
}
