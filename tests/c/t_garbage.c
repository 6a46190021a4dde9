/*
 * t_garbage: every function of acp.h (and the undeclared exports
 * acp_send_ch, acp_recv_ch, acp_free_ws, acp_clear_local_set and
 * acp_clear_local_multiset) called with adversarial arguments. Each call
 * returns its documented error or empty value, and nothing else changes:
 *
 * - GAs: ACP_GA_NULL, all ones, a rank field beyond acp_procs() (or 0),
 *   the GA of an unregistered region (mine and a peer's), offsets past
 *   starter memory and past a registered region, random values;
 * - sizes: SIZE_MAX, SIZE_MAX - k for k = 1, 7, 8, 16, 17, 24 (what a
 *   header or a rounding adds wraps them), 2^47, 2^63, and 0 where it means
 *   something;
 * - ranks: -1, INT_MIN, acp_procs(), INT_MAX; colours -1, acp_colors();
 * - handles (GMA handles, channels, requests, segmented buffers,
 *   workspace descriptors, containers and iterators): NULL/0, -1, random
 *   values, freed ones, ones of another kind, and for containers
 *   registered memory that holds no container and hashed-container
 *   handles whose shape (num_ranks, num_slots) is not the container's;
 * - NULL buffers with a size.
 *
 * Afterwards a canary region in starter memory, one in and around a
 * registered region and one in an unregistered region are what they were,
 * and the containers, the channels, a segmented buffer, the workspace and
 * the heap made before still hold their contents and work.
 *
 * Calls whose misbehaviour is the caller's C-level fault and cannot be
 * detected are left out: pointers to memory smaller than the size given
 * with them (2^47 bytes from a small buffer for acp_register_memory,
 * channels and segmented buffers: the address space has room for them;
 * acp_waitall_ch with more entries than the array has, acp_create_set
 * with more ranks than the array has), container handles that are live
 * containers of another kind or freed ones that were allocated again
 * (layouts are the original's, byte for byte: they carry no type), and
 * acp_abort, which ends the process.
 *
 * A watchdog turns a hang into a failure that names the call.
 *
 *     ACP_VERBOSE=1 ACP_SIZE_SMEM_DL=1048576 acprun -np N --acp-size-smem 4096 t_garbage
 */
#include <limits.h>
#include <signal.h>
#include <stdbool.h>

#include "dltest.h"

/* Exported by the original and by libacp; acp.h does not declare them. */
int acp_send_ch(acp_ch_t ch, void *buf, size_t size);
int acp_recv_ch(acp_ch_t ch, void *buf, size_t size);
void acp_free_ws(acp_wsd_t WSD);
void acp_clear_local_set(acp_set_t set);
void acp_clear_local_multiset(acp_multiset_t set);

/* BL starter memory: GA exchange, scratch that copies may write, values
 * (int i at VAL_OFF + 4 i), canary. */
#define SMEM      4096
#define EXCH_OFF  0
#define SCR_OFF   512
#define VAL_OFF   1024
#define CAN_OFF   2048
#define CANARY    0xc3

/* The registered region is bytes [REG_LO, REG_LO + REG_LEN) of a buffer of
 * REGSZ canary bytes. */
#define REGSZ     512
#define REG_LO    64
#define REG_LEN   256

#define WATCHDOG  15   /* seconds for one section */
#define NOT_SIZE  ((size_t)-1)
#define N_OF(a)   (sizeof(a) / sizeof((a)[0]))

static int me, np, next, prev;

/* ---- watchdog ------------------------------------------------------------ */

static const char *volatile doing = "start-up";

static void say(const char *s) { (void)!write(1, s, strlen(s)); }

static void on_alarm(int sig)
{
    (void)sig;
    say("FAIL: t_garbage: hung in ");
    say(doing);
    say("\n");
    _exit(1);
}

/* Names the section (or call) that runs, for the watchdog's message. */
static void section(const char *what)
{
    doing = what;
    alarm(WATCHDOG);
}

/* ---- adversarial values --------------------------------------------------- */

struct named_ga {
    const char *name;
    acp_ga_t ga;
};

static const size_t bad_sizes[] = {
    SIZE_MAX, SIZE_MAX - 1, SIZE_MAX - 7, SIZE_MAX - 8, SIZE_MAX - 16, SIZE_MAX - 17, SIZE_MAX - 24,
    (size_t)1 << 47, (size_t)1 << 63,
};
static int bad_ranks[4];

/* Deterministic random 64-bit values. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rnd_state ^= rnd_state << 13;
    rnd_state ^= rnd_state >> 7;
    rnd_state ^= rnd_state << 17;
    return rnd_state;
}

static acp_ga_t st(int r) { return acp_query_starter_ga(r); }
static acp_ga_t val(int r, int v) { return st(r) + VAL_OFF + 4 * (uint64_t)v; }
static acp_ga_t scratch(int r) { return st(r) + SCR_OFF; }

/* The rank field is the top bits above rank_shift: starter(0) is rank
 * field 1 with every other field 0. */
static unsigned rank_shift;

static int rank_field(acp_ga_t ga)
{
    uint64_t f = ga >> rank_shift;
    return f >= 1 && f <= (uint64_t)np ? (int)f - 1 : -1;
}

/* GAs that address nothing: the garbage GA classes of the header comment. */
static struct named_ga bad_gas[16];
static size_t n_bad_gas;

/* Memory that must not change: canaries. */
static uint8_t *reg_buf, *stale_buf;
static acp_atkey_t reg_key;
static acp_ga_t reg_ga, stale_ga[64], peer_reg_ga[64];
static uint8_t saved_starter[SMEM - CAN_OFF], saved_reg[REGSZ], saved_stale[REGSZ];

static void add_bad_ga(const char *name, acp_ga_t ga)
{
    bad_gas[n_bad_gas].name = name;
    bad_gas[n_bad_gas++].ga = ga;
}

static void make_bad_gas(void)
{
    rank_shift = (unsigned)__builtin_ctzll(st(0));
    add_bad_ga("ACP_GA_NULL", ACP_GA_NULL);
    add_bad_ga("all ones", ~(acp_ga_t)0);
    if (rank_shift > 0 && (uint64_t)np + 1 < (uint64_t)1 << (64 - rank_shift))
        add_bad_ga("rank field acp_procs()", ((uint64_t)np + 1) << rank_shift | SCR_OFF);
    add_bad_ga("rank field 0", SCR_OFF);
    add_bad_ga("my unregistered region", stale_ga[me]);
    add_bad_ga("a peer's unregistered region", stale_ga[next]);
    add_bad_ga("past my starter memory", st(me) + SMEM);
    add_bad_ga("past a peer's starter memory", st(next) + SMEM + 8);
    add_bad_ga("2^47 into my starter memory", st(me) + ((uint64_t)1 << 47));
    add_bad_ga("past my registered region", reg_ga + REG_LEN);
    add_bad_ga("past a peer's registered region", peer_reg_ga[next] + REG_LEN);
    add_bad_ga("random", rnd());
    add_bad_ga("random", rnd());
}

/* Canaries: the end of my starter memory, the registered region and its
 * surroundings, an unregistered region (other ranks know its GA). */
static void make_canaries(void)
{
    memset(acpt_starter(CAN_OFF), CANARY, SMEM - CAN_OFF);
    reg_buf = malloc(REGSZ);
    stale_buf = malloc(REGSZ);
    memset(reg_buf, CANARY, REGSZ);
    memset(stale_buf, CANARY, REGSZ);
    /* A word that looks like an allocated heap block's header and footer,
     * so that acp_free of the GA after it has something to believe. */
    uint64_t fake = 64 + 3;
    memcpy(reg_buf + REG_LO + 8, &fake, 8);
    memcpy(reg_buf + REG_LO + 8 + 64 - 8, &fake, 8);
    reg_key = acp_register_memory(reg_buf + REG_LO, REG_LEN, 0);
    reg_ga = acp_query_ga(reg_key, reg_buf + REG_LO);
    acp_atkey_t k = acp_register_memory(stale_buf, REGSZ, 0);
    uint64_t stale = acp_query_ga(k, stale_buf);
    if (reg_ga == ACP_GA_NULL || stale == ACP_GA_NULL)
        FATAL("cannot register the canary regions");
    acpt_allgather_u64(stale, stale_ga, EXCH_OFF);
    acpt_allgather_u64(reg_ga, peer_reg_ga, EXCH_OFF);
    if (acp_unregister_memory(k) != 0)
        FATAL("cannot unregister the stale region");
    memcpy(saved_starter, acpt_starter(CAN_OFF), sizeof saved_starter);
    memcpy(saved_reg, reg_buf, REGSZ);
    memcpy(saved_stale, stale_buf, REGSZ);
    acp_sync();
}

static void check_canaries(const char *after)
{
    acp_complete(ACP_HANDLE_ALL);
    acp_sync(); /* every rank's garbage has been issued and completed */
    char what[160];
    snprintf(what, sizeof what, "the canary at the end of my starter memory after %s", after);
    CHECK(memcmp(acpt_starter(CAN_OFF), saved_starter, sizeof saved_starter) == 0, "%s changed", what);
    CHECK(memcmp(reg_buf, saved_reg, REGSZ) == 0, "my registered region and its surroundings changed after %s", after);
    CHECK(memcmp(stale_buf, saved_stale, REGSZ) == 0, "my unregistered region changed after %s", after);
    acp_sync();
}

/* ---- basic layer ------------------------------------------------------------ */

