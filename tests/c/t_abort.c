/*
 * t_abort: acp_abort ends the job.
 *
 * Rank 1 calls acp_abort("test message") (or acp_abort(NULL) when the
 * program's argument is "null"); the launcher must exit with status 255,
 * the message must reach stderr, and the other ranks, which wait in plain
 * sleep() without calling ACP, must be terminated by the launcher: they
 * print "not terminated" if they ever wake up. Checked by check_abort.sh.
 */
#include "acptest.h"

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_abort");
    int use_null = argc > 1 && strcmp(argv[1], "null") == 0;
    acp_sync();
    if (acp_rank() == 1) {
        printf("rank 1: calling acp_abort\n");
        acp_abort(use_null ? NULL : "test message");
        printf("rank 1: FAIL: acp_abort returned\n");
        return 1;
    }
    for (int i = 0; i < 60; i++)
        sleep(1);
    printf("rank %d: not terminated 60 s after rank 1 called acp_abort\n", acp_rank());
    return 0;
}
