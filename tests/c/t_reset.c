/*
 * t_reset: acp_reset re-numbers the ranks.
 *
 * 1. Identity: acp_reset(acp_rank()) returns 0, keeps the rank, clears the
 *    starter memory, drops registrations, and the next handle is 1.
 * 2. Reverse: rank r asks for N-1-r. Afterwards acp_rank() is the new rank,
 *    starter memory is zero, handles restart at 1, and copies and atomics
 *    addressed with the new ranks reach the processes now holding them
 *    (every process writes its old rank into the slot of its new rank on
 *    every process; all check slot r == N-1-r).
 * 3. Not a permutation (everybody asks for 0; one asks for N; one asks for
 *    -1): -1 on every rank, and nothing changed: rank, starter contents,
 *    registrations, handle numbering.
 * 4. Reverse again: back to the original ranks.
 * 5. Operations still outstanding when acp_reset is called are completed
 *    first, not dropped: a put into the next rank's registered memory (which
 *    a reset does not clear), issued just before, has landed afterwards.
 *
 * Run with --acp-size-smem 4096.
 */
#include "acptest.h"

#define SMEM    4096
#define MAXP    64
#define PAT_LEN 2048          /* patterned part of the starter memory */
#define TAB_OFF 2048          /* slot r: old rank of the process that is now rank r */
#define CNT_OFF (TAB_OFF + 8 * MAXP)
#define SRC_OFF (CNT_OFF + 8) /* my old rank, the source of my puts */
#define RES_OFF (SRC_OFF + 8)

static int n, orig;
static uint8_t regbuf[256];

/* Writes a pattern into the starter memory and registers regbuf; returns
 * the key. Issues three operations, so the next handle is 4. */
static acp_atkey_t make_state(uint64_t seed)
{
    acpt_fill(acpt_starter(0), PAT_LEN, seed);
    acp_atkey_t key = acp_register_memory(regbuf, sizeof regbuf, 0);
    CHECK(key != ACP_ATKEY_NULL, "acp_register_memory");
    acp_ga_t st = acp_query_starter_ga(acp_rank());
    acp_ga_t rg = acp_query_ga(key, regbuf);
    for (int i = 0; i < 3; i++)
        CHECK(acp_copy(rg + 8 * (uint64_t)i, st + 8 * (uint64_t)i, 8, ACP_HANDLE_NULL) != ACP_HANDLE_NULL,
              "acp_copy before reset");
    acp_complete(ACP_HANDLE_ALL);
    return key;
}

/* After a successful reset: empty starter memory, no registrations, handles
 * from 1. */
static void check_fresh(const char *how, acp_atkey_t old_key, int want_rank)
{
    CHECK_INT(acp_rank(), want_rank, "acp_rank() after %s", how);
    CHECK_INT(acp_procs(), n, "acp_procs() after %s", how);
    CHECK_BYTES(acpt_starter(0), SMEM, 0, "starter memory after a reset");
    CHECK_HEX(acp_query_ga(old_key, regbuf), ACP_GA_NULL, "acp_query_ga(key from before %s)", how);
    CHECK_INT(acp_unregister_memory(old_key), -1, "acp_unregister_memory(key from before %s)", how);
    acp_ga_t st = acp_query_starter_ga(want_rank);
    CHECK_INT(acp_query_rank(st), want_rank, "acp_query_rank(acp_query_starter_ga(%d)) after %s", want_rank, how);
    CHECK(acp_query_address(st) != NULL, "acp_query_address(starter GA of my new rank %d) is NULL after %s",
          want_rank, how);
    for (int r = 0; r < n; r++)
        if (r != want_rank)
            CHECK(acp_query_address(acp_query_starter_ga(r)) == NULL,
                  "acp_query_address(starter GA of rank %d) is mine after %s", r, how);
    CHECK_INT(acp_copy(st + 8, st, 8, ACP_HANDLE_NULL), 1, "first handle after %s", how);
    acp_complete(ACP_HANDLE_ALL);
}

/* Every process writes its original rank into slot <new rank> on every
 * rank and adds 1 to a counter on rank 0 (new numbering). */
