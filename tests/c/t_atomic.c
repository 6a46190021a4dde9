/*
 * t_atomic: the twelve atomic operations.
 *
 * 1. Every case (cas4/8 success and failure, swap, add with wrap-around and
 *    carry, xor, or, and) issued by every rank at once, with the target word
 *    and the result location placed (own, own), (remote, own), (own,
 *    remote), (remote, same remote) and (remote A, remote B: third party),
 *    in starter memory, in registered memory and mixed. Each target and
 *    result sits in an 8-byte slot; the half a 4-byte operation must not
 *    touch holds a canary. Slots nobody addressed must stay untouched.
 * 2. A chain of different operations on one remote word, each ordered after
 *    the previous one (by handle, ACP_HANDLE_ALL, ACP_HANDLE_CONT): every
 *    fetched value and the final value are determined.
 * 3. Contention: every rank does 10,000 acp_add8(+1) on one counter of rank
 *    0; the counter ends at N * 10,000 and the fetched values are exactly
 *    0 .. N * 10,000 - 1, each once. Then 1,000 cas4-loop increments per
 *    rank on another counter: exactly N * 1,000. (ACPT_CONTENTION_ADDS
 *    sets the adds per rank, a tenth of it the increments: an emulated
 *    adapter, whose every atomic is a message its owner's CPU serves,
 *    runs fewer.) Both once with the
 *    counters in rank 0's starter memory (which same-host ranks map and
 *    update with their own CPU atomics) and once in memory rank 0
 *    registered from its heap (which same-host ranks reach through rank 0's
 *    progress loop, or the adapter), every third add ordered after the one
 *    before: one location, every path at once.
 * 4. Misaligned targets or results and NULL GAs give ACP_HANDLE_NULL and
 *    change nothing.
 * 5. A result location that only its owner can refuse (beyond a peer's
 *    starter memory or registered region, on the target's rank or a third
 *    one): the handle completes, and the target word is unchanged, for
 *    every operation. The atomic fails whole: it used to be applied at the
 *    target and then reported as failed, its old value lost (a cas that
 *    "failed" had taken the lock).
 *
 * Run with --acp-size-smem 32768.
 */
#include "acptest.h"

#define MAXP      64
#define EXCH_OFF  0        /* GA exchanges: 8 * (N + 1) bytes each */
#define EXCH2_OFF 1024
#define TGT_OFF   4096
#define RES_OFF   (TGT_OFF + MAXP * NCASES * 8)
#define SEQ_OFF   (RES_OFF + MAXP * NCASES * 8)   /* word + results of the chain */
#define CNT_OFF   (SEQ_OFF + 256)                 /* add8 counter, cas4 counter */
#define MIS_OFF   (CNT_OFF + 64)                  /* misaligned attempts */
#define REF_OFF   (MIS_OFF + 64)                  /* targets of refused results: 8 * MAXP, */
#define REF_LAND  (REF_OFF + 8 * MAXP)            /* then where their values are read to */
#define SMEM      32768
#define AREA      (MAXP * NCASES * 8)             /* registered: targets, then results, */
#define REG_CNT   (2 * AREA)                      /* then the counters (64 bytes) */

#define TGT_CANARY 0x5a5a5a5au
#define RES_CANARY 0xdeadbeefdeadbeefull

enum op { CAS4, CAS8, SWAP4, SWAP8, ADD4, ADD8, XOR4, XOR8, OR4, OR8, AND4, AND8 };
static const char *op_name[] = { "cas4", "cas8", "swap4", "swap8", "add4", "add8",
                                 "xor4", "xor8", "or4", "or8", "and4", "and8" };
static int width(enum op op) { return op % 2 == 0 ? 4 : 8; }

struct acase {
    const char *name;
    enum op op;
    uint64_t init, a, b;      /* b: cas new value */
    uint64_t old, final;      /* expected fetched and final values */
};

