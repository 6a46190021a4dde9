/*
 * t_dl_nodl: a program that defines iacp_starter_memory_size_dl = 0, as
 * programs written for the original do when they use only the basic layer.
 * Without --acp-size-smem-dl / ACP_SIZE_SMEM_DL the definition sizes the
 * data library's starter memory: no heap, so acp_malloc and container
 * creation fail cleanly (ACPT_EXPECT_HEAP=0). With the setting given it
 * wins and the heap works (ACPT_EXPECT_HEAP=1). The basic layer and
 * workspaces work either way.
 */
#include "acptest.h"

size_t iacp_starter_memory_size_dl = 0;

/* A workspace of 64-byte chunks over every rank: each rank writes a slice
 * from its starter memory, then reads the whole workspace back. */
static void workspace(int me, int np)
{
    const size_t size = 64 * (size_t)np - 10, slice = size / (size_t)np;
    acpt_need_smem(1024);
    uint8_t *smem = acpt_starter(0);
    acp_ga_t sga = acp_query_starter_ga(me);
    CHECK_INT(acp_setparams_ws(0, 64), 0, "acp_setparams_ws(0, 64)");
    acp_wsd_t w = acp_create_ws(size);
    CHECK(w != ACP_WSD_NULL, "acp_create_ws(%zu)", size);
    if (w == ACP_WSD_NULL)
        return;
    acpt_fill(smem, slice, 100 + (uint64_t)me);
    CHECK_INT(acp_write_ws(w, sga, slice, slice * (size_t)me), 0, "write_ws of my slice");
    acp_sync();
    CHECK_INT(acp_read_ws(w, sga + 512, slice * (size_t)np, 0), 0, "read_ws of every slice");
    for (int r = 0; r < np; r++)
        CHECK_FILL(smem + 512 + slice * (size_t)r, slice, 100 + (uint64_t)r, "rank's slice");
    acp_destroy_ws(w);
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    int me = acp_rank();
    const char *env = getenv("ACPT_EXPECT_HEAP");
    int heap = env != NULL && env[0] == '1';
    acp_ga_t g = acp_malloc(8, me);
    if (heap) {
        CHECK(g != ACP_GA_NULL, "acp_malloc with ACP_SIZE_SMEM_DL set");
        acp_free(g);
        acp_list_t l = acp_create_list(me);
        CHECK(l.ga != ACP_GA_NULL, "acp_create_list with ACP_SIZE_SMEM_DL set");
        acp_destroy_list(l);
    } else {
        CHECK_HEX(g, ACP_GA_NULL, "acp_malloc without a heap");
        CHECK_HEX(acp_create_vector(8, me).ga, ACP_GA_NULL, "acp_create_vector without a heap");
        acp_map_t m = acp_create_map(0, NULL, 4, me);
        CHECK_HEX(m.ga, ACP_GA_NULL, "acp_create_map without a heap");
        acp_free(acp_query_starter_ga(me));
    }
    /* The basic layer is unaffected. */
    acp_ga_t s = acp_query_starter_ga(me);
    CHECK(s != ACP_GA_NULL && acp_query_address(s) != NULL, "starter memory");
    acp_sync();
    workspace(me, acp_procs());
    return acpt_finish("t_dl_nodl");
}
