/*
 * t_thr_ch: channels used by several threads of every rank at once
 * (decisions.md #20: every function may be called from several threads).
 *
 * Every rank sends to the next rank and receives from the previous one,
 * with 4 threads, each on channels of its own to the same two peers.
 *
 * Phase 1: the main thread creates the channels (thread t's are the t-th
 * between each pair), then each thread posts a send and a receive of
 * sizes from 0 bytes to rendezvous messages of 200 KB, waits for both and
 * checks every byte against the pattern of the sending rank, thread and
 * message. The threads share the library's channel tables, the fast path's
 * blocks, the registrations of rendezvous buffers and the peers'
 * mailboxes; a message of the wrong thread, a lost or a repeated one
 * shows as a pattern mismatch or a wrong size.
 *
 * Phase 2: each thread creates its two channels itself, all at once. Which
 * thread of the peer meets which is then a matter of timing, so each
 * message names its sender's thread and number: a receiver must see one
 * sender thread, in order, and the receivers of a rank must together see
 * every sender thread of the previous rank exactly once. Then every thread
 * frees its channels while the others still use theirs.
 *
 * Phase 3: one channel each way shared by all threads: every thread sends
 * its messages on the same sender end and receives on the same receiver
 * end at once. Every message must arrive exactly once and intact, and
 * each receiving thread must see each sending thread's messages in the
 * order they were sent (receives are matched in the order posted).
 *
 * Phase 4: segmented buffers, created by the main thread, one pair per
 * thread: each thread streams segments to the next rank and takes those of
 * the previous one, all threads at once, every segment checked; then each
 * thread disconnects and frees its two while the others still stream.
 *
 * Needs 2 ranks (a channel joins two ranks); run with --acp-size-smem 4096.
 */
#include <pthread.h>
#include <sched.h>

#include "acptest.h"
#include "thrtest.h"

#define NT 4
#define M 40
#define MAXMSG 200000

static int me, nprocs, next, prev;
static const size_t sizes[] = { 0, 1, 100, 4000, 4103, 16384, 16385, 40000, 200000, 8 };
#define NSIZES (sizeof sizes / sizeof sizes[0])

static unsigned seen_senders; /* phase 2: sender threads seen by my receivers */
static acp_ch_t shared_out, shared_in; /* phase 3 */
static int received[NT][M];            /* phase 3: times message [t][i] arrived */

struct targ {
    int t;
    int failures;
    acp_ch_t out, in;
    acp_segbuf_t sseg, dseg; /* phase 4 */
    uint8_t *sbuf, *rbuf;
};

static uint64_t seed(int rank, int t, int i) { return (uint64_t)rank << 40 | (uint64_t)t << 32 | (uint64_t)i; }

static size_t size_of(int i) { return sizes[i % NSIZES]; }

static int check_pattern(const uint8_t *p, size_t n, uint64_t s)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != acpt_pat(s, i))
            return 0;
    return 1;
}

/* One message each way on the thread's channels; hdr: the first 16 bytes
 * carry {thread, number} (phase 2). */
static void exchange(struct targ *a, int i, int hdr, int *sender)
{
    size_t n = size_of(i);
    if (hdr && n < 16)
        n = 16;
    acpt_fill(a->sbuf, n, seed(me, a->t, i));
    if (hdr) {
        uint64_t h[2] = { (uint64_t)a->t, (uint64_t)i };
        memcpy(a->sbuf, h, 16);
    }
    memset(a->rbuf, 0xee, n + 1);
    acp_request_t r = acp_nbrecv_ch(a->in, a->rbuf, MAXMSG);
    acp_request_t s = acp_nbsend_ch(a->out, a->sbuf, n);
    if (r == NULL || s == NULL) {
        TFAIL(a, "message %d: nbrecv %p, nbsend %p", i, (void *)r, (void *)s);
        return;
    }
    size_t got = acp_wait_ch(r);
    if (acp_wait_ch(s) != 0)
        TFAIL(a, "message %d: acp_wait_ch of the send failed", i);
    if (got != n) {
        TFAIL(a, "message %d: received %zu bytes, want %zu", i, got, n);
        return;
    }
    int from = a->t;
    if (hdr) {
        uint64_t h[2];
        memcpy(h, a->rbuf, 16);
        if (h[1] != (uint64_t)i || h[0] >= NT || (*sender >= 0 && h[0] != (uint64_t)*sender)) {
            TFAIL(a, "message %d: header names thread %" PRIu64 " message %" PRIu64 " (first sender %d)", i, h[0], h[1], *sender);
            return;
        }
        from = *sender = (int)h[0];
        uint8_t save[16];
        acpt_fill(save, 16, seed(prev, from, i));
        memcpy(a->rbuf, save, 16);
    }
    if (!check_pattern(a->rbuf, n, seed(prev, from, i)))
        TFAIL(a, "message %d of %zu bytes from rank %d thread %d: wrong bytes", i, n, prev, from);
    if (a->rbuf[n] != 0xee)
        TFAIL(a, "message %d: the receive wrote beyond the message", i);
}

