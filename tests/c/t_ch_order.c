/*
 * t_ch_order: order, matching and sizes on channels around a ring of ranks
 * (rank r sends to r+1 and receives from r-1; with 2 ranks both ways).
 *
 * - 3000 small messages carrying their index arrive in order, through a
 *   ring of slots that wraps hundreds of times; the receives are posted
 *   late (the sender fills the ring first) and waited for in a shuffled
 *   order.
 * - A stream mixing every protocol (0 bytes, one slot, several slots,
 *   rendezvous) keeps its order and every byte.
 * - 600 messages of 0 to 16 KiB (one to five ring slots), sent in windows
 *   of 12 while the ring holds 16 slots, so that some fit whole and some
 *   wait for room, and received in windows of 12: every byte, in order.
 * - Receive buffers shorter than the message keep its first bytes, longer
 *   ones are not written past the message; acp_wait_ch gives the bytes
 *   received.
 * - Messages posted before the receiver created its end are delivered.
 * - Four channels between the same ranks meet in creation order.
 * - acp_send_ch and acp_recv_ch (which returns the bytes received),
 *   acp_waitall_ch with and without a sizes array.
 *
 *     acprun -np N t_ch_order        (N >= 2; one rank has nothing to do)
 */
#include "acptest.h"

/* Exported by the library without a declaration in acp.h. */
int acp_send_ch(acp_ch_t ch, void *buf, size_t size);
int acp_recv_ch(acp_ch_t ch, void *buf, size_t size);

#define NSMALL 3000

static int me, nprocs, next, prev;
static acp_ch_t out, in;

static void many_small(void)
{
    static uint64_t sv[NSMALL], rv[NSMALL];
    static acp_request_t sr[NSMALL], rr[NSMALL];
    for (int k = 0; k < NSMALL; k++) {
        sv[k] = ((uint64_t)me << 32) | (uint64_t)k;
        sr[k] = acp_nbsend_ch(out, &sv[k], 8);
        if (sr[k] == NULL) {
            FAIL("acp_nbsend_ch of small message %d returned NULL", k);
            return;
        }
    }
    usleep(20000); /* the sender runs into a full ring before we receive */
    for (int k = 0; k < NSMALL; k++) {
        rv[k] = ~0ull;
        rr[k] = acp_nbrecv_ch(in, &rv[k], 8);
        if (rr[k] == NULL) {
            FAIL("acp_nbrecv_ch of small message %d returned NULL", k);
            return;
        }
    }
    /* Wait in a shuffled order. */
    static int idx[NSMALL];
    for (int k = 0; k < NSMALL; k++)
        idx[k] = k;
    srand(7 + (unsigned)me);
    for (int k = NSMALL - 1; k > 0; k--) {
        int j = rand() % (k + 1), t = idx[k];
        idx[k] = idx[j];
        idx[j] = t;
    }
    int bad = 0;
    for (int k = 0; k < NSMALL; k++) {
        int i = idx[k];
        size_t n = acp_wait_ch(rr[i]);
        if (n != 8 || rv[i] != (((uint64_t)prev << 32) | (uint64_t)i))
            bad++;
    }
    CHECK_INT(bad, 0, "small messages out of order or with wrong bytes");
    for (int k = 0; k < NSMALL; k++)
        CHECK_INT(acp_wait_ch(sr[k]), 0, "send %d", k);
}

static const size_t mixed[] = {0, 16385, 1, 0, 4033, 1 << 20, 8, 4032, 20000, 0, 65536, 7, 300000, 12000, 3};
#define NMIXED (sizeof mixed / sizeof mixed[0])

