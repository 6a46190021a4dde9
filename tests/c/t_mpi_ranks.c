/*
 * t_mpi_ranks: an MPI program that also uses ACP, as hybrid applications do.
 *
 *     mpirun -np 4 t_mpi_ranks [acp-first | mpi-finalize-first]
 *
 * MPI_Init, then acp_init (or the other way round with "acp-first"); both
 * libraries are used in turn; acp_finalize, then MPI_Finalize. Checks:
 * acp_rank() and acp_procs() equal MPI's rank and size; the starter GAs
 * that MPI_Allgather collects equal acp_query_starter_ga of every rank;
 * MPI ranks copied with acp_copy land in the right slots; an acp_add8 from
 * every rank reaches rank 0; MPI_Barrier and acp_sync interleave; MPI
 * still works after acp_finalize.
 *
 * With "mpi-finalize-first", MPI_Finalize comes before acp_finalize. Under
 * Open MPI (PMIx is reference-counted) acp_finalize still succeeds; under
 * MPICH, whose launcher closes the shared PMI-1 connection at MPI_Finalize,
 * acp_finalize must fail cleanly (return -1, no crash, no hang): the
 * documented order is acp_finalize first.
 *
 * Built once per MPI (Open MPI and MPICH) and run under that MPI's
 * launcher: libacp then finds its peers through the launcher's PMIx (Open
 * MPI) or PMI-1 (MPICH), which MPI is using at the same time.
 */
#include <mpi.h>

#include "acptest.h"

#define TABLE_OFF 64 /* slot r: the MPI rank of ACP rank r */
#define COUNTER_OFF 0

static void check_mpi(int rc, const char *what)
{
    if (rc != MPI_SUCCESS)
        FAIL("%s returned %d", what, rc);
}

int main(int argc, char **argv)
{
    int acp_first = argc > 1 && strcmp(argv[1], "acp-first") == 0;
    int mpi_finalize_first = argc > 1 && strcmp(argv[1], "mpi-finalize-first") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (acp_first && acp_init(&argc, &argv) != 0)
        FATAL("acp_init (before MPI_Init) returned non-zero");
    if (MPI_Init(&argc, &argv) != MPI_SUCCESS)
        FATAL("MPI_Init failed");
    if (!acp_first && acp_init(&argc, &argv) != 0)
        FATAL("acp_init (after MPI_Init) returned non-zero");
    acpt_me = acp_rank();

    int mpi_rank = -1, mpi_size = -1;
    MPI_Comm_rank(MPI_COMM_WORLD, &mpi_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mpi_size);
    int me = acp_rank(), n = acp_procs();
    CHECK_INT(me, mpi_rank, "acp_rank() against MPI_Comm_rank");
    CHECK_INT(n, mpi_size, "acp_procs() against MPI_Comm_size");
    if (me != mpi_rank || n != mpi_size) {
        /* The rest would compare unrelated ranks; end both cleanly. */
        acp_finalize();
        MPI_Finalize();
        return 1;
    }
    acpt_need_smem(TABLE_OFF + 8 * (size_t)n);

    /* Starter GAs gathered by MPI match what ACP computes for each rank. */
    uint64_t mine = acp_query_starter_ga(me);
    uint64_t *gas = calloc((size_t)n, sizeof *gas);
    check_mpi(MPI_Allgather(&mine, 1, MPI_UINT64_T, gas, 1, MPI_UINT64_T, MPI_COMM_WORLD), "MPI_Allgather");
    for (int r = 0; r < n; r++)
        CHECK_HEX(gas[r], acp_query_starter_ga(r), "starter GA of rank %d gathered by MPI", r);

    /* Each rank copies its MPI rank into slot <me> of every rank. */
    uint64_t *src = acpt_starter(8);
    *src = (uint64_t)mpi_rank;
    uint64_t *counter = acpt_starter(COUNTER_OFF);
    *counter = 0;
    CHECK_INT(acp_sync(), 0, "acp_sync");
    for (int r = 0; r < n; r++) {
        acp_handle_t h = acp_copy(acp_query_starter_ga(r) + TABLE_OFF + 8 * (uint64_t)me, mine + 8, 8, ACP_HANDLE_NULL);
        CHECK(h != ACP_HANDLE_NULL, "acp_copy to rank %d returned ACP_HANDLE_NULL", r);
    }
    acp_complete(ACP_HANDLE_ALL);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    const uint64_t *table = acpt_starter(TABLE_OFF);
    for (int r = 0; r < n; r++)
        CHECK_INT(table[r], r, "slot %d: MPI rank of ACP rank %d", r, r);

    /* MPI and ACP collectives in turn. */
    for (int i = 0; i < 10; i++) {
        check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
        CHECK_INT(acp_sync(), 0, "acp_sync round %d", i);
    }
    long sum = 0, rank_l = me;
    check_mpi(MPI_Allreduce(&rank_l, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
    CHECK_INT(sum, (long)n * (n - 1) / 2, "sum of acp_rank() over MPI");

    /* An atomic from every rank to rank 0, ordered by MPI_Barrier. */
    acp_handle_t h = acp_add8(mine + 16, acp_query_starter_ga(0) + COUNTER_OFF, 1, ACP_HANDLE_NULL);
    WAIT(h, "acp_add8 to rank 0");
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    CHECK_INT(acp_sync(), 0, "acp_sync");
    if (me == 0)
        CHECK_INT(*counter, n, "rank 0's counter after one acp_add8 per rank");

    free(gas);
    if (mpi_finalize_first) {
        check_mpi(MPI_Finalize(), "MPI_Finalize");
#ifdef MPICH
        CHECK_INT(acp_finalize(), -1, "acp_finalize after MPI_Finalize under MPICH (PMI-1 connection closed)");
#else
        CHECK_INT(acp_finalize(), 0, "acp_finalize after MPI_Finalize under a PMIx launcher");
#endif
        printf("rank %d: t_mpi_ranks: %s %ld checks%s\n", mpi_rank, acpt_failures ? "some of" : "all",
               acpt_checks, acpt_failures ? " FAILED" : " passed");
        return acpt_failures ? 1 : 0;
    }
    if (acp_finalize() != 0)
        FAIL("acp_finalize returned non-zero");
    /* MPI is untouched by acp_finalize. */
    int total = 0, one = 1;
    check_mpi(MPI_Allreduce(&one, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce after acp_finalize");
    CHECK_INT(total, mpi_size, "MPI_Allreduce after acp_finalize");
    check_mpi(MPI_Finalize(), "MPI_Finalize");

    if (acpt_failures)
        printf("rank %d: t_mpi_ranks: %d of %ld checks FAILED\n", mpi_rank, acpt_failures, acpt_checks);
    else
        printf("rank %d: t_mpi_ranks: all %ld checks passed\n", mpi_rank, acpt_checks);
    return acpt_failures ? 1 : 0;
}
