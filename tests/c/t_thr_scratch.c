/*
 * t_thr_scratch: many threads in the data library at once must not use up
 * the registrations for good.
 *
 * Every call of the data library works through a registered scratch
 * buffer of its own; threads inside it at the same time each need one.
 * The test counts how many registrations acp_register_memory still
 * grants, lets 32 threads allocate, free and push onto vectors all at
 * once, and counts again: at most a few buffers may stay registered.
 */
#include <pthread.h>

#include "acptest.h"

#define NT 32
#define OPS 100
#define MAXREG 4096
/* Buffers the library may keep registered after the threads are gone. */
#define KEPT 4

static int me, nprocs;
static pthread_barrier_t start;
static int failures;

/* Registers 64-byte pieces of one buffer until the library refuses,
 * unregisters them and returns how many it granted. */
static int usable_registrations(void)
{
    static char buf[MAXREG * 64];
    static acp_atkey_t keys[MAXREG];
    int n = 0;
    while (n < MAXREG && (keys[n] = acp_register_memory(buf + (size_t)n * 64, 64, 0)) != ACP_ATKEY_NULL)
        n++;
    for (int i = 0; i < n; i++)
        if (acp_unregister_memory(keys[i]) != 0)
            FAIL("acp_unregister_memory of registration %d failed", i);
    return n;
}

static void *worker(void *p)
{
    int t = (int)(intptr_t)p;
    acp_vector_t v = acp_create_vector(0, (me + t) % nprocs);
    uint64_t word = (uint64_t)t;
    acp_atkey_t k = acp_register_memory(&word, sizeof word, 0);
    acp_ga_t wga = acp_query_ga(k, &word);
    pthread_barrier_wait(&start);
    for (int i = 0; i < OPS; i++) {
        acp_ga_t g = acp_malloc(64, (me + t + i) % nprocs);
        if (g == ACP_GA_NULL)
            __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
        else
            acp_free(g);
        acp_push_back_vector(v, wga, sizeof word);
    }
    if (acp_size_vector(v) != OPS * sizeof word)
        __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
    acp_destroy_vector(v);
    acp_unregister_memory(k);
    return NULL;
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();

    int before = usable_registrations();
    CHECK(before > 100, "registrations usable at the start: %d", before);
    for (int round = 0; round < 3; round++) {
        pthread_t th[NT];
        pthread_barrier_init(&start, NULL, NT);
        for (int t = 0; t < NT; t++)
            if (pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t) != 0)
                FATAL("pthread_create");
        for (int t = 0; t < NT; t++)
            pthread_join(th[t], NULL);
        pthread_barrier_destroy(&start);
        acp_sync();
        int after = usable_registrations();
        CHECK(after >= before - KEPT, "round %d: registrations usable after %d threads used the data library at once: %d of %d at the start",
              round, NT, after, before);
        printf("rank %d: round %d: %d registrations usable (%d at the start)\n", me, round, after, before);
        acp_sync();
    }
    CHECK_INT(failures, 0, "data-library calls of the threads that failed");
    return acpt_finish("t_thr_scratch");
}