static void gmm(void)
{
    section("acp_query_starter_ga, acp_register_memory, acp_unregister_memory, acp_query_*");
    for (size_t i = 0; i < N_OF(bad_ranks); i++)
        CHECK_HEX(acp_query_starter_ga(bad_ranks[i]), ACP_GA_NULL, "acp_query_starter_ga(%d)", bad_ranks[i]);
    uint8_t *buf = malloc(64);
    const int colors[] = { -1, acp_colors(), INT_MAX, INT_MIN };
    for (size_t i = 0; i < N_OF(colors); i++)
        CHECK_HEX(acp_register_memory(buf, 64, colors[i]), ACP_ATKEY_NULL, "acp_register_memory colour %d", colors[i]);
    CHECK_HEX(acp_register_memory(NULL, 64, 0), ACP_ATKEY_NULL, "acp_register_memory(NULL, 64, 0)");
    CHECK_HEX(acp_register_memory(buf, 0, 0), ACP_ATKEY_NULL, "acp_register_memory(buf, 0, 0)");
    /* Sizes that wrap around or that no GA can address; 2^47 from a small
     * buffer is the caller's fault and cannot be told from a large one. */
    for (size_t i = 0; i < N_OF(bad_sizes); i++) {
        if (bad_sizes[i] == (size_t)1 << 47)
            continue;
        CHECK_HEX(acp_register_memory(buf, bad_sizes[i], 0), ACP_ATKEY_NULL, "acp_register_memory(buf, %zu, 0)",
                  bad_sizes[i]);
    }
    for (size_t i = 0; i < n_bad_gas; i++) {
        CHECK_INT(acp_unregister_memory(bad_gas[i].ga), -1, "acp_unregister_memory(%s)", bad_gas[i].name);
        CHECK_HEX(acp_query_ga(bad_gas[i].ga, reg_buf + REG_LO), ACP_GA_NULL, "acp_query_ga(%s, region)",
                  bad_gas[i].name);
        CHECK(acp_query_address(bad_gas[i].ga) == NULL, "acp_query_address(%s)", bad_gas[i].name);
        int want = rank_field(bad_gas[i].ga);
        CHECK_INT(acp_query_rank(bad_gas[i].ga), want, "acp_query_rank(%s)", bad_gas[i].name);
        CHECK_INT(acp_query_color(bad_gas[i].ga), want < 0 ? -1 : 0, "acp_query_color(%s)", bad_gas[i].name);
    }
    CHECK_INT(acp_unregister_memory(st(me)), -1, "acp_unregister_memory(my starter memory)");
    if (np > 1)
        CHECK_INT(acp_unregister_memory(peer_reg_ga[next]), -1, "acp_unregister_memory(a peer's key)");
    CHECK_HEX(acp_query_ga(reg_key, NULL), ACP_GA_NULL, "acp_query_ga(key, NULL)");
    CHECK_HEX(acp_query_ga(reg_key, reg_buf + REG_LO - 1), ACP_GA_NULL, "acp_query_ga(key, one below the region)");
    CHECK_HEX(acp_query_ga(reg_key, reg_buf + REG_LO + REG_LEN), ACP_GA_NULL, "acp_query_ga(key, just past the region)");
    CHECK_HEX(acp_query_ga(reg_key, (void *)UINTPTR_MAX), ACP_GA_NULL, "acp_query_ga(key, (void *)-1)");
    free(buf);
}

/* The atomics, each called as op(dst, src, order). */
static acp_handle_t at_cas4(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_cas4(d, s, 0, 1, o); }
static acp_handle_t at_cas8(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_cas8(d, s, 0, 1, o); }
static acp_handle_t at_swap4(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_swap4(d, s, 1, o); }
static acp_handle_t at_swap8(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_swap8(d, s, 1, o); }
static acp_handle_t at_add4(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_add4(d, s, 1, o); }
static acp_handle_t at_add8(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_add8(d, s, 1, o); }
static acp_handle_t at_xor4(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_xor4(d, s, 1, o); }
static acp_handle_t at_xor8(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_xor8(d, s, 1, o); }
static acp_handle_t at_or4(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_or4(d, s, 1, o); }
static acp_handle_t at_or8(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_or8(d, s, 1, o); }
static acp_handle_t at_and4(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_and4(d, s, 1, o); }
static acp_handle_t at_and8(acp_ga_t d, acp_ga_t s, acp_handle_t o) { return acp_and8(d, s, 1, o); }

static const struct {
    const char *name;
    acp_handle_t (*op)(acp_ga_t, acp_ga_t, acp_handle_t);
    int width;
} atomics[] = {
    { "acp_cas4", at_cas4, 4 }, { "acp_cas8", at_cas8, 8 }, { "acp_swap4", at_swap4, 4 },
    { "acp_swap8", at_swap8, 8 }, { "acp_add4", at_add4, 4 }, { "acp_add8", at_add8, 8 },
    { "acp_xor4", at_xor4, 4 }, { "acp_xor8", at_xor8, 8 }, { "acp_or4", at_or4, 4 },
    { "acp_or8", at_or8, 8 }, { "acp_and4", at_and4, 4 }, { "acp_and8", at_and8, 8 },
};

/* A GA whose rank field is invalid: the call itself must refuse it. */
static bool refused_at_call(acp_ga_t ga) { return rank_field(ga) < 0; }

/* A handle the owner refuses completes; a refusal at the call is NULL. */
static void check_issued(acp_handle_t h, bool at_call, const char *what, const char *name)
{
    if (at_call) {
        CHECK_INT(h, ACP_HANDLE_NULL, "%s with %s", what, name);
        return;
    }
    if (h != ACP_HANDLE_NULL)
        acp_complete(h);
    CHECK_INT(acp_inquire(h), 0, "%s with %s: acp_inquire after acp_complete", what, name);
}

static void gma_gas(void)
{
    section("acp_copy and the atomics with garbage GAs");
    acp_ga_t mine = scratch(me), theirs = scratch(next);
    for (size_t i = 0; i < n_bad_gas; i++) {
        acp_ga_t g = bad_gas[i].ga;
        bool local = rank_field(g) == me, call = refused_at_call(g) || local;
        check_issued(acp_copy(g, mine, 8, ACP_HANDLE_NULL), call, "acp_copy to", bad_gas[i].name);
        check_issued(acp_copy(mine, g, 8, ACP_HANDLE_NULL), call, "acp_copy from", bad_gas[i].name);
        check_issued(acp_copy(theirs, g, 8, ACP_HANDLE_NULL), call, "acp_copy (third party) from", bad_gas[i].name);
        for (size_t k = 0; k < N_OF(atomics); k++) {
            /* A misaligned GA is refused at the call too. */
            bool mis = (g & (uint64_t)(atomics[k].width - 1)) != 0;
            check_issued(atomics[k].op(mine, g, ACP_HANDLE_NULL), call || mis, atomics[k].name, bad_gas[i].name);
            check_issued(atomics[k].op(g, theirs, ACP_HANDLE_NULL), call || mis, atomics[k].name, bad_gas[i].name);
        }
    }
    for (size_t k = 0; k < N_OF(atomics); k++) {
        CHECK_INT(atomics[k].op(mine + 2, theirs, ACP_HANDLE_NULL), ACP_HANDLE_NULL, "%s with a misaligned result",
                  atomics[k].name);
        CHECK_INT(atomics[k].op(mine, theirs + 2, ACP_HANDLE_NULL), ACP_HANDLE_NULL, "%s on a misaligned target",
                  atomics[k].name);
    }
}

static void gma_sizes(void)
{
    section("acp_copy with garbage sizes");
    acp_ga_t mine = scratch(me), theirs = scratch(next), third = scratch((me + 2) % np);
    for (size_t i = 0; i < N_OF(bad_sizes); i++) {
        size_t n = bad_sizes[i];
        CHECK_INT(acp_copy(mine, mine + 64, n, ACP_HANDLE_NULL), ACP_HANDLE_NULL, "local acp_copy of %zu bytes", n);
        CHECK_INT(acp_copy(theirs, mine, n, ACP_HANDLE_NULL), ACP_HANDLE_NULL, "put of %zu bytes", n);
        CHECK_INT(acp_copy(mine, theirs, n, ACP_HANDLE_NULL), ACP_HANDLE_NULL, "get of %zu bytes", n);
        CHECK_INT(acp_copy(reg_ga, mine, n, ACP_HANDLE_NULL), ACP_HANDLE_NULL, "acp_copy of %zu bytes into my region", n);
        if (np >= 3) /* both ends remote: the owners refuse it, or the call does */
            check_issued(acp_copy(third, theirs, n, ACP_HANDLE_NULL), false, "third-party acp_copy", "a garbage size");
    }
}

static void gma_handles(void)
{
    section("acp_copy, acp_complete and acp_inquire with garbage handles");
    acp_ga_t mine = scratch(me);
    acp_handle_t last = acp_copy(mine + 8, mine, 8, ACP_HANDLE_NULL);
    CHECK(last != ACP_HANDLE_NULL, "a local acp_copy");
    acp_complete(last);
    const acp_handle_t orders[] = { -3, -1000, INT64_MIN, INT64_MAX, last + 1000000, (acp_handle_t)rnd() | 1 };
    for (size_t i = 0; i < N_OF(orders); i++) {
        CHECK_INT(acp_copy(mine + 8, mine, 8, orders[i]), ACP_HANDLE_NULL, "acp_copy ordered after %" PRId64,
                  orders[i]);
        for (size_t k = 0; k < N_OF(atomics); k++)
            CHECK_INT(atomics[k].op(mine, mine + 16, orders[i]), ACP_HANDLE_NULL, "%s ordered after %" PRId64,
                      atomics[k].name, orders[i]);
        acp_complete(orders[i]);
        CHECK_INT(acp_inquire(orders[i]), 0, "acp_inquire(%" PRId64 ")", orders[i]);
    }
}

static void infra(int *argc, char ***argv)
{
    section("acp_init, acp_reset, acp_rank, acp_procs, acp_sync, acp_colors");
    int neg = -5;
    char *none[] = { NULL };
    char **nonev = none;
    CHECK_INT(acp_init(NULL, NULL), -1, "acp_init(NULL, NULL) a second time");
    CHECK_INT(acp_init(&neg, &nonev), -1, "acp_init with argc -5 a second time");
    CHECK_INT(acp_init(argc, argv), -1, "acp_init a second time");
    CHECK_INT(neg, -5, "acp_init changed a rejected argc");
    /* Every process names the same garbage rank: none is a permutation. */
    const int ranks[] = { -1, INT_MIN, np, INT_MAX };
    for (size_t i = 0; i < N_OF(ranks); i++)
        CHECK_INT(acp_reset(ranks[i]), -1, "acp_reset(%d)", ranks[i]);
    if (np > 1)
        CHECK_INT(acp_reset(0), -1, "acp_reset(0) on every process");
    CHECK_INT(acp_rank(), me, "acp_rank after the refused resets");
    CHECK_INT(acp_procs(), np, "acp_procs after the refused resets");
    CHECK(acp_colors() >= 1, "acp_colors after the refused resets");
    CHECK_INT(acp_sync(), 0, "acp_sync after the refused resets");
    CHECK(acp_query_address(reg_ga) == reg_buf + REG_LO, "my region is still registered after the refused resets");
}