static const struct acase cases[] = {
    { "cas4 success", CAS4, 0x11223344, 0x11223344, 0xcafebabe, 0x11223344, 0xcafebabe },
    { "cas4 failure", CAS4, 0x11223344, 0x11223345, 0x1, 0x11223344, 0x11223344 },
    { "cas8 success", CAS8, 0x0123456789abcdefull, 0x0123456789abcdefull, 0xfedcba9876543210ull,
      0x0123456789abcdefull, 0xfedcba9876543210ull },
    { "cas8 failure (low half differs)", CAS8, 0x0123456789abcdefull, 0x0123456789abcdeeull, 1,
      0x0123456789abcdefull, 0x0123456789abcdefull },
    { "cas8 failure (high half differs)", CAS8, 0x0123456789abcdefull, 0x1123456789abcdefull, 1,
      0x0123456789abcdefull, 0x0123456789abcdefull },
    { "swap4", SWAP4, 0xaabbccdd, 0x11111111, 0, 0xaabbccdd, 0x11111111 },
    { "swap8", SWAP8, 0xaabbccddeeff0011ull, 0x1122334455667788ull, 0, 0xaabbccddeeff0011ull,
      0x1122334455667788ull },
    { "add4 wrap-around", ADD4, 0xfffffff0, 0x20, 0, 0xfffffff0, 0x10 },
    { "add4 of -1", ADD4, 0, 0xffffffff, 0, 0, 0xffffffff },
    { "add8 wrap-around", ADD8, 0xfffffffffffffff0ull, 0x20, 0, 0xfffffffffffffff0ull, 0x10 },
    { "add8 carry into the high half", ADD8, 0xffffffffull, 1, 0, 0xffffffffull, 0x100000000ull },
    { "xor4", XOR4, 0xf0f0f0f0, 0xff00ff00, 0, 0xf0f0f0f0, 0x0ff00ff0 },
    { "xor8", XOR8, 0xf0f0f0f0f0f0f0f0ull, 0xff00ff00ff00ff00ull, 0, 0xf0f0f0f0f0f0f0f0ull,
      0x0ff00ff00ff00ff0ull },
    { "or4", OR4, 0x0f000f00, 0x00f000f1, 0, 0x0f000f00, 0x0ff00ff1 },
    { "or8", OR8, 0x0f000f000f000f00ull, 0x00f000f000f000f1ull, 0, 0x0f000f000f000f00ull,
      0x0ff00ff00ff00ff1ull },
    { "and4", AND4, 0xffff0000, 0x0ff00ff0, 0, 0xffff0000, 0x0ff00000 },
    { "and8", AND8, 0xffff0000ffff0000ull, 0x0ff00ff00ff00ff0ull, 0, 0xffff0000ffff0000ull,
      0x0ff000000ff00000ull },
};
#define NCASES ((int)(sizeof cases / sizeof cases[0]))

static int me, nprocs;
static acp_ga_t starter[MAXP], reg[MAXP]; /* GA of byte 0 of each rank's spaces */
static uint8_t *reg_ptr;
static int nadd = 10000; /* contention: adds per rank (ACPT_CONTENTION_ADDS), a tenth of it cas4 increments */

static acp_handle_t issue(enum op op, acp_ga_t res, acp_ga_t tgt, uint64_t a, uint64_t b, acp_handle_t order)
{
    switch (op) {
    case CAS4: return acp_cas4(res, tgt, (uint32_t)a, (uint32_t)b, order);
    case CAS8: return acp_cas8(res, tgt, a, b, order);
    case SWAP4: return acp_swap4(res, tgt, (uint32_t)a, order);
    case SWAP8: return acp_swap8(res, tgt, a, order);
    case ADD4: return acp_add4(res, tgt, (uint32_t)a, order);
    case ADD8: return acp_add8(res, tgt, a, order);
    case XOR4: return acp_xor4(res, tgt, (uint32_t)a, order);
    case XOR8: return acp_xor8(res, tgt, a, order);
    case OR4: return acp_or4(res, tgt, (uint32_t)a, order);
    case OR8: return acp_or8(res, tgt, a, order);
    case AND4: return acp_and4(res, tgt, (uint32_t)a, order);
    case AND8: return acp_and8(res, tgt, a, order);
    }
    return ACP_HANDLE_NULL;
}

