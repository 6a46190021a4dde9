/*
 * t_ch_random: channels between every pair of ranks, on a random
 * schedule.
 *
 * In each of R rounds every channel carries 0 to 4 messages whose sizes
 * are drawn across every protocol boundary (0 bytes, one slot, several,
 * the largest message sent through the ring, streamed, rendezvous, up to
 * -max), into receive buffers of the same size, shorter (the first bytes
 * arrive) or longer (the rest stays untouched). All ranks draw the same
 * schedule from one seed; each rank posts its sends and receives of the
 * round in its own random order, then waits for them in another (now and
 * then with acp_waitall_ch), and checks every byte and the guard bytes
 * after each receive buffer.
 *
 *     acprun -np N t_ch_random [-rounds R] [-max BYTES] [-seed S]
 */
#include "acptest.h"

#define MAXP 16
#define GUARD 64
#define MAXPERCH 4

static int me, nprocs;
static size_t max_size = 2u << 20;
static int rounds = 24;

/* splitmix64: the schedule's random numbers, the same on every rank. */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static size_t below(uint64_t *s, size_t n) { return n ? (size_t)(next(s) % n) : 0; }

/* A message size near one of the channel's boundaries. */
static size_t draw_size(uint64_t *s)
{
    static const size_t edges[] = {4031, 4032, 4033, 8064, 8065, 16383, 16384, 16385, 32768, 32769};
    size_t k = below(s, 100), n;
    if (k < 5)
        n = 0;
    else if (k < 35)
        n = 1 + below(s, 64);
    else if (k < 55)
        n = 65 + below(s, 4000);
    else if (k < 75)
        n = edges[below(s, sizeof edges / sizeof edges[0])];
    else if (k < 92)
        n = 16386 + below(s, 48 * 1024);
    else if (k < 99)
        n = 64 * 1024 + below(s, 448 * 1024);
    else
        n = (1u << 20) + below(s, 1u << 20);
    return n < max_size ? n : max_size;
}

/* One message of the round: on channel from -> to, its size, the receive
 * buffer's, its seed. */