static void *phase1(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < M; i++)
        exchange(a, i, 0, NULL);
    return NULL;
}

static void *phase2(void *p)
{
    struct targ *a = p;
    /* Only the sends of the (prev, me) pair and the receives of (me, next)
     * need ordering between threads, which nobody gives: see above. */
    a->out = acp_create_ch(me, next);
    a->in = acp_create_ch(prev, me);
    if (a->out == NULL || a->in == NULL) {
        TFAIL(a, "acp_create_ch in a thread failed");
        return NULL;
    }
    int sender = -1;
    for (int i = 0; i < M; i++)
        exchange(a, i, 1, &sender);
    if (sender >= 0)
        __atomic_fetch_or(&seen_senders, 1u << sender, __ATOMIC_RELAXED);
    if (acp_free_ch(a->out) != 0 || acp_free_ch(a->in) != 0)
        TFAIL(a, "acp_free_ch failed");
    return NULL;
}

static void *phase3(void *p)
{
    struct targ *a = p;
    int last[NT];
    for (int t = 0; t < NT; t++)
        last[t] = -1;
    for (int i = 0; i < M; i++) {
        size_t n = size_of(i) < 16 ? 16 : size_of(i);
        acpt_fill(a->sbuf, n, seed(me, a->t, i));
        uint64_t h[2] = { (uint64_t)a->t, (uint64_t)i };
        memcpy(a->sbuf, h, 16);
        acp_request_t r = acp_nbrecv_ch(shared_in, a->rbuf, MAXMSG);
        acp_request_t s = acp_nbsend_ch(shared_out, a->sbuf, n);
        if (r == NULL || s == NULL) {
            TFAIL(a, "shared channel, message %d: nbrecv %p, nbsend %p", i, (void *)r, (void *)s);
            continue;
        }
        size_t got = acp_wait_ch(r);
        if (acp_wait_ch(s) != 0)
            TFAIL(a, "shared channel, message %d: acp_wait_ch of the send failed", i);
        memcpy(h, a->rbuf, 16);
        if (got < 16 || h[0] >= NT || h[1] >= M) {
            TFAIL(a, "shared channel, receive %d: %zu bytes, header {%" PRIu64 ", %" PRIu64 "}", i, got, h[0], h[1]);
            continue;
        }
        int t = (int)h[0], k = (int)h[1];
        __atomic_fetch_add(&received[t][k], 1, __ATOMIC_RELAXED);
        if (k <= last[t])
            TFAIL(a, "shared channel: message %d of thread %d came after its message %d", k, t, last[t]);
        last[t] = k;
        size_t want = size_of(k) < 16 ? 16 : size_of(k);
        uint8_t save[16];
        acpt_fill(save, 16, seed(prev, t, k));
        memcpy(a->rbuf, save, 16);
        if (got != want || !check_pattern(a->rbuf, want, seed(prev, t, k)))
            TFAIL(a, "shared channel: message %d of rank %d thread %d: %zu bytes (want %zu) or wrong bytes", k, prev, t, got, want);
    }
    return NULL;
}

#define SEG 1000
#define NSEG 4
#define NSTREAM 200

static uint8_t segbyte(int from, int t, int k, int i) { return (uint8_t)(from * 31 + t * 101 + k * 7 + i); }

