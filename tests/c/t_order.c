/*
 * t_order: handles, ordering, acp_complete and acp_inquire.
 *
 * - Handles are consecutive from 1 (rejected calls take no number).
 * - Dependent copies: A -> B then B -> C, the second ordered by the first
 *   handle, ACP_HANDLE_ALL or ACP_HANDLE_CONT, must see A's data; two
 *   ordered writes of the same place leave the second one's data; a chain
 *   of 16 copies hopping across the ranks, each ordered after the previous.
 * - acp_complete(h) completes everything issued before h: after it every
 *   earlier handle inquires 0 and all data of earlier gets is in place.
 * - acp_inquire gives only 0 or 1 and reaches 0 by polling alone.
 * - ACP_HANDLE_NULL and never-issued handles: acp_inquire 0, acp_complete
 *   returns at once; an order handle not issued yet is refused.
 *
 * Run with --acp-size-smem 4194304.
 */
#include "acptest.h"

#define MAXP    64
#define SZ      ((size_t)256 << 10)
#define MISC    0                     /* 4096 bytes of scratch */
#define A_OFF   4096
#define A2_OFF  (A_OFF + SZ)
#define B_OFF   (A2_OFF + SZ)
#define C_OFF   (B_OFF + SZ)
#define GSRC    (C_OFF + SZ)          /* 16 KiB that other ranks get */
#define GDST    (GSRC + GCHUNK)       /* NGETS landing places */
#define GCHUNK  ((size_t)16 << 10)
#define NGETS   32
#define CH_OFF  (GDST + NGETS * GCHUNK)
#define HOPS    16
#define CHSZ    1024
#define CANARY  0xa5

static int me, nprocs;
static acp_ga_t st[MAXP];

static acp_ga_t ga_of(int r, size_t off) { return st[r] + off; }
static uint8_t *at(size_t off) { return acpt_starter(off); }
static int nxt(int k) { return (me + k) % nprocs; }