static void mixed_stream(void)
{
    uint8_t *sb[NMIXED], *rb[NMIXED];
    acp_request_t sr[NMIXED], rr[NMIXED];
    for (size_t k = 0; k < NMIXED; k++) {
        rb[k] = malloc(mixed[k] + 1);
        rb[k][mixed[k]] = 0xa7;
        rr[k] = acp_nbrecv_ch(in, rb[k], mixed[k]);
        sb[k] = malloc(mixed[k] + 1);
        acpt_fill(sb[k], mixed[k], 500 + k + 1000u * (unsigned)me);
        sr[k] = acp_nbsend_ch(out, sb[k], mixed[k]);
        CHECK(rr[k] != NULL && sr[k] != NULL, "posting mixed message %zu", k);
    }
    size_t got[NMIXED];
    CHECK_INT(acp_waitall_ch(rr, NMIXED, got), 0, "acp_waitall_ch of the mixed stream");
    CHECK_INT(acp_waitall_ch(sr, NMIXED, NULL), 0, "acp_waitall_ch of the sends, sizes NULL");
    for (size_t k = 0; k < NMIXED; k++) {
        CHECK_INT(got[k], mixed[k], "mixed message %zu: bytes", k);
        char what[64];
        snprintf(what, sizeof what, "mixed message %zu (%zu bytes)", k, mixed[k]);
        CHECK_FILL(rb[k], mixed[k], 500 + k + 1000u * (unsigned)prev, what);
        CHECK_HEX(rb[k][mixed[k]], 0xa7, "byte after mixed message %zu", k);
        free(rb[k]);
        free(sb[k]);
    }
}

#define NEAGER 600
#define EAGER_WINDOW 12

/* Sizes of the eager stream: every slot count, the slot boundaries. */
static size_t eager_size(unsigned k)
{
    static const size_t edges[] = {0, 1, 4031, 4032, 4033, 8064, 8065, 12096, 12097, 16128, 16129, 16384};
    if (k % 3 == 0)
        return edges[(k / 3) % (sizeof edges / sizeof edges[0])];
    return (size_t)((k * 2654435761u) % 16385u);
}

static void eager_windows(void)
{
    static uint8_t sb[EAGER_WINDOW][16384], rb[EAGER_WINDOW][16384 + 1];
    acp_request_t sr[EAGER_WINDOW], rr[EAGER_WINDOW];
    size_t got[EAGER_WINDOW];
    for (unsigned base = 0; base < NEAGER; base += EAGER_WINDOW) {
        for (unsigned j = 0; j < EAGER_WINDOW; j++) {
            unsigned k = base + j;
            rb[j][eager_size(k)] = 0x5c;
            rr[j] = acp_nbrecv_ch(in, rb[j], eager_size(k));
            acpt_fill(sb[j], eager_size(k), 7000 + k + 1000u * (unsigned)me);
            sr[j] = acp_nbsend_ch(out, sb[j], eager_size(k));
            CHECK(rr[j] != NULL && sr[j] != NULL, "posting eager message %u", k);
        }
        CHECK_INT(acp_waitall_ch(sr, EAGER_WINDOW, NULL), 0, "acp_waitall_ch of eager sends %u..", base);
        CHECK_INT(acp_waitall_ch(rr, EAGER_WINDOW, got), 0, "acp_waitall_ch of eager receives %u..", base);
        for (unsigned j = 0; j < EAGER_WINDOW; j++) {
            unsigned k = base + j;
            char what[64];
            snprintf(what, sizeof what, "eager message %u (%zu bytes)", k, eager_size(k));
            CHECK_INT(got[j], eager_size(k), "%s: bytes", what);
            CHECK_FILL(rb[j], eager_size(k), 7000 + k + 1000u * (unsigned)prev, what);
            CHECK_HEX(rb[j][eager_size(k)], 0x5c, "byte after %s", what);
        }
    }
}

/* message size, receive buffer size */
static const size_t trunc_cases[][2] = {{100, 10}, {100, 0}, {10000, 5000}, {1 << 20, 1000},
                                        {1 << 20, 0}, {50, 4096}, {200000, 300000}, {0, 100}};
#define NTRUNC (sizeof trunc_cases / sizeof trunc_cases[0])

