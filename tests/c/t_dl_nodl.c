/*
 * t_dl_nodl: a program that defines iacp_starter_memory_size_dl = 0, as
 * programs written for the original do when they use only the basic layer.
 * Without --acp-size-smem-dl / ACP_SIZE_SMEM_DL the definition sizes the
 * data library's starter memory: no heap, so acp_malloc and container
 * creation fail cleanly (ACPT_EXPECT_HEAP=0). With the setting given it
 * wins and the heap works (ACPT_EXPECT_HEAP=1). The basic layer works
 * either way.
 */
#include "acptest.h"

size_t iacp_starter_memory_size_dl = 0;

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
    return acpt_finish("t_dl_nodl");
}
