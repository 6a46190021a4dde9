/*
 * t_segbuf: segmented buffers around a ring of ranks (rank r is the source
 * of a segmented buffer to r+1 and the destination of one from r-1).
 *
 * - The whole protocol with checked counters: connect, acknowledge
 *   segments, a full ring (acp_isready_segbuf 1, acp_ack_segbuf -1), the
 *   data at the destination, release (acp_ready_segbuf), an empty ring
 *   (acp_isacked_segbuf 1, acp_ready_segbuf -1), head, tail and sent
 *   modulo the segment count, wrapping around.
 * - 300 segments streamed with no barrier, each checked.
 * - Disconnect and free: free before disconnect fails, calls after
 *   disconnect fail, free succeeds once, a freed handle is refused.
 * - Three segmented buffers between the same ranks meet in creation order.
 * - Ends with different segment sizes refuse to connect, on both sides.
 * - Bad input: NULL and stale handles, ranks out of range or the caller's
 *   own, NULL buffers, zero or overflowing sizes, the wrong end.
 *
 *     acprun -np N t_segbuf          (bad input only with N = 1)
 */
#include "acptest.h"

#define SEG  1000
#define NSEG 4

static int me, nprocs, next, prev;

static uint8_t segbyte(int from, int k, int i) { return (uint8_t)(from * 31 + k * 7 + i); }

static void fill_seg(uint8_t *buf, int k)
{
    uint8_t *s = buf + (size_t)(k % NSEG) * SEG;
    for (int i = 0; i < SEG; i++)
        s[i] = segbyte(me, k, i);
}

static int seg_ok(const uint8_t *buf, int k)
{
    const uint8_t *s = buf + (size_t)(k % NSEG) * SEG;
    for (int i = 0; i < SEG; i++)
        if (s[i] != segbyte(prev, k, i))
            return 0;
    return 1;
}

/* Polls f until it returns want (or 10 s pass). */
#define POLL(call, want, what)                                                                 \
    do {                                                                                       \
        double t0_ = acpt_now();                                                               \
        int64_t v_;                                                                            \
        while ((v_ = (int64_t)(call)) != (int64_t)(want) && acpt_now() - t0_ < 10)             \
            ;                                                                                  \
        CHECK_INT(v_, want, "%s", what);                                                       \
    } while (0)

