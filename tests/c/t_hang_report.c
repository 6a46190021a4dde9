/*
 * t_hang_report: a job that hangs and is stopped at acprun's time limit
 * says first where its ranks waited.
 *
 * Rank 0 enters acp_sync; rank 1 computes (sleeps) far beyond the job's
 * time limit without calling the library. check_hang_report.sh runs it
 * under acprun --timeout, whose half is the default --acp-hang-report, and
 * checks that rank 0 printed the hang report of its acp_sync (once), with
 * the library's goroutines, that both ranks printed their state at 9/10 of
 * the limit (rank 1 computing, not waiting), and that the launcher then
 * stopped the job.
 */
#include "acptest.h"

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_hang_report");
    acp_sync();
    if (acp_rank() == 0) {
        acp_sync();
        printf("rank 0: FAIL: a barrier without rank 1 completed\n");
        return 1;
    }
    sleep(600);
    printf("rank %d: FAIL: not stopped at the time limit\n", acp_rank());
    return 1;
}
