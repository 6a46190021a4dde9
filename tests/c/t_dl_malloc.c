/*
 * t_dl_malloc: the global heap (acp_malloc/acp_free).
 *
 * On a fresh heap: placement and boundary tags exactly as the original's
 * allocator lays them out (spec B.6: first block at D + 96, blocks of
 * round8(size) + 16 bytes, contiguous and ascending, a freed block reused),
 * read directly through acp_query_address; after everything is freed the
 * whole heap is one block again; exhaustion gives ACP_GA_NULL; bad ranks
 * and bad frees are rejected without harm. Then every rank, with two
 * threads, allocates on rank 0 and on its neighbour at once while freeing,
 * fills each block with a pattern and checks it before freeing it (blocks
 * that overlapped would show), and finally each heap must again be one
 * block. Run with ACP_SIZE_SMEM_DL=1048576.
 */
#include <limits.h>
#include <pthread.h>

#include "acptest.h"

#define DLSIZE 1048576ull
#define W ((DLSIZE - 16) & ~7ull)  /* heap span */
#define B0 (W - 80)                /* the one free block of a fresh heap */
#define MAXREQ (B0 - 16)           /* the largest request it can satisfy */

static uint64_t word(acp_ga_t ga)
{
    uint64_t *p = acp_query_address(ga);
    if (p == NULL) {
        FAIL("acp_query_address(0x%" PRIx64 ") is NULL", ga);
        return 0;
    }
    return *p;
}

/* D of my own heap, from the first allocation of a fresh heap. */
static acp_ga_t fresh_heap_layout(int me)
{
    acp_ga_t g0 = acp_malloc(10, me);
    CHECK(g0 != ACP_GA_NULL, "acp_malloc(10, %d) on a fresh heap is ACP_GA_NULL", me);
    if (g0 == ACP_GA_NULL)
        return ACP_GA_NULL;
    acp_ga_t d = g0 - 96;
    CHECK_INT(acp_query_rank(g0), me, "rank of acp_malloc(10, me)");
    CHECK_HEX(g0 & 7, 0, "acp_malloc result is 8-byte aligned");
    CHECK(acp_query_address(g0) != NULL, "a block on my heap is addressable");
    /* Boundary tags: 32-byte block, tag 3. */
    CHECK_INT(word(g0 - 8), 32 + 3, "header of a 10-byte block");
    CHECK_INT(word(g0 + 16), 32 + 3, "footer of a 10-byte block");
    CHECK_INT(word(d + 16 + 64), 3, "start sentinel");
    CHECK_INT(word(d + 16 + W - 8), 3, "end sentinel");
    CHECK_HEX(word(d + 16 + 56), d + 16 + W - 24, "free-list head is the entry of the remaining block");
    CHECK_INT(word(d + 16 + W - 16), B0 - 32 + 5, "footer of the remaining free block");
    CHECK_INT(word(d + 16 + 72 + 32), B0 - 32 + 5, "header of the remaining free block");

    acp_ga_t g1 = acp_malloc(1, me), g2 = acp_malloc(0, me);
    CHECK_HEX(g1, g0 + 32, "second block follows the first");
    CHECK_HEX(g2, g1 + 24, "acp_malloc(0) gives an 8-byte block after the second");
    CHECK_INT(word(g2 - 8), 24 + 3, "header of an 8-byte block");
    memset(acp_query_address(g1), 0xab, 8);
    acp_free(g1);
    CHECK_INT(word(g1 - 8), 24 + 5, "a freed block between two used ones is listed");
    CHECK_HEX(word(d + 16 + 56), g1, "and its entry (the block's last 16 bytes) heads the free list");
    acp_ga_t g3 = acp_malloc(8, me);
    CHECK_HEX(g3, g1, "the freed block is reused");
    acp_free(g0);
    acp_free(g3);
    CHECK_INT(word(g3 - 8), 24 + 6, "a block freed after a listed neighbour is extended (tag 6)");
    acp_free(g2);
    acp_free(g2); /* twice: ignored */

    acp_ga_t all = acp_malloc(MAXREQ, me);
    CHECK_HEX(all, d + 96, "after freeing everything the whole heap is one block");
    CHECK_INT(word(all - 8), B0 + 3, "header of the whole-heap block");
    acp_free(all);
    return d;
}

