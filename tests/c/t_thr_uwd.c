/*
 * t_thr_uwd: handles used by some threads while another thread of the
 * same rank frees or destroys them (decisions.md #20: every function may
 * be called from several threads). Every call must either do its work or
 * fail with its documented error value; nothing may crash, hang or touch
 * freed memory.
 *
 * Each round, on every rank:
 *   workspaces  NT threads read and write a workspace while the main
 *               thread destroys it (collective);
 *   containers  NT threads push, query and insert into a vector, deque,
 *               list, set and map while the main thread destroys them;
 *   channels    (2 ranks or more) NT threads send, receive and wait, two
 *               of them on the same receive request, while the main thread
 *               frees both ends (acp_free_ch, or acp_nbfree_ch and wait);
 *   segbufs     (2 ranks or more) NT threads poll and ack a pair of
 *               segmented buffers while the main thread disconnects and
 *               frees them.
 * Results are checked against the values acp.h documents; messages that do
 * arrive must be intact. Run with ACP_VERBOSE=1 to see the refusals.
 */
#include <pthread.h>
#include <sched.h>

#include "acptest.h"
#include "thrtest.h"

#define NT 4
#define ROUNDS 40
#define OPS 60
#define MSG 40000

static int me, nprocs, next, prev;
static volatile int started; /* threads of the round that made their first call */

struct targ {
    int t;
    int failures;
    int ok, refused;
    uint8_t *buf;
    acp_ga_t ga; /* buf's GA */
};

static void mark_started(void) { __atomic_fetch_add(&started, 1, __ATOMIC_SEQ_CST); }

/* After a channel request r was posted as a thread's i-th operation: the
 * first marks the thread started, a refused one (NULL) is counted.
 * Whether there is a request to wait for. */
static int posted(struct targ *a, int i, acp_request_t r)
{
    if (i == 0)
        mark_started();
    if (r == NULL)
        a->refused++;
    return r != NULL;
}

/* Waits until every thread made a call, and a little more. */
static void wait_started(void)
{
    while (__atomic_load_n(&started, __ATOMIC_SEQ_CST) < NT)
        sched_yield();
    for (int i = 0; i < 200; i++)
        sched_yield();
}

static void run(struct targ *a, void *(*fn)(void *), void (*destroy)(void))
{
    pthread_t th[NT];
    started = 0;
    for (int t = 0; t < NT; t++)
        if (pthread_create(&th[t], NULL, fn, &a[t]) != 0)
            FATAL("pthread_create");
    wait_started();
    destroy();
    for (int t = 0; t < NT; t++)
        pthread_join(th[t], NULL);
}

/* ---- workspaces ---------------------------------------------------------- */

static acp_wsd_t wsd;

static void *ws_user(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < OPS; i++) {
        int rc = (i + a->t) % 2 ? acp_write_ws(wsd, a->ga, 512, (size_t)(i * 64) % 4096)
                                : acp_read_ws(wsd, a->ga, 512, (size_t)(i * 64) % 4096);
        if (i == 0)
            mark_started();
        if (rc == 0)
            a->ok++;
        else if (rc == 1)
            a->refused++;
        else
            TFAIL(a, "acp_read_ws/acp_write_ws returned %d (want 0 or 1)", rc);
    }
    return NULL;
}

static void ws_destroy(void) { acp_destroy_ws(wsd); }

/* ---- containers ------------------------------------------------------------ */

static acp_vector_t vec;
static acp_deque_t deq;
static acp_list_t lst;
static acp_set_t set;
static acp_map_t map;

/* The threads allocate nothing while the containers go: the vector and
 * deque have room reserved, the keys are in the set and map already, the
 * list is only read. A container handle is only a GA: once its blocks are
 * freed and allocated again, a call with the stale handle cannot be told
 * from one on the new block, and that is not what this tests. Freeing
 * alone writes the heap's own words into a control block, so a size read
 * with a stale handle may be anything (4294967297 for a list, in one run
 * of 30): sizes are read here for the race, not checked. And a write with a
 * stale handle writes into freed blocks (the heap broke in 1 run of 12):
 * the writes (pushes, inserts) hold dl_writes for reading and stop once
 * dl_destroy has set dl_gone, which it does holding it for writing before
 * it destroys; the reads race with the destruction. */