static void truncation(void)
{
    for (size_t k = 0; k < NTRUNC; k++) {
        size_t msg = trunc_cases[k][0], cap = trunc_cases[k][1];
        uint8_t *s = malloc(msg + 1), *r = malloc(cap + 64);
        acpt_fill(s, msg, 900 + k + 1000u * (unsigned)me);
        memset(r, 0xee, cap + 64);
        acp_request_t rq = acp_nbrecv_ch(in, cap ? r : NULL, cap);
        CHECK(rq != NULL, "truncation case %zu: acp_nbrecv_ch", k);
        CHECK_INT(acp_send_ch(out, s, msg), 0, "truncation case %zu: acp_send_ch", k);
        size_t want = msg < cap ? msg : cap;
        CHECK_INT(acp_wait_ch(rq), want, "truncation case %zu (%zu-byte message, %zu-byte buffer)", k, msg, cap);
        uint8_t *exp = malloc(msg + 1);
        acpt_fill(exp, msg, 900 + k + 1000u * (unsigned)prev);
        CHECK(memcmp(r, exp, want) == 0, "truncation case %zu: data", k);
        CHECK_BYTES(r + want, cap + 64 - want, 0xee, "bytes past what was received");
        free(exp);
        free(s);
        free(r);
    }
    /* acp_recv_ch returns what it received. */
    uint8_t buf[64];
    acpt_fill(buf, 40, 77);
    acp_request_t sq = acp_nbsend_ch(out, buf, 40);
    uint8_t r[64];
    CHECK_INT(acp_recv_ch(in, r, sizeof r), 40, "acp_recv_ch of a 40-byte message");
    CHECK_FILL(r, 40, 77, "acp_recv_ch data");
    CHECK_INT(acp_wait_ch(sq), 0, "send of the 40-byte message");
}

/* Channels created in order meet in order, also when the sender posts
 * before the receiver created its ends (rank `prev` created them late). */
static void creation_order(void)
{
    enum { NC = 4 };
    acp_ch_t o[NC], i[NC];
    uint64_t v[NC], w[NC];
    acp_request_t q[NC];
    for (int k = 0; k < NC; k++) {
        o[k] = acp_create_ch(me, next);
        CHECK(o[k] != NULL, "acp_create_ch %d to %d", k, next);
        v[k] = 1000u * (unsigned)me + (unsigned)k;
        q[k] = acp_nbsend_ch(o[k], &v[k], 8);
    }
    usleep(30000);
    for (int k = 0; k < NC; k++) {
        i[k] = acp_create_ch(prev, me);
        CHECK(i[k] != NULL, "acp_create_ch %d from %d", k, prev);
    }
    for (int k = NC - 1; k >= 0; k--) {
        w[k] = 0;
        CHECK_INT(acp_recv_ch(i[k], &w[k], 8), 8, "channel %d from %d", k, prev);
        CHECK_INT(w[k], 1000u * (unsigned)prev + (unsigned)k, "value on channel %d from %d", k, prev);
    }
    for (int k = 0; k < NC; k++) {
        CHECK_INT(acp_wait_ch(q[k]), 0, "send on channel %d", k);
        CHECK_INT(acp_free_ch(o[k]), 0, "acp_free_ch(out %d)", k);
        CHECK_INT(acp_free_ch(i[k]), 0, "acp_free_ch(in %d)", k);
    }
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_ch_order");
    me = acp_rank();
    nprocs = acp_procs();
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    out = acp_create_ch(me, next);
    in = acp_create_ch(prev, me);
    if (out == NULL || in == NULL)
        FATAL("acp_create_ch returned NULL");
    many_small();
    mixed_stream();
    eager_windows();
    truncation();
    creation_order();
    CHECK_INT(acp_free_ch(out), 0, "acp_free_ch(out)");
    CHECK_INT(acp_free_ch(in), 0, "acp_free_ch(in)");
    return acpt_finish("t_ch_order");
}