/* ---- communication library ----------------------------------------------------- */

/* Channels and a segmented buffer made before the garbage and used after
 * it (np >= 2): out to next, in from prev; a receive posted on in. */
static acp_ch_t ch_out, ch_in;
static acp_request_t live_recv;
static uint64_t live_recv_buf;
static acp_segbuf_t sb_src, sb_dst;
static uint8_t sb_sbuf[128], sb_dbuf[128];
/* Freed ones. */
static acp_ch_t ch_freed;
static acp_request_t req_waited;
static acp_segbuf_t sb_freed;

static void make_live_cl(void)
{
    section("channels and segmented buffers made before the garbage");
    ch_out = acp_create_ch(me, next);
    ch_in = acp_create_ch(prev, me);
    CHECK(ch_out != NULL && ch_in != NULL, "acp_create_ch of the live channels");
    sb_src = acp_create_src_segbuf(next, sb_sbuf, 64, 2);
    sb_dst = acp_create_dst_segbuf(prev, sb_dbuf, 64, 2);
    CHECK(sb_src != NULL && sb_dst != NULL, "acp_create_src/dst_segbuf of the live segmented buffers");
    CHECK_INT(acp_connect_segbuf(sb_src), 0, "acp_connect_segbuf(live source)");
    CHECK_INT(acp_connect_segbuf(sb_dst), 0, "acp_connect_segbuf(live destination)");
    live_recv = acp_nbrecv_ch(ch_in, &live_recv_buf, 8);
    CHECK(live_recv != NULL, "acp_nbrecv_ch of the live receive");

    /* A channel pair, a request and a segmented buffer pair, freed. */
    acp_ch_t a = acp_create_ch(me, next), b = acp_create_ch(prev, me);
    uint64_t x = 1, y = 0;
    acp_request_t s = acp_nbsend_ch(a, &x, 8);
    req_waited = acp_nbrecv_ch(b, &y, 8);
    CHECK_INT(acp_wait_ch(s), 0, "acp_wait_ch of a send");
    CHECK_INT(acp_wait_ch(req_waited), 8, "acp_wait_ch of a receive");
    CHECK_INT(acp_free_ch(a), 0, "acp_free_ch(sending end)");
    CHECK_INT(acp_free_ch(b), 0, "acp_free_ch(receiving end)");
    ch_freed = a;
    static uint8_t fs[64], fd[64];
    acp_segbuf_t src = acp_create_src_segbuf(next, fs, 32, 2), dst = acp_create_dst_segbuf(prev, fd, 32, 2);
    CHECK_INT(acp_connect_segbuf(src) | acp_connect_segbuf(dst), 0, "acp_connect_segbuf of the pair to free");
    CHECK_INT(acp_disconnect_segbuf(src) | acp_disconnect_segbuf(dst), 0, "acp_disconnect_segbuf of the pair to free");
    CHECK_INT(acp_free_segbuf(src) | acp_free_segbuf(dst), 0, "acp_free_segbuf of the pair to free");
    sb_freed = src;
    acp_sync();
}

struct named_handle {
    const char *name;
    uintptr_t h;
};

/* Channel, request and segmented-buffer handles that are none of the
 * kind a call takes: which ones apply depends on the kind. */
static size_t garbage_handles(struct named_handle *out, uintptr_t freed, uintptr_t other1, uintptr_t other2)
{
    size_t n = 0;
    out[n++] = (struct named_handle){ "NULL", 0 };
    out[n++] = (struct named_handle){ "-1", UINTPTR_MAX };
    out[n++] = (struct named_handle){ "random", (uintptr_t)rnd() };
    out[n++] = (struct named_handle){ "random below 2^32", (uintptr_t)(rnd() & 0xffffffffu) };
    out[n++] = (struct named_handle){ "random with bit 63", (uintptr_t)(rnd() | (1ull << 63)) };
    if (np > 1) {
        out[n++] = (struct named_handle){ "a freed one", freed };
        out[n++] = (struct named_handle){ "one of another kind", other1 };
        out[n++] = (struct named_handle){ "one of a third kind", other2 };
    }
    return n;
}

static void ch_create(void)
{
    section("acp_create_ch with garbage ranks");
    for (size_t i = 0; i < N_OF(bad_ranks); i++) {
        CHECK(acp_create_ch(me, bad_ranks[i]) == NULL, "acp_create_ch(me, %d)", bad_ranks[i]);
        CHECK(acp_create_ch(bad_ranks[i], me) == NULL, "acp_create_ch(%d, me)", bad_ranks[i]);
    }
    CHECK(acp_create_ch(me, me) == NULL, "acp_create_ch(me, me)");
    CHECK(acp_create_ch(INT_MIN, INT_MAX) == NULL, "acp_create_ch(INT_MIN, INT_MAX)");
    if (np >= 3)
        CHECK(acp_create_ch(next, (me + 2) % np) == NULL, "acp_create_ch of two other ranks");
}

static void ch_handles(void)
{
    section("channel calls with garbage channel and request handles");
    struct named_handle chs[8], reqs[8];
    size_t nch = garbage_handles(chs, (uintptr_t)ch_freed, (uintptr_t)sb_dst, (uintptr_t)live_recv);
    size_t nreq = garbage_handles(reqs, (uintptr_t)req_waited, (uintptr_t)ch_in, (uintptr_t)sb_dst);
    uint64_t x = 0;
    for (size_t i = 0; i < nch; i++) {
        acp_ch_t c = (acp_ch_t)chs[i].h;
        doing = chs[i].name;
        CHECK(acp_nbsend_ch(c, &x, 8) == NULL, "acp_nbsend_ch(%s)", chs[i].name);
        CHECK(acp_nbrecv_ch(c, &x, 8) == NULL, "acp_nbrecv_ch(%s)", chs[i].name);
        CHECK(acp_nbfree_ch(c) == NULL, "acp_nbfree_ch(%s)", chs[i].name);
        CHECK_INT(acp_free_ch(c), -1, "acp_free_ch(%s)", chs[i].name);
        CHECK_INT(acp_send_ch(c, &x, 8), -1, "acp_send_ch(%s)", chs[i].name);
        CHECK_INT(acp_recv_ch(c, &x, 8), -1, "acp_recv_ch(%s)", chs[i].name);
    }
    acp_request_t arr[8];
    size_t sizes[8];
    for (size_t i = 0; i < nreq; i++) {
        doing = reqs[i].name;
        CHECK_HEX(acp_wait_ch((acp_request_t)reqs[i].h), NOT_SIZE, "acp_wait_ch(%s)", reqs[i].name);
        arr[i] = (acp_request_t)reqs[i].h;
        sizes[i] = 7;
    }
    CHECK_INT(acp_waitall_ch(arr, (int)nreq, sizes), -1, "acp_waitall_ch of garbage requests");
    for (size_t i = 0; i < nreq; i++)
        CHECK_HEX(sizes[i], NOT_SIZE, "acp_waitall_ch: result of %s", reqs[i].name);
    CHECK_INT(acp_waitall_ch(arr, (int)nreq, NULL), -1, "acp_waitall_ch of garbage requests without sizes");
    const int counts[] = { -1, INT_MIN };
    for (size_t i = 0; i < N_OF(counts); i++) {
        CHECK_INT(acp_waitall_ch(arr, counts[i], sizes), -1, "acp_waitall_ch count %d", counts[i]);
        CHECK_INT(acp_waitall_ch(NULL, counts[i], NULL), -1, "acp_waitall_ch(NULL, %d, NULL)", counts[i]);
    }
    CHECK_INT(acp_waitall_ch(NULL, 3, sizes), -1, "acp_waitall_ch(NULL, 3, sizes)");
    CHECK_INT(acp_waitall_ch(NULL, INT_MAX, NULL), -1, "acp_waitall_ch(NULL, INT_MAX, NULL)");
}

/* Buffers and sizes no message can use, on the live ends. */
static void ch_buffers(void)
{
    section("acp_nbsend_ch and acp_nbrecv_ch with garbage buffers and sizes");
    uint64_t x = 0;
    CHECK(acp_nbsend_ch(ch_out, NULL, 8) == NULL, "acp_nbsend_ch(NULL buffer, 8)");
    CHECK(acp_nbrecv_ch(ch_in, NULL, 8) == NULL, "acp_nbrecv_ch(NULL buffer, 8)");
    CHECK_INT(acp_send_ch(ch_out, NULL, 8), -1, "acp_send_ch(NULL buffer, 8)");
    CHECK_INT(acp_recv_ch(ch_in, NULL, 8), -1, "acp_recv_ch(NULL buffer, 8)");
    CHECK(acp_nbsend_ch(ch_in, &x, 8) == NULL, "acp_nbsend_ch on the receiving end");
    CHECK(acp_nbrecv_ch(ch_out, &x, 8) == NULL, "acp_nbrecv_ch on the sending end");
    CHECK_INT(acp_send_ch(ch_in, &x, 8), -1, "acp_send_ch on the receiving end");
    CHECK_INT(acp_recv_ch(ch_out, &x, 8), -1, "acp_recv_ch on the sending end");
    for (size_t i = 0; i < N_OF(bad_sizes); i++) {
        size_t n = bad_sizes[i];
        if (n == (size_t)1 << 47)
            continue; /* fits the address space: a short buffer is the caller's fault */
        CHECK(acp_nbsend_ch(ch_out, &x, n) == NULL, "acp_nbsend_ch of %zu bytes", n);
        CHECK(acp_nbrecv_ch(ch_in, &x, n) == NULL, "acp_nbrecv_ch of %zu bytes", n);
        CHECK(acp_nbsend_ch(ch_out, NULL, n) == NULL, "acp_nbsend_ch(NULL, %zu)", n);
    }
}

