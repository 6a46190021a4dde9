/*
 * t_copy: acp_copy in every combination of ranks and memories.
 *
 * Every rank owns two "spaces": its starter memory and a malloc'ed region it
 * registers (its GA is exchanged through starter memory, as real programs
 * do). Each space has a source area and a destination area. A phase is a
 * list of transfers computed identically on every rank, each naming the
 * issuing rank, the destination (rank, space) and the source (rank, space);
 * no two transfers of a phase share a destination. Per phase:
 *   fill own sources with a pattern seeded by (phase, rank, space) and own
 *   destinations with a canary; sync; issue my transfers; complete; sync;
 *   check my destinations byte for byte, and the canary around them.
 * Phases: local->local, put, get, third-party ring (rank r copies from r+1
 * to r+2), and rank 0 copying from rank 1 to rank 2 and from rank 1 to
 * rank 1; for every pair of spaces and every size (0 to 1 MiB + 3). Odd
 * sizes also start at odd offsets.
 *
 * Run with --acp-size-smem 4194304.
 */
#include "acptest.h"

#define MAXSZ    ((size_t)(1 << 20) + 3)
#define GUARD    64
#define CANARY   0xa5
#define SRC_OFF  4096                          /* bytes below: GA exchange */
#define DST_OFF  (SRC_OFF + MAXSZ + 4096 + 5)  /* odd: destinations start unaligned too */
#define SPACE    (DST_OFF + MAXSZ + 4096)

enum { SP_STARTER, SP_REG, NSPACES };

struct xfer {
    int issuer;
    int dst_rank, dst_space;
    int src_rank, src_space;
};

static int me, nprocs;
static acp_ga_t space_ga[NSPACES][1024]; /* [space][rank]: GA of byte 0 of the space */
static uint8_t *space_ptr[NSPACES];      /* my own spaces */
static const char *space_name[NSPACES] = { "starter", "registered" };
static long phase_no;

static const size_t sizes[] = { 0, 1, 7, 1024, 1408, 1409, 65536, MAXSZ };

static size_t src_skew(size_t size) { return size % 2 ? 1 : 0; }
static size_t dst_skew(size_t size) { return size % 2 ? 3 : 0; }

static uint64_t seed_of(int rank, int space) { return (uint64_t)phase_no << 16 | (uint64_t)rank << 1 | (uint64_t)space; }

static void setup_spaces(void)
{
    for (int r = 0; r < nprocs; r++)
        space_ga[SP_STARTER][r] = acp_query_starter_ga(r);
    space_ptr[SP_STARTER] = acp_query_address(space_ga[SP_STARTER][me]);

    void *buf = NULL;
    if (posix_memalign(&buf, 4096, SPACE) != 0)
        FATAL("posix_memalign");
    memset(buf, 0, SPACE);
    acp_atkey_t key = acp_register_memory(buf, SPACE, 0);
    if (key == ACP_ATKEY_NULL)
        FATAL("acp_register_memory of the registered space");
    acp_ga_t ga = acp_query_ga(key, buf);
    if (ga == ACP_GA_NULL)
        FATAL("acp_query_ga of the registered space");
    space_ptr[SP_REG] = buf;
    acpt_allgather_u64(ga, space_ga[SP_REG], 0);
    CHECK_HEX(space_ga[SP_REG][me], ga, "my registered GA after the exchange");
    for (int r = 0; r < nprocs; r++)
        CHECK_INT(acp_query_rank(space_ga[SP_REG][r]), r, "acp_query_rank(registered GA of rank %d)", r);
}

/* Fills my sources and canaries my destinations, for every space. */
static void prepare(size_t size)
{
    for (int s = 0; s < NSPACES; s++) {
        acpt_fill(space_ptr[s] + SRC_OFF + src_skew(size), size, seed_of(me, s));
        memset(space_ptr[s] + DST_OFF - GUARD, CANARY, size + dst_skew(size) + 2 * GUARD);
    }
}

static void issue(const struct xfer *x, int nx, size_t size)
{
    acp_handle_t hs[64];
    int nh = 0;
    for (int i = 0; i < nx; i++) {
        if (x[i].issuer != me)
            continue;
        acp_ga_t dst = space_ga[x[i].dst_space][x[i].dst_rank] + DST_OFF + dst_skew(size);
        acp_ga_t src = space_ga[x[i].src_space][x[i].src_rank] + SRC_OFF + src_skew(size);
        acp_handle_t h = acp_copy(dst, src, size, ACP_HANDLE_NULL);
        CHECK(h != ACP_HANDLE_NULL, "acp_copy(rank %d %s -> rank %d %s, %zu bytes) returned ACP_HANDLE_NULL",
              x[i].src_rank, space_name[x[i].src_space], x[i].dst_rank, space_name[x[i].dst_space], size);
        if (h != ACP_HANDLE_NULL && nh < 64)
            hs[nh++] = h;
    }
    acp_complete(ACP_HANDLE_ALL);
    for (int i = 0; i < nh; i++)
        CHECK_INT(acp_inquire(hs[i]), 0, "acp_inquire(%" PRId64 ") after acp_complete(ACP_HANDLE_ALL)", hs[i]);
}