/* ---- 1. placements -------------------------------------------------------- */

/* Slot of case c issued by rank q, and where a 4-byte word sits in it: odd
 * cases use the upper half, so both halves are exercised. */
static size_t slot(int q, int c) { return ((size_t)q * NCASES + (size_t)c) * 8; }
static size_t sub(int c) { return width(cases[c].op) == 4 && c % 2 ? 4 : 0; }

struct placement {
    const char *name;
    int tgt_k, res_k; /* target on rank (q + tgt_k) % N, result on (q + res_k) % N */
    int min_procs;
};
static const struct placement placements[] = {
    { "target own, result own", 0, 0, 1 },
    { "target remote, result own", 1, 0, 2 },
    { "target own, result remote", 0, 1, 2 },
    { "target remote, result on the same remote", 1, 1, 2 },
    { "target remote A, result remote B (third party)", 1, 2, 3 },
};

enum { SP_STARTER, SP_REG };
static const char *sp_name[] = { "starter", "registered" };

static uint8_t *tgt_area(int sp) { return sp == SP_STARTER ? (uint8_t *)acpt_starter(TGT_OFF) : reg_ptr; }
static uint8_t *res_area(int sp) { return sp == SP_STARTER ? (uint8_t *)acpt_starter(RES_OFF) : reg_ptr + AREA; }
static acp_ga_t tgt_ga(int sp, int r) { return sp == SP_STARTER ? starter[r] + TGT_OFF : reg[r]; }
static acp_ga_t res_ga(int sp, int r) { return sp == SP_STARTER ? starter[r] + RES_OFF : reg[r] + AREA; }

/* Target slots hold the case's initial value (the other half of a 4-byte
 * slot the canary); result slots hold the canary. */
static void init_slots(int tsp, int rsp)
{
    for (int q = 0; q < nprocs; q++) {
        for (int c = 0; c < NCASES; c++) {
            uint8_t *t = tgt_area(tsp) + slot(q, c);
            uint8_t *r = res_area(rsp) + slot(q, c);
            if (width(cases[c].op) == 8) {
                *(uint64_t *)t = cases[c].init;
            } else {
                *(uint32_t *)(t + sub(c)) = (uint32_t)cases[c].init;
                *(uint32_t *)(t + 4 - sub(c)) = TGT_CANARY;
            }
            *(uint64_t *)r = RES_CANARY;
        }
    }
}

static void check_slots(const struct placement *pl, int tsp, int rsp)
{
    for (int q = 0; q < nprocs; q++) {
        int hit_t = (q + pl->tgt_k) % nprocs == me, hit_r = (q + pl->res_k) % nprocs == me;
        for (int c = 0; c < NCASES; c++) {
            const struct acase *k = &cases[c];
            uint8_t *t = tgt_area(tsp) + slot(q, c);
            uint8_t *r = res_area(rsp) + slot(q, c);
            uint64_t want_t = hit_t ? k->final : k->init;
            if (width(k->op) == 8) {
                CHECK_HEX(*(uint64_t *)t, want_t, "%s, %s target/%s result, %s by rank %d: target word", pl->name,
                          sp_name[tsp], sp_name[rsp], k->name, q);
                if (hit_r)
                    CHECK_HEX(*(uint64_t *)r, k->old, "%s, %s target/%s result, %s by rank %d: fetched value",
                              pl->name, sp_name[tsp], sp_name[rsp], k->name, q);
            } else {
                CHECK_HEX(*(uint32_t *)(t + sub(c)), want_t, "%s, %s target/%s result, %s by rank %d: target word",
                          pl->name, sp_name[tsp], sp_name[rsp], k->name, q);
                CHECK_HEX(*(uint32_t *)(t + 4 - sub(c)), TGT_CANARY,
                          "%s, %s by rank %d: the other half of the target slot", pl->name, k->name, q);
                if (hit_r) {
                    CHECK_HEX(*(uint32_t *)(r + sub(c)), k->old, "%s, %s target/%s result, %s by rank %d: fetched value",
                              pl->name, sp_name[tsp], sp_name[rsp], k->name, q);
                    CHECK_HEX(*(uint32_t *)(r + 4 - sub(c)), (uint32_t)RES_CANARY,
                              "%s, %s by rank %d: the other half of the result slot", pl->name, k->name, q);
                }
            }
            if (!hit_r)
                CHECK_HEX(*(uint64_t *)r, RES_CANARY, "%s, %s by rank %d: result slot nobody addressed", pl->name,
                          k->name, q);
        }
    }
}

