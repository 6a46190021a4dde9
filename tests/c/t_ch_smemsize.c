/*
 * t_ch_smemsize: a program that sizes the communication library's starter
 * memory itself, with size_t iacp_starter_memory_size_cl = 8192, as
 * programs written for the original do.
 *
 * With no setting (without a launcher, and under acprun, whose 1024 bytes
 * are only a default) the CL starter memory must be that large;
 * ACP_SIZE_SMEM_CL and --acp-size-smem-cl (on the program's own command
 * line, where acp_init removes it) override it. ACPT_CL_SIZE names the
 * size the run expects (default 8192). Where peers map starter memory
 * (shm: more than one process and shm among ACP_TRANSPORTS) the region
 * also holds the ring pool of --acp-size-cl-rings (ACP_SIZE_CL_RINGS,
 * default 1048576 bytes).
 *
 * The region is found from GAs: the starter memories are segments 0 (BL),
 * 1 (CL) and 2 (DL) of a rank's GAs, each at offset 0 (core/ga.go), and the
 * DL one is where the heap's first block is, less 96 bytes
 * (docs/decisions.md #17). Channels around the ring of ranks then carry
 * messages of several sizes, checked.
 */
#include "acptest.h"

size_t iacp_starter_memory_size_cl = 8192;

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *e = getenv(name);
    return e != NULL && *e ? strtoull(e, NULL, 0) : dflt;
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    int me = acp_rank(), np = acp_procs(), next = (me + 1) % np, prev = (me + np - 1) % np;
    for (int i = 1; i < argc; i++)
        CHECK(strncmp(argv[i], "--acp-", 6) != 0, "acp_init removed %s from argv", argv[i]);
    const uint64_t size = env_u64("ACPT_CL_SIZE", 8192);
    const char *tr = getenv("ACP_TRANSPORTS");
    const int shared = np > 1 && (tr == NULL || *tr == 0 || strstr(tr, "shm") != NULL);
    const uint64_t want = size + (shared ? env_u64("ACP_SIZE_CL_RINGS", 1048576) : 0);

    acp_ga_t bl = acp_query_starter_ga(me), first = acp_malloc(8, me);
    CHECK(first != ACP_GA_NULL, "acp_malloc(8) on my heap");
    acp_free(first);
    acp_ga_t dl = first - 96;
    CHECK(dl > bl && (dl - bl) % 2 == 0, "the DL starter memory is segment 2 (BL 0x%" PRIx64 ", DL 0x%" PRIx64 ")", bl, dl);
    acp_ga_t cl = bl + (dl - bl) / 2;
    CHECK_INT(acp_query_rank(cl), me, "the CL starter memory is mine");
    CHECK_INT(acpt_region_size(cl), want, "bytes of CL starter memory (%" PRIu64 "%s)", size,
              shared ? " and the ring pool" : "");

    if (np > 1) {
        acp_ch_t out = acp_create_ch(me, next), in = acp_create_ch(prev, me);
        CHECK(out != NULL && in != NULL, "acp_create_ch");
        static const size_t sizes[] = { 0, 8, 1000, 70000 };
        static uint8_t sbuf[70000], rbuf[70000];
        for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
            acpt_fill(sbuf, sizes[k], 100 * k + (uint64_t)me);
            memset(rbuf, 0, sizeof rbuf);
            acp_request_t s = acp_nbsend_ch(out, sbuf, sizes[k]);
            CHECK_INT(acp_wait_ch(acp_nbrecv_ch(in, rbuf, sizeof rbuf)), sizes[k], "message %zu: size", k);
            CHECK_FILL(rbuf, sizes[k], 100 * k + (uint64_t)prev, "message bytes");
            CHECK_INT(acp_wait_ch(s), 0, "message %zu: send", k);
        }
        CHECK_INT(acp_free_ch(out), 0, "acp_free_ch(out)");
        CHECK_INT(acp_free_ch(in), 0, "acp_free_ch(in)");
    }
    return acpt_finish("t_ch_smemsize");
}