static void bad_input(int me, int n)
{
    const int badranks[] = { -1, n, n + 1, INT_MAX, INT_MIN };
    for (size_t i = 0; i < sizeof badranks / sizeof badranks[0]; i++)
        CHECK_HEX(acp_malloc(8, badranks[i]), ACP_GA_NULL, "acp_malloc(8, %d)", badranks[i]);
    CHECK_HEX(acp_malloc(MAXREQ + 8, me), ACP_GA_NULL, "acp_malloc of more than the heap holds");
    CHECK_HEX(acp_malloc(1ull << 60, me), ACP_GA_NULL, "acp_malloc(2^60)");
    CHECK_HEX(acp_malloc(SIZE_MAX, me), ACP_GA_NULL, "acp_malloc(SIZE_MAX)");
    acp_free(ACP_GA_NULL);
    acp_ga_t g = acp_malloc(16, me);
    CHECK(g != ACP_GA_NULL, "acp_malloc(16) after the failures");
    acp_free(g + 4);                          /* not aligned: ignored */
    acp_free(g + 8);                          /* inside a block: ignored */
    acp_free(acp_query_starter_ga(me));       /* not heap memory: ignored */
    acp_free(acp_query_starter_ga(me) + 64);
    acp_free(0x1234);                         /* not a GA */
    CHECK_INT(word(g - 8), 32 + 3, "the block survives bad frees");
    acp_free(g);
}

/* ---- concurrent allocation ---------------------------------------------- */

#define ITER 40
#define LIVE 6

struct worker {
    int me, n, id, failures;
    uint8_t *buf;
    acp_ga_t bufga;
};

static int check_block(struct worker *w, acp_ga_t g, size_t sz, unsigned seed)
{
    memset(w->buf + 2048, 0, sz);
    acp_complete(acp_copy(w->bufga + 2048, g, sz, ACP_HANDLE_NULL));
    for (size_t i = 0; i < sz; i++)
        if (w->buf[2048 + i] != (uint8_t)(seed + i))
            return 0;
    return 1;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    unsigned rs = (unsigned)(w->me * 7919 + w->id * 104729 + 1);
    acp_ga_t live[LIVE] = { 0 };
    size_t sizes[LIVE] = { 0 };
    unsigned seeds[LIVE] = { 0 };
    for (int it = 0; it < ITER; it++) {
        int k = it % LIVE;
        if (live[k] != ACP_GA_NULL) {
            if (!check_block(w, live[k], sizes[k], seeds[k]))
                w->failures++;
            acp_free(live[k]);
        }
        int target = (it & 1) ? 0 : (w->me + 1) % w->n;
        size_t sz = 1 + rand_r(&rs) % 200;
        acp_ga_t g = acp_malloc(sz, target);
        live[k] = g;
        if (g == ACP_GA_NULL || acp_query_rank(g) != target || (g & 7) != 0) {
            w->failures++;
            live[k] = ACP_GA_NULL;
            continue;
        }
        sizes[k] = sz;
        seeds[k] = (unsigned)(w->me * 1000 + w->id * 100 + it);
        for (size_t i = 0; i < sz; i++)
            w->buf[i] = (uint8_t)(seeds[k] + i);
        acp_complete(acp_copy(g, w->bufga, sz, ACP_HANDLE_NULL));
    }
    for (int k = 0; k < LIVE; k++) {
        if (live[k] == ACP_GA_NULL)
            continue;
        if (!check_block(w, live[k], sizes[k], seeds[k]))
            w->failures++;
        acp_free(live[k]);
    }
    return NULL;
}

static void concurrent(int me, int n, acp_ga_t d)
{
    struct worker w[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++) {
        w[i] = (struct worker){ .me = me, .n = n, .id = i };
        w[i].buf = calloc(1, 4096);
        w[i].bufga = acp_query_ga(acp_register_memory(w[i].buf, 4096, 0), w[i].buf);
        if (w[i].bufga == ACP_GA_NULL)
            FATAL("cannot register a buffer");
    }
    acp_sync();
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT(w[i].failures, 0, "thread %d: allocations that failed or blocks that were overwritten", i);
    }
    acp_sync();
    /* Every block is free again: each heap is one block once more. */
    if (d != ACP_GA_NULL) {
        acp_ga_t all = acp_malloc(MAXREQ, me);
        CHECK_HEX(all, d + 96, "after the concurrent phase my heap is one block again");
        acp_free(all);
    }
    acp_sync();
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    int me = acp_rank(), n = acp_procs();
    acp_ga_t d = fresh_heap_layout(me);
    bad_input(me, n);
    concurrent(me, n, d);
    return acpt_finish("t_dl_malloc");
}