static void segbuf_create(void)
{
    section("acp_create_src/dst_segbuf with garbage");
    uint8_t buf[64];
    for (size_t i = 0; i < N_OF(bad_ranks); i++) {
        CHECK(acp_create_src_segbuf(bad_ranks[i], buf, 8, 2) == NULL, "acp_create_src_segbuf(%d)", bad_ranks[i]);
        CHECK(acp_create_dst_segbuf(bad_ranks[i], buf, 8, 2) == NULL, "acp_create_dst_segbuf(%d)", bad_ranks[i]);
    }
    CHECK(acp_create_src_segbuf(me, buf, 8, 2) == NULL, "acp_create_src_segbuf(me)");
    CHECK(acp_create_dst_segbuf(me, buf, 8, 2) == NULL, "acp_create_dst_segbuf(me)");
    if (np == 1)
        return;
    CHECK(acp_create_src_segbuf(next, NULL, 8, 2) == NULL, "acp_create_src_segbuf(NULL buffer)");
    CHECK(acp_create_dst_segbuf(prev, NULL, 8, 2) == NULL, "acp_create_dst_segbuf(NULL buffer)");
    CHECK(acp_create_src_segbuf(next, buf, 0, 2) == NULL, "acp_create_src_segbuf(segsize 0)");
    CHECK(acp_create_dst_segbuf(prev, buf, 8, 0) == NULL, "acp_create_dst_segbuf(segnum 0)");
    for (size_t i = 0; i < N_OF(bad_sizes); i++) {
        size_t n = bad_sizes[i];
        if (n == (size_t)1 << 47)
            continue;
        CHECK(acp_create_src_segbuf(next, buf, n, 1) == NULL, "acp_create_src_segbuf(segsize %zu)", n);
        CHECK(acp_create_dst_segbuf(prev, buf, 8, n) == NULL, "acp_create_dst_segbuf(segnum %zu)", n);
        CHECK(acp_create_src_segbuf(next, buf, n, n) == NULL, "acp_create_src_segbuf(%zu x %zu)", n, n);
        CHECK(acp_create_dst_segbuf(prev, buf, 2, n / 2 + 1) == NULL, "acp_create_dst_segbuf(2 x %zu)", n / 2 + 1);
    }
}

static void segbuf_handles(void)
{
    section("segmented-buffer calls with garbage handles");
    struct named_handle hs[8];
    size_t n = garbage_handles(hs, (uintptr_t)sb_freed, (uintptr_t)ch_out, (uintptr_t)live_recv);
    for (size_t i = 0; i < n; i++) {
        acp_segbuf_t s = (acp_segbuf_t)hs[i].h;
        const char *w = hs[i].name;
        doing = w;
        CHECK_INT(acp_isconnected_segbuf(s), -1, "acp_isconnected_segbuf(%s)", w);
        CHECK_INT(acp_ready_segbuf(s), -1, "acp_ready_segbuf(%s)", w);
        CHECK_INT(acp_ack_segbuf(s), -1, "acp_ack_segbuf(%s)", w);
        CHECK_INT(acp_isready_segbuf(s), -1, "acp_isready_segbuf(%s)", w);
        CHECK_INT(acp_isacked_segbuf(s), -1, "acp_isacked_segbuf(%s)", w);
        CHECK_INT(acp_query_segbuf_head(s), -1, "acp_query_segbuf_head(%s)", w);
        CHECK_INT(acp_query_segbuf_tail(s), -1, "acp_query_segbuf_tail(%s)", w);
        CHECK_INT(acp_query_segbuf_sent(s), -1, "acp_query_segbuf_sent(%s)", w);
        CHECK_INT(acp_connect_segbuf(s), -1, "acp_connect_segbuf(%s)", w);
        CHECK_INT(acp_disconnect_segbuf(s), -1, "acp_disconnect_segbuf(%s)", w);
        CHECK_INT(acp_free_segbuf(s), -1, "acp_free_segbuf(%s)", w);
    }
}

/* The live channels and segmented buffers still work. */
static void check_live_cl(void)
{
    section("the live channels and segmented buffers after the garbage");
    uint64_t msg = 0x5eed0000u + (uint64_t)me;
    CHECK_INT(acp_send_ch(ch_out, &msg, 8), 0, "acp_send_ch on the live channel");
    CHECK_INT(acp_wait_ch(live_recv), 8, "acp_wait_ch of the live receive");
    CHECK_HEX(live_recv_buf, 0x5eed0000u + (uint64_t)prev, "the message on the live channel");
    CHECK_INT(acp_free_ch(ch_out), 0, "acp_free_ch of the live sending end");
    CHECK_INT(acp_free_ch(ch_in), 0, "acp_free_ch of the live receiving end");

    acpt_fill(sb_sbuf, 64, 500 + (uint64_t)me);
    CHECK_INT(acp_isready_segbuf(sb_src), 0, "live segmented buffer: room at the source");
    CHECK_INT(acp_ack_segbuf(sb_src), 0, "acp_ack_segbuf on the live segmented buffer");
    double t0 = acpt_now();
    while (acp_isacked_segbuf(sb_dst) != 0 && acpt_now() - t0 < 10)
        ;
    CHECK_INT(acp_isacked_segbuf(sb_dst), 0, "live segmented buffer: the segment arrived");
    CHECK_FILL(sb_dbuf, 64, 500 + (uint64_t)prev, "the segment of the live segmented buffer");
    CHECK_INT(acp_ready_segbuf(sb_dst), 0, "acp_ready_segbuf on the live segmented buffer");
    acp_sync();
    CHECK_INT(acp_disconnect_segbuf(sb_src), 0, "acp_disconnect_segbuf(live source)");
    CHECK_INT(acp_disconnect_segbuf(sb_dst), 0, "acp_disconnect_segbuf(live destination)");
    CHECK_INT(acp_free_segbuf(sb_src), 0, "acp_free_segbuf(live source)");
    CHECK_INT(acp_free_segbuf(sb_dst), 0, "acp_free_segbuf(live destination)");
}

/* ---- data library: workspace and heap ------------------------------------------ */

static acp_wsd_t live_ws;
#define WS_SIZE 4096

static void ws_params(void)
{
    section("acp_setparams_ws and acp_create_ws with garbage (collective)");
    const size_t starts[] = { (size_t)np, SIZE_MAX, (size_t)INT_MAX + 1, (size_t)-1 / 2 };
    for (size_t i = 0; i < N_OF(starts); i++)
        CHECK_INT(acp_setparams_ws(starts[i], 1024), 1, "acp_setparams_ws(%zu, 1024)", starts[i]);
    CHECK_INT(acp_setparams_ws(0, 0), 1, "acp_setparams_ws(0, 0)");
    /* Sizes whose chunks no job has ranks for: every rank gets ACP_WSD_NULL. */
    const size_t sizes[] = { SIZE_MAX, SIZE_MAX - 7, (size_t)1 << 63, (size_t)1 << 47 };
    for (size_t i = 0; i < N_OF(sizes); i++)
        CHECK(acp_create_ws(sizes[i]) == ACP_WSD_NULL, "acp_create_ws(%zu)", sizes[i]);
    /* The refused parameters changed nothing: 1 MiB chunks from rank 0. */
    live_ws = acp_create_ws(WS_SIZE);
    CHECK(live_ws != ACP_WSD_NULL, "acp_create_ws(%d) after the refused parameters", WS_SIZE);
    if (live_ws == ACP_WSD_NULL)
        FATAL("no workspace");
    CHECK_INT(live_ws->size_default, 1048576, "size_default after the refused parameters");
    CHECK_INT(live_ws->procs[0], 0, "the first chunk's rank after the refused parameters");
    if (me == 0)
        acpt_fill(live_ws->data, WS_SIZE, 4242);
    acp_sync();
}

static void ws_calls(void)
{
    section("acp_read_ws, acp_write_ws, acp_destroy_ws with garbage");
    acp_ga_t out = dlt_bufga;
    for (size_t i = 0; i < n_bad_gas; i++) {
        CHECK_INT(acp_read_ws(live_ws, bad_gas[i].ga, 8, 0), 1, "acp_read_ws into %s", bad_gas[i].name);
        CHECK_INT(acp_write_ws(live_ws, bad_gas[i].ga, 8, 0), 1, "acp_write_ws from %s", bad_gas[i].name);
    }
    for (size_t i = 0; i < N_OF(bad_sizes); i++) {
        size_t n = bad_sizes[i];
        CHECK_INT(acp_read_ws(live_ws, out, n, 0), 1, "acp_read_ws of %zu bytes", n);
        CHECK_INT(acp_write_ws(live_ws, out, n, 0), 1, "acp_write_ws of %zu bytes", n);
        CHECK_INT(acp_read_ws(live_ws, out, 8, n), 1, "acp_read_ws at offset %zu", n);
        CHECK_INT(acp_write_ws(live_ws, out, 8, n), 1, "acp_write_ws at offset %zu", n);
        CHECK_INT(acp_read_ws(live_ws, out, 16, n - 8), 1, "acp_read_ws of 16 bytes at offset %zu", n - 8);
    }
    CHECK_INT(acp_read_ws(live_ws, out, 8, WS_SIZE - 4), 1, "acp_read_ws across the workspace's end");
    CHECK_INT(acp_read_ws(live_ws, reg_ga + REG_LEN - 4, 8, 0), 1, "acp_read_ws across my region's end");
    acp_wsd_t freed = acp_create_ws(64);
    CHECK(freed != ACP_WSD_NULL, "acp_create_ws(64)");
    acp_destroy_ws(freed);
    acp_wsditem copy = *live_ws;
    const struct {
        const char *name;
        acp_wsd_t w;
    } bad[] = {
        { "ACP_WSD_NULL", ACP_WSD_NULL }, { "NULL", NULL }, { "a garbage pointer", (acp_wsd_t)(uintptr_t)0x1234 },
        { "a destroyed workspace", freed }, { "a copy of the live descriptor", &copy },
    };
    for (size_t i = 0; i < N_OF(bad); i++) {
        acp_wsd_t w = bad[i].w;
        CHECK_INT(acp_read_ws(w, out, 8, 0), 1, "acp_read_ws(%s)", bad[i].name);
        CHECK_INT(acp_write_ws(w, out, 8, 0), 1, "acp_write_ws(%s)", bad[i].name);
        acp_destroy_ws(w);
        acp_free_ws(w);
    }
}