static void check_mapping(const char *how, int reversed)
{
    int me = acp_rank();
    uint64_t *src = acpt_starter(SRC_OFF);
    *src = (uint64_t)orig;
    memset(acpt_starter(TAB_OFF), 0xff, 8 * MAXP);
    *(uint64_t *)acpt_starter(CNT_OFF) = 0;
    CHECK_INT(acp_sync(), 0, "acp_sync");
    acp_ga_t mine = acp_query_starter_ga(me);
    for (int r = 0; r < n; r++)
        CHECK(acp_copy(acp_query_starter_ga(r) + TAB_OFF + 8 * (uint64_t)me, mine + SRC_OFF, 8, ACP_HANDLE_NULL) !=
                  ACP_HANDLE_NULL, "acp_copy to rank %d after %s", r, how);
    CHECK(acp_add8(mine + RES_OFF, acp_query_starter_ga(0) + CNT_OFF, 1, ACP_HANDLE_NULL) != ACP_HANDLE_NULL,
          "acp_add8 after %s", how);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    const uint64_t *tab = acpt_starter(TAB_OFF);
    for (int r = 0; r < n; r++) {
        /* The process now called r started as r (identity) or N-1-r. */
        int want = reversed ? n - 1 - r : r;
        CHECK_INT(tab[r], want, "after %s: original rank of the process that is now rank %d", how, r);
    }
    if (me == 0)
        CHECK_INT(*(uint64_t *)acpt_starter(CNT_OFF), n, "counter on the new rank 0 after %s", how);
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

/* A refused reset changes nothing. */
static void check_refused(const char *how, int request, acp_atkey_t key, uint64_t seed)
{
    int me = acp_rank();
    acp_handle_t before = acp_copy(acp_query_starter_ga(me) + PAT_LEN, acp_query_starter_ga(me) + PAT_LEN, 0,
                                   ACP_HANDLE_NULL);
    CHECK_INT(acp_reset(request), -1, "acp_reset(%d) when %s", request, how);
    CHECK_INT(acp_rank(), me, "acp_rank() after a refused reset (%s)", how);
    CHECK_INT(acp_procs(), n, "acp_procs() after a refused reset (%s)", how);
    CHECK_FILL(acpt_starter(0), PAT_LEN, seed, "starter memory after a refused reset");
    CHECK(acp_query_ga(key, regbuf) != ACP_GA_NULL, "registration lost by a refused reset (%s)", how);
    acp_handle_t h = acp_copy(acp_query_starter_ga(me) + PAT_LEN, acp_query_starter_ga(me) + PAT_LEN, 0,
                              ACP_HANDLE_NULL);
    CHECK_INT(h, before + 1, "handle after a refused reset (%s)", how);
    acp_complete(h);
    CHECK_INT(acp_sync(), 0, "acp_sync after a refused reset");
}

/* 5: puts issued just before an identity reset, never completed by the
 * program, land in the next rank's registered memory. */
static uint8_t landing[PAT_LEN];

static void check_outstanding(void)
{
    int me = acp_rank(), next = (me + 1) % n, prev = (me + n - 1) % n;
    memset(landing, 0, sizeof landing);
    acp_atkey_t key = acp_register_memory(landing, sizeof landing, 0);
    uint64_t *slot = acpt_starter(TAB_OFF);
    slot[0] = acp_query_ga(key, landing);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    WAIT(acp_copy(acp_query_starter_ga(me) + TAB_OFF + 8, acp_query_starter_ga(next) + TAB_OFF, 8,
                  ACP_HANDLE_NULL), "acp_copy of the next rank's GA");
    acp_ga_t theirs = slot[1];
    acpt_fill(acpt_starter(0), PAT_LEN, 500 + (uint64_t)me);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    for (int i = 0; i < 8; i++)
        CHECK(acp_copy(theirs + (uint64_t)i * (PAT_LEN / 8), acp_query_starter_ga(me) + (uint64_t)i * (PAT_LEN / 8),
                       PAT_LEN / 8, ACP_HANDLE_NULL) != ACP_HANDLE_NULL, "put %d before the reset", i);
    CHECK_INT(acp_reset(me), 0, "acp_reset(acp_rank()) with puts outstanding");
    CHECK_FILL(landing, sizeof landing, 500 + (uint64_t)prev,
               "my registered memory after the previous rank's outstanding puts and a reset");
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    orig = acp_rank();
    n = acp_procs();
    if (n > MAXP)
        FATAL("more than 64 ranks");
    acpt_need_smem(SMEM);

    acp_atkey_t key = make_state(100 + (uint64_t)orig);
    CHECK_INT(acp_reset(orig), 0, "acp_reset(acp_rank())");
    acpt_me = acp_rank();
    check_fresh("an identity reset", key, orig);
    check_mapping("an identity reset", 0);

    key = make_state(200 + (uint64_t)orig);
    int rev = n - 1 - orig;
    CHECK_INT(acp_reset(rev), 0, "acp_reset(%d) (reverse order)", rev);
    acpt_me = acp_rank();
    check_fresh("a reverse reset", key, rev);
    check_mapping("a reverse reset", 1);

    uint64_t seed = 300 + (uint64_t)orig;
    key = make_state(seed);
    if (n >= 2)
        check_refused("every rank asks for 0", 0, key, seed);
    check_refused("rank 0 asks for N", acp_rank() == 0 ? n : acp_rank(), key, seed);
    check_refused("the last rank asks for -1", acp_rank() == n - 1 ? -1 : acp_rank(), key, seed);
    CHECK_INT(acp_unregister_memory(key), 0, "unregister after refused resets");

    CHECK_INT(acp_reset(n - 1 - acp_rank()), 0, "acp_reset back to the original ranks");
    acpt_me = acp_rank();
    CHECK_INT(acp_rank(), orig, "acp_rank() after reversing twice");
    CHECK_BYTES(acpt_starter(0), SMEM, 0, "starter memory after the second reverse reset");
    check_mapping("reversing twice", 0);
    check_outstanding();
    return acpt_finish("t_reset");
}
