/*
 * t_sync: acp_sync is a barrier that first completes the caller's
 * operations.
 *
 * Round k: every rank adds 1 (acp_add8) to a counter on every rank and puts
 * the round number into its own slot of a table on every rank, without
 * completing anything itself, then calls acp_sync. After the sync the
 * counter must be exactly k * N and every slot k. Rounds alternate between
 * two counters and tables, so that a fast rank's next round cannot touch
 * what a slow rank is still checking (it cannot pass the next sync before
 * the slow rank has finished checking).
 *
 * Run with --acp-size-smem 4096.
 */
#include "acptest.h"

#define ROUNDS  300
#define MAXP    64
#define CNT_OFF 0    /* two counters */
#define SRC_OFF 16   /* my round number, the source of my puts */
#define RES_OFF 64   /* fetched values (not checked: any order is fine) */
#define TAB_OFF 128  /* two tables of MAXP slots */

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    int me = acp_rank(), n = acp_procs();
    if (n > MAXP)
        FATAL("more than 64 ranks");
    acpt_need_smem(TAB_OFF + 2 * MAXP * 8);
    uint64_t *cnt = acpt_starter(CNT_OFF), *src = acpt_starter(SRC_OFF);
    uint64_t *tab = acpt_starter(TAB_OFF);
    acp_ga_t mine = acp_query_starter_ga(me);
    CHECK_INT(acp_sync(), 0, "acp_sync");

    double t0 = acpt_now();
    for (int k = 1; k <= ROUNDS; k++) {
        int par = k % 2;
        src[par] = (uint64_t)k;
        for (int i = 0; i < n; i++) {
            int r = (me + i) % n;
            acp_ga_t g = acp_query_starter_ga(r);
            acp_handle_t h = acp_add8(mine + RES_OFF, g + CNT_OFF + 8 * (uint64_t)par, 1, ACP_HANDLE_NULL);
            CHECK(h != ACP_HANDLE_NULL, "round %d: acp_add8 on rank %d refused", k, r);
            h = acp_copy(g + TAB_OFF + 8 * (uint64_t)(par * MAXP + me), mine + SRC_OFF + 8 * (uint64_t)par, 8,
                         ACP_HANDLE_NULL);
            CHECK(h != ACP_HANDLE_NULL, "round %d: acp_copy to rank %d refused", k, r);
        }
        CHECK_INT(acp_sync(), 0, "acp_sync in round %d", k);
        /* Rounds k, k-2, ... used this counter: (k + 1) / 2 of them. */
        CHECK_INT(cnt[par], (uint64_t)((k + 1) / 2) * (uint64_t)n, "counter %d after round %d", par, k);
        for (int r = 0; r < n; r++)
            CHECK_INT(tab[par * MAXP + r], k, "slot of rank %d after round %d", r, k);
    }
    if (me == 0)
        printf("t_sync: %d rounds in %.3f s\n", ROUNDS, acpt_now() - t0);
    return acpt_finish("t_sync");
}