static void protocol(void)
{
    uint8_t *sbuf = calloc(NSEG, SEG), *dbuf = calloc(NSEG, SEG);
    acp_segbuf_t s = acp_create_src_segbuf(next, sbuf, SEG, NSEG);
    acp_segbuf_t d = acp_create_dst_segbuf(prev, dbuf, SEG, NSEG);
    CHECK(s != NULL && d != NULL, "acp_create_src/dst_segbuf");
    CHECK_INT(acp_connect_segbuf(s), 0, "acp_connect_segbuf(source)");
    CHECK_INT(acp_connect_segbuf(d), 0, "acp_connect_segbuf(destination)");
    CHECK_INT(acp_isconnected_segbuf(s), 0, "acp_isconnected_segbuf(source)");
    CHECK_INT(acp_isconnected_segbuf(d), 0, "acp_isconnected_segbuf(destination)");
    CHECK_INT(acp_isready_segbuf(s), 0, "empty ring: room at the source");
    CHECK_INT(acp_isacked_segbuf(d), 1, "empty ring: nothing at the destination");
    CHECK_INT(acp_ready_segbuf(d), -1, "acp_ready_segbuf with an empty ring");
    CHECK_INT(acp_ack_segbuf(d), -1, "acp_ack_segbuf on the destination");
    CHECK_INT(acp_ready_segbuf(s), -1, "acp_ready_segbuf on the source");
    acp_sync(); /* nobody acknowledges before every ring was seen empty */

    /* Phase A: 3 segments. */
    for (int k = 0; k < 3; k++) {
        fill_seg(sbuf, k);
        CHECK_INT(acp_ack_segbuf(s), 0, "acp_ack_segbuf %d", k);
    }
    CHECK_INT(acp_query_segbuf_tail(s), 3, "source tail after 3 acks");
    POLL(acp_query_segbuf_sent(s), 3, "source sent after 3 acks");
    acp_sync();
    CHECK_INT(acp_query_segbuf_tail(d), 3, "destination tail after 3 acks");
    CHECK_INT(acp_query_segbuf_sent(d), 3, "destination sent (= tail)");
    CHECK_INT(acp_query_segbuf_head(d), 0, "destination head before release");
    for (int k = 0; k < 3; k++) {
        CHECK_INT(acp_isacked_segbuf(d), 0, "segment %d is there", k);
        CHECK(seg_ok(dbuf, k), "data of segment %d", k);
        CHECK_INT(acp_ready_segbuf(d), 0, "acp_ready_segbuf %d", k);
    }
    CHECK_INT(acp_query_segbuf_head(d), 3, "destination head after 3 releases");
    CHECK_INT(acp_ready_segbuf(d), -1, "acp_ready_segbuf past the tail");
    CHECK_INT(acp_isacked_segbuf(d), 1, "all released");
    acp_sync();
    POLL(acp_query_segbuf_head(s), 3, "source head after the releases");

    /* Phase B: fill the ring (wraps around), one ack too many. */
    for (int k = 3; k < 3 + NSEG; k++) {
        CHECK_INT(acp_isready_segbuf(s), 0, "room for segment %d", k);
        fill_seg(sbuf, k);
        CHECK_INT(acp_ack_segbuf(s), 0, "acp_ack_segbuf %d", k);
    }
    CHECK_INT(acp_isready_segbuf(s), 1, "full ring");
    CHECK_INT(acp_ack_segbuf(s), -1, "acp_ack_segbuf with a full ring");
    POLL(acp_query_segbuf_sent(s), (3 + NSEG) % NSEG, "source sent after the ring filled");
    acp_sync();
    CHECK_INT(acp_query_segbuf_tail(d), (3 + NSEG) % NSEG, "destination tail after wrapping");
    for (int k = 3; k < 3 + NSEG; k++) {
        CHECK(seg_ok(dbuf, k), "data of segment %d", k);
        CHECK_INT(acp_ready_segbuf(d), 0, "acp_ready_segbuf %d", k);
    }
    acp_sync();
    POLL(acp_isready_segbuf(s), 0, "room again after the releases");

    /* Phase C: a stream with no barrier; both roles in one loop. */
    int sent = 3 + NSEG, got = 3 + NSEG, last = 300 + 3 + NSEG, bad = 0;
    double t0 = acpt_now();
    while ((sent < last || got < last) && acpt_now() - t0 < 30) {
        if (sent < last && acp_isready_segbuf(s) == 0) {
            fill_seg(sbuf, sent);
            if (acp_ack_segbuf(s) != 0)
                bad++;
            sent++;
        }
        if (got < last && acp_isacked_segbuf(d) == 0) {
            if (!seg_ok(dbuf, got))
                bad++;
            if (acp_ready_segbuf(d) != 0)
                bad++;
            got++;
        }
    }
    CHECK_INT(got, last, "segments received in the stream");
    CHECK_INT(bad, 0, "stream: wrong segments or failed calls");

    /* Disconnect and free. */
    CHECK_INT(acp_free_segbuf(s), -1, "acp_free_segbuf before disconnecting");
    CHECK_INT(acp_disconnect_segbuf(s), 0, "acp_disconnect_segbuf(source)");
    CHECK_INT(acp_disconnect_segbuf(s), -1, "second acp_disconnect_segbuf");
    CHECK_INT(acp_ack_segbuf(s), -1, "acp_ack_segbuf after disconnecting");
    CHECK_INT(acp_query_segbuf_head(s), -1, "acp_query_segbuf_head after disconnecting");
    CHECK_INT(acp_isconnected_segbuf(s), -1, "acp_isconnected_segbuf after disconnecting");
    CHECK_INT(acp_disconnect_segbuf(d), 0, "acp_disconnect_segbuf(destination)");
    CHECK_INT(acp_free_segbuf(s), 0, "acp_free_segbuf(source)");
    CHECK_INT(acp_free_segbuf(d), 0, "acp_free_segbuf(destination)");
    CHECK_INT(acp_free_segbuf(s), -1, "acp_free_segbuf of a freed segmented buffer");
    CHECK_INT(acp_isacked_segbuf(d), -1, "acp_isacked_segbuf of a freed segmented buffer");
    free(sbuf);
    free(dbuf);
}

