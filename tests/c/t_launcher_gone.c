/*
 * t_launcher_gone: ranks end when their launcher is killed.
 *
 * Every rank says it is ready (with its process id) after acp_init and
 * acp_sync, then waits in plain sleep() without calling ACP. The launcher
 * is then killed with SIGKILL, which its cleanup cannot catch; the ranks,
 * started through a shell so that the kernel's parent-death signal does not
 * reach them, must end by themselves, saying why. A rank that wakes up
 * prints "not terminated". Checked by check_launcher_gone.sh.
 */
#include "acptest.h"

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_launcher_gone");
    acp_sync();
    printf("rank %d: ready (pid %ld)\n", acp_rank(), (long)getpid());
    fflush(stdout);
    for (int i = 0; i < 60; i++)
        sleep(1);
    printf("rank %d: not terminated 60 s after its launcher was killed\n", acp_rank());
    return 0;
}