static void *phase4(void *p)
{
    struct targ *a = p;
    uint8_t *sb = a->sbuf, *db = a->rbuf; /* registered by the segmented buffers */
    acp_segbuf_t s = a->sseg, d = a->dseg;
    if (acp_connect_segbuf(s) != 0 || acp_connect_segbuf(d) != 0) {
        TFAIL(a, "acp_connect_segbuf failed");
        return NULL;
    }
    int sent = 0, got = 0, bad = 0;
    double t0 = acpt_now();
    while ((sent < NSTREAM || got < NSTREAM) && acpt_now() - t0 < 60) {
        if (sent < NSTREAM && acp_isready_segbuf(s) == 0) {
            uint8_t *seg = sb + (size_t)(sent % NSEG) * SEG;
            for (int i = 0; i < SEG; i++)
                seg[i] = segbyte(me, a->t, sent, i);
            if (acp_ack_segbuf(s) != 0)
                bad++;
            sent++;
        }
        if (got < NSTREAM && acp_isacked_segbuf(d) == 0) {
            const uint8_t *seg = db + (size_t)(got % NSEG) * SEG;
            for (int i = 0; i < SEG; i++)
                if (seg[i] != segbyte(prev, a->t, got, i)) {
                    TFAIL(a, "segment %d from rank %d: byte %d is %u, want %u", got, prev, i, seg[i], segbyte(prev, a->t, got, i));
                    break;
                }
            if (acp_ready_segbuf(d) != 0)
                bad++;
            got++;
        }
        if (acp_isready_segbuf(s) != 0 && acp_isacked_segbuf(d) != 0)
            sched_yield();
    }
    if (got != NSTREAM || sent != NSTREAM || bad != 0)
        TFAIL(a, "segmented buffers: %d segments sent, %d received of %d, %d calls failed", sent, got, NSTREAM, bad);
    if (acp_disconnect_segbuf(s) != 0 || acp_disconnect_segbuf(d) != 0)
        TFAIL(a, "acp_disconnect_segbuf failed");
    if (acp_free_segbuf(s) != 0 || acp_free_segbuf(d) != 0)
        TFAIL(a, "acp_free_segbuf failed");
    return NULL;
}

static void run(struct targ *a, void *(*fn)(void *)) { run_threads(a, sizeof *a, NT, fn); }

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_thr_ch");
    me = acp_rank();
    nprocs = acp_procs();
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;

    struct targ a[NT];
    memset(a, 0, sizeof a);
    for (int t = 0; t < NT; t++) {
        a[t].t = t;
        a[t].sbuf = malloc(MAXMSG + 1);
        a[t].rbuf = malloc(MAXMSG + 1);
        a[t].out = acp_create_ch(me, next);
        a[t].in = acp_create_ch(prev, me);
        if (a[t].out == NULL || a[t].in == NULL)
            FATAL("acp_create_ch");
    }
    run(a, phase1);
    for (int t = 0; t < NT; t++)
        CHECK_INT(acp_free_ch(a[t].out) | acp_free_ch(a[t].in), 0, "acp_free_ch of thread %d's channels", t);
    acp_sync();

    run(a, phase2);
    CHECK_HEX(seen_senders, (1u << NT) - 1, "sender threads whose channels met my threads' receivers");
    acp_sync();

    shared_out = acp_create_ch(me, next);
    shared_in = acp_create_ch(prev, me);
    if (shared_out == NULL || shared_in == NULL)
        FATAL("acp_create_ch");
    run(a, phase3);
    for (int t = 0; t < NT; t++)
        for (int i = 0; i < M; i++)
            CHECK_INT(received[t][i], 1, "shared channel: times message %d of thread %d arrived", i, t);
    CHECK_INT(acp_free_ch(shared_out) | acp_free_ch(shared_in), 0, "acp_free_ch of the shared channels");
    acp_sync();

    for (int t = 0; t < NT; t++) {
        a[t].sseg = acp_create_src_segbuf(next, a[t].sbuf, SEG, NSEG);
        a[t].dseg = acp_create_dst_segbuf(prev, a[t].rbuf, SEG, NSEG);
        if (a[t].sseg == NULL || a[t].dseg == NULL)
            FATAL("acp_create_*_segbuf");
    }
    run(a, phase4);
    acp_sync();

    for (int t = 0; t < NT; t++) {
        CHECK_INT(a[t].failures, 0, "failures of thread %d", t);
        free(a[t].sbuf);
        free(a[t].rbuf);
    }
    return acpt_finish("t_thr_ch");
}
