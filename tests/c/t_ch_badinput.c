/*
 * t_ch_badinput: bad input to the channel calls gets the documented error
 * value (NULL, -1, (size_t)-1) and, with ACP_VERBOSE=1, a line on stderr -
 * never a crash or a hang.
 *
 * - before acp_init and after acp_finalize;
 * - NULL, garbage and stale (freed) channel and request handles;
 * - ranks out of range, sender == receiver, a caller that is neither;
 * - the wrong end (receive on the sender's end and vice versa), a NULL
 *   buffer with a size, a range that wraps around memory;
 * - a request waited for twice; acp_waitall_ch with a NULL array, a
 *   negative count, a NULL entry among good ones.
 *
 *     acprun -np N t_ch_badinput          (any N; more checks with N >= 2)
 */
#include <limits.h>

#include "acptest.h"

int acp_send_ch(acp_ch_t ch, void *buf, size_t size);
int acp_recv_ch(acp_ch_t ch, void *buf, size_t size);

#define BAD ((size_t)-1)

static int me, nprocs;

static void not_running(const char *when)
{
    uint64_t x = 0;
    CHECK(acp_create_ch(0, 1) == NULL, "%s: acp_create_ch", when);
    CHECK_HEX(acp_wait_ch(NULL), BAD, "%s: acp_wait_ch(NULL)", when);
    CHECK(acp_nbsend_ch((acp_ch_t)(uintptr_t)0x100000001, &x, 8) == NULL, "%s: acp_nbsend_ch", when);
    CHECK_INT(acp_free_ch((acp_ch_t)(uintptr_t)0x100000001), -1, "%s: acp_free_ch", when);
    CHECK_INT(acp_waitall_ch(NULL, 0, NULL), -1, "%s: acp_waitall_ch", when);
    CHECK(acp_create_src_segbuf(1, &x, 8, 1) == NULL, "%s: acp_create_src_segbuf", when);
}

static void handles(void)
{
    uint64_t x = 0;
    acp_ch_t garbage[] = {NULL, (acp_ch_t)(uintptr_t)1, (acp_ch_t)(uintptr_t)0x12345, (acp_ch_t)(uintptr_t)0xdeadbeef00000007ull};
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        acp_ch_t c = garbage[i];
        CHECK(acp_nbsend_ch(c, &x, 8) == NULL, "acp_nbsend_ch(%p)", (void *)c);
        CHECK(acp_nbrecv_ch(c, &x, 8) == NULL, "acp_nbrecv_ch(%p)", (void *)c);
        CHECK(acp_nbfree_ch(c) == NULL, "acp_nbfree_ch(%p)", (void *)c);
        CHECK_INT(acp_free_ch(c), -1, "acp_free_ch(%p)", (void *)c);
        CHECK_INT(acp_send_ch(c, &x, 8), -1, "acp_send_ch(%p)", (void *)c);
        CHECK_INT(acp_recv_ch(c, &x, 8), -1, "acp_recv_ch(%p)", (void *)c);
        CHECK_HEX(acp_wait_ch((acp_request_t)c), BAD, "acp_wait_ch(%p)", (void *)c);
    }
    CHECK_INT(acp_waitall_ch(NULL, 0, NULL), 0, "acp_waitall_ch of nothing");
    size_t sz[2] = {7, 7};
    CHECK_INT(acp_waitall_ch(NULL, 2, sz), -1, "acp_waitall_ch(NULL, 2, ...)");
    acp_request_t none[1] = {NULL};
    CHECK_INT(acp_waitall_ch(none, -1, sz), -1, "acp_waitall_ch with a negative count");
    CHECK_INT(acp_waitall_ch(none, 1, sz), -1, "acp_waitall_ch of a NULL request");
    CHECK_HEX(sz[0], BAD, "acp_waitall_ch result of a NULL request");
}