static void check_live_ws(void)
{
    section("the live workspace after the garbage");
    CHECK_INT(acp_read_ws(live_ws, dlt_bufga, WS_SIZE, 0), 0, "acp_read_ws of the whole live workspace");
    CHECK_FILL(dlt_buf, WS_SIZE, 4242, "the live workspace");
    acp_sync();
    acp_destroy_ws(live_ws);
}

static void heap(void)
{
    section("acp_malloc and acp_free with garbage");
    for (size_t i = 0; i < N_OF(bad_sizes); i++) {
        CHECK_HEX(acp_malloc(bad_sizes[i], me), ACP_GA_NULL, "acp_malloc(%zu, me)", bad_sizes[i]);
        CHECK_HEX(acp_malloc(bad_sizes[i], next), ACP_GA_NULL, "acp_malloc(%zu, next)", bad_sizes[i]);
    }
    for (size_t i = 0; i < N_OF(bad_ranks); i++)
        CHECK_HEX(acp_malloc(8, bad_ranks[i]), ACP_GA_NULL, "acp_malloc(8, %d)", bad_ranks[i]);
    for (size_t i = 0; i < n_bad_gas; i++)
        acp_free(bad_gas[i].ga);
    acp_free(reg_ga + 16);  /* after a word that looks like a block header */
    acp_free(st(me) + CAN_OFF + 8);
    acp_ga_t g = acp_malloc(64, next);
    CHECK(g != ACP_GA_NULL, "acp_malloc(64, next)");
    acp_free(g + 8);  /* inside the block */
    acp_free(g + 4);  /* misaligned */
    acp_free(g);
    acp_free(g);      /* twice */
}

/* ---- data library: containers ------------------------------------------------------ */

/* Containers made before the garbage, on the next rank, with what they
 * hold checked afterwards. */
static acp_vector_t live_v;
static acp_deque_t live_d;
static acp_list_t live_l;
static acp_set_t live_s;
static acp_multiset_t live_m;
static acp_map_t live_p;
#define KEYS 3

static acp_element_t key(int i) { return (acp_element_t){ val(me, 100 + i), 4 }; }

static void make_live_containers(void)
{
    section("containers made before the garbage");
    live_v = acp_create_vector(0, next);
    acp_push_back_vector(live_v, val(me, 10), 16);
    live_d = acp_create_deque(8, next);
    acp_push_back_deque(live_d, val(me, 20), 16);
    live_l = acp_create_list(next);
    for (int i = 0; i < KEYS; i++)
        acp_push_back_list(live_l, (acp_element_t){ val(me, 30 + i), 4 }, next);
    live_s = acp_create_set(0, NULL, 4, next);
    live_m = acp_create_multiset(0, NULL, 4, next);
    live_p = acp_create_map(0, NULL, 4, next);
    for (int i = 0; i < KEYS; i++) {
        acp_insert_set(live_s, key(i));
        for (int k = 0; k <= i; k++)
            acp_insert_multiset(live_m, key(i));
        acp_insert_map(live_p, (acp_pair_t){ key(i), { val(me, 40 + i), 4 } });
    }
    CHECK(live_v.ga && live_d.ga && live_l.ga && live_s.ga && live_m.ga && live_p.ga, "the live containers");
    acp_sync();
}

static void check_live_containers(void)
{
    section("the live containers after the garbage");
    CHECK_INT(acp_size_vector(live_v), 16, "live vector size");
    CHECK_INTS(acp_at_vector(live_v, 0), 4, "live vector", 10, 11, 12, 13);
    CHECK_INT(acp_size_deque(live_d), 16, "live deque size");
    CHECK_INTS(acp_at_deque(live_d, 0), 1, "live deque front", 20);
    CHECK_INTS(acp_at_deque(live_d, 12), 1, "live deque back", 23);
    CHECK_INT(acp_size_list(live_l), KEYS, "live list size");
    acp_list_it_t it = acp_begin_list(live_l);
    for (int i = 0; i < KEYS; i++, it = acp_increment_list_it(it)) {
        acp_element_t e = acp_dereference_list_it(it);
        CHECK_INT(e.size, 4, "live list element %d size", i);
        CHECK_INT(dlt_int(e.ga), 30 + i, "live list element %d", i);
    }
    CHECK_HEX(it.elem, live_l.ga, "the live list ends after %d elements", KEYS);
    CHECK_INT(acp_size_set(live_s), KEYS, "live set size");
    CHECK_INT(acp_size_multiset(live_m), KEYS, "live multiset size");
    CHECK_INT(acp_size_map(live_p), KEYS, "live map size");
    for (int i = 0; i < KEYS; i++) {
        CHECK(acp_find_set(live_s, key(i)).elem != ACP_GA_NULL, "live set holds key %d", i);
        CHECK_INT(acp_retrieve_multiset(live_m, key(i)), i + 1, "live multiset count of key %d", i);
        CHECK_INT(acp_retrieve_map(live_p, (acp_pair_t){ key(i), { dlt_bufga, 4 } }), 4, "live map value %d", i);
        CHECK_INT(*(int *)dlt_buf, 40 + i, "live map value %d", i);
    }
    /* The heaps still allocate and free. */
    acp_ga_t g = acp_malloc(100, next);
    CHECK(g != ACP_GA_NULL, "acp_malloc after the garbage");
    acp_free(g);
    acp_sync();
    acp_destroy_vector(live_v);
    acp_destroy_deque(live_d);
    acp_destroy_list(live_l);
    acp_destroy_set(live_s);
    acp_destroy_multiset(live_m);
    acp_destroy_map(live_p);
}

/* A call that takes two containers, made with them in either order. */
#define BOTH_WAYS(fn, x, y) (fn(x, y), fn(y, x))

/* Container handles that hold no container: the garbage GAs, and
 * registered memory that holds none (the canaries). */
static struct named_ga bad_conts[24];
static size_t n_bad_conts;

static void make_bad_containers(void)
{
    for (size_t i = 0; i < n_bad_gas; i++)
        bad_conts[n_bad_conts++] = bad_gas[i];
    bad_conts[n_bad_conts++] = (struct named_ga){ "my registered region", reg_ga };
    bad_conts[n_bad_conts++] = (struct named_ga){ "a peer's registered region", peer_reg_ga[next] };
    bad_conts[n_bad_conts++] = (struct named_ga){ "my starter memory's canary", st(me) + CAN_OFF };
    bad_conts[n_bad_conts++] = (struct named_ga){ "a peer's starter memory's canary", st(next) + CAN_OFF };
}

static const int bad_indices[] = { -1, INT_MIN, INT_MAX, 16 };

/* Vector and deque: one generator for the calls they share. NAME is vector
 * or deque, F the iterator's container member; NAME##_own_calls and
 * NAME##_own_args add what only one of them has. */
