/*
 * t_ch_abort: iacp_abort_cl, which the original exported and
 * sample/test-tools/msg.c calls, is exported and ends the process like
 * acp_abort (a message on stderr, exit status 255). It is looked up at run
 * time so that a library without it fails this test, not the build.
 */
#include <dlfcn.h>

#include "acptest.h"

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    void (*abort_cl)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "iacp_abort_cl");
    if (abort_cl == NULL) {
        printf("rank %d: FAIL: libacp does not export iacp_abort_cl\n", acp_rank());
        return 1;
    }
    abort_cl();
    printf("rank %d: FAIL: iacp_abort_cl returned\n", acp_rank());
    return 1;
}
