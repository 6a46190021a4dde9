/*
 * t_ib_peer_gone: a peer that stops answering ends the job with an error
 * naming it, over the ib transport, instead of a hang.
 *
 * Rank 1 stops itself with SIGSTOP (a hung node). Its adapter still takes
 * RDMA writes -- they need no CPU, so tests/c/t_unreachable's copy
 * completes over ib, correctly -- but an atomic needs rank 1's CPU: rank 0
 * issues one and waits. With ACP_PEER_TIMEOUT=1 the library must stop the
 * job within seconds, with status 255 and a message saying that rank 1 is
 * unreachable (checked by tests/c/check_unreachable.sh). A peer whose process is gone
 * (its queue pairs destroyed) is covered by the Go test TestPeerGoneIsFatal.
 */
#include <signal.h>

#include "acptest.h"

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_ib_peer_gone");
    acp_ga_t peer = acp_query_starter_ga(1), mine = acp_query_starter_ga(0);

    /* connect first, so that what fails is the peer, not the set-up */
    if (acp_rank() == 0)
        acp_complete(acp_copy(peer, mine, 8, ACP_HANDLE_NULL));
    acp_sync();
    if (acp_rank() == 1) {
        raise(SIGSTOP);
        printf("rank 1: FAIL: resumed after SIGSTOP\n");
        return 1;
    }
    if (acp_rank() == 0) {
        usleep(300 * 1000); /* let rank 1 stop first */
        acp_complete(acp_add8(mine + 64, peer, 1, ACP_HANDLE_NULL));
        printf("rank 0: FAIL: an atomic on a frozen rank completed\n");
        return 1;
    }
    pause(); /* ranks 2.. wait to be stopped by the launcher */
    return 0;
}
