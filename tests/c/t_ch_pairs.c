/*
 * t_ch_pairs: channels between every pair of ranks at once.
 *
 * Every rank creates a channel to and from every other rank (all N(N-1)
 * directions), posts every send and every receive before waiting for any,
 * and checks every byte: sizes cross every protocol boundary (0 bytes, one
 * slot, several slots, the largest message sent through the ring,
 * rendezvous) up to -max (default 16 MiB). Receives are waited for in
 * three orders (forward, backward, with acp_waitall_ch), sends last.
 *
 *     acprun -np N t_ch_pairs [-max BYTES]
 */
#include "acptest.h"

#define MAXP 64

static size_t sizes[] = {0, 1, 8, 4031, 4032, 4033, 8064, 8065, 16383, 16384, 16385,
                         100000, 1u << 20, 3u << 20, 16u << 20};
#define NSIZES (sizeof sizes / sizeof sizes[0])

static int me, nprocs;
static size_t max_size = 16u << 20;

/* Seed of the k-th message from `from` to `to`. */
static uint64_t seed(int from, int to, size_t k) { return (uint64_t)from * 1000003u + (uint64_t)to * 1009u + k; }

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-max") == 0 && i + 1 < argc)
            max_size = strtoull(argv[++i], NULL, 0);
    me = acp_rank();
    nprocs = acp_procs();
    if (nprocs > MAXP)
        FATAL("too many ranks");
    size_t nsizes = 0;
    while (nsizes < NSIZES && sizes[nsizes] <= max_size)
        nsizes++;

    acp_ch_t out[MAXP] = {0}, in[MAXP] = {0};
    for (int p = 0; p < nprocs; p++) {
        if (p == me)
            continue;
        out[p] = acp_create_ch(me, p);
        in[p] = acp_create_ch(p, me);
        CHECK(out[p] != NULL, "acp_create_ch(%d, %d)", me, p);
        CHECK(in[p] != NULL, "acp_create_ch(%d, %d)", p, me);
    }

    /* Three rounds; the receives of each are waited for in another order. */
    for (int round = 0; round < 3; round++) {
        size_t nmsg = (size_t)nprocs * nsizes;
        uint8_t **sbuf = calloc(nmsg, sizeof *sbuf), **rbuf = calloc(nmsg, sizeof *rbuf);
        acp_request_t *sreq = calloc(nmsg, sizeof *sreq), *rreq = calloc(nmsg, sizeof *rreq);
        size_t *got = calloc(nmsg, sizeof *got);
        size_t nr = 0, ns = 0;
        int *rfrom = calloc(nmsg, sizeof *rfrom);
        size_t *rk = calloc(nmsg, sizeof *rk);

        /* Receives first on half the rounds, sends first on the others. */
        for (int phase = 0; phase < 2; phase++) {
            int do_recv = (phase == 0) == (round % 2 == 0);
            for (int p = 0; p < nprocs; p++) {
                if (p == me)
                    continue;
                for (size_t k = 0; k < nsizes; k++) {
                    size_t n = sizes[(k + (size_t)round) % nsizes];
                    if (do_recv) {
                        rbuf[nr] = malloc(n + 1);
                        rbuf[nr][n] = 0x5a; /* must stay: nothing past the message */
                        rfrom[nr] = p;
                        rk[nr] = k;
                        rreq[nr] = acp_nbrecv_ch(in[p], rbuf[nr], n);
                        CHECK(rreq[nr] != NULL, "acp_nbrecv_ch from %d, %zu bytes", p, n);
                        nr++;
                    } else {
                        sbuf[ns] = malloc(n + 1);
                        acpt_fill(sbuf[ns], n, seed(me, p, k + 100 * (size_t)round));
                        sreq[ns] = acp_nbsend_ch(out[p], sbuf[ns], n);
                        CHECK(sreq[ns] != NULL, "acp_nbsend_ch to %d, %zu bytes", p, n);
                        ns++;
                    }
                }
            }
        }

        if (round == 0) {
            for (size_t i = 0; i < nr; i++)
                got[i] = acp_wait_ch(rreq[i]);
        } else if (round == 1) {
            for (size_t i = nr; i-- > 0;)
                got[i] = acp_wait_ch(rreq[i]);
        } else {
            CHECK_INT(acp_waitall_ch(rreq, (int)nr, got), 0, "acp_waitall_ch of %zu receives", nr);
        }
        for (size_t i = 0; i < nr; i++) {
            size_t n = sizes[(rk[i] + (size_t)round) % nsizes];
            CHECK_INT(got[i], n, "round %d: bytes of message %zu from %d", round, rk[i], rfrom[i]);
            char what[96];
            snprintf(what, sizeof what, "round %d: %zu-byte message %zu from rank %d", round, n, rk[i], rfrom[i]);
            CHECK_FILL(rbuf[i], n, seed(rfrom[i], me, rk[i] + 100 * (size_t)round), what);
            CHECK_HEX(rbuf[i][n], 0x5a, "round %d: byte after the %zu-byte message from %d", round, n, rfrom[i]);
            free(rbuf[i]);
        }
        for (size_t i = 0; i < ns; i++) {
            CHECK_INT(acp_wait_ch(sreq[i]), 0, "round %d: acp_wait_ch of send %zu", round, i);
            free(sbuf[i]);
        }
        free(sbuf);
        free(rbuf);
        free(sreq);
        free(rreq);
        free(got);
        free(rfrom);
        free(rk);
    }

    /* Free every end at once, then wait. */
    acp_request_t fr[2 * MAXP];
    int nf = 0;
    for (int p = 0; p < nprocs; p++) {
        if (p == me)
            continue;
        fr[nf] = acp_nbfree_ch(out[p]);
        CHECK(fr[nf] != NULL, "acp_nbfree_ch(out %d)", p);
        nf++;
        fr[nf] = acp_nbfree_ch(in[p]);
        CHECK(fr[nf] != NULL, "acp_nbfree_ch(in %d)", p);
        nf++;
    }
    size_t res[2 * MAXP];
    CHECK_INT(acp_waitall_ch(fr, nf, res), 0, "acp_waitall_ch of the frees");
    for (int i = 0; i < nf; i++)
        CHECK_INT(res[i], 0, "result of free %d", i);
    return acpt_finish("t_ch_pairs");
}