static void ranks(void)
{
    int cases[][2] = {{-1, 0}, {0, -1}, {0, nprocs}, {nprocs, 0}, {INT_MAX, 0}, {INT_MIN, 0}, {me, me}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        CHECK(acp_create_ch(cases[i][0], cases[i][1]) == NULL, "acp_create_ch(%d, %d)", cases[i][0], cases[i][1]);
    if (nprocs >= 3) {
        int a = (me + 1) % nprocs, b = (me + 2) % nprocs;
        CHECK(acp_create_ch(a, b) == NULL, "acp_create_ch(%d, %d) on rank %d, which is neither", a, b, me);
    }
}

static void ends(void)
{
    int next = (me + 1) % nprocs, prev = (me + nprocs - 1) % nprocs;
    acp_ch_t o = acp_create_ch(me, next), in = acp_create_ch(prev, me);
    CHECK(o != NULL && in != NULL, "acp_create_ch");
    uint64_t x = 5, y = 0;
    CHECK(acp_nbrecv_ch(o, &y, 8) == NULL, "acp_nbrecv_ch on the sender's end");
    CHECK(acp_nbsend_ch(in, &x, 8) == NULL, "acp_nbsend_ch on the receiver's end");
    CHECK(acp_nbsend_ch(o, NULL, 8) == NULL, "acp_nbsend_ch of 8 bytes from NULL");
    CHECK(acp_nbrecv_ch(in, NULL, 8) == NULL, "acp_nbrecv_ch of 8 bytes into NULL");
    CHECK(acp_nbsend_ch(o, (void *)(uintptr_t)4096, SIZE_MAX) == NULL, "acp_nbsend_ch of a range that wraps");

    /* A 0-byte message from and into NULL is fine. */
    acp_request_t s = acp_nbsend_ch(o, NULL, 0);
    CHECK(s != NULL, "acp_nbsend_ch(NULL, 0)");
    acp_request_t r = acp_nbrecv_ch(in, NULL, 0);
    CHECK(r != NULL, "acp_nbrecv_ch(NULL, 0)");
    CHECK_INT(acp_wait_ch(r), 0, "0-byte receive");
    CHECK_INT(acp_wait_ch(s), 0, "0-byte send");
    CHECK_HEX(acp_wait_ch(s), BAD, "a send request waited for twice");
    CHECK_HEX(acp_wait_ch(r), BAD, "a receive request waited for twice");

    /* acp_waitall_ch: one bad entry among good ones. */
    acp_request_t q[3];
    q[0] = acp_nbsend_ch(o, &x, 8);
    q[1] = NULL;
    q[2] = acp_nbrecv_ch(in, &y, 8);
    size_t sz[3] = {1, 1, 1};
    CHECK_INT(acp_waitall_ch(q, 3, sz), -1, "acp_waitall_ch with a NULL entry");
    CHECK_INT(sz[0], 0, "acp_waitall_ch: the send");
    CHECK_HEX(sz[1], BAD, "acp_waitall_ch: the NULL entry");
    CHECK_INT(sz[2], 8, "acp_waitall_ch: the receive");
    CHECK_INT(y, 5, "acp_waitall_ch: received value");
    CHECK_HEX(acp_wait_ch(q[0]), BAD, "a request already waited for by acp_waitall_ch");

    /* Stale handles after the free. */
    CHECK_INT(acp_free_ch(o), 0, "acp_free_ch(sender's end)");
    CHECK_INT(acp_free_ch(in), 0, "acp_free_ch(receiver's end)");
    CHECK(acp_nbsend_ch(o, &x, 8) == NULL, "acp_nbsend_ch on a freed channel");
    CHECK(acp_nbrecv_ch(in, &y, 8) == NULL, "acp_nbrecv_ch on a freed channel");
    CHECK_INT(acp_free_ch(o), -1, "acp_free_ch of a freed channel");
    CHECK(acp_nbfree_ch(in) == NULL, "acp_nbfree_ch of a freed channel");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    not_running("before acp_init");
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    handles();
    ranks();
    if (nprocs >= 2)
        ends();
    acp_sync();
    if (acp_finalize() != 0)
        FAIL("acp_finalize returned non-zero");
    not_running("after acp_finalize");
    if (acpt_failures)
        printf("rank %d: t_ch_badinput: %d of %ld checks FAILED\n", me, acpt_failures, acpt_checks);
    else
        printf("rank %d: t_ch_badinput: all %ld checks passed\n", me, acpt_checks);
    return acpt_failures ? 1 : 0;
}