static void test_numbering(void)
{
    /* The first operation of the program gets handle 1. */
    acp_handle_t h = acp_copy(ga_of(me, MISC + 8), ga_of(me, MISC), 8, ACP_HANDLE_NULL);
    CHECK_INT(h, 1, "first handle of the program");
    for (int i = 0; i < 10; i++) {
        acp_handle_t g = acp_copy(ga_of(me, MISC + 16), ga_of(nxt(1), MISC), 8, ACP_HANDLE_NULL);
        CHECK_INT(g, h + 1, "handle after %" PRId64, h);
        h = g;
    }
    /* Rejected calls do not use up numbers. */
    CHECK_INT(acp_copy(ACP_GA_NULL, ga_of(me, MISC), 8, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
              "acp_copy to ACP_GA_NULL");
    CHECK_INT(acp_add8(ga_of(me, MISC + 1), ga_of(me, MISC + 32), 1, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
              "misaligned acp_add8");
    acp_handle_t g = acp_add8(ga_of(me, MISC + 24), ga_of(me, MISC + 32), 1, ACP_HANDLE_NULL);
    CHECK_INT(g, h + 1, "handle of an atomic after rejected calls");
    h = g;

    /* Never issued: 0 and no wait; and they do not disturb the numbering. */
    acp_complete(h);
    CHECK_INT(acp_inquire(ACP_HANDLE_NULL), 0, "acp_inquire(ACP_HANDLE_NULL)");
    CHECK_INT(acp_inquire(h + 1), 0, "acp_inquire(last + 1), never issued");
    CHECK_INT(acp_inquire(h + 1000), 0, "acp_inquire(last + 1000), never issued");
    double t0 = acpt_now();
    acp_complete(h + 1);
    acp_complete(h + 1000);
    acp_complete(ACP_HANDLE_NULL);
    double dt = acpt_now() - t0;
    CHECK(dt < 1.0, "acp_complete of never-issued handles took %.3f s", dt);
    /* An order handle that was not issued yet is refused. */
    CHECK_INT(acp_copy(ga_of(me, MISC + 8), ga_of(me, MISC), 8, h + 5), ACP_HANDLE_NULL,
              "acp_copy ordered after a handle not issued yet");
    g = acp_copy(ga_of(me, MISC + 8), ga_of(nxt(1), MISC), 8, h);
    CHECK_INT(g, h + 1, "handle after never-issued queries");
    acp_complete(g);
    CHECK_INT(acp_inquire(g), 0, "acp_inquire of a completed handle");
    CHECK_INT(acp_inquire(ACP_HANDLE_ALL), 0, "acp_inquire(ACP_HANDLE_ALL) with nothing outstanding");
    CHECK_INT(acp_inquire(ACP_HANDLE_CONT), 0, "acp_inquire(ACP_HANDLE_CONT) with nothing outstanding");
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

static const char *order_name(acp_handle_t o)
{
    return o == (acp_handle_t)ACP_HANDLE_ALL ? "ACP_HANDLE_ALL" : o == (acp_handle_t)ACP_HANDLE_CONT ? "ACP_HANDLE_CONT" : "the previous handle";
}

/* order_kind: ACP_HANDLE_ALL, ACP_HANDLE_CONT, or ACP_HANDLE_NULL meaning
 * "the handle of the operation it depends on". */
static acp_handle_t ord(acp_handle_t kind, acp_handle_t prev) { return kind == ACP_HANDLE_NULL ? prev : kind; }

/*
 * A (mine) -> B (next rank) then B -> C (mine): C must hold A's data, not
 * B's old contents. Then A -> B, B -> C' with C' on the rank after next
 * (third party). Then two writes of the same place: the later one wins.
 */
static void test_dependent(acp_handle_t kind, uint64_t round)
{
    const char *how = order_name(kind);
    uint64_t sa = 1000 + round * 100 + (uint64_t)me, sb = 2000 + round * 100 + (uint64_t)me;
    uint64_t sa2 = 3000 + round * 100 + (uint64_t)me;
    acpt_fill(at(A_OFF), SZ, sa);
    acpt_fill(at(A2_OFF), SZ, sa2);
    acpt_fill(at(B_OFF), SZ, sb); /* old contents: the previous rank's A must replace them first */
    memset(at(C_OFF), CANARY, SZ);
    CHECK_INT(acp_sync(), 0, "acp_sync");

    acp_handle_t h1 = acp_copy(ga_of(nxt(1), B_OFF), ga_of(me, A_OFF), SZ, ACP_HANDLE_NULL);
    acp_handle_t h2 = acp_copy(ga_of(me, C_OFF), ga_of(nxt(1), B_OFF), SZ, ord(kind, h1));
    CHECK(h1 != ACP_HANDLE_NULL && h2 != ACP_HANDLE_NULL, "dependent copies (%s) refused", how);
    acp_complete(h2);
    CHECK_INT(acp_inquire(h1), 0, "acp_inquire(h1) after acp_complete(h2)");
    char what[128];
    snprintf(what, sizeof what, "A -> B (next rank), B -> C (mine) ordered by %s: C", how);
    CHECK_FILL(at(C_OFF), SZ, sa, what);
    CHECK_INT(acp_sync(), 0, "acp_sync");

    /* Third party: B (next) -> C on the rank after next. */
    memset(at(C_OFF), CANARY, SZ);
    acpt_fill(at(B_OFF), SZ, sb);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    h1 = acp_copy(ga_of(nxt(1), B_OFF), ga_of(me, A_OFF), SZ, ACP_HANDLE_NULL);
    h2 = acp_copy(ga_of(nxt(2), C_OFF), ga_of(nxt(1), B_OFF), SZ, ord(kind, h1));
    CHECK(h1 != ACP_HANDLE_NULL && h2 != ACP_HANDLE_NULL, "third-party dependent copies (%s) refused", how);
    acp_complete(h2);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    snprintf(what, sizeof what, "A (rank %d) -> B (rank %d) -> C (mine) ordered by %s: C",
             (me + 2 * nprocs - 2) % nprocs, (me + nprocs - 1) % nprocs, how);
    CHECK_FILL(at(C_OFF), SZ, 1000 + round * 100 + (uint64_t)((me + 2 * nprocs - 2) % nprocs), what);

    /* Same place twice: A -> B(next), then A2 -> B(next); A2 must win. */
    CHECK_INT(acp_sync(), 0, "acp_sync");
    h1 = acp_copy(ga_of(nxt(1), B_OFF), ga_of(me, A_OFF), SZ, ACP_HANDLE_NULL);
    h2 = acp_copy(ga_of(nxt(1), B_OFF), ga_of(me, A2_OFF), SZ, ord(kind, h1));
    CHECK(h1 != ACP_HANDLE_NULL && h2 != ACP_HANDLE_NULL, "overwriting copies (%s) refused", how);
    acp_complete(h2);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    snprintf(what, sizeof what, "two writes of the same place ordered by %s: B holds the second", how);
    CHECK_FILL(at(B_OFF), SZ, 3000 + round * 100 + (uint64_t)((me + nprocs - 1) % nprocs), what);
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

/* Slot k of rank q's chain lives on rank (q + k) % N. */
static size_t chain_off(int q, int k) { return CH_OFF + ((size_t)q * (HOPS + 1) + (size_t)k) * CHSZ; }

static void test_chain(acp_handle_t kind)
{
    memset(at(CH_OFF), CANARY, (size_t)nprocs * (HOPS + 1) * CHSZ);
    acpt_fill(at(chain_off(me, 0)), CHSZ, 5000 + (uint64_t)me);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    acp_handle_t h = ACP_HANDLE_NULL;
    for (int k = 0; k < HOPS; k++) {
        acp_handle_t o = k == 0 ? (acp_handle_t)ACP_HANDLE_NULL : ord(kind, h);
        h = acp_copy(ga_of(nxt(k + 1), chain_off(me, k + 1)), ga_of(nxt(k), chain_off(me, k)), CHSZ, o);
        CHECK(h != ACP_HANDLE_NULL, "chain hop %d refused", k);
    }
    /* Fetch the end of the chain back, ordered after the last hop. */
    uint8_t *back = at(MISC + 2048);
    memset(back, 0, 1024);
    h = acp_copy(ga_of(me, MISC + 2048), ga_of(nxt(HOPS), chain_off(me, HOPS)), CHSZ, ord(kind, h));
    acp_complete(h);
    char what[128];
    snprintf(what, sizeof what, "end of a %d-hop chain ordered by %s, fetched back", HOPS, order_name(kind));
    CHECK_FILL(back, CHSZ, 5000 + (uint64_t)me, what);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    for (int q = 0; q < nprocs; q++)
        for (int k = 1; k <= HOPS; k++)
            if ((q + k) % nprocs == me) {
                snprintf(what, sizeof what, "hop %d of rank %d's chain (%s)", k, q, order_name(kind));
                CHECK_FILL(at(chain_off(q, k)), CHSZ, 5000 + (uint64_t)q, what);
            }
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

/* NGETS gets from all ranks, then one local copy; completing the last
 * handle completes them all. */
static void test_complete_prefix(void)
{
    acpt_fill(at(GSRC), GCHUNK, 7000 + (uint64_t)me);
    memset(at(GDST), CANARY, NGETS * GCHUNK);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    acp_handle_t hs[NGETS];
    for (int i = 0; i < NGETS; i++) {
        hs[i] = acp_copy(ga_of(me, GDST + (size_t)i * GCHUNK), ga_of(nxt(i + 1), GSRC), GCHUNK, ACP_HANDLE_NULL);
        CHECK(hs[i] != ACP_HANDLE_NULL, "get %d refused", i);
    }
    acp_handle_t last = acp_copy(ga_of(me, MISC + 8), ga_of(me, MISC), 8, ACP_HANDLE_NULL);
    CHECK_INT(last, hs[NGETS - 1] + 1, "handle of the local copy after the gets");
    acp_complete(last);
    for (int i = 0; i < NGETS; i++) {
        CHECK_INT(acp_inquire(hs[i]), 0, "acp_inquire(get %d) after acp_complete(a later handle)", i);
        char what[96];
        snprintf(what, sizeof what, "get %d from rank %d after acp_complete(a later handle)", i, nxt(i + 1));
        CHECK_FILL(at(GDST + (size_t)i * GCHUNK), GCHUNK, 7000 + (uint64_t)nxt(i + 1), what);
    }
    CHECK_INT(acp_inquire(ACP_HANDLE_ALL), 0, "acp_inquire(ACP_HANDLE_ALL)");
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

/* Polling acp_inquire alone must finish an operation. */
static void test_poll(void)
{
    int next = nxt(1);
    acpt_fill(at(A_OFF), SZ, 9000 + (uint64_t)me);
    memset(at(C_OFF), 0, SZ);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    acp_handle_t h = acp_copy(ga_of(me, C_OFF), ga_of(next, A_OFF), SZ, ACP_HANDLE_NULL);
    long polls = 0;
    int v, bad = 0;
    double t0 = acpt_now();
    while ((v = acp_inquire(h)) != 0 && acpt_now() - t0 < 60) {
        if (v != 1)
            bad = v;
        polls++;
    }
    CHECK_INT(bad, 0, "acp_inquire returned something other than 0 or 1");
    CHECK_INT(v, 0, "acp_inquire(h) after 60 s of polling");
    CHECK_FILL(at(C_OFF), SZ, 9000 + (uint64_t)next, "data of a get completed by polling acp_inquire");
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    if (nprocs > MAXP)
        FATAL("more than 64 ranks");
    acpt_need_smem(CH_OFF + (size_t)nprocs * (HOPS + 1) * CHSZ);
    for (int r = 0; r < nprocs; r++)
        st[r] = acp_query_starter_ga(r);
    test_numbering();
    const acp_handle_t kinds[] = { ACP_HANDLE_NULL, ACP_HANDLE_ALL, ACP_HANDLE_CONT };
    for (int i = 0; i < 3; i++)
        test_dependent(kinds[i], (uint64_t)i);
    for (int i = 0; i < 3; i++)
        test_chain(kinds[i]);
    test_complete_prefix();
    test_poll();
    return acpt_finish("t_order");
}