typedef struct {
    int from, to;
    size_t size, recv;
    uint64_t seed;
    uint8_t *buf;
    acp_request_t req;
    size_t got;
} msg_t;

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    uint64_t seed = 20261128;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-max") == 0 && i + 1 < argc)
            max_size = strtoull(argv[++i], NULL, 0);
        else if (strcmp(argv[i], "-rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "-seed") == 0 && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
    }
    me = acp_rank();
    nprocs = acp_procs();
    if (nprocs > MAXP)
        FATAL("too many ranks");

    /* Every direction, created in the same order on every rank. */
    acp_ch_t ch[MAXP][MAXP] = {{0}};
    for (int s = 0; s < nprocs; s++)
        for (int r = 0; r < nprocs; r++)
            if (s != r && (s == me || r == me)) {
                ch[s][r] = acp_create_ch(s, r);
                CHECK(ch[s][r] != NULL, "acp_create_ch(%d, %d)", s, r);
            }

    uint64_t sched = seed, mine = seed ^ (0x1234567ull * (uint64_t)(me + 1));
    size_t nmax = (size_t)nprocs * (size_t)nprocs * MAXPERCH;
    msg_t *m = calloc(nmax, sizeof *m);
    size_t *order = calloc(nmax, sizeof *order);
    acp_request_t *reqs = calloc(nmax, sizeof *reqs);
    size_t *res = calloc(nmax, sizeof *res);
    long messages = 0, truncated = 0, bytes = 0;
    for (int round = 0; round < rounds; round++) {
        /* The round's messages (every rank draws all of them, and keeps its
         * own), in channel order: that is the order each channel carries
         * them in. */
        size_t n = 0;
        for (int s = 0; s < nprocs; s++)
            for (int r = 0; r < nprocs; r++) {
                if (s == r)
                    continue;
                size_t k = below(&sched, MAXPERCH + 1);
                for (size_t i = 0; i < k; i++) {
                    msg_t x = {.from = s, .to = r, .size = draw_size(&sched)};
                    switch (below(&sched, 6)) {
                    case 0: x.recv = below(&sched, x.size + 1); break;
                    case 1: x.recv = x.size + 1 + below(&sched, 100); break;
                    default: x.recv = x.size;
                    }
                    x.seed = next(&sched);
                    if (s == me || r == me)
                        m[n++] = x;
                }
            }
        /* Post in a random order that keeps each channel's own order. */
        size_t posted = 0;
        int done[MAXP * MAXP * MAXPERCH] = {0};
        while (posted < n) {
            size_t i = below(&mine, n);
            while (done[i])
                i = (i + 1) % n;
            /* the first message not yet posted on i's channel and direction */
            for (size_t j = 0; j < n; j++)
                if (!done[j] && m[j].from == m[i].from && m[j].to == m[i].to) {
                    i = j;
                    break;
                }
            msg_t *x = &m[i];
            if (x->from == me) {
                x->buf = malloc(x->size + 1);
                acpt_fill(x->buf, x->size, x->seed);
                x->req = acp_nbsend_ch(ch[x->from][x->to], x->buf, x->size);
                CHECK(x->req != NULL, "round %d: acp_nbsend_ch of %zu bytes to %d", round, x->size, x->to);
            } else {
                x->buf = malloc(x->recv + GUARD);
                memset(x->buf, 0xa5, x->recv + GUARD);
                x->req = acp_nbrecv_ch(ch[x->from][x->to], x->buf, x->recv);
                CHECK(x->req != NULL, "round %d: acp_nbrecv_ch of %zu bytes from %d", round, x->recv, x->from);
            }
            done[i] = 1;
            order[posted++] = i;
        }
        /* Wait in another random order, or all at once in posting order. */
        if (below(&mine, 4) == 0) {
            for (size_t i = 0; i < n; i++)
                reqs[i] = m[order[i]].req;
            CHECK_INT(acp_waitall_ch(reqs, (int)n, res), 0, "round %d: acp_waitall_ch of %zu requests", round, n);
            for (size_t i = 0; i < n; i++)
                m[order[i]].got = res[i];
        } else {
            for (size_t i = n; i > 1; i--) {
                size_t j = below(&mine, i), t = order[i - 1];
                order[i - 1] = order[j];
                order[j] = t;
            }
            for (size_t i = 0; i < n; i++)
                m[order[i]].got = acp_wait_ch(m[order[i]].req);
        }
        for (size_t i = 0; i < n; i++) {
            msg_t *x = &m[i];
            if (x->from == me) {
                CHECK_INT(x->got, 0, "round %d: acp_wait_ch of a %zu-byte send to %d", round, x->size, x->to);
            } else {
                size_t want = x->size < x->recv ? x->size : x->recv;
                char what[128];
                snprintf(what, sizeof what, "round %d: %zu-byte message from %d into %zu bytes", round, x->size, x->from, x->recv);
                CHECK_INT(x->got, want, "%s: bytes received", what);
                CHECK_FILL(x->buf, want, x->seed, what);
                CHECK_BYTES(x->buf + want, x->recv + GUARD - want, 0xa5, what);
                messages++;
                truncated += x->recv < x->size;
                bytes += (long)want;
            }
            free(x->buf);
        }
    }
    free(m);
    free(order);
    free(reqs);
    free(res);

    /* Free every end at once, then wait: a free waits for its peer's. */
    acp_request_t fr[2 * MAXP];
    size_t fres[2 * MAXP];
    int nf = 0;
    for (int s = 0; s < nprocs; s++)
        for (int r = 0; r < nprocs; r++)
            if (ch[s][r] != NULL) {
                fr[nf] = acp_nbfree_ch(ch[s][r]);
                CHECK(fr[nf] != NULL, "acp_nbfree_ch(%d -> %d)", s, r);
                nf++;
            }
    CHECK_INT(acp_waitall_ch(fr, nf, fres), 0, "acp_waitall_ch of the frees");
    printf("rank %d: %ld messages received (%ld truncated), %ld bytes, seed %" PRIu64 "\n", me, messages, truncated, bytes, seed);
    return acpt_finish("t_ch_random");
}
