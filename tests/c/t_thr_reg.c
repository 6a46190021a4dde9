/*
 * t_thr_reg: registration, unregistration and the query functions called
 * from several threads of every rank while other threads copy into the
 * memory being unregistered (decisions.md #20).
 *
 * Three threads per rank register buffers of changing sizes over and over.
 * Each checks what the queries say of its buffer (GA, address, rank,
 * colour), copies through it to and from starter memory of this and the
 * next rank and checks the bytes, publishes the buffer's GA (in a variable
 * for this rank's threads, in its starter memory for the previous rank's),
 * then withdraws it, unregisters and fills the buffer with a canary.
 * A fourth thread keeps writing 64 bytes at whatever GA is published, here
 * and on the next rank, racing with the unregistrations. Once
 * acp_unregister_memory has returned, nothing may write into that memory
 * any more: the canary must stay. Stale GAs may name a later
 * registration of the same segment; buffers are 64-byte aligned and keep
 * their first 128 bytes for such writes, which nobody checks while the
 * buffer is registered. The answers of acp_rank, acp_procs,
 * acp_query_starter_ga, acp_query_rank, acp_query_address, acp_query_color
 * and acp_colors are checked all along in every thread.
 *
 * Run with --acp-size-smem 4096; optional argument: rounds (150).
 */
#include <pthread.h>
#include <sched.h>

#include "acptest.h"
#include "thrtest.h"

#define NT 4          /* threads 0..2 register, thread 3 writes at published GAs */
#define NREG (NT - 1)
#define PUB_OFF 0     /* starter: published GAs of my registering threads */
#define GATHER_OFF 512
#define CONST_OFF 2048 /* 1024 bytes of pattern 500 + rank */
#define LAND 128      /* the first bytes of a buffer take racing writes */

static int me, nprocs, next, rounds = 150, colors;
static acp_ga_t starters[64];
static volatile acp_ga_t published[NREG];
static int done_registering;

struct targ {
    int t;
    int failures;
};

/* Whether p[0..n) is the pattern of seed from position at on. */
static int pat_ok(const uint8_t *p, size_t n, uint64_t seed, size_t at)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != acpt_pat(seed, at + i))
            return 0;
    return 1;
}

static void queries(struct targ *a)
{
    if (acp_rank() != me || acp_procs() != nprocs || acp_colors() != colors)
        TFAIL(a, "acp_rank %d, acp_procs %d, acp_colors %d", acp_rank(), acp_procs(), acp_colors());
    for (int r = 0; r < nprocs; r++) {
        acp_ga_t g = acp_query_starter_ga(r);
        if (g != starters[r] || acp_query_rank(g) != r || acp_query_color(g) != 0)
            TFAIL(a, "starter GA of rank %d: %#" PRIx64 " (want %#" PRIx64 "), its rank %d, colour %d", r, g,
                  starters[r], acp_query_rank(g), acp_query_color(g));
    }
    if (acp_query_address(starters[me]) != acpt_starter(0))
        TFAIL(a, "acp_query_address of my starter memory changed");
    if (nprocs > 1 && acp_query_address(starters[next]) != NULL)
        TFAIL(a, "acp_query_address of rank %d's starter memory is not NULL", next);
}

