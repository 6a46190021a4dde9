/*
 * t_dl_otherfail: data-library calls judge their own global memory
 * accesses, not the process's. A copy that the peer rejects, still in
 * flight or completed before the call, does not make acp_malloc or a
 * container call fail. A second thread that keeps issuing such copies
 * while this one allocates and frees on the next rank's heap makes no
 * allocation fail and leaves no heap lock held (the job would hang).
 */
#include <pthread.h>

#include "dltest.h"

static volatile int stop;

/* Beyond the next rank's starter memory: that rank rejects the copy. */
static acp_handle_t bad_copy(void)
{
    int me = acp_rank(), peer = (me + 1) % acp_procs();
    return acp_copy(acp_query_starter_ga(peer) + (1 << 20), acp_query_starter_ga(me), 8, ACP_HANDLE_NULL);
}

static void *keep_failing(void *arg)
{
    (void)arg;
    while (!stop) {
        acp_complete(bad_copy());
        usleep(100);
    }
    return NULL;
}

static void failure_in_flight(int me, int peer)
{
    acp_handle_t h = bad_copy();
    acp_ga_t g = acp_malloc(64, me);
    CHECK(g != ACP_GA_NULL, "acp_malloc while another copy fails");
    acp_complete(h);
    acp_vector_t v = acp_create_vector(0, peer);
    acp_complete(bad_copy());
    acp_push_back_vector(v, dlt_val(me, 40), 8);
    CHECK_INT(acp_size_vector(v), 8, "push_back_vector after a failed copy");
    CHECK_INTS(acp_at_vector(v, 0), 2, "the vector's values", 40, 41);
    acp_destroy_vector(v);
    acp_free(g);
}

static void failures_of_another_thread(int peer)
{
    pthread_t t;
    stop = 0;
    if (pthread_create(&t, NULL, keep_failing, NULL) != 0)
        FATAL("pthread_create");
    long ok = 0, null = 0;
    for (double end = acpt_now() + 2; acpt_now() < end;) {
        acp_ga_t g = acp_malloc(64, peer);
        if (g != ACP_GA_NULL) {
            ok++;
            acp_free(g);
        } else {
            null++;
        }
    }
    stop = 1;
    pthread_join(t, NULL);
    CHECK_INT(null, 0, "acp_malloc on rank %d that returned ACP_GA_NULL (of %ld)", peer, ok + null);
    acp_sync();
    /* Every heap's lock is free: everybody allocates on every rank. */
    for (int r = 0; r < acp_procs(); r++) {
        acp_ga_t g = acp_malloc(64, r);
        CHECK(g != ACP_GA_NULL, "acp_malloc on rank %d afterwards", r);
        acp_free(g);
    }
    acp_sync();
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    dlt_fill_values();
    dlt_init_buf();
    int peer = (acp_rank() + 1) % acp_procs();
    failure_in_flight(acp_rank(), peer);
    failures_of_another_thread(peer);
    return acpt_finish("t_dl_otherfail");
}