static pthread_rwlock_t dl_writes = PTHREAD_RWLOCK_INITIALIZER;
static int dl_gone;

/* Runs a write call unless the containers are going. */
#define DL_WRITE(call)                       \
    do {                                     \
        pthread_rwlock_rdlock(&dl_writes);   \
        if (!dl_gone) {                      \
            call;                            \
        }                                    \
        pthread_rwlock_unlock(&dl_writes);   \
    } while (0)

static void *dl_user(void *p)
{
    struct targ *a = p;
    uint64_t *v = (uint64_t *)a->buf;
    for (int i = 0; i < OPS; i++) {
        v[0] = (uint64_t)me << 32 | (uint64_t)a->t << 16 | (uint64_t)(i % 8); /* inserted before */
        v[1] = v[0] ^ 0x5555;
        acp_element_t key = { a->ga, 8 }, val = { a->ga + 8, 8 };
        acp_pair_t pair = { key, val };
        switch (i % 5) {
        case 0:
            DL_WRITE(acp_push_back_vector(vec, a->ga, 8));
            (void)acp_size_vector(vec);
            break;
        case 1:
            DL_WRITE(acp_push_back_deque(deq, a->ga, 8));
            (void)acp_size_deque(deq);
            break;
        case 2: {
            acp_list_it_t it = acp_begin_list(lst);
            if (it.elem != ACP_GA_NULL && it.elem != lst.ga) {
                /* {ACP_GA_NULL, 0} once the list is gone */
                acp_element_t e = acp_dereference_list_it(it);
                if (e.ga != ACP_GA_NULL ? e.size != 8 : e.size != 0)
                    TFAIL(a, "the list's first element is {%#" PRIx64 ", %zu}, want 8 bytes or {ACP_GA_NULL, 0}", e.ga, e.size);
            }
            (void)acp_size_list(lst);
            break;
        }
        case 3: {
            int rc = 0;
            DL_WRITE(rc = acp_insert_set(set, key));
            if (rc != 0 && rc != 1)
                TFAIL(a, "acp_insert_set returned %d", rc);
            acp_set_it_t it = acp_find_set(set, key);
            (void)it;
            break;
        }
        case 4: {
            int rc = 0;
            DL_WRITE(rc = acp_insert_map(map, pair));
            if (rc != 0 && rc != 1)
                TFAIL(a, "acp_insert_map returned %d", rc);
            (void)acp_size_map(map);
            break;
        }
        }
        if (i == 0)
            mark_started();
    }
    return NULL;
}

static void dl_destroy(void)
{
    pthread_rwlock_wrlock(&dl_writes);
    dl_gone = 1;
    pthread_rwlock_unlock(&dl_writes);
    acp_destroy_vector(vec);
    acp_destroy_deque(deq);
    acp_destroy_list(lst);
    acp_destroy_set(set);
    acp_destroy_map(map);
}

/* ---- channels ------------------------------------------------------------ */

static acp_ch_t ch_out, ch_in;
static int ch_round;
static acp_request_t shared_req; /* waited for by threads 2 and 3 */
static volatile int shared_posted;
static volatile int done[2]; /* shared receives threads 2 and 3 are done with */
static int shared_wins[OPS / 6]; /* of each shared request: waiters that got it */

