/*
 * t_ch_free: freeing channels, with and without waiting.
 *
 * Around a ring of ranks (rank r sends to r+1):
 * - acp_free_ch on both ends in either order: freeing one end never waits
 *   for the other end's free (sender first on even rounds, receiver
 *   first on odd ones).
 * - A channel freed right after it was created, with no message.
 * - The sender frees while its messages (eager and rendezvous) are still
 *   unreceived: they are all delivered; the sender's buffers of rendezvous
 *   messages are only released (free request complete) after the receiver
 *   took them.
 * - More receives than messages: the extra receives fail with (size_t)-1
 *   once the sender freed its end; more messages than receives: the rest
 *   is dropped and both frees complete.
 * - 300 channels created and freed one after another (endpoint memory is
 *   recycled).
 * - acp_reset (reversing the ranks) with a channel still open: its handle
 *   is refused afterwards, and new channels work with the new ranks.
 * - At the end rank 0 posts sends and a free it never waits for, and the
 *   receivers leave a free unwaited too: acp_finalize copes (testch02-04).
 *
 *     acprun -np N t_ch_free        (N >= 2)
 */
#include "acptest.h"

/* Exported by the library without a declaration in acp.h. */
int acp_send_ch(acp_ch_t ch, void *buf, size_t size);
int acp_recv_ch(acp_ch_t ch, void *buf, size_t size);

static int me, nprocs, next, prev;

static void pair_free_orders(void)
{
    for (int round = 0; round < 4; round++) {
        acp_ch_t o = acp_create_ch(me, next), i = acp_create_ch(prev, me);
        CHECK(o != NULL && i != NULL, "round %d: acp_create_ch", round);
        uint64_t v = 100u * (unsigned)round + (unsigned)me, w = 0;
        acp_request_t s = acp_nbsend_ch(o, &v, 8);
        CHECK_INT(acp_wait_ch(acp_nbrecv_ch(i, &w, 8)), 8, "round %d: receive", round);
        CHECK_INT(w, 100u * (unsigned)round + (unsigned)prev, "round %d: value", round);
        CHECK_INT(acp_wait_ch(s), 0, "round %d: send", round);
        if (round % 2 == 0) {
            CHECK_INT(acp_free_ch(o), 0, "round %d: acp_free_ch(sender's end)", round);
            CHECK_INT(acp_free_ch(i), 0, "round %d: acp_free_ch(receiver's end)", round);
        } else {
            CHECK_INT(acp_free_ch(i), 0, "round %d: acp_free_ch(receiver's end)", round);
            CHECK_INT(acp_free_ch(o), 0, "round %d: acp_free_ch(sender's end)", round);
        }
    }
    /* No message at all. */
    acp_ch_t o = acp_create_ch(me, next), i = acp_create_ch(prev, me);
    CHECK_INT(acp_free_ch(o), 0, "acp_free_ch right after acp_create_ch (sender)");
    CHECK_INT(acp_free_ch(i), 0, "acp_free_ch right after acp_create_ch (receiver)");
}

static void free_before_receive(void)
{
    enum { N = 6 };
    static const size_t sz[N] = {8, 5000, 100000, 0, 2 << 20, 16};
    acp_ch_t o = acp_create_ch(me, next), i = acp_create_ch(prev, me);
    uint8_t *sb[N];
    acp_request_t sr[N];
    for (int k = 0; k < N; k++) {
        sb[k] = malloc(sz[k] + 1);
        acpt_fill(sb[k], sz[k], 40 + (uint64_t)k + 100u * (unsigned)me);
        sr[k] = acp_nbsend_ch(o, sb[k], sz[k]);
    }
    acp_request_t f = acp_nbfree_ch(o);
    CHECK(f != NULL, "acp_nbfree_ch with messages in flight");
    CHECK(acp_nbsend_ch(o, sb[0], 8) == NULL, "acp_nbsend_ch after acp_nbfree_ch returns NULL");
    CHECK(acp_nbfree_ch(o) == NULL, "second acp_nbfree_ch returns NULL");
    acp_sync(); /* every sender has freed before anybody receives */
    for (int k = 0; k < N; k++) {
        uint8_t *r = malloc(sz[k] + 1);
        CHECK_INT(acp_wait_ch(acp_nbrecv_ch(i, r, sz[k])), sz[k], "message %d after the sender freed", k);
        CHECK_FILL(r, sz[k], 40 + (uint64_t)k + 100u * (unsigned)prev, "message after the sender freed");
        free(r);
    }
    /* One receive too many. */
    uint64_t x;
    acp_request_t extra = acp_nbrecv_ch(i, &x, 8);
    CHECK(extra != NULL, "acp_nbrecv_ch beyond the last message");
    CHECK_HEX(acp_wait_ch(extra), (size_t)-1, "a receive the freed sender never matches");
    for (int k = 0; k < N; k++)
        CHECK_INT(acp_wait_ch(sr[k]), 0, "send %d", k);
    CHECK_INT(acp_wait_ch(f), 0, "the sender's free");
    CHECK_INT(acp_free_ch(i), 0, "the receiver's free");
    CHECK(acp_nbsend_ch(o, sb[0], 8) == NULL, "acp_nbsend_ch on a freed channel returns NULL");
    CHECK(acp_nbrecv_ch(i, sb[0], 8) == NULL, "acp_nbrecv_ch on a freed channel returns NULL");
    for (int k = 0; k < N; k++)
        free(sb[k]);
}

