/*
 * t_threads: several threads of each rank issue operations at once.
 *
 * 4 pthreads per rank, each with its own registered buffer (registered from
 * the thread), for ITER iterations:
 *   - put a block (pattern of rank, thread, iteration) into its slot on the
 *     next rank and wait with acp_complete(h);
 *   - get the next rank's constant block and wait by polling acp_inquire(h),
 *     then check it;
 *   - acp_add8(+1) on a counter on every rank;
 *   - every 10th iteration, a cas4-loop increment of a counter on rank 0;
 *   - acp_complete(ACP_HANDLE_ALL) from time to time (which waits for the
 *     other threads' operations too).
 * At the end: every counter is exact and every slot holds the last block.
 *
 * Run with --acp-size-smem 524288; optional argument: iterations (200).
 */
#include <pthread.h>
#include <sched.h>

#include "acptest.h"

#define NTHREADS  4
#define MAXP      16
#define BLK       4096
#define CNT_OFF   0               /* uint64_t: one add8 per thread per rank per iteration */
#define CAS_OFF   8               /* uint32_t on rank 0: cas4-loop increments */
#define CONST_OFF 64              /* constant block others get */
#define DST_OFF   (CONST_OFF + BLK) /* slot [source rank][thread] */
#define SMEM      (DST_OFF + MAXP * NTHREADS * BLK)

static int me, nprocs, iters = 200;

struct thread_arg {
    int t;
    int failures; /* counted here, merged by the main thread */
};

static uint64_t put_seed(int rank, int t, int it) { return ((uint64_t)rank << 40) | ((uint64_t)t << 32) | (uint64_t)it; }

/* Thread failures are printed at once but counted per thread, so that the
 * shared counter is only touched by the main thread. */
#define TFAIL(a, ...)                                                                           \
    do {                                                                                        \
        (a)->failures++;                                                                        \
        printf("rank %d: FAIL %s:%d: thread %d: ", me, __FILE__, __LINE__, (a)->t);             \
        printf(__VA_ARGS__);                                                                    \
        printf("\n");                                                                           \
    } while (0)

static int pattern_ok(const uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != acpt_pat(seed, i))
            return 0;
    return 1;
}

static void *worker(void *vp)
{
    struct thread_arg *a = vp;
    /* [0, BLK): source of my puts; [BLK, 2 BLK): landing place of my gets;
     * then result words for atomics. */
    uint8_t *buf = aligned_alloc(64, 2 * BLK + 64);
    acp_atkey_t key = acp_register_memory(buf, 2 * BLK + 64, 0);
    acp_ga_t ga = acp_query_ga(key, buf);
    if (ga == ACP_GA_NULL) {
        TFAIL(a, "registering the thread's buffer");
        return NULL;
    }
    acp_ga_t res = ga + 2 * BLK, res4 = ga + 2 * BLK + 8;
    uint32_t *res4p = (uint32_t *)(buf + 2 * BLK + 8);
    int next = (me + 1) % nprocs;
    acp_ga_t next_st = acp_query_starter_ga(next);

    for (int it = 0; it < iters; it++) {
        acpt_fill(buf, BLK, put_seed(me, a->t, it));
        acp_handle_t h = acp_copy(next_st + DST_OFF + ((uint64_t)me * NTHREADS + (uint64_t)a->t) * BLK, ga, BLK,
                                  ACP_HANDLE_NULL);
        if (h == ACP_HANDLE_NULL)
            TFAIL(a, "put refused in iteration %d", it);
        acp_complete(h); /* the source is refilled next iteration */

        memset(buf + BLK, 0, BLK);
        h = acp_copy(ga + BLK, next_st + CONST_OFF, BLK, ACP_HANDLE_NULL);
        if (h == ACP_HANDLE_NULL)
            TFAIL(a, "get refused in iteration %d", it);
        double t0 = acpt_now();
        int v;
        while ((v = acp_inquire(h)) == 1 && acpt_now() - t0 < 60)
            sched_yield();
        if (v != 0)
            TFAIL(a, "acp_inquire of a get gave %d (after %.1f s)", v, acpt_now() - t0);
        if (!pattern_ok(buf + BLK, BLK, 777 + (uint64_t)next))
            TFAIL(a, "data got from rank %d in iteration %d is wrong", next, it);

        for (int r = 0; r < nprocs; r++)
            if (acp_add8(res, acp_query_starter_ga(r) + CNT_OFF, 1, ACP_HANDLE_NULL) == ACP_HANDLE_NULL)
                TFAIL(a, "acp_add8 on rank %d refused", r);

        if (it % 10 == 0) {
            uint32_t guess = 0;
            for (;;) {
                h = acp_cas4(res4, acp_query_starter_ga(0) + CAS_OFF, guess, guess + 1, ACP_HANDLE_NULL);
                if (h == ACP_HANDLE_NULL) {
                    TFAIL(a, "acp_cas4 refused");
                    break;
                }
                acp_complete(h);
                if (*res4p == guess)
                    break;
                guess = *res4p;
            }
        }
        if (it % 16 == 15)
            acp_complete(ACP_HANDLE_ALL);
    }
    acp_complete(ACP_HANDLE_ALL);
    if (acp_unregister_memory(key) != 0)
        TFAIL(a, "unregistering the thread's buffer");
    free(buf);
    return NULL;
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    if (argc > 1)
        iters = atoi(argv[1]);
    if (nprocs > MAXP)
        FATAL("more than 16 ranks");
    acpt_need_smem(SMEM);
    acpt_fill(acpt_starter(CONST_OFF), BLK, 777 + (uint64_t)me);
    CHECK_INT(acp_sync(), 0, "acp_sync");

    pthread_t th[NTHREADS];
    struct thread_arg args[NTHREADS];
    double t0 = acpt_now();
    for (int t = 0; t < NTHREADS; t++) {
        args[t] = (struct thread_arg){ .t = t };
        if (pthread_create(&th[t], NULL, worker, &args[t]) != 0)
            FATAL("pthread_create");
    }
    for (int t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        acpt_failures += args[t].failures;
        acpt_checks++;
    }
    CHECK_INT(acp_sync(), 0, "acp_sync");
    if (me == 0)
        printf("t_threads: %d ranks x %d threads x %d iterations in %.2f s\n", nprocs, NTHREADS, iters,
               acpt_now() - t0);

    CHECK_INT(*(uint64_t *)acpt_starter(CNT_OFF), (uint64_t)nprocs * NTHREADS * (uint64_t)iters,
              "add8 counter after %d ranks x %d threads x %d iterations", nprocs, NTHREADS, iters);
    if (me == 0)
        CHECK_INT(*(uint32_t *)acpt_starter(CAS_OFF), nprocs * NTHREADS * ((iters + 9) / 10),
                  "cas4 counter on rank 0");
    int prev = (me + nprocs - 1) % nprocs;
    for (int t = 0; t < NTHREADS; t++) {
        char what[96];
        snprintf(what, sizeof what, "last block put by rank %d thread %d", prev, t);
        CHECK_FILL((uint8_t *)acpt_starter(DST_OFF) + ((size_t)prev * NTHREADS + (size_t)t) * BLK, BLK,
                   put_seed(prev, t, iters - 1), what);
    }
    return acpt_finish("t_threads");
}