static void run_placement(const struct placement *pl, int tsp, int rsp)
{
    init_slots(tsp, rsp);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    int tr = (me + pl->tgt_k) % nprocs, rr = (me + pl->res_k) % nprocs;
    for (int c = 0; c < NCASES; c++) {
        const struct acase *k = &cases[c];
        acp_handle_t h = issue(k->op, res_ga(rsp, rr) + slot(me, c) + sub(c), tgt_ga(tsp, tr) + slot(me, c) + sub(c),
                               k->a, k->b, ACP_HANDLE_NULL);
        CHECK(h != ACP_HANDLE_NULL, "%s, %s: returned ACP_HANDLE_NULL", pl->name, k->name);
    }
    acp_complete(ACP_HANDLE_ALL);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    check_slots(pl, tsp, rsp);
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

static void test_placements(void)
{
    static const int spaces[][2] = { { SP_STARTER, SP_STARTER }, { SP_REG, SP_REG }, { SP_REG, SP_STARTER },
                                     { SP_STARTER, SP_REG } };
    for (size_t p = 0; p < sizeof placements / sizeof placements[0]; p++) {
        if (nprocs < placements[p].min_procs) {
            if (me == 0)
                printf("t_atomic: \"%s\" skipped: needs %d ranks\n", placements[p].name, placements[p].min_procs);
            continue;
        }
        for (size_t s = 0; s < sizeof spaces / sizeof spaces[0]; s++)
            run_placement(&placements[p], spaces[s][0], spaces[s][1]);
    }
}

/* ---- 2. a chain on one word ---------------------------------------------- */

struct step { enum op op; uint64_t a, b, old; };
/* Starting from 100: every fetched value follows from the order. */
static const struct step chain[] = {
    { ADD8, 5, 0, 100 },        /* 105 */
    { SWAP8, 7, 0, 105 },       /* 7 */
    { CAS8, 7, 9, 7 },          /* 9 */
    { CAS8, 7, 11, 9 },         /* fails: 9 */
    { OR8, 0x10, 0, 9 },        /* 0x19 */
    { AND8, 0x0f, 0, 0x19 },    /* 9 */
    { XOR8, 0xff, 0, 9 },       /* 0xf6 */
    { ADD8, ~0ull, 0, 0xf6 },   /* 0xf5 */
};
#define NCHAIN ((int)(sizeof chain / sizeof chain[0]))
#define CHAIN_FINAL 0xf5

static void run_chain(const char *how, acp_handle_t order_kind)
{
    /* The word lives on the next rank; my results in my starter memory. */
    int next = (me + 1) % nprocs, prev = (me + nprocs - 1) % nprocs;
    uint64_t *word = acpt_starter(SEQ_OFF);
    uint64_t *res = acpt_starter(SEQ_OFF + 8);
    *word = 100;
    for (int i = 0; i < NCHAIN; i++)
        res[i] = RES_CANARY;
    CHECK_INT(acp_sync(), 0, "acp_sync");
    acp_handle_t prevh = ACP_HANDLE_NULL;
    for (int i = 0; i < NCHAIN; i++) {
        acp_handle_t order = order_kind == ACP_HANDLE_NULL ? prevh : order_kind;
        if (i == 0)
            order = ACP_HANDLE_NULL;
        acp_handle_t h = issue(chain[i].op, starter[me] + SEQ_OFF + 8 + 8 * (uint64_t)i, starter[next] + SEQ_OFF,
                               chain[i].a, chain[i].b, order);
        CHECK(h != ACP_HANDLE_NULL, "chain (%s) step %d: ACP_HANDLE_NULL", how, i);
        prevh = h;
    }
    acp_complete(prevh);
    for (int i = 0; i < NCHAIN; i++)
        CHECK_HEX(res[i], chain[i].old, "chain ordered by %s: value fetched by step %d (%s)", how, i,
                  op_name[chain[i].op]);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_HEX(*word, CHAIN_FINAL, "chain ordered by %s from rank %d: final value", how, prev);
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

/* ---- 3. contention --------------------------------------------------------- */

/* The counters of the contention tests: in starter memory or registered. */
static uint8_t *counter_area(int sp) { return sp == SP_STARTER ? (uint8_t *)acpt_starter(CNT_OFF) : reg_ptr + REG_CNT; }
static acp_ga_t counter_ga(int sp) { return sp == SP_STARTER ? starter[0] + CNT_OFF : reg[0] + REG_CNT; }

static void test_add_contention(int sp)
{
    uint64_t *counter = (uint64_t *)counter_area(sp);
    *counter = 0;
    uint64_t *fetched = calloc(nadd, 8);
    acp_atkey_t key = acp_register_memory(fetched, nadd * 8, 0);
    acp_ga_t fga = acp_query_ga(key, fetched);
    if (fga == ACP_GA_NULL)
        FATAL("registering the result array");
    uint64_t all_fga[MAXP];
    acpt_allgather_u64(fga, all_fga, EXCH2_OFF); /* includes a sync: counter is 0 everywhere */

    double t0 = acpt_now();
    acp_handle_t h = ACP_HANDLE_NULL;
    for (int i = 0; i < nadd; i++) {
        acp_handle_t order = ACP_HANDLE_NULL;
        if (sp == SP_REG && i % 3 == 2)
            order = h;
        h = acp_add8(fga + 8 * (uint64_t)i, counter_ga(sp), 1, order);
        if (h == ACP_HANDLE_NULL) {
            FAIL("acp_add8 number %d returned ACP_HANDLE_NULL", i);
            break;
        }
    }
    acp_complete(ACP_HANDLE_ALL);
    double t = acpt_now() - t0;
    CHECK_INT(acp_sync(), 0, "acp_sync");
    uint64_t total = (uint64_t)nprocs * nadd;
    for (int i = 0; i < nadd; i++)
        if (!CHECK(fetched[i] < total, "add8 %d fetched %" PRIu64 ", beyond %" PRIu64, i, fetched[i], total))
            break;
    if (me == 0) {
        printf("t_atomic: %d x %d acp_add8 on one counter in %s memory: %.3f s on rank 0\n", nprocs, nadd,
               sp_name[sp], t);
        CHECK_INT(*counter, total, "counter after %d ranks x %d acp_add8(+1)", nprocs, nadd);
        /* Gather every rank's fetched values: together exactly 0..total-1. */
        uint64_t *allv = malloc(total * 8);
        acp_atkey_t k2 = acp_register_memory(allv, total * 8, 0);
        acp_ga_t g2 = acp_query_ga(k2, allv);
        for (int r = 0; r < nprocs; r++)
            acp_copy(g2 + (uint64_t)r * nadd * 8, all_fga[r], nadd * 8, ACP_HANDLE_NULL);
        acp_complete(ACP_HANDLE_ALL);
        uint8_t *seen = calloc(total, 1);
        uint64_t dup = 0, out = 0;
        for (uint64_t i = 0; i < total; i++) {
            if (allv[i] >= total)
                out++;
            else if (seen[allv[i]]++)
                dup++;
        }
        CHECK_INT(out, 0, "fetched values outside 0..%" PRIu64, total - 1);
        CHECK_INT(dup, 0, "fetched values seen twice (each old value must be fetched exactly once)");
        free(seen);
        acp_unregister_memory(k2);
        free(allv);
    }
    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_INT(acp_unregister_memory(key), 0, "unregister the result array");
    free(fetched);
}

static void test_cas_contention(int sp)
{
    int ncas = nadd / 10;
    uint32_t *counter = (uint32_t *)(counter_area(sp) + 8);
    *counter = 0;
    uint32_t *res = acpt_starter(CNT_OFF + 16);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    long attempts = 0;
    uint32_t guess = 0;
    double t0 = acpt_now();
    for (int done = 0; done < ncas;) {
        acp_handle_t h = acp_cas4(starter[me] + CNT_OFF + 16, counter_ga(sp) + 8, guess, guess + 1, ACP_HANDLE_NULL);
        if (h == ACP_HANDLE_NULL) {
            FAIL("acp_cas4 returned ACP_HANDLE_NULL");
            break;
        }
        acp_complete(h);
        attempts++;
        if (*res == guess) {
            done++;
            guess++;
        } else {
            guess = *res;
        }
    }
    double t = acpt_now() - t0;
    CHECK_INT(acp_sync(), 0, "acp_sync");
    if (me == 0) {
        printf("t_atomic: %d x %d cas4 increments in %s memory, %ld attempts on rank 0: %.3f s\n", nprocs, ncas,
               sp_name[sp], attempts, t);
        CHECK_INT(*counter, nprocs * ncas, "counter after %d ranks x %d cas4-loop increments", nprocs, ncas);
    }
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

/* ---- 4. misaligned and NULL ------------------------------------------------ */

static void test_rejects(void)
{
    int next = (me + 1) % nprocs;
    uint8_t *mine = acpt_starter(MIS_OFF);
    memset(mine, 0x77, 32);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    acp_ga_t good_res = starter[me] + MIS_OFF + 16;
    const int ranks[] = { me, next };
    for (int op = CAS4; op <= AND8; op++) {
        int w = width(op);
        for (int ri = 0; ri < 2; ri++) {
            acp_ga_t tgt = starter[ranks[ri]] + MIS_OFF;
            for (int off = 1; off < w; off++) {
                CHECK_INT(issue(op, good_res, tgt + off, 1, 2, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                          "%s with target misaligned by %d on rank %d", op_name[op], off, ranks[ri]);
                CHECK_INT(issue(op, starter[ranks[ri]] + MIS_OFF + 16 + off, starter[me] + MIS_OFF + 8, 1, 2,
                                ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                          "%s with result misaligned by %d on rank %d", op_name[op], off, ranks[ri]);
            }
        }
        CHECK_INT(issue(op, ACP_GA_NULL, starter[next] + MIS_OFF, 1, 2, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                  "%s with result ACP_GA_NULL", op_name[op]);
        CHECK_INT(issue(op, good_res, ACP_GA_NULL, 1, 2, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                  "%s with target ACP_GA_NULL", op_name[op]);
    }
    acp_complete(ACP_HANDLE_ALL);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_BYTES(mine, 32, 0x77, "memory around refused atomics");
}

/* ---- 5. result locations the owner refuses -------------------------------- */

#define REF_WORD 0x0123456789abcdefull

static void test_refused_result(void)
{
    int next = (me + 1) % nprocs, third = (me + 2) % nprocs;
    uint64_t *words = acpt_starter(REF_OFF);
    for (int q = 0; q < MAXP; q++)
        words[q] = REF_WORD;
    CHECK_INT(acp_sync(), 0, "acp_sync");
    /* My word on rank r is slot <me> of r's REF_OFF area. */
    const acp_ga_t beyond = (acp_ga_t)1 << 36; /* past any starter memory this test is run with */
    struct {
        const char *name;
        int tgt_rank;
        acp_ga_t res;
        int min_procs;
    } pl[] = {
        { "target own, result beyond the next rank's starter memory", me, starter[next] + beyond, 2 },
        { "target on the next rank, result beyond its starter memory", next, starter[next] + beyond, 2 },
        { "target on the next rank, result beyond a third rank's starter memory", next, starter[third] + beyond, 3 },
        { "target on the next rank, result just past a third rank's registered region", next,
          reg[third] + REG_CNT + 64, 3 },
    };
    for (size_t i = 0; i < sizeof pl / sizeof pl[0]; i++) {
        if (nprocs < pl[i].min_procs)
            continue;
        acp_ga_t tgt = starter[pl[i].tgt_rank] + REF_OFF + 8 * (acp_ga_t)me;
        for (int op = CAS4; op <= AND8; op++) {
            /* cas compares with the word's value, so that it would succeed. */
            uint64_t a = op == CAS4 ? (uint32_t)REF_WORD : op == CAS8 ? REF_WORD : 0xff;
            acp_handle_t h = issue(op, pl[i].res, tgt, a, 0x42, ACP_HANDLE_NULL);
            CHECK(h != ACP_HANDLE_NULL, "%s: %s returned ACP_HANDLE_NULL (only the owner can refuse it)",
                  pl[i].name, op_name[op]);
            acp_complete(h);
            CHECK_INT(acp_inquire(h), 0, "%s: %s: acp_inquire after acp_complete", pl[i].name, op_name[op]);
            uint64_t now = 0;
            if (pl[i].tgt_rank == me) {
                now = words[me];
            } else {
                WAIT(acp_copy(starter[me] + REF_LAND, tgt, 8, ACP_HANDLE_NULL), "acp_copy of the target word");
                now = *(uint64_t *)acpt_starter(REF_LAND);
            }
            CHECK_HEX(now, REF_WORD, "%s: target word after a %s whose result location was refused",
                      pl[i].name, op_name[op]);
        }
    }
    CHECK_INT(acp_sync(), 0, "acp_sync");
    for (int q = 0; q < nprocs; q++)
        CHECK_HEX(words[q], REF_WORD, "word of rank %d in my REF_OFF area", q);
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    if (nprocs > MAXP)
        FATAL("more than 64 ranks");
    acpt_need_smem(SMEM);
    nadd = (int)acpt_env_long("ACPT_CONTENTION_ADDS", nadd, 10, 1000000);
    for (int r = 0; r < nprocs; r++)
        starter[r] = acp_query_starter_ga(r);

    void *area = NULL;
    if (posix_memalign(&area, 64, REG_CNT + 64) != 0)
        FATAL("posix_memalign");
    reg_ptr = area;
    acp_atkey_t key = acp_register_memory(area, REG_CNT + 64, 0);
    acp_ga_t ga = acp_query_ga(key, area);
    if (ga == ACP_GA_NULL)
        FATAL("registering the atomic area");
    acpt_allgather_u64(ga, reg, EXCH_OFF);

    test_placements();
    run_chain("the previous handle", ACP_HANDLE_NULL);
    run_chain("ACP_HANDLE_ALL", ACP_HANDLE_ALL);
    run_chain("ACP_HANDLE_CONT", ACP_HANDLE_CONT);
    for (int sp = SP_STARTER; sp <= SP_REG; sp++) {
        test_add_contention(sp);
        test_cas_contention(sp);
    }
    test_rejects();
    test_refused_result();
    CHECK_INT(acp_unregister_memory(key), 0, "unregister the atomic area");
    return acpt_finish("t_atomic");
}