static void *ch_user(void *p)
{
    struct targ *a = p;
    if (a->t == 0) { /* sender */
        for (int i = 0; i < OPS; i++) {
            size_t n = i % 3 == 2 ? MSG : 100;
            acpt_fill(a->buf, n, (uint64_t)me << 32 | (uint64_t)i);
            acp_request_t r = acp_nbsend_ch(ch_out, a->buf, n);
            if (!posted(a, i, r))
                continue;
            size_t got = acp_wait_ch(r);
            if (got == 0)
                a->ok++;
            else if (got == (size_t)-1)
                a->refused++;
            else
                TFAIL(a, "acp_wait_ch of a send returned %zu (want 0 or (size_t)-1)", got);
        }
        return NULL;
    }
    if (a->t == 1) { /* receiver */
        for (int i = 0; i < OPS; i++) {
            acp_request_t r = acp_nbrecv_ch(ch_in, a->buf, MSG);
            if (!posted(a, i, r))
                continue;
            size_t got = acp_wait_ch(r);
            if (got == (size_t)-1) {
                a->refused++;
            } else if (got != 100 && got != MSG) {
                TFAIL(a, "acp_wait_ch of a receive returned %zu (want 100, %d or (size_t)-1)", got, MSG);
            } else {
                a->ok++;
                uint64_t s = 0;
                /* Which message it was is not known (others may have been
                 * taken by the double waiters): its size and pattern start
                 * tell. */
                int found = 0;
                for (int k = 0; k < OPS && !found; k++) {
                    size_t n = k % 3 == 2 ? MSG : 100;
                    s = (uint64_t)prev << 32 | (uint64_t)k;
                    if (n == got && a->buf[0] == acpt_pat(s, 0) && a->buf[1] == acpt_pat(s, 1) &&
                        a->buf[got - 1] == acpt_pat(s, got - 1))
                        found = 1;
                }
                if (!found)
                    TFAIL(a, "a received message of %zu bytes is no message the sender sent", got);
            }
        }
        return NULL;
    }
    /* Threads 2 and 3 wait on one receive request at once: at most one
     * may get its message; the other gets (size_t)-1. */
    for (int i = 0; i < OPS / 6; i++) {
        if (a->t == 2) {
            shared_req = acp_nbrecv_ch(ch_in, a->buf, MSG);
            __atomic_store_n(&shared_posted, i + 1, __ATOMIC_SEQ_CST);
        } else {
            while (__atomic_load_n(&shared_posted, __ATOMIC_SEQ_CST) < i + 1)
                sched_yield();
        }
        acp_request_t r = shared_req;
        if (!posted(a, i, r))
            continue;
        size_t got = acp_wait_ch(r);
        if (got != (size_t)-1) {
            if (got != 100 && got != MSG)
                TFAIL(a, "acp_wait_ch of a shared receive returned %zu", got);
            __atomic_fetch_add(&shared_wins[i], 1, __ATOMIC_SEQ_CST);
            a->ok++;
        } else {
            a->refused++;
        }
        /* Both waited before the next receive is posted. */
        __atomic_store_n(&done[a->t - 2], i + 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&done[3 - a->t], __ATOMIC_SEQ_CST) < i + 1)
            sched_yield();
    }
    return NULL;
}

static void ch_destroy(void)
{
    if (ch_round % 2) {
        if (acp_free_ch(ch_out) != 0)
            FAIL("round %d: acp_free_ch of the sender's end failed", ch_round);
        if (acp_free_ch(ch_in) != 0)
            FAIL("round %d: acp_free_ch of the receiver's end failed", ch_round);
    } else {
        acp_request_t r1 = acp_nbfree_ch(ch_out), r2 = acp_nbfree_ch(ch_in);
        if (r1 == NULL || r2 == NULL)
            FAIL("round %d: acp_nbfree_ch failed", ch_round);
        if ((r1 != NULL && acp_wait_ch(r1) != 0) || (r2 != NULL && acp_wait_ch(r2) != 0))
            FAIL("round %d: acp_wait_ch of acp_nbfree_ch failed", ch_round);
    }
}

/* ---- segmented buffers ----------------------------------------------------- */

static acp_segbuf_t sseg, dseg;

static void *seg_user(void *p)
{
    struct targ *a = p;
    for (int i = 0; i < OPS; i++) {
        acp_segbuf_t s = (i + a->t) % 2 ? sseg : dseg;
        int rc;
        int64_t q;
        switch ((i + a->t) % 6) {
        case 0: rc = acp_isconnected_segbuf(s); break;
        case 1: rc = acp_isready_segbuf(sseg); break;
        case 2: rc = acp_isacked_segbuf(dseg); break;
        case 3: rc = acp_ack_segbuf(sseg); break;
        case 4: rc = acp_ready_segbuf(dseg); break;
        default:
            q = acp_query_segbuf_head(s);
            rc = q >= 0 ? 0 : (int)q;
            break;
        }
        if (i == 0)
            mark_started();
        if (rc == 0 || rc == 1)
            a->ok++;
        else if (rc == -1)
            a->refused++;
        else
            TFAIL(a, "a segmented-buffer call returned %d (want 0, 1 or -1)", rc);
    }
    return NULL;
}