static void verify(const char *phase, const struct xfer *x, int nx, size_t size)
{
    char what[160];
    for (int s = 0; s < NSPACES; s++) {
        uint8_t *dst = space_ptr[s] + DST_OFF + dst_skew(size);
        const struct xfer *in = NULL;
        for (int i = 0; i < nx; i++)
            if (x[i].dst_rank == me && x[i].dst_space == s)
                in = &x[i];
        snprintf(what, sizeof what, "%s, %zu bytes, %s memory: canary before the destination", phase, size,
                 space_name[s]);
        CHECK_BYTES(dst - dst_skew(size) - GUARD, GUARD + dst_skew(size), CANARY, what);
        snprintf(what, sizeof what, "%s, %zu bytes, %s memory: canary after the destination", phase, size,
                 space_name[s]);
        CHECK_BYTES(dst + size, GUARD, CANARY, what);
        if (in == NULL) {
            snprintf(what, sizeof what, "%s, %zu bytes, %s memory: destination nobody wrote", phase, size,
                     space_name[s]);
            CHECK_BYTES(dst, size, CANARY, what);
        } else {
            snprintf(what, sizeof what, "%s, %zu bytes: data from rank %d %s memory (issued by rank %d) in my %s memory",
                     phase, size, in->src_rank, space_name[in->src_space], in->issuer, space_name[s]);
            CHECK_FILL(dst, size, seed_of(in->src_rank, in->src_space), what);
        }
    }
}

static void run_phase(const char *phase, const struct xfer *x, int nx, size_t size)
{
    phase_no++;
    prepare(size);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    issue(x, nx, size);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    verify(phase, x, nx, size);
}

static int nxt(int r, int k) { return (r + k) % nprocs; }

static void run_size(size_t size)
{
    struct xfer x[2048];
    char name[96];
    for (int s = 0; s < NSPACES; s++) {
        for (int t = 0; t < NSPACES; t++) {
            int n = 0;
            for (int r = 0; r < nprocs; r++)
                x[n++] = (struct xfer){ r, r, t, r, s };
            snprintf(name, sizeof name, "local %s->%s", space_name[s], space_name[t]);
            run_phase(name, x, n, size);

            n = 0;
            for (int r = 0; r < nprocs; r++)
                x[n++] = (struct xfer){ r, nxt(r, 1), t, r, s };
            snprintf(name, sizeof name, "put %s->%s", space_name[s], space_name[t]);
            run_phase(name, x, n, size);

            n = 0;
            for (int r = 0; r < nprocs; r++)
                x[n++] = (struct xfer){ r, r, t, nxt(r, 1), s };
            snprintf(name, sizeof name, "get %s->%s", space_name[s], space_name[t]);
            run_phase(name, x, n, size);

            if (nprocs >= 3) {
                n = 0;
                for (int r = 0; r < nprocs; r++)
                    x[n++] = (struct xfer){ r, nxt(r, 2), t, nxt(r, 1), s };
                snprintf(name, sizeof name, "third-party ring %s->%s", space_name[s], space_name[t]);
                run_phase(name, x, n, size);
            }
            if (nprocs >= 2) {
                n = 0;
                x[n++] = (struct xfer){ 0, 1, t, 1, s };
                if (nprocs >= 3)
                    x[n++] = (struct xfer){ 0, 2, t, 1, s };
                snprintf(name, sizeof name, "third-party by rank 0 %s->%s", space_name[s], space_name[t]);
                run_phase(name, x, n, size);
            }
        }
    }
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    if (nprocs > 1024)
        FATAL("more than 1024 ranks");
    acpt_need_smem(SPACE);
    setup_spaces();
    if (nprocs < 3 && me == 0)
        printf("t_copy: third-party ring (rank r copies from r+1 to r+2) skipped: needs 3 ranks\n");
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        double t0 = acpt_now();
        run_size(sizes[i]);
        if (me == 0)
            printf("t_copy: %zu bytes done in %.2f s\n", sizes[i], acpt_now() - t0);
    }
    return acpt_finish("t_copy");
}