#define SEQUENCE_GARBAGE(T, IT, NAME, F, LIVE)                                                             \
    static void NAME##_garbage_calls(T c, const char *w)                                                 \
    {                                                                                                    \
        IT b = { .F = c, .index = 0 }, e = { .F = c, .index = 8 };                                       \
        doing = w;                                                                                       \
        CHECK_INT(acp_size_##NAME(c), 0, "acp_size_" #NAME "(%s)", w);                                   \
        CHECK_INT(acp_capacity_##NAME(c), 0, "acp_capacity_" #NAME "(%s)", w);                           \
        CHECK_INT(acp_empty_##NAME(c), 1, "acp_empty_" #NAME "(%s)", w);                                 \
        CHECK_HEX(acp_at_##NAME(c, 0), ACP_GA_NULL, "acp_at_" #NAME "(%s, 0)", w);                       \
        CHECK_INT(acp_begin_##NAME(c).index, 0, "acp_begin_" #NAME "(%s)", w);                           \
        CHECK_INT(acp_end_##NAME(c).index, 0, "acp_end_" #NAME "(%s)", w);                               \
        acp_clear_##NAME(c);                                                                             \
        acp_pop_back_##NAME(c, 4);                                                                       \
        acp_reserve_##NAME(c, 64);                                                                       \
        acp_push_back_##NAME(c, val(me, 0), 8);                                                          \
        CHECK_INT(acp_insert_##NAME(b, val(me, 0), 8).index, 0, "acp_insert_" #NAME "(%s)", w);          \
        CHECK_INT(acp_erase_##NAME(b, 4).index, 0, "acp_erase_" #NAME "(%s)", w);                        \
        IT r = acp_erase_range_##NAME(b, e);                                                             \
        CHECK(r.index == 0 || r.index == 8, "acp_erase_range_" #NAME "(%s) gave index %d", w, r.index);  \
        acp_insert_range_##NAME(b, b, e);                                                                \
        acp_insert_range_##NAME((IT){ .F = LIVE, .index = 0 }, b, e);                                    \
        acp_assign_range_##NAME(c, b, e);                                                                \
        acp_assign_range_##NAME(LIVE, b, e);                                                             \
        BOTH_WAYS(acp_assign_##NAME, c, LIVE);                                                           \
        BOTH_WAYS(acp_swap_##NAME, c, LIVE);                                                             \
        NAME##_own_calls(c, b, w);                                                                       \
        acp_destroy_##NAME(c);                                                                           \
    }                                                                                                    \
    static void NAME##_garbage(void)                                                                     \
    {                                                                                                    \
        section(#NAME " calls with garbage " #NAME "s");                                                 \
        for (size_t i = 0; i < n_bad_conts; i++)                                                         \
            NAME##_garbage_calls((T){ bad_conts[i].ga }, bad_conts[i].name);                             \
        section(#NAME " calls with garbage sizes, GAs, indices and ranks");                              \
        IT b = { .F = LIVE, .index = 0 };                                                                \
        for (size_t i = 0; i < N_OF(bad_sizes); i++) {                                                   \
            size_t n = bad_sizes[i];                                                                     \
            CHECK_HEX(acp_create_##NAME(n, next).ga, ACP_GA_NULL, "acp_create_" #NAME "(%zu)", n);       \
            acp_reserve_##NAME(LIVE, n);                                                                 \
            acp_push_back_##NAME(LIVE, val(me, 0), n);                                                   \
            acp_insert_##NAME(b, val(me, 0), n);                                                         \
            acp_insert_##NAME((IT){ .F = LIVE, .index = 8 }, val(me, 0), n);                             \
        }                                                                                                \
        for (size_t i = 0; i < N_OF(bad_ranks); i++)                                                     \
            CHECK_HEX(acp_create_##NAME(8, bad_ranks[i]).ga, ACP_GA_NULL, "acp_create_" #NAME "(8, %d)", \
                      bad_ranks[i]);                                                                     \
        for (size_t i = 0; i < n_bad_gas; i++) {                                                         \
            acp_push_back_##NAME(LIVE, bad_gas[i].ga, 8);                                                \
            acp_insert_##NAME(b, bad_gas[i].ga, 8);                                                      \
        }                                                                                                \
        for (size_t i = 0; i < N_OF(bad_indices); i++) {                                                \
            int x = bad_indices[i];                                                                      \
            IT at = { .F = LIVE, .index = x };                                                           \
            CHECK_HEX(acp_at_##NAME(LIVE, x), ACP_GA_NULL, "acp_at_" #NAME "(live, %d)", x);             \
            acp_erase_range_##NAME(at, at);                                                              \
        }                                                                                                \
        /* Pure arithmetic: wraps around instead of overflowing. */                                      \
        IT top = { .F = LIVE, .index = INT_MAX }, bottom = { .F = LIVE, .index = INT_MIN };              \
        CHECK_INT(acp_advance_##NAME##_it(top, 1).index, INT_MIN, "acp_advance_" #NAME "_it(INT_MAX, 1)"); \
        CHECK_INT(acp_distance_##NAME##_it(top, bottom), 1, "acp_distance_" #NAME "_it(INT_MAX, INT_MIN)"); \
        NAME##_own_args();                                                                               \
        CHECK_INT(acp_size_##NAME(LIVE), 16, "live " #NAME " size after the garbage arguments");         \
        /* A size whose sum with the index wraps: erase truncates at the                                 \
         * index, as it does for any size reaching the end. */                                           \
        T s = acp_create_##NAME(16, next);                                                               \
        acp_clear_##NAME(s);                                                                             \
        acp_push_back_##NAME(s, val(me, 10), 16);                                                        \
        acp_erase_##NAME((IT){ .F = s, .index = 4 }, SIZE_MAX - 2);                                      \
        CHECK_INT(acp_size_##NAME(s), 4, #NAME " size after erasing SIZE_MAX - 2 bytes at 4");           \
        acp_pop_back_##NAME(s, SIZE_MAX);                                                                \
        CHECK_INT(acp_size_##NAME(s), 0, #NAME " size after popping SIZE_MAX bytes");                    \
        acp_destroy_##NAME(s);                                                                           \
    }

static void vector_own_calls(acp_vector_t v, acp_vector_it_t b, const char *w)
{
    (void)v;
    CHECK_HEX(acp_dereference_vector_it(b), ACP_GA_NULL, "acp_dereference_vector_it(%s)", w);
}

static void vector_own_args(void)
{
    for (size_t i = 0; i < N_OF(bad_indices); i++)
        if (bad_indices[i] < 0) /* no upper bound: spec 2.9, as the original */
            CHECK_HEX(acp_dereference_vector_it((acp_vector_it_t){ live_v, bad_indices[i] }), ACP_GA_NULL,
                      "acp_dereference_vector_it(live, %d)", bad_indices[i]);
}

static bool no_pieces(acp_pair_t p)
{
    return p.first.ga == 0 && p.first.size == 0 && p.second.ga == 0 && p.second.size == 0;
}

static void deque_own_calls(acp_deque_t d, acp_deque_it_t b, const char *w)
{
    CHECK(no_pieces(acp_dereference_deque_it(b, 8)), "acp_dereference_deque_it(%s)", w);
    acp_pop_front_deque(d, 4);
    acp_push_front_deque(d, val(me, 0), 8);
}

static void deque_own_args(void)
{
    for (size_t i = 0; i < N_OF(bad_sizes); i++)
        acp_push_front_deque(live_d, val(me, 0), bad_sizes[i]);
    for (size_t i = 0; i < n_bad_gas; i++)
        acp_push_front_deque(live_d, bad_gas[i].ga, 8);
    for (size_t i = 0; i < N_OF(bad_indices); i++)
        CHECK(no_pieces(acp_dereference_deque_it((acp_deque_it_t){ live_d, bad_indices[i] }, 4)),
              "acp_dereference_deque_it(live, %d)", bad_indices[i]);
    acp_deque_t s = acp_create_deque(16, next);
    acp_push_back_deque(s, val(me, 20), 16);
    acp_pair_t p = acp_dereference_deque_it((acp_deque_it_t){ s, 0 }, SIZE_MAX);
    CHECK_INT(p.first.size + p.second.size, 16, "acp_dereference_deque_it of SIZE_MAX bytes: the deque's");
    acp_pop_front_deque(s, SIZE_MAX);
    CHECK_INT(acp_size_deque(s), 0, "deque size after popping SIZE_MAX bytes at the front");
    acp_destroy_deque(s);
}

SEQUENCE_GARBAGE(acp_vector_t, acp_vector_it_t, vector, vector, live_v)
SEQUENCE_GARBAGE(acp_deque_t, acp_deque_it_t, deque, deque, live_d)

static int comp_calls;
static int comp(const acp_element_t a, const acp_element_t b)
{
    comp_calls++;
    return (int)(a.size - b.size);
}

static void list_handles(void)
{
    section("list calls with garbage lists");
    acp_element_t v4 = { val(me, 0), 4 };
    acp_list_it_t live_b = acp_begin_list(live_l), live_e = acp_end_list(live_l);
    for (size_t i = 0; i < n_bad_conts; i++) {
        acp_list_t l = { bad_conts[i].ga };
        const char *w = bad_conts[i].name;
        acp_list_it_t e = acp_end_list(l), b = { l, ACP_GA_NULL };
        doing = w;
        CHECK_INT(acp_size_list(l), 0, "acp_size_list(%s)", w);
        CHECK_INT(acp_empty_list(l), 1, "acp_empty_list(%s)", w);
        b = acp_begin_list(l);
        CHECK(b.elem == ACP_GA_NULL || b.elem == l.ga, "acp_begin_list(%s)", w);
        CHECK_HEX(e.elem, l.ga, "acp_end_list(%s)", w);
        CHECK_HEX(acp_insert_list(e, v4, next).elem, ACP_GA_NULL, "acp_insert_list(%s)", w);
        acp_element_t d = acp_dereference_list_it(b);
        CHECK(d.ga == ACP_GA_NULL && d.size == 0, "acp_dereference_list_it(%s)", w);
        acp_push_back_list(l, v4, next);
        acp_push_front_list(l, v4, next);
        acp_pop_back_list(l);
        acp_pop_front_list(l);
        acp_remove_list(l, v4);
        acp_reverse_list(l);
        acp_unique_list(l);
        acp_sort_list(l, comp);
        acp_merge_list(l, live_l, comp);
        acp_merge_list(live_l, l, comp);
        BOTH_WAYS(acp_assign_list, l, live_l);
        BOTH_WAYS(acp_swap_list, l, live_l);
        acp_assign_range_list(l, live_b, live_e);
        acp_assign_range_list(live_l, b, e);
        acp_insert_range_list(e, live_b, live_e);
        acp_insert_range_list(live_e, b, e);
        acp_splice_list(e, live_b);
        acp_splice_list(live_e, b);
        acp_splice_range_list(e, live_b, live_e);
        acp_splice_range_list(live_e, b, e);
        acp_erase_range_list(b, e);
        acp_erase_list(b);
        acp_increment_list_it(b);
        acp_decrement_list_it(e);
        acp_advance_list_it(b, 3);
        acp_distance_list_it(b, e);
        acp_clear_list(l);
        acp_destroy_list(l);
    }
}

static void list_args(void)
{
    section("list calls with garbage elements, iterators, sizes and ranks");
    acp_list_it_t e = acp_end_list(live_l), b = acp_begin_list(live_l);
    for (size_t i = 0; i < N_OF(bad_ranks); i++) {
        int r = bad_ranks[i];
        CHECK_HEX(acp_create_list(r).ga, ACP_GA_NULL, "acp_create_list(%d)", r);
        CHECK_HEX(acp_insert_list(e, (acp_element_t){ val(me, 0), 4 }, r).elem, ACP_GA_NULL, "acp_insert_list rank %d", r);
        acp_push_back_list(live_l, (acp_element_t){ val(me, 0), 4 }, r);
        acp_push_front_list(live_l, (acp_element_t){ val(me, 0), 4 }, r);
    }
    for (size_t i = 0; i < N_OF(bad_sizes); i++) {
        acp_element_t x = { val(me, 0), bad_sizes[i] };
        CHECK_HEX(acp_insert_list(e, x, next).elem, ACP_GA_NULL, "acp_insert_list of %zu bytes", bad_sizes[i]);
        acp_push_back_list(live_l, x, next);
        acp_push_front_list(live_l, x, next);
        acp_remove_list(live_l, x);
    }
    for (size_t i = 0; i < n_bad_gas; i++) {
        acp_element_t x = { bad_gas[i].ga, 4 };
        CHECK_HEX(acp_insert_list(e, x, next).elem, ACP_GA_NULL, "acp_insert_list of bytes at %s", bad_gas[i].name);
        acp_push_back_list(live_l, x, next);
        acp_push_front_list(live_l, x, next);
        acp_remove_list(live_l, x);
    }
    /* Iterators of the live list whose element is none of its elements. */
    for (size_t i = 0; i < n_bad_conts; i++) {
        const char *w = bad_conts[i].name;
        acp_list_it_t it = { live_l, bad_conts[i].ga };
        doing = w;
        if (bad_conts[i].ga == ACP_GA_NULL)
            continue; /* {list, NULL}: the original's begin of an empty list */
        CHECK_HEX(acp_insert_list(it, (acp_element_t){ val(me, 0), 4 }, next).elem, ACP_GA_NULL,
                  "acp_insert_list before %s", w);
        acp_element_t d = acp_dereference_list_it(it);
        CHECK(d.ga == ACP_GA_NULL && d.size == 0, "acp_dereference_list_it of %s", w);
        acp_erase_list(it);
        acp_erase_range_list(it, e);
        acp_erase_range_list(b, it);
        acp_splice_list(it, b);
        acp_splice_list(e, it);
        acp_splice_range_list(e, it, e);
        acp_insert_range_list(e, it, e);
        acp_assign_range_list(live_l, it, e);
        acp_increment_list_it(it);
        acp_decrement_list_it(it);
        acp_advance_list_it(it, -2);
        acp_distance_list_it(it, e);
        acp_distance_list_it(b, it);
    }
    doing = "list iterator steps";
    CHECK_HEX(acp_erase_list(e).elem, ACP_GA_NULL, "acp_erase_list(end)");
    CHECK_HEX(acp_advance_list_it(b, INT_MAX).elem, live_l.ga, "acp_advance_list_it(begin, INT_MAX) stops at the end");
    CHECK_HEX(acp_advance_list_it(e, INT_MIN).elem, b.elem, "acp_advance_list_it(end, INT_MIN) stops at the first");
    acp_distance_list_it(e, b);
    acp_merge_list(live_l, live_l, NULL);
    acp_sort_list(live_l, NULL);
    CHECK_INT(comp_calls, 0, "comparator calls of merges and sorts that could not run");
    CHECK_INT(acp_size_list(live_l), KEYS, "live list size after the garbage arguments");
}

/* Hashed containers: one generator for the three kinds. Each garbage
 * handle is one of bad_conts with a real shape, or the live container
 * with a shape that is not its own. */
#define HASHED_GARBAGE(T, IT, NAME, LIVE)                                                                   \
    static void NAME##_garbage_calls(T h, const char *w)                                                     \
    {                                                                                                      \
        acp_element_t k = key(0);                                                                          \
        doing = w;                                                                                         \
        CHECK_INT(acp_size_##NAME(h), 0, "acp_size_" #NAME "(%s)", w);                                     \
        CHECK_INT(acp_size_local_##NAME(h), 0, "acp_size_local_" #NAME "(%s)", w);                         \
        CHECK_INT(acp_empty_##NAME(h), 1, "acp_empty_" #NAME "(%s)", w);                                   \
        CHECK_INT(acp_empty_local_##NAME(h), 1, "acp_empty_local_" #NAME "(%s)", w);                       \
        IT e = acp_end_##NAME(h);                                                                          \
        CHECK_HEX(acp_begin_##NAME(h).elem, ACP_GA_NULL, "acp_begin_" #NAME "(%s)", w);                    \
        CHECK_HEX(acp_begin_local_##NAME(h).elem, ACP_GA_NULL, "acp_begin_local_" #NAME "(%s)", w);        \
        CHECK_HEX(acp_end_local_##NAME(h).elem, ACP_GA_NULL, "acp_end_local_" #NAME "(%s)", w);            \
        CHECK_HEX(acp_find_##NAME(h, k).elem, ACP_GA_NULL, "acp_find_" #NAME "(%s)", w);                   \
        CHECK_HEX(acp_increment_##NAME##_it(e).elem, ACP_GA_NULL, "acp_increment_" #NAME "_it(%s)", w);    \
        IT g = e;                                                                                          \
        g.rank = 0;                                                                                        \
        g.elem = val(me, 0);                                                                               \
        CHECK_HEX(acp_increment_##NAME##_it(g).elem, ACP_GA_NULL, "acp_increment_" #NAME "_it(%s, 0)", w); \
        acp_remove_##NAME(h, k);                                                                           \
        acp_clear_##NAME(h);                                                                               \
        acp_clear_local_##NAME(h);                                                                         \
        BOTH_WAYS(acp_assign_##NAME, h, LIVE);                                                             \
        BOTH_WAYS(acp_assign_local_##NAME, h, LIVE);                                                       \
        BOTH_WAYS(acp_merge_##NAME, h, LIVE);                                                              \
        BOTH_WAYS(acp_merge_local_##NAME, h, LIVE);                                                        \
        BOTH_WAYS(acp_move_##NAME, h, LIVE);                                                               \
        BOTH_WAYS(acp_move_local_##NAME, h, LIVE);                                                         \
        BOTH_WAYS(acp_swap_##NAME, h, LIVE);                                                               \
        NAME##_key_calls(h, k, w);                                                                         \
        acp_destroy_##NAME(h);                                                                             \
    }                                                                                                      \
    static void NAME##_garbage(void)                                                                       \
    {                                                                                                      \
        section(#NAME " calls with garbage handles");                                                      \
        for (size_t i = 0; i < n_bad_conts; i++) {                                                         \
            T h = LIVE;                                                                                    \
            h.ga = bad_conts[i].ga;                                                                        \
            NAME##_garbage_calls(h, bad_conts[i].name);                                                    \
        }                                                                                                  \
        const struct {                                                                                     \
            const char *name;                                                                              \
            uint64_t num_ranks, num_slots;                                                                 \
        } shapes[] = {                                                                                     \
            { "num_ranks 0", 0, 4 },                                                                       \
            { "num_ranks -1", UINT64_MAX, 4 },                                                             \
            { "num_ranks 2^31", (uint64_t)1 << 31, 4 },                                                    \
            { "one rank more", (uint64_t)np + 1, 4 },                                                      \
            { "num_slots 0", (uint64_t)np, 0 },                                                            \
            { "num_slots -1", (uint64_t)np, UINT64_MAX },                                                  \
            { "num_slots 2^32", (uint64_t)np, (uint64_t)1 << 32 },                                         \
            { "one slot more", (uint64_t)np, 5 },                                                          \
            { "64 slots more", (uint64_t)np, 68 },                                                         \
        };                                                                                                 \
        for (size_t i = 0; i < N_OF(shapes); i++) {                                                        \
            T h = LIVE;                                                                                    \
            h.num_ranks = shapes[i].num_ranks;                                                             \
            h.num_slots = shapes[i].num_slots;                                                             \
            NAME##_garbage_calls(h, shapes[i].name);                                                       \
        }                                                                                                  \
        NAME##_bad_keys();                                                                                 \
        IT it = acp_end_##NAME(LIVE);                                                                      \
        const int bad_pos[][2] = { { -1, 0 }, { INT_MIN, INT_MIN }, { 0, -1 }, { 0, INT_MAX }, { INT_MAX, 0 } }; \
        for (size_t i = 0; i < N_OF(bad_pos); i++) {                                                       \
            it.rank = bad_pos[i][0];                                                                       \
            it.slot = bad_pos[i][1];                                                                       \
            it.elem = val(me, 0);                                                                          \
            CHECK_HEX(acp_increment_##NAME##_it(it).elem, ACP_GA_NULL, "acp_increment_" #NAME "_it at %d, %d", \
                      it.rank, it.slot);                                                                   \
        }                                                                                                  \
        for (size_t i = 0; i < n_bad_conts; i++) {                                                         \
            it = acp_begin_##NAME(LIVE);                                                                   \
            it.elem = bad_conts[i].ga;                                                                     \
            acp_increment_##NAME##_it(it);                                                                 \
            NAME##_check_dereference(it, bad_conts[i].name);                                               \
        }                                                                                                  \
    }

static void set_key_calls(acp_set_t h, acp_element_t k, const char *w)
{
    CHECK_INT(acp_insert_set(h, k), 0, "acp_insert_set(%s)", w);
}

static void multiset_key_calls(acp_multiset_t h, acp_element_t k, const char *w)
{
    CHECK_INT(acp_insert_multiset(h, k), 0, "acp_insert_multiset(%s)", w);
    CHECK_INT(acp_retrieve_multiset(h, k), 0, "acp_retrieve_multiset(%s)", w);
    acp_remove_all_multiset(h, k);
}

static void map_key_calls(acp_map_t h, acp_element_t k, const char *w)
{
    CHECK_INT(acp_insert_map(h, (acp_pair_t){ k, k }), 0, "acp_insert_map(%s)", w);
    CHECK_INT(acp_retrieve_map(h, (acp_pair_t){ k, { dlt_bufga, 8 } }), 0, "acp_retrieve_map(%s)", w);
}

/* Keys that no memory holds, or whose bytes cannot be read. */
static size_t n_bad_keys;
static acp_element_t bad_keys[32];

static void make_bad_keys(void)
{
    for (size_t i = 0; i < N_OF(bad_sizes); i++)
        bad_keys[n_bad_keys++] = (acp_element_t){ val(me, 0), bad_sizes[i] };
    for (size_t i = 0; i < n_bad_gas; i++)
        if (bad_gas[i].ga != ACP_GA_NULL)
            bad_keys[n_bad_keys++] = (acp_element_t){ bad_gas[i].ga, 4 };
    bad_keys[n_bad_keys++] = (acp_element_t){ ACP_GA_NULL, 4 };
    bad_keys[n_bad_keys++] = (acp_element_t){ val(me, 0), 0 };
}

static void set_bad_keys(void)
{
    for (size_t i = 0; i < n_bad_keys; i++) {
        acp_element_t k = bad_keys[i];
        CHECK_HEX(acp_find_set(live_s, k).elem, ACP_GA_NULL, "acp_find_set of key {%#" PRIx64 ", %zu}", k.ga, k.size);
        CHECK_INT(acp_insert_set(live_s, k), 0, "acp_insert_set of key {%#" PRIx64 ", %zu}", k.ga, k.size);
        acp_remove_set(live_s, k);
    }
}

static void multiset_bad_keys(void)
{
    for (size_t i = 0; i < n_bad_keys; i++) {
        acp_element_t k = bad_keys[i];
        CHECK_HEX(acp_find_multiset(live_m, k).elem, ACP_GA_NULL, "acp_find_multiset of key {%#" PRIx64 ", %zu}", k.ga,
                  k.size);
        CHECK_INT(acp_insert_multiset(live_m, k), 0, "acp_insert_multiset of key {%#" PRIx64 ", %zu}", k.ga, k.size);
        CHECK_INT(acp_retrieve_multiset(live_m, k), 0, "acp_retrieve_multiset of key {%#" PRIx64 ", %zu}", k.ga, k.size);
        acp_remove_multiset(live_m, k);
        acp_remove_all_multiset(live_m, k);
    }
}

static void map_bad_keys(void)
{
    for (size_t i = 0; i < n_bad_keys; i++) {
        acp_element_t k = bad_keys[i], good = key(0);
        CHECK_HEX(acp_find_map(live_p, k).elem, ACP_GA_NULL, "acp_find_map of key {%#" PRIx64 ", %zu}", k.ga, k.size);
        CHECK_INT(acp_insert_map(live_p, (acp_pair_t){ k, good }), 0, "acp_insert_map of key {%#" PRIx64 ", %zu}", k.ga,
                  k.size);
        CHECK_INT(acp_retrieve_map(live_p, (acp_pair_t){ k, { dlt_bufga, 8 } }), 0,
                  "acp_retrieve_map of key {%#" PRIx64 ", %zu}", k.ga, k.size);
        acp_remove_map(live_p, k);
        /* A new key with a value that cannot be read; an existing key with
         * an output that cannot be written. */
        if (k.size == 0)
            continue;
        acp_element_t fresh = { val(me, 200), 4 };
        CHECK_INT(acp_insert_map(live_p, (acp_pair_t){ fresh, k }), 0, "acp_insert_map of value {%#" PRIx64 ", %zu}",
                  k.ga, k.size);
        /* An output of 2^47 bytes fits a GA's offset: the value's 4 bytes
         * go to its start (the rule for every range a caller gives). */
        if (k.size != (size_t)1 << 47)
            CHECK_INT(acp_retrieve_map(live_p, (acp_pair_t){ good, k }), 0,
                      "acp_retrieve_map into {%#" PRIx64 ", %zu}", k.ga, k.size);
    }
    /* An output smaller than the value gets only its own bytes. */
    memset(dlt_buf, 0xee, 8);
    acp_retrieve_map(live_p, (acp_pair_t){ key(1), { dlt_bufga, 2 } });
    CHECK_BYTES(dlt_buf + 2, 6, 0xee, "the bytes after a 2-byte output of acp_retrieve_map");
}

static void set_check_dereference(acp_set_it_t it, const char *w)
{
    acp_element_t e = acp_dereference_set_it(it);
    CHECK(e.ga == ACP_GA_NULL && e.size == 0, "acp_dereference_set_it of %s", w);
}

static void multiset_check_dereference(acp_multiset_it_t it, const char *w)
{
    acp_element_t e = acp_dereference_multiset_it(it);
    CHECK(e.ga == ACP_GA_NULL && e.size == 0, "acp_dereference_multiset_it of %s", w);
}

static void map_check_dereference(acp_map_it_t it, const char *w)
{
    acp_pair_t p = acp_dereference_map_it(it);
    CHECK(p.first.ga == ACP_GA_NULL && p.first.size == 0 && p.second.ga == ACP_GA_NULL,
          "acp_dereference_map_it of %s", w);
}

HASHED_GARBAGE(acp_set_t, acp_set_it_t, set, live_s)
HASHED_GARBAGE(acp_multiset_t, acp_multiset_it_t, multiset, live_m)
HASHED_GARBAGE(acp_map_t, acp_map_it_t, map, live_p)

static void hashed_create(void)
{
    section("acp_create_set/multiset/map with garbage");
    const int one_bad[][1] = { { -1 }, { INT_MIN }, { 0 }, { INT_MAX } };
    for (size_t i = 0; i < N_OF(one_bad); i++) {
        int r[1] = { one_bad[i][0] == 0 ? np : one_bad[i][0] };
        CHECK_HEX(acp_create_set(1, r, 4, next).ga, ACP_GA_NULL, "acp_create_set with table rank %d", r[0]);
        CHECK_HEX(acp_create_multiset(1, r, 4, next).ga, ACP_GA_NULL, "acp_create_multiset with table rank %d", r[0]);
        CHECK_HEX(acp_create_map(1, r, 4, next).ga, ACP_GA_NULL, "acp_create_map with table rank %d", r[0]);
    }
    const int counts[] = { -1, INT_MIN };
    for (size_t i = 0; i < N_OF(counts); i++) {
        int r[1] = { 0 };
        CHECK_HEX(acp_create_set(counts[i], r, 4, next).ga, ACP_GA_NULL, "acp_create_set num_ranks %d", counts[i]);
        CHECK_HEX(acp_create_map(counts[i], NULL, 4, next).ga, ACP_GA_NULL, "acp_create_map num_ranks %d", counts[i]);
    }
    CHECK_HEX(acp_create_multiset(2, NULL, 4, next).ga, ACP_GA_NULL, "acp_create_multiset(2, NULL)");
    const int slots[] = { 0, -1, INT_MIN, INT_MAX };
    for (size_t i = 0; i < N_OF(slots); i++) {
        CHECK_HEX(acp_create_set(0, NULL, slots[i], next).ga, ACP_GA_NULL, "acp_create_set num_slots %d", slots[i]);
        CHECK_HEX(acp_create_multiset(0, NULL, slots[i], next).ga, ACP_GA_NULL, "acp_create_multiset num_slots %d",
                  slots[i]);
        CHECK_HEX(acp_create_map(0, NULL, slots[i], next).ga, ACP_GA_NULL, "acp_create_map num_slots %d", slots[i]);
    }
    for (size_t i = 0; i < N_OF(bad_ranks); i++) {
        int r = bad_ranks[i];
        CHECK_HEX(acp_create_set(0, NULL, 4, r).ga, ACP_GA_NULL, "acp_create_set on rank %d", r);
        CHECK_HEX(acp_create_multiset(0, NULL, 4, r).ga, ACP_GA_NULL, "acp_create_multiset on rank %d", r);
        CHECK_HEX(acp_create_map(0, NULL, 4, r).ga, ACP_GA_NULL, "acp_create_map on rank %d", r);
    }
}

/* Containers destroyed a moment ago, while no other rank allocates on
 * this rank's heap (between two acp_sync calls), so that their blocks are
 * still free: reading them and destroying them again changes nothing. */
static void freed_containers(void)
{
    section("calls on destroyed containers");
    acp_sync();
    acp_vector_t v = acp_create_vector(16, me);
    acp_deque_t d = acp_create_deque(16, me);
    acp_list_t l = acp_create_list(me);
    acp_push_back_list(l, (acp_element_t){ val(me, 1), 4 }, me);
    acp_set_t s = acp_create_set(1, &me, 4, me);
    acp_map_t m = acp_create_map(1, &me, 4, me);
    acp_multiset_t ms = acp_create_multiset(1, &me, 4, me);
    acp_destroy_vector(v);
    acp_destroy_deque(d);
    acp_destroy_list(l);
    acp_destroy_set(s);
    acp_destroy_map(m);
    acp_destroy_multiset(ms);
    acp_size_vector(v);
    acp_at_vector(v, 0);
    acp_size_deque(d);
    acp_at_deque(d, 0);
    acp_size_list(l);
    acp_begin_list(l);
    acp_size_set(s);
    acp_find_set(s, key(0));
    acp_size_map(m);
    acp_size_multiset(ms);
    acp_destroy_vector(v);
    acp_destroy_deque(d);
    acp_destroy_list(l);
    acp_destroy_set(s);
    acp_destroy_map(m);
    acp_destroy_multiset(ms);
    acp_ga_t g = acp_malloc(4096, me);
    CHECK(g != ACP_GA_NULL, "acp_malloc on my heap after the destroyed containers");
    acp_free(g);
    acp_sync();
}

int main(int argc, char **argv)
{
    signal(SIGALRM, on_alarm);
    section("acp_init");
    acpt_init(&argc, &argv);
    me = acp_rank();
    np = acp_procs();
    next = (me + 1) % np;
    prev = (me + np - 1) % np;
    if (np > 63)
        FATAL("more than 63 ranks");
    acpt_need_smem(SMEM);
    int *vals = acpt_starter(VAL_OFF);
    for (int i = 0; i < (CAN_OFF - VAL_OFF) / 4; i++)
        vals[i] = i;
    dlt_init_buf();
    bad_ranks[0] = -1;
    bad_ranks[1] = INT_MIN;
    bad_ranks[2] = np;
    bad_ranks[3] = INT_MAX;
    make_canaries();
    make_bad_gas();
    make_bad_containers();
    make_bad_keys();

    gmm();
    gma_gas();
    gma_sizes();
    gma_handles();
    check_canaries("the basic layer's calls");
    infra(&argc, &argv);
    check_canaries("acp_init and acp_reset");

    if (np > 1)
        make_live_cl();
    ch_create();
    ch_handles();
    if (np > 1)
        ch_buffers();
    segbuf_create();
    segbuf_handles();
    if (np > 1)
        check_live_cl();
    check_canaries("the communication library's calls");

    ws_params();
    ws_calls();
    check_live_ws();
    heap();
    check_canaries("the workspace and heap calls");

    make_live_containers();
    vector_garbage();
    deque_garbage();
    list_handles();
    list_args();
    hashed_create();
    set_garbage();
    multiset_garbage();
    map_garbage();
    check_canaries("the container calls");
    check_live_containers();
    freed_containers();
    check_canaries("the destroyed containers");

    section("acp_finalize");
    CHECK_INT(acp_unregister_memory(reg_key), 0, "acp_unregister_memory of my region");
    int rc = acpt_finish("t_garbage");
    CHECK_INT(acp_finalize(), -1, "acp_finalize a second time");
    alarm(0);
    return rc || acpt_failures ? 1 : 0;
}
