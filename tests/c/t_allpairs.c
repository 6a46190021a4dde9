/*
 * t_allpairs: every rank issues copies and atomics between every pair of
 * ranks, itself included, at the same time.
 *
 * Whatever the transports between the ranks (all on one host: shared
 * memory; with ACP_TRANSPORTS=udp: the network; ranks on two hosts: shared
 * memory within each and UDP across), each placement must work: local,
 * put, get, and third party, with both ends on one other rank, on two
 * other ranks on the same host, or on two hosts.
 *
 * Copies: rank i copies the source area of every rank s into the slot
 * (i, s) of every rank d. Every slot must then hold rank s's pattern.
 *
 * Atomics: rank i adds 1 to the counter of every rank t, sending the old
 * value to every rank o's result table at (i, t). Each counter must end at
 * N*N and the N*N old values fetched from one counter must be exactly
 * 0..N*N-1, each once (no lost, repeated or torn update). Then every rank
 * increments a 4-byte counter on every rank with cas4 retry loops.
 */
#include "acptest.h"

#define SRC_BYTES 5003 /* crosses fragment boundaries of the small datagrams */
#define SRC_OFF 64
#define SLOTS_OFF (SRC_OFF + 8192)

static size_t slot_off(int i, int s, int n) { return SLOTS_OFF + ((size_t)i * n + s) * 8192; }

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    int me = acp_rank(), n = acp_procs();
    size_t counters = slot_off(n, 0, n);    /* 8-byte add8 counter, 4-byte cas4 counter */
    size_t results = counters + 64;         /* n*n fetched values (i, t) */
    size_t scratch = results + 8 * (size_t)n * n;
    size_t gather = scratch + 64;           /* rank 0: every rank's result table */
    acpt_need_smem(gather + 8 * (size_t)n * n * n);

    acp_ga_t mine = acp_query_starter_ga(me);
    acpt_fill(acpt_starter(SRC_OFF), SRC_BYTES, 1000 + me);
    acp_sync();

    /* ---- copies: every placement at once ---- */
    for (int s = 0; s < n; s++)
        for (int d = 0; d < n; d++) {
            acp_handle_t h = acp_copy(acp_query_starter_ga(d) + slot_off(me, s, n),
                                      acp_query_starter_ga(s) + SRC_OFF, SRC_BYTES, ACP_HANDLE_NULL);
            CHECK(h != ACP_HANDLE_NULL, "acp_copy from rank %d to rank %d returned ACP_HANDLE_NULL", s, d);
        }
    acp_complete(ACP_HANDLE_ALL);
    acp_sync();
    for (int i = 0; i < n; i++)
        for (int s = 0; s < n; s++) {
            char what[96];
            snprintf(what, sizeof what, "slot written by rank %d from rank %d's source", i, s);
            CHECK_FILL(acpt_starter(slot_off(i, s, n)), SRC_BYTES, 1000 + s, what);
        }

    /* ---- add8 from everybody to everybody, results to everybody ----
     * Every other one is ordered after the previous operation, so that one
     * counter is updated at once by atomics run in the calling thread (C
     * fast path or Go), deferred ones run later by the engine, and ones the
     * owner runs (for ranks it reaches over the network). */
    acp_handle_t prev = ACP_HANDLE_NULL;
    for (int t = 0; t < n; t++)
        for (int o = 0; o < n; o++) {
            acp_handle_t order = ((t + o) % 2) ? prev : (acp_handle_t)ACP_HANDLE_NULL;
            acp_handle_t h = acp_add8(acp_query_starter_ga(o) + results + 8 * ((uint64_t)me * n + t),
                                      acp_query_starter_ga(t) + counters, 1, order);
            CHECK(h != ACP_HANDLE_NULL, "acp_add8 on rank %d, result to rank %d, returned ACP_HANDLE_NULL", t, o);
            prev = h;
        }
    acp_complete(ACP_HANDLE_ALL);
    acp_sync();
    CHECK_INT(*(uint64_t *)acpt_starter(counters), (int64_t)n * n, "add8 counter after every rank added 1 for every rank");

    /* Rank 0 gathers every rank's result table and checks, per target, that
     * the fetched values are a permutation of 0..n*n-1. */
    if (me == 0) {
        for (int o = 0; o < n; o++)
            acp_copy(mine + gather + 8 * (uint64_t)o * n * n, acp_query_starter_ga(o) + results,
                     8 * (size_t)n * n, ACP_HANDLE_NULL);
        acp_complete(ACP_HANDLE_ALL);
        uint64_t *all = acpt_starter(gather); /* [o][i][t] */
        char *seen = calloc((size_t)n * n, 1);
        for (int t = 0; t < n; t++) {
            memset(seen, 0, (size_t)n * n);
            for (int o = 0; o < n; o++)
                for (int i = 0; i < n; i++) {
                    uint64_t v = all[((size_t)o * n + i) * n + t];
                    if (v >= (uint64_t)n * n)
                        FAIL("add8 on rank %d issued by rank %d fetched %" PRIu64 " into rank %d: out of range", t, i, v, o);
                    else if (seen[v]++)
                        FAIL("add8 on rank %d: value %" PRIu64 " fetched twice", t, v);
                }
        }
        free(seen);
    }
    acp_sync();

    /* ---- cas4 increment loops on every rank's 4-byte counter ---- */
    uint32_t *fetched = acpt_starter(scratch);
    for (int t = 0; t < n; t++) {
        acp_ga_t target = acp_query_starter_ga(t) + counters + 8;
        for (int k = 0; k < 10; k++) {
            for (int tries = 0;; tries++) {
                WAIT(acp_add4(mine + scratch, target, 0, ACP_HANDLE_NULL), "acp_add4(+0) to read a counter");
                uint32_t cur = *fetched;
                WAIT(acp_cas4(mine + scratch, target, cur, cur + 1, ACP_HANDLE_NULL), "acp_cas4 increment");
                if (*fetched == cur)
                    break;
                if (tries > 100000) {
                    FAIL("cas4 on rank %d never succeeded", t);
                    break;
                }
            }
        }
    }
    acp_sync();
    CHECK_INT(*(uint32_t *)acpt_starter(counters + 8), 10 * n, "cas4 counter after every rank incremented it 10 times");
    return acpt_finish("t_allpairs");
}
