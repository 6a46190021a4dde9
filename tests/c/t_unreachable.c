/*
 * t_unreachable: a peer that stops answering ends the job with an error
 * naming it, instead of a hang.
 *
 * Rank 1 stops itself (SIGSTOP: its process, progress thread included, is
 * frozen like a hung node); rank 0 then copies into rank 1's starter memory,
 * waits, and enters acp_sync. Over a network the copy already needs rank 1
 * to answer; over shared memory the copy lands without it, and the barrier
 * is where rank 1 is needed. With ACP_PEER_TIMEOUT=1 the library must give
 * up after about a second, print which rank is unreachable and exit with
 * status 255, and the launcher must stop the frozen rank. Checked by
 * check_unreachable.sh.
 */
#include <signal.h>

#include "acptest.h"

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_unreachable");
    acp_sync();
    if (acp_rank() == 1) {
        raise(SIGSTOP);
        printf("rank 1: FAIL: resumed after SIGSTOP\n");
        return 1;
    }
    if (acp_rank() == 0) {
        usleep(200 * 1000); /* let rank 1 stop first */
        acp_handle_t h = acp_copy(acp_query_starter_ga(1), acp_query_starter_ga(0), 8, ACP_HANDLE_NULL);
        acp_complete(h);
        acp_sync();
        printf("rank 0: FAIL: a barrier with a frozen rank completed\n");
        return 1;
    }
    pause(); /* ranks 2.. wait to be stopped by the launcher */
    return 0;
}
