/*
 * t_ch_starter: the communication library's starter memory.
 *
 * The program defines iacp_starter_memory_size_cl = 0 and the internal
 * hooks (iacp_init_cl, iacp_finalize_cl, iacp_abort_cl), as programs
 * written for the original do to go without the communication library:
 * it must link and run.
 * - ACPT_EXPECT_CL=0 (no size given: without a launcher, or under acprun,
 *   whose size is only a default): the program's 0 is honoured, the
 *   library is off and every channel and segmented-buffer call fails (with
 *   ACP_VERBOSE=1 the reason says so).
 * - ACPT_EXPECT_CL=1 (--acp-size-smem-cl / -smemsize-cl given): the
 *   setting wins over the program's definition; channels work.
 * Run with -smemsize-cl below the minimum, acp_init fails with a message
 * naming --acp-size-smem-cl (checked by the CTest registration).
 */
#include "acptest.h"

size_t iacp_starter_memory_size_cl = 0;
int iacp_init_cl(void);
int iacp_finalize_cl(void);
void iacp_abort_cl(void);
int iacp_init_cl(void) { return 0; }
int iacp_finalize_cl(void) { return 0; }
void iacp_abort_cl(void) { exit(3); }

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    const char *e = getenv("ACPT_EXPECT_CL");
    int expect = e != NULL && strcmp(e, "1") == 0;
    int me = acp_rank(), n = acp_procs();
    uint64_t v = 42, w = 0;
    if (!expect) {
        CHECK(acp_create_ch(0, n > 1 ? 1 : 0) == NULL, "acp_create_ch with the library off");
        CHECK(acp_create_src_segbuf(n > 1 ? 1 : 0, &v, 8, 1) == NULL, "acp_create_src_segbuf with the library off");
        CHECK_HEX(acp_wait_ch(NULL), (size_t)-1, "acp_wait_ch with the library off");
    } else if (n >= 2) {
        int next = (me + 1) % n, prev = (me + n - 1) % n;
        acp_ch_t o = acp_create_ch(me, next), i = acp_create_ch(prev, me);
        CHECK(o != NULL && i != NULL, "acp_create_ch with ACP_SIZE_SMEM_CL set");
        acp_request_t s = acp_nbsend_ch(o, &v, 8);
        CHECK_INT(acp_wait_ch(acp_nbrecv_ch(i, &w, 8)), 8, "message");
        CHECK_INT(w, 42, "value");
        CHECK_INT(acp_wait_ch(s), 0, "send");
        CHECK_INT(acp_free_ch(o), 0, "free");
        CHECK_INT(acp_free_ch(i), 0, "free");
    }
    return acpt_finish("t_ch_starter");
}