static void more_sends_than_receives(void)
{
    acp_ch_t o = acp_create_ch(me, next), i = acp_create_ch(prev, me);
    static uint8_t big[200000];
    uint64_t v[5] = {1, 2, 3, 4, 5};
    acp_request_t s[6];
    for (int k = 0; k < 5; k++)
        s[k] = acp_nbsend_ch(o, &v[k], 8);
    s[5] = acp_nbsend_ch(o, big, sizeof big); /* a rendezvous nobody takes */
    uint64_t w = 0;
    CHECK_INT(acp_wait_ch(acp_nbrecv_ch(i, &w, 8)), 8, "the one message received");
    CHECK_INT(w, 1, "its value");
    /* The receiver frees with four small and one large message unreceived:
     * they are dropped, the large one's buffer is given back. */
    CHECK_INT(acp_free_ch(i), 0, "receiver's free with messages left");
    size_t res[6];
    CHECK_INT(acp_waitall_ch(s, 6, res), 0, "sends whose messages were dropped");
    CHECK_INT(acp_free_ch(o), 0, "sender's free after its messages were dropped");
}

static void many_lifetimes(void)
{
    int bad = 0;
    for (int k = 0; k < 300; k++) {
        acp_ch_t o = acp_create_ch(me, next), i = acp_create_ch(prev, me);
        uint32_t v = (uint32_t)(k * 7 + me), w = 0;
        acp_request_t s = acp_nbsend_ch(o, &v, 4);
        if (acp_wait_ch(acp_nbrecv_ch(i, &w, 4)) != 4 || w != (uint32_t)(k * 7 + prev))
            bad++;
        if (acp_wait_ch(s) != 0 || acp_free_ch(o) != 0 || acp_free_ch(i) != 0)
            bad++;
    }
    CHECK_INT(bad, 0, "failures over 300 channel lifetimes");
}

static void across_reset(void)
{
    acp_ch_t o = acp_create_ch(me, next), i = acp_create_ch(prev, me);
    uint32_t v = 7, w = 0;
    CHECK_INT(acp_send_ch(o, &v, 4), 0, "send before acp_reset");
    CHECK_INT(acp_wait_ch(acp_nbrecv_ch(i, &w, 4)), 4, "receive before acp_reset");
    CHECK_INT(acp_reset(nprocs - 1 - me), 0, "acp_reset to the reversed ranks");
    me = acp_rank();
    CHECK_INT(me, nprocs - 1 - acpt_me, "rank after acp_reset");
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    CHECK(acp_nbsend_ch(o, &v, 4) == NULL, "a channel from before acp_reset is refused");
    CHECK_INT(acp_free_ch(i), -1, "acp_free_ch of a channel from before acp_reset");
    o = acp_create_ch(me, next);
    i = acp_create_ch(prev, me);
    v = 1000u + (unsigned)me;
    CHECK_INT(acp_send_ch(o, &v, 4), 0, "send after acp_reset");
    CHECK_INT(acp_recv_ch(i, &w, 4), 4, "receive after acp_reset");
    CHECK_INT(w, 1000u + (unsigned)prev, "value after acp_reset");
    CHECK_INT(acp_free_ch(o), 0, "free after acp_reset");
    CHECK_INT(acp_free_ch(i), 0, "free after acp_reset");
}

static void leave_unwaited(void)
{
    /* Rank 0 sends to every other rank and never waits for its sends or
     * frees; the receivers wait for their messages only. */
    static uint8_t buf[300000];
    if (me == 0) {
        acpt_fill(buf, sizeof buf, 4242);
        for (int p = 1; p < nprocs; p++) {
            acp_ch_t c = acp_create_ch(0, p);
            acp_nbsend_ch(c, buf, 100);
            acp_nbsend_ch(c, buf, sizeof buf);
            CHECK(acp_nbfree_ch(c) != NULL, "unwaited acp_nbfree_ch to %d", p);
        }
    } else {
        acp_ch_t c = acp_create_ch(0, me);
        static uint8_t r[300000];
        CHECK_INT(acp_wait_ch(acp_nbrecv_ch(c, r, sizeof r)), 100, "first unwaited message");
        CHECK_INT(acp_wait_ch(acp_nbrecv_ch(c, r, sizeof r)), sizeof r, "second unwaited message");
        CHECK_FILL(r, sizeof r, 4242, "unwaited message data");
        CHECK(acp_nbfree_ch(c) != NULL, "receiver's unwaited acp_nbfree_ch");
    }
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_ch_free");
    me = acp_rank();
    nprocs = acp_procs();
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;
    pair_free_orders();
    free_before_receive();
    more_sends_than_receives();
    many_lifetimes();
    across_reset();
    leave_unwaited();
    return acpt_finish("t_ch_free");
}
