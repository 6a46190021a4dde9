/*
 * t_random: random copies and atomics between every pair of ranks,
 * checked byte for byte against a model.
 *
 * Every rank keeps a model of every rank's memory: its starter memory and
 * a registered buffer (from malloc, with guard bytes on either side that
 * nothing may touch). All ranks draw the same schedule from one seed: in
 * each of B batches one rank issues one to four operations — copies of
 * 0 bytes to 9,000 (local, put, get, between two other ranks), atomics of
 * every kind with their results anywhere — either with disjoint footprints
 * and no order, or each ordered after the one before; then everybody
 * synchronises, applies the batch to its model, compares its own memory
 * with it, and synchronises again.
 *
 *     acprun -np N --acp-size-smem 65536 t_random [-batches B] [-seed S]
 *
 * B is 200 by default; T_RANDOM_TRACE=1 makes rank 0 print every batch.
 */
#include "acptest.h"

#define MAXP 16
#define REG 4000  /* a registered buffer's bytes: an odd size */
#define GUARD 64  /* bytes before and after it */
#define SPAN 16384 /* offsets in starter memory: within its first SPAN bytes, or near its end */

static int me, nprocs;
static uint64_t smem; /* each rank's starter memory, bytes */

/* splitmix64: the schedule's numbers, the same on every rank. */
static uint64_t rnd_state;
static uint64_t rnd(void)
{
    uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static uint64_t below(uint64_t n) { return n ? rnd() % n : 0; }

/* An end: rank's starter memory (reg 0) or registered buffer (reg 1). */
typedef struct {
    int rank, reg;
    uint64_t off;
} end_t;

enum { COPY = 0, CAS4, CAS8, SWAP4, SWAP8, ADD4, ADD8, XOR4, XOR8, OR4, OR8, AND4, AND8 };
static const char *const names[] = {"copy", "cas4", "cas8", "swap4", "swap8", "add4", "add8",
                                    "xor4", "xor8", "or4", "or8", "and4", "and8"};

typedef struct {
    int op;
    end_t dst, src; /* atomics: dst is the result, src the target */
    uint64_t n, a, b;
    int ordered;
} op_t;

static uint8_t *model[MAXP][2]; /* [rank][reg]: starter memory; guard + buffer + guard */
static acp_ga_t reg_ga[MAXP];
static uint8_t *mine_reg; /* this rank's guard + buffer + guard */

static uint64_t size_of(int reg) { return reg ? REG : smem; }

static uint8_t *model_at(end_t e) { return model[e.rank][e.reg] + (e.reg ? GUARD : 0) + e.off; }

static acp_ga_t ga_of(end_t e) { return e.reg ? reg_ga[e.rank] + e.off : acp_query_starter_ga(e.rank) + e.off; }

static end_t draw_end(uint64_t n, uint64_t align)
{
    end_t e = {(int)below((uint64_t)nprocs), (int)below(2), 0};
    if (n > size_of(e.reg))
        e.reg = 0;
    uint64_t last = size_of(e.reg) - n;
    if (e.reg == 0 && below(8) == 0)
        e.off = last - (last < 64 ? below(last + 1) : below(64));
    else if (e.reg == 0)
        e.off = below((last < SPAN ? last : SPAN) + 1);
    else
        e.off = below(last + 1);
    e.off -= e.off % align;
    return e;
}

static int overlap(end_t a, uint64_t n, end_t b, uint64_t k)
{
    return a.rank == b.rank && a.reg == b.reg && a.off < b.off + k && b.off < a.off + n;
}

/* Whether two operations' footprints share a byte one of them writes (an
 * atomic writes its target and its result). */
static int conflict(const op_t *x, const op_t *y)
{
    int xw = x->op != COPY, yw = y->op != COPY;
    return overlap(x->dst, x->n, y->dst, y->n) || overlap(x->dst, x->n, y->src, y->n) ||
           overlap(y->dst, y->n, x->src, x->n) || ((xw || yw) && overlap(x->src, x->n, y->src, y->n));
}

static uint64_t load(const uint8_t *p, uint64_t w)
{
    uint64_t v = 0;
    memcpy(&v, p, w);
    return v;
}

static op_t draw_op(void)
{
    op_t o = {0};
    if (below(10) < 3) {
        o.op = 1 + (int)below(12);
        o.n = (o.op % 2) ? 4 : 8;
        o.src = draw_end(o.n, o.n);
        o.dst = draw_end(o.n, o.n);
        o.a = rnd();
        o.b = rnd();
        if ((o.op == CAS4 || o.op == CAS8) && below(2))
            o.a = load(model_at(o.src), o.n); /* a compare that succeeds */
    } else {
        uint64_t k = below(100);
        o.n = k < 3 ? 0 : k < 35 ? 1 + below(16) : k < 65 ? 17 + below(496) : k < 93 ? 513 + below(2500) : 3001 + below(6000);
        o.dst = draw_end(o.n, 1);
        o.src = draw_end(o.n, 1);
    }
    return o;
}

/* The model's side of an operation (spec: the old value to the result). */
static void apply(const op_t *o)
{
    if (o->op == COPY) {
        memmove(model_at(o->dst), model_at(o->src), o->n);
        return;
    }
    uint64_t w = o->n, mask = w == 4 ? 0xffffffffull : ~0ull;
    uint64_t old = load(model_at(o->src), w), a = o->a & mask, b = o->b & mask, next = old;
    switch (o->op) {
    case CAS4: case CAS8: next = old == a ? b : old; break;
    case SWAP4: case SWAP8: next = a; break;
    case ADD4: case ADD8: next = (old + a) & mask; break;
    case XOR4: case XOR8: next = old ^ a; break;
    case OR4: case OR8: next = old | a; break;
    case AND4: case AND8: next = old & a; break;
    }
    memcpy(model_at(o->src), &next, w);
    memcpy(model_at(o->dst), &old, w);
}

static acp_handle_t issue(const op_t *o, acp_handle_t order)
{
    acp_ga_t d = ga_of(o->dst), s = ga_of(o->src);
    switch (o->op) {
    case COPY: return acp_copy(d, s, o->n, order);
    case CAS4: return acp_cas4(d, s, (uint32_t)o->a, (uint32_t)o->b, order);
    case CAS8: return acp_cas8(d, s, o->a, o->b, order);
    case SWAP4: return acp_swap4(d, s, (uint32_t)o->a, order);
    case SWAP8: return acp_swap8(d, s, o->a, order);
    case ADD4: return acp_add4(d, s, (uint32_t)o->a, order);
    case ADD8: return acp_add8(d, s, o->a, order);
    case XOR4: return acp_xor4(d, s, (uint32_t)o->a, order);
    case XOR8: return acp_xor8(d, s, o->a, order);
    case OR4: return acp_or4(d, s, (uint32_t)o->a, order);
    case OR8: return acp_or8(d, s, o->a, order);
    case AND4: return acp_and4(d, s, (uint32_t)o->a, order);
    default: return acp_and8(d, s, o->a, order);
    }
}

static void describe(char *buf, size_t len, const op_t *o)
{
    snprintf(buf, len, "%s of %" PRIu64 " bytes to rank %d %s+%" PRIu64 " from rank %d %s+%" PRIu64 "%s",
             names[o->op], o->n, o->dst.rank, o->dst.reg ? "registered" : "starter", o->dst.off, o->src.rank,
             o->src.reg ? "registered" : "starter", o->src.off, o->ordered ? " (ordered)" : "");
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    int batches = 200;
    uint64_t seed = 20261128;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-batches") == 0 && i + 1 < argc)
            batches = atoi(argv[++i]);
        else if (strcmp(argv[i], "-seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
    }
    me = acp_rank();
    nprocs = acp_procs();
    if (nprocs > MAXP)
        FATAL("too many ranks");
    smem = acpt_region_size(acp_query_starter_ga(me));
    if (smem < 2 * SPAN)
        FATAL("starter memory below 32 KiB: run with --acp-size-smem 65536");

    /* The registered buffer, its GA gathered (through the end of the
     * starter memory, which the schedule then fills like the rest). */
    mine_reg = malloc(GUARD + REG + GUARD);
    acp_atkey_t key = acp_register_memory(mine_reg + GUARD, REG, 0);
    CHECK(key != ACP_ATKEY_NULL, "acp_register_memory of %d bytes", REG);
    uint64_t gathered[MAXP];
    acpt_allgather_u64(acp_query_ga(key, mine_reg + GUARD), gathered, smem - 8 * (MAXP + 2));
    for (int r = 0; r < nprocs; r++)
        reg_ga[r] = gathered[r];

    /* Every rank's memory, from one seed, and the model of it. */
    for (int r = 0; r < nprocs; r++) {
        model[r][0] = malloc(smem);
        model[r][1] = malloc(GUARD + REG + GUARD);
        acpt_fill(model[r][0], smem, seed * 31 + (uint64_t)r);
        acpt_fill(model[r][1], GUARD + REG + GUARD, seed * 37 + (uint64_t)r);
    }
    memcpy(acpt_starter(0), model[me][0], smem);
    memcpy(mine_reg, model[me][1], GUARD + REG + GUARD);
    acp_sync();

    rnd_state = seed;
    long issued = 0;
    for (int b = 0; b < batches; b++) {
        int issuer = (int)below((uint64_t)nprocs);
        int chain = below(3) == 0, count = 1 + (int)below(4);
        op_t ops[4];
        int n = 0;
        while (n < count) {
            op_t o = draw_op();
            if (overlap(o.dst, o.n, o.src, o.n))
                continue; /* a copy onto itself, a result onto its own target */
            int ok = 1;
            for (int i = 0; i < n && !chain; i++)
                if (conflict(&o, &ops[i]))
                    ok = 0;
            if (!ok)
                continue;
            o.ordered = chain && n > 0;
            ops[n++] = o;
        }
        if (me == 0 && getenv("T_RANDOM_TRACE")) {
            for (int i = 0; i < n; i++) {
                char what[256];
                describe(what, sizeof what, &ops[i]);
                printf("batch %d by %d: %s\n", b, issuer, what);
            }
        }
        if (me == issuer) {
            acp_handle_t h[4], prev = ACP_HANDLE_NULL;
            for (int i = 0; i < n; i++) {
                h[i] = issue(&ops[i], ops[i].ordered ? prev : (acp_handle_t)ACP_HANDLE_NULL);
                char what[256];
                describe(what, sizeof what, &ops[i]);
                CHECK(h[i] != ACP_HANDLE_NULL, "batch %d: %s returned ACP_HANDLE_NULL", b, what);
                prev = h[i];
            }
            for (int i = 0; i < n; i++)
                if (h[i] != ACP_HANDLE_NULL)
                    acp_complete(h[i]);
            issued += n;
        }
        acp_sync();
        for (int i = 0; i < n; i++)
            apply(&ops[i]);
        /* My memory against the model; the first difference of each. */
        acpt_checks += 2;
        char what[160];
        snprintf(what, sizeof what, "seed %" PRIu64 ", after batch %d (rank %d issued it): starter memory", seed, b, issuer);
        const uint8_t *got = acpt_starter(0);
        if (memcmp(got, model[me][0], smem) != 0) {
            size_t i = 0;
            while (got[i] == model[me][0][i])
                i++;
            CHECK_HEX(got[i], model[me][0][i], "%s at %zu", what, i);
        }
        if (memcmp(mine_reg, model[me][1], GUARD + REG + GUARD) != 0) {
            size_t i = 0;
            while (mine_reg[i] == model[me][1][i])
                i++;
            CHECK_HEX(mine_reg[i], model[me][1][i], "seed %" PRIu64 ", after batch %d (rank %d issued it): %s %ld",
                      seed, b, issuer, i < GUARD ? "bytes before the registered buffer:" : i >= GUARD + REG ? "bytes after the registered buffer:" : "registered buffer at",
                      i < GUARD ? (long)(GUARD - i) : i >= GUARD + REG ? (long)(i - GUARD - REG) : (long)(i - GUARD));
            memcpy(model[me][1], mine_reg, GUARD + REG + GUARD); /* one fault, one report */
        }
        if (memcmp(got, model[me][0], smem) != 0)
            memcpy(model[me][0], got, smem); /* one fault, one report */
        acp_sync(); /* nobody's next batch lands while a rank still compares */
    }
    acp_sync();
    CHECK_INT(acp_unregister_memory(key), 0, "acp_unregister_memory");
    printf("rank %d: issued %ld operations in %d batches, seed %" PRIu64 "\n", me, issued, batches, seed);
    return acpt_finish("t_random");
}
