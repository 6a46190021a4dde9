/*
 * t_starter: starter memory and the GA queries.
 *
 * acp_query_starter_ga for every rank (non-zero, distinct, owned by that
 * rank, colour 0) and for invalid ranks (ACP_GA_NULL); starter memory is
 * zero at start; acp_query_address of my starter GA gives my memory,
 * linearly, and is NULL for other ranks, ACP_GA_NULL and GAs past the end;
 * acp_query_rank/acp_query_color give -1 for ACP_GA_NULL and for values
 * that cannot be GAs; acp_colors() >= 1.
 */
#include <limits.h>

#include "acptest.h"

#define SMEM 4096 /* run with --acp-size-smem 4096 */

/* Values with a zero rank field: every valid GA carries rank + 1 in its top
 * bits (spec 1.2), so small integers are never GAs. */
static const acp_ga_t garbage[] = { 1, 2, 0x1234, 0xffff, 0xffffffffull };

static void check_starter_gas(int me, int n)
{
    for (int r = 0; r < n; r++) {
        acp_ga_t ga = acp_query_starter_ga(r);
        CHECK(ga != ACP_GA_NULL, "acp_query_starter_ga(%d) is ACP_GA_NULL", r);
        CHECK_INT(acp_query_rank(ga), r, "acp_query_rank(acp_query_starter_ga(%d))", r);
        CHECK_INT(acp_query_color(ga), 0, "acp_query_color(acp_query_starter_ga(%d))", r);
        CHECK_INT(acp_query_rank(ga + SMEM - 1), r, "acp_query_rank(starter(%d) + %d)", r, SMEM - 1);
        CHECK_HEX(acp_query_starter_ga(r), ga, "acp_query_starter_ga(%d) is stable", r);
        for (int q = 0; q < r; q++)
            CHECK(acp_query_starter_ga(q) != ga, "starter GAs of ranks %d and %d are equal (0x%" PRIx64 ")",
                  q, r, ga);
        if (r != me)
            CHECK(acp_query_address(ga) == NULL, "acp_query_address(starter GA of rank %d) is not NULL", r);
    }
    const int bad[] = { -1, -2, n, n + 1, INT_MAX, INT_MIN };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_HEX(acp_query_starter_ga(bad[i]), ACP_GA_NULL, "acp_query_starter_ga(%d)", bad[i]);
}

static void check_own_starter(int me)
{
    acp_ga_t ga = acp_query_starter_ga(me);
    uint8_t *p = acp_query_address(ga);
    CHECK(p != NULL, "acp_query_address(own starter GA) is NULL");
    if (p == NULL)
        return;
    CHECK_BYTES(p, SMEM, 0, "starter memory at start");
    const size_t offs[] = { 1, 7, 8, 100, 1023, SMEM - 1 };
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++)
        CHECK(acp_query_address(ga + offs[i]) == p + offs[i],
              "acp_query_address(starter + %zu) is not p + %zu", offs[i], offs[i]);
    /* Far beyond any starter memory this test asks for. */
    CHECK(acp_query_address(ga + (1ull << 36)) == NULL, "acp_query_address(starter + 2^36) is not NULL");
    /* The memory is ours to write. */
    memset(p, 0x5a, SMEM);
    CHECK_BYTES(p, SMEM, 0x5a, "starter memory after memset");
}

static void check_invalid_gas(void)
{
    CHECK_INT(acp_query_rank(ACP_GA_NULL), -1, "acp_query_rank(ACP_GA_NULL)");
    CHECK_INT(acp_query_color(ACP_GA_NULL), -1, "acp_query_color(ACP_GA_NULL)");
    CHECK(acp_query_address(ACP_GA_NULL) == NULL, "acp_query_address(ACP_GA_NULL) is not NULL");
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        CHECK_INT(acp_query_rank(garbage[i]), -1, "acp_query_rank(0x%" PRIx64 ")", garbage[i]);
        CHECK_INT(acp_query_color(garbage[i]), -1, "acp_query_color(0x%" PRIx64 ")", garbage[i]);
        CHECK(acp_query_address(garbage[i]) == NULL, "acp_query_address(0x%" PRIx64 ") is not NULL",
              garbage[i]);
    }
    int c = acp_colors();
    CHECK(c >= 1, "acp_colors() = %d, want >= 1", c);
    CHECK_INT(acp_colors(), c, "acp_colors() is stable");
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    int me = acp_rank(), n = acp_procs();
    acpt_need_smem(SMEM);
    /* Checked before anybody writes anything: zero at start. */
    check_own_starter(me);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    check_starter_gas(me, n);
    check_invalid_gas();
    return acpt_finish("t_starter");
}