static void seg_destroy(void)
{
    if (acp_disconnect_segbuf(sseg) != 0 || acp_disconnect_segbuf(dseg) != 0)
        FAIL("acp_disconnect_segbuf failed");
    if (acp_free_segbuf(sseg) != 0 || acp_free_segbuf(dseg) != 0)
        FAIL("acp_free_segbuf failed");
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    next = (me + 1) % nprocs;
    prev = (me + nprocs - 1) % nprocs;

    struct targ a[NT];
    memset(a, 0, sizeof a);
    for (int t = 0; t < NT; t++) {
        a[t].t = t;
        a[t].buf = malloc(2 * MSG);
        acp_atkey_t k = acp_register_memory(a[t].buf, 2 * MSG, 0);
        if (k == ACP_ATKEY_NULL)
            FATAL("acp_register_memory");
        a[t].ga = acp_query_ga(k, a[t].buf);
    }
    uint8_t *sb = malloc(4 * 1000), *db = malloc(4 * 1000);
    double t0 = acpt_now();

    for (int round = 0; round < ROUNDS; round++) {
        wsd = acp_create_ws(4096);
        if (wsd == ACP_WSD_NULL)
            FATAL("acp_create_ws");
        run(a, ws_user, ws_destroy);
        acp_sync();

        int on = (me + round) % nprocs;
        dl_gone = 0; /* no thread runs: they start after this */
        vec = acp_create_vector(0, on);
        deq = acp_create_deque(0, on);
        lst = acp_create_list(on);
        set = acp_create_set(1, &on, 7, me);
        map = acp_create_map(1, &on, 7, me);
        if (vec.ga == ACP_GA_NULL || deq.ga == ACP_GA_NULL || lst.ga == ACP_GA_NULL || set.ga == ACP_GA_NULL || map.ga == ACP_GA_NULL)
            FATAL("acp_create_* of a container");
        acp_reserve_vector(vec, (size_t)NT * OPS * 8);
        acp_reserve_deque(deq, (size_t)NT * OPS * 8);
        {
            uint64_t *v = (uint64_t *)a[0].buf;
            for (int t = 0; t < NT; t++)
                for (int k = 0; k < 8; k++) {
                    v[0] = (uint64_t)me << 32 | (uint64_t)t << 16 | (uint64_t)k;
                    v[1] = v[0] ^ 0x5555;
                    acp_element_t key = { a[0].ga, 8 }, val = { a[0].ga + 8, 8 };
                    acp_pair_t pair = { key, val };
                    if (acp_insert_set(set, key) != 1 || acp_insert_map(map, pair) != 1)
                        FAIL("round %d: inserting key %d of thread %d before the race failed", round, k, t);
                    if (k == 0)
                        acp_push_back_list(lst, key, on);
                }
        }
        run(a, dl_user, dl_destroy);
        acp_sync();

        if (nprocs >= 2) {
            ch_round = round;
            shared_posted = done[0] = done[1] = 0;
            ch_out = acp_create_ch(me, next);
            ch_in = acp_create_ch(prev, me);
            if (ch_out == NULL || ch_in == NULL)
                FATAL("acp_create_ch");
            memset(shared_wins, 0, sizeof shared_wins);
            run(a, ch_user, ch_destroy);
            for (int i = 0; i < OPS / 6; i++)
                CHECK(shared_wins[i] <= 1, "round %d: both waiters of shared receive %d got its message", round, i);
            acp_sync();

            sseg = acp_create_src_segbuf(next, sb, 1000, 4);
            dseg = acp_create_dst_segbuf(prev, db, 1000, 4);
            if (sseg == NULL || dseg == NULL)
                FATAL("acp_create_*_segbuf");
            if (acp_connect_segbuf(sseg) != 0 || acp_connect_segbuf(dseg) != 0)
                FAIL("acp_connect_segbuf failed");
            run(a, seg_user, seg_destroy);
            acp_sync();
        }
    }

    int ok = 0, refused = 0;
    for (int t = 0; t < NT; t++) {
        CHECK_INT(a[t].failures, 0, "failures of thread %d", t);
        ok += a[t].ok;
        refused += a[t].refused;
    }
    printf("rank %d: %d calls succeeded, %d refused in %.1f s\n", me, ok, refused, acpt_now() - t0);
    return acpt_finish("t_thr_uwd");
}
