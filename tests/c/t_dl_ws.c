/*
 * t_dl_ws: workspaces. Chunks on consecutive ranks from proc_start, the
 * descriptor's fields, writes by every rank into its own slice and reads
 * of the whole workspace across chunk boundaries, the exact-multiple size
 * (Q-DL-8), range checks, sizes that need more ranks than the job has,
 * bad parameters, the default parameters (1 MiB chunks), acp_free_ws (the
 * original's exported alias of acp_destroy_ws, not declared in acp.h: it
 * unregisters the chunks, and the next workspace works), and that the
 * user's starter memory (bytes 150..157 in the original) stays untouched.
 */
#include "dltest.h"

/* Exported by the original and by libacp; acp.h does not declare it. */
void acp_free_ws(acp_wsd_t WSD);

static int me, np;

static void check_desc(acp_wsd_t w, size_t size, size_t chunk, int first)
{
    size_t n = (size + chunk - 1) / chunk;
    CHECK_INT(w->size_ws, size, "size_ws");
    CHECK_INT(w->size_default, chunk, "size_default");
    CHECK_INT(w->size_remainder, size % chunk, "size_remainder");
    CHECK_INT(w->ngas, n, "ngas of %zu bytes in %zu-byte chunks", size, chunk);
    int mine = 0;
    for (size_t i = 0; i < w->ngas && i < n; i++) {
        CHECK_INT(w->procs[i], first + (int)i, "chunk %zu's rank", i);
        CHECK_INT(w->sizes[i], i + 1 < n ? chunk : size - i * chunk, "chunk %zu's size", i);
        CHECK_INT(acp_query_rank(w->gas[i]), first + (int)i, "chunk %zu's GA", i);
        if (w->procs[i] == me) {
            mine = 1;
            CHECK_HEX(w->ga_data, w->gas[i], "ga_data is my chunk");
            CHECK(w->data == acp_query_address(w->gas[i]), "data is my chunk");
            CHECK_HEX(w->keys[i], w->key_data, "keys[mine] is key_data");
        }
    }
    if (!mine) {
        CHECK(w->data == NULL, "data is NULL on a rank without a chunk");
        CHECK_HEX(w->ga_data, 0, "ga_data is 0 on a rank without a chunk");
    }
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    np = acp_procs();
    acpt_need_smem(DLT_SMEM);
    dlt_init_buf();
    uint8_t *smem = acpt_starter(0);
    acpt_fill(smem, 1024, 77 + (uint64_t)me);
    acp_sync();

    /* Defaults: 1 MiB chunks from rank 0. */
    acp_wsd_t w = acp_create_ws(1000);
    CHECK(w != ACP_WSD_NULL && w != NULL, "acp_create_ws(1000) with the defaults");
    if (w != ACP_WSD_NULL && w != NULL) {
        check_desc(w, 1000, 1048576, 0);
        acp_destroy_ws(w);
    }

    /* Chunks of 64 bytes over every rank, the last one half full. */
    const size_t chunk = 64, size = 64 * (size_t)(np - 1) + 32;
    CHECK_INT(acp_setparams_ws(0, chunk), 0, "acp_setparams_ws(0, 64)");
    w = acp_create_ws(size);
    CHECK(w != ACP_WSD_NULL, "acp_create_ws(%zu)", size);
    if (w != ACP_WSD_NULL) {
        check_desc(w, size, chunk, 0);
        /* Each rank writes a slice that crosses a chunk boundary. */
        size_t slice = size / (size_t)np, lo = slice * (size_t)me;
        acpt_fill(dlt_buf + 8192, slice, 500 + (uint64_t)me);
        CHECK_INT(acp_write_ws(w, dlt_bufga + 8192, slice, lo), 0, "write_ws of my slice");
        acp_sync();
        memset(dlt_buf + 16384, 0, size);
        CHECK_INT(acp_read_ws(w, dlt_bufga + 16384, size, 0), 0, "read_ws of everything");
        for (int r = 0; r < np; r++)
            CHECK_FILL(dlt_buf + 16384 + slice * (size_t)r, slice, 500 + (uint64_t)r, "rank's slice");
        CHECK_INT(acp_read_ws(w, dlt_bufga, 8, size - 7), 1, "read_ws past the end");
        CHECK_INT(acp_write_ws(w, dlt_bufga, 1, size), 1, "write_ws past the end");
        CHECK_INT(acp_read_ws(w, dlt_bufga, 0, size), 0, "read_ws of 0 bytes at the end");
        CHECK_INT(acp_read_ws(w, dlt_bufga, SIZE_MAX, 1), 1, "read_ws of SIZE_MAX bytes");
        CHECK_INT(acp_write_ws(w, ACP_GA_NULL, 4, 0), 1, "write_ws from ACP_GA_NULL");
        acp_sync();
        acp_destroy_ws(w);
    }

    /* Exactly np chunks (the original left the last entry unset). */
    w = acp_create_ws(chunk * (size_t)np);
    CHECK(w != ACP_WSD_NULL, "acp_create_ws(64 * N)");
    if (w != ACP_WSD_NULL) {
        check_desc(w, chunk * (size_t)np, chunk, 0);
        acp_destroy_ws(w);
    }
    /* Needs one rank more than the job has: every rank gets ACP_WSD_NULL. */
    CHECK(acp_create_ws(chunk * (size_t)np + 1) == ACP_WSD_NULL, "acp_create_ws needing N+1 ranks");
    if (np > 1) {
        CHECK_INT(acp_setparams_ws((size_t)np - 1, chunk), 0, "acp_setparams_ws(N-1, 64)");
        w = acp_create_ws(10);
        CHECK(w != ACP_WSD_NULL, "a workspace on the last rank");
        if (w != ACP_WSD_NULL) {
            check_desc(w, 10, chunk, np - 1);
            acp_destroy_ws(w);
        }
    }
    /* acp_free_ws: a workspace of one chunk per rank, written and read,
     * then freed; my chunk is no longer registered, and a workspace made
     * afterwards holds what is written into it. */
    CHECK_INT(acp_setparams_ws(0, chunk), 0, "acp_setparams_ws(0, 64) before acp_free_ws");
    for (int round = 0; round < 2; round++) {
        w = acp_create_ws(chunk * (size_t)np);
        CHECK(w != ACP_WSD_NULL, "acp_create_ws(64 * N), round %d", round);
        if (w == ACP_WSD_NULL)
            break;
        check_desc(w, chunk * (size_t)np, chunk, 0);
        acp_ga_t mine = w->ga_data;
        void *data = w->data;
        CHECK(data != NULL && acp_query_address(mine) == data, "round %d: my chunk is registered", round);
        acpt_fill(dlt_buf + 8192, chunk, 900 + 10 * (uint64_t)round + (uint64_t)me);
        /* Rank r writes chunk N-1-r: every write but the middle one is remote. */
        CHECK_INT(acp_write_ws(w, dlt_bufga + 8192, chunk, chunk * (size_t)(np - 1 - me)), 0, "round %d: write_ws", round);
        acp_sync();
        CHECK_FILL(data, chunk, 900 + 10 * (uint64_t)round + (uint64_t)(np - 1 - me), "my chunk holds what its writer wrote");
        memset(dlt_buf + 16384, 0, chunk * (size_t)np);
        CHECK_INT(acp_read_ws(w, dlt_bufga + 16384, chunk * (size_t)np, 0), 0, "round %d: read_ws of everything", round);
        for (int r = 0; r < np; r++)
            CHECK_FILL(dlt_buf + 16384 + chunk * (size_t)(np - 1 - r), chunk, 900 + 10 * (uint64_t)round + (uint64_t)r,
                       "chunk written by a rank");
        if (round == 0) {
            acp_free_ws(w);
            CHECK(acp_query_address(mine) == NULL, "my chunk is unregistered after acp_free_ws");
        } else {
            acp_destroy_ws(w);
        }
    }
    acp_free_ws(ACP_WSD_NULL);
    CHECK_INT(acp_setparams_ws(0, 0), 1, "acp_setparams_ws(0, 0)");
    CHECK_INT(acp_setparams_ws((size_t)np, 64), 1, "acp_setparams_ws(N, 64)");
    CHECK_INT(acp_read_ws(ACP_WSD_NULL, dlt_bufga, 1, 0), 1, "read_ws(ACP_WSD_NULL)");
    acp_destroy_ws(ACP_WSD_NULL);
    acp_sync();
    CHECK_FILL(smem, 1024, 77 + (uint64_t)me, "the user's starter memory is untouched");
    return acpt_finish("t_dl_ws");
}
