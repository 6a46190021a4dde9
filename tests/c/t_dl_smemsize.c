/*
 * t_dl_smemsize: a program that sizes the data library's starter memory
 * itself, with size_t iacp_starter_memory_size_dl = 65536, as programs
 * written for the original do.
 *
 * With no setting (without a launcher, and under acprun, whose 1024 bytes
 * are only a default) the heap must be that large; ACP_SIZE_SMEM_DL and
 * --acp-size-smem-dl (given to acprun, or on the program's own command
 * line, where acp_init removes it) override it. ACPT_DL_SIZE names the
 * size the run expects (default 65536).
 *
 * Checked on every rank: the DL starter memory (the heap's first block is
 * at its byte 96, docs/decisions.md #17) ends exactly at that size; one
 * block of size - 112 bytes (the whole heap: 96 bytes before the first
 * block, 16 per block) fits, at the heap's start, and while it is held not
 * even 8 bytes more do; 8 bytes more than that never fit; another rank
 * can take the whole heap the same way.
 */
#include "acptest.h"

size_t iacp_starter_memory_size_dl = 65536;

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    int me = acp_rank(), np = acp_procs(), next = (me + 1) % np;
    const char *e = getenv("ACPT_DL_SIZE");
    const uint64_t size = e != NULL ? strtoull(e, NULL, 0) : 65536;
    for (int i = 1; i < argc; i++)
        CHECK(strncmp(argv[i], "--acp-", 6) != 0, "acp_init removed %s from argv", argv[i]);

    acp_ga_t first = acp_malloc(8, me);
    CHECK(first != ACP_GA_NULL, "acp_malloc(8) on my heap");
    acp_ga_t dl = first - 96;
    acp_free(first);
    CHECK_INT(acp_query_rank(dl), me, "the DL starter memory is mine");
    CHECK_INT(acpt_region_size(dl), size, "bytes of DL starter memory");

    const size_t all = size - 112;
    acp_ga_t big = acp_malloc(all, me);
    CHECK_HEX(big, first, "acp_malloc(%zu): the whole heap, from its start", all);
    CHECK_HEX(acp_malloc(8, me), ACP_GA_NULL, "acp_malloc(8) while the whole heap is taken");
    acp_free(big);
    CHECK_HEX(acp_malloc(all + 8, me), ACP_GA_NULL, "acp_malloc(%zu): more than the heap", all + 8);
    big = acp_malloc(all, me);
    CHECK_HEX(big, first, "acp_malloc(%zu) after the heap was given back", all);
    acp_free(big);

    /* Another rank's heap (each rank takes the next one's, one at a time
     * per heap). */
    acp_sync();
    if (np > 1) {
        acp_ga_t g = acp_malloc(all, next);
        CHECK(g != ACP_GA_NULL, "acp_malloc(%zu) on rank %d", all, next);
        CHECK_INT(acp_query_rank(g), next, "the block is on rank %d", next);
        CHECK_HEX(acp_malloc(8, next), ACP_GA_NULL, "acp_malloc(8) on rank %d while its heap is taken", next);
        acp_free(g);
        CHECK_HEX(acp_malloc(all + 8, next), ACP_GA_NULL, "acp_malloc(%zu) on rank %d", all + 8, next);
    }
    acp_sync();
    return acpt_finish("t_dl_smemsize");
}