static void creation_order(void)
{
    enum { N = 3 };
    uint64_t sv[N], dv[N];
    acp_segbuf_t s[N], d[N];
    for (int k = 0; k < N; k++) {
        s[k] = acp_create_src_segbuf(next, &sv[k], 8, 1);
        CHECK(s[k] != NULL, "acp_create_src_segbuf %d", k);
    }
    for (int k = 0; k < N; k++) {
        dv[k] = 0;
        d[k] = acp_create_dst_segbuf(prev, &dv[k], 8, 1);
        CHECK(d[k] != NULL, "acp_create_dst_segbuf %d", k);
    }
    for (int k = N - 1; k >= 0; k--) {
        CHECK_INT(acp_connect_segbuf(s[k]), 0, "connect source %d", k);
        sv[k] = 100u * (unsigned)me + (unsigned)k;
        CHECK_INT(acp_ack_segbuf(s[k]), 0, "ack on source %d", k);
    }
    for (int k = 0; k < N; k++) {
        CHECK_INT(acp_connect_segbuf(d[k]), 0, "connect destination %d", k);
        POLL(acp_isacked_segbuf(d[k]), 0, "segment on destination");
        CHECK_INT(dv[k], 100u * (unsigned)prev + (unsigned)k, "value on segmented buffer %d", k);
        CHECK_INT(acp_ready_segbuf(d[k]), 0, "release on destination %d", k);
    }
    for (int k = 0; k < N; k++) {
        CHECK_INT(acp_disconnect_segbuf(s[k]), 0, "disconnect source %d", k);
        CHECK_INT(acp_disconnect_segbuf(d[k]), 0, "disconnect destination %d", k);
    }
    for (int k = 0; k < N; k++) {
        CHECK_INT(acp_free_segbuf(d[k]), 0, "free destination %d", k);
        CHECK_INT(acp_free_segbuf(s[k]), 0, "free source %d", k);
    }
}

static void mismatch(void)
{
    static uint8_t a[64], b[64];
    acp_segbuf_t s = acp_create_src_segbuf(next, a, 8, 4);
    acp_segbuf_t d = acp_create_dst_segbuf(prev, b, 16, 4);
    CHECK(s != NULL && d != NULL, "create with different sizes on the two ends");
    CHECK_INT(acp_connect_segbuf(s), -1, "acp_connect_segbuf with different segment sizes (source)");
    CHECK_INT(acp_connect_segbuf(d), -1, "acp_connect_segbuf with different segment sizes (destination)");
    CHECK_INT(acp_isconnected_segbuf(s), -1, "acp_isconnected_segbuf of a refused connection");
    CHECK_INT(acp_ack_segbuf(s), -1, "acp_ack_segbuf of a refused connection");
}

static void bad_input(void)
{
    static uint8_t buf[64];
    CHECK(acp_create_src_segbuf(me, buf, 8, 8) == NULL, "acp_create_src_segbuf to the caller itself");
    CHECK(acp_create_dst_segbuf(me, buf, 8, 8) == NULL, "acp_create_dst_segbuf from the caller itself");
    CHECK(acp_create_src_segbuf(-1, buf, 8, 8) == NULL, "acp_create_src_segbuf(-1)");
    CHECK(acp_create_dst_segbuf(nprocs, buf, 8, 8) == NULL, "acp_create_dst_segbuf(nprocs)");
    int other = (me + 1) % nprocs;
    if (nprocs > 1) {
        CHECK(acp_create_src_segbuf(other, NULL, 8, 8) == NULL, "NULL buffer");
        CHECK(acp_create_src_segbuf(other, buf, 0, 8) == NULL, "segment size 0");
        CHECK(acp_create_src_segbuf(other, buf, 8, 0) == NULL, "segment count 0");
        CHECK(acp_create_src_segbuf(other, buf, SIZE_MAX / 2, 4) == NULL, "sizes that overflow");
    }
    acp_segbuf_t bad[] = {NULL, (acp_segbuf_t)(uintptr_t)77, (acp_segbuf_t)(uintptr_t)0xfeed00000001ull};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        acp_segbuf_t h = bad[i];
        CHECK_INT(acp_connect_segbuf(h), -1, "acp_connect_segbuf(%p)", (void *)h);
        CHECK_INT(acp_isconnected_segbuf(h), -1, "acp_isconnected_segbuf(%p)", (void *)h);
        CHECK_INT(acp_ack_segbuf(h), -1, "acp_ack_segbuf(%p)", (void *)h);
        CHECK_INT(acp_ready_segbuf(h), -1, "acp_ready_segbuf(%p)", (void *)h);
        CHECK_INT(acp_isready_segbuf(h), -1, "acp_isready_segbuf(%p)", (void *)h);
        CHECK_INT(acp_isacked_segbuf(h), -1, "acp_isacked_segbuf(%p)", (void *)h);
        CHECK_INT(acp_query_segbuf_head(h), -1, "acp_query_segbuf_head(%p)", (void *)h);
        CHECK_INT(acp_query_segbuf_tail(h), -1, "acp_query_segbuf_tail(%p)", (void *)h);
        CHECK_INT(acp_query_segbuf_sent(h), -1, "acp_query_segbuf_sent(%p)", (void *)h);
        CHECK_INT(acp_disconnect_segbuf(h), -1, "acp_disconnect_segbuf(%p)", (void *)h);
        CHECK_INT(acp_free_segbuf(h), -1, "acp_free_segbuf(%p)", (void *)h);
    }
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    bad_input();
    if (nprocs >= 2) {
        protocol();
        creation_order();
        mismatch();
    }
    return acpt_finish("t_segbuf");
}