static void *registrar(void *p)
{
    struct targ *a = p;
    unsigned rs = (unsigned)(me * 7919 + a->t * 104729 + 1);
    acp_ga_t *pub = acpt_starter(PUB_OFF);
    for (int round = 0; round < rounds; round++) {
        size_t n = 4096 + 64 * (rand_r(&rs) % 512);
        uint8_t *buf = aligned_alloc(64, n);
        acpt_fill(buf, n, (uint64_t)round);
        acp_atkey_t key = acp_register_memory(buf, n, 0);
        acp_ga_t ga = acp_query_ga(key, buf);
        if (key == ACP_ATKEY_NULL || ga == ACP_GA_NULL) {
            TFAIL(a, "round %d: registering %zu bytes failed", round, n);
            free(buf);
            continue;
        }
        if (acp_query_address(ga) != buf || acp_query_address(ga + n - 1) != buf + n - 1 ||
            acp_query_rank(ga) != me || acp_query_color(ga) != 0 || acp_query_ga(key, buf + n - 1) != ga + n - 1)
            TFAIL(a, "round %d: the queries of a new registration are wrong", round);
        queries(a);

        /* Through the buffer: my starter's pattern in, the next rank's
         * pattern in, and back out to my starter memory's scratch. */
        acp_handle_t h1 = acp_copy(ga + 1024, starters[me] + CONST_OFF, 1024, ACP_HANDLE_NULL);
        acp_handle_t h2 = acp_copy(ga + 2048, starters[next] + CONST_OFF, 1024, ACP_HANDLE_NULL);
        if (h1 == ACP_HANDLE_NULL || h2 == ACP_HANDLE_NULL)
            TFAIL(a, "round %d: a copy into my buffer was refused", round);
        acp_complete(ACP_HANDLE_ALL);
        if (!pat_ok(buf + 1024, 1024, 500 + (uint64_t)me, 0) || !pat_ok(buf + 2048, 1024, 500 + (uint64_t)next, 0))
            TFAIL(a, "round %d: the starter patterns copied into my buffer are wrong", round);
        if (!pat_ok(buf + LAND, 1024 - LAND, (uint64_t)round, LAND) || !pat_ok(buf + 3072, n - 3072, (uint64_t)round, 3072))
            TFAIL(a, "round %d: bytes of my buffer that nobody copies to changed", round);

        published[a->t] = ga;
        __atomic_store_n(&pub[a->t], ga, __ATOMIC_RELEASE);
        for (int i = 0; i < 3; i++)
            sched_yield();
        __atomic_store_n(&pub[a->t], 0, __ATOMIC_RELEASE);
        published[a->t] = 0;
        if (acp_unregister_memory(key) != 0)
            TFAIL(a, "round %d: acp_unregister_memory failed", round);
        if (acp_query_address(ga) == buf)
            TFAIL(a, "round %d: acp_query_address still finds an unregistered buffer", round);
        memset(buf, 0xcc, n);
        for (int i = 0; i < 5; i++)
            sched_yield();
        for (size_t i = 0; i < n; i++)
            if (buf[i] != 0xcc) {
                TFAIL(a, "round %d: byte %zu of a buffer was written after acp_unregister_memory returned (0x%02x)",
                      round, i, buf[i]);
                break;
            }
        free(buf);
    }
    __atomic_fetch_add(&done_registering, 1, __ATOMIC_RELEASE);
    return NULL;
}

static void *writer(void *p)
{
    struct targ *a = p;
    uint8_t *src = aligned_alloc(64, 4096);
    memset(src, 0x77, 4096);
    acp_ga_t sga = acp_query_ga(acp_register_memory(src, 4096, 0), src);
    if (sga == ACP_GA_NULL) {
        TFAIL(a, "registering the writer's buffer");
        return NULL;
    }
    acp_ga_t *remote = (acp_ga_t *)(src + 1024);
    for (long i = 0; __atomic_load_n(&done_registering, __ATOMIC_ACQUIRE) < NREG; i++) {
        acp_ga_t target = published[i % NREG];
        if (i % 2 == 1) {
            /* The next rank's published GA, as it was a moment ago. */
            acp_handle_t h = acp_copy(sga + 1024, starters[next] + PUB_OFF + 8 * (uint64_t)(i % NREG), 8, ACP_HANDLE_NULL);
            acp_complete(h);
            target = *remote;
        }
        if (target != ACP_GA_NULL) {
            acp_handle_t h = acp_copy(target, sga, 64, ACP_HANDLE_NULL);
            if (h != ACP_HANDLE_NULL)
                acp_complete(h);
        }
        if (i % 64 == 0)
            queries(a);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    next = (me + 1) % nprocs;
    colors = acp_colors();
    if (argc > 1)
        rounds = atoi(argv[1]);
    if (nprocs > 64)
        FATAL("more than 64 ranks");
    acpt_need_smem(4096);
    memset(acpt_starter(PUB_OFF), 0, 8 * NREG);
    acpt_fill(acpt_starter(CONST_OFF), 1024, 500 + (uint64_t)me);
    for (int r = 0; r < nprocs; r++)
        starters[r] = acp_query_starter_ga(r);
    acp_sync();

    struct targ a[NT];
    pthread_t th[NT];
    memset(a, 0, sizeof a);
    for (int t = 0; t < NT; t++) {
        a[t].t = t;
        if (pthread_create(&th[t], NULL, t < NREG ? registrar : writer, &a[t]) != 0)
            FATAL("pthread_create");
    }
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
    acp_sync();
    for (int t = 0; t < NT; t++)
        CHECK_INT(a[t].failures, 0, "failures of thread %d", t);
    return acpt_finish("t_thr_reg");
}
