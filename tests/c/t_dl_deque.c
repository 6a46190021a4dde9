/*
 * t_dl_deque: every deque function. Control block {body, offset, size,
 * capacity} read as the original test_acpdl_deque does (spec B.2), the
 * content walked through the ring; create(24) gives size 0 and capacity
 * 24; growth to exactly the bytes needed; push_front/pop_front move the
 * offset and wrap; insert and erase in place with a non-zero offset (Q-DL-3
 * fixed); begin is logical index 0; dereference gives the two pieces of a
 * wrapped range. Each rank at once, on deques of other ranks, with values
 * from a third rank. Bad input changes nothing.
 */
#include "dltest.h"

static int me, np;

struct dq { uint64_t body, off, size, cap; };

static struct dq cb(acp_deque_t d)
{
    struct dq c;
    memcpy(&c, acp_query_rank(d.ga) == me ? acp_query_address(d.ga) : dlt_read(d.ga, 32), 32);
    return c;
}

/* The logical content as ints, walked through the ring (B.2). */
static int content(acp_deque_t d, int *out)
{
    struct dq c = cb(d);
    int n = (int)(c.size / 4);
    for (int i = 0; i < n && i < 64; i++)
        out[i] = dlt_int(c.body + (c.off + 4 * (uint64_t)i) % c.cap);
    return n;
}

#define CHECK_DQ(d, what, ...)                                                         \
    do {                                                                               \
        const int w_[] = { __VA_ARGS__ };                                              \
        int g_[64];                                                                    \
        int n_ = content((d), g_);                                                     \
        CHECK_INT(n_, sizeof w_ / sizeof w_[0], "%s: number of ints", (what));          \
        for (size_t i_ = 0; i_ < sizeof w_ / sizeof w_[0] && (int)i_ < n_; i_++)       \
            CHECK_INT(g_[i_], w_[i_], "%s: int %zu", (what), i_);                       \
    } while (0)

static void scenario(int R, int R2, int S)
{
    acp_deque_t d = acp_create_deque(24, R);
    CHECK(d.ga != ACP_GA_NULL, "acp_create_deque(24, %d)", R);
    struct dq c = cb(d);
    CHECK_INT(c.size, 0, "create(24): size");
    CHECK_INT(c.cap, 24, "create(24): capacity");
    CHECK_INT(c.off, 0, "create(24): offset");
    CHECK_INT(acp_query_rank(c.body), R, "body on the deque's rank");
    CHECK_INT(acp_empty_deque(d), 1, "empty after create");
    for (int i = 0; i < 7; i++)
        acp_push_back_deque(d, dlt_val(S, 100 + i), 4);
    CHECK_INT(acp_capacity_deque(d), 28, "capacity grows to exactly the size needed");
    CHECK_INT(acp_size_deque(d), 28, "size after 7 push_back");
    CHECK_DQ(d, "push_back", 100, 101, 102, 103, 104, 105, 106);
    acp_push_front_deque(d, dlt_val(S, 200), 4);
    CHECK_INT(acp_capacity_deque(d), 32, "push_front into a full deque");
    CHECK_DQ(d, "push_front", 200, 100, 101, 102, 103, 104, 105, 106);
    acp_pop_front_deque(d, 8);
    acp_pop_back_deque(d, 4);
    c = cb(d);
    CHECK_INT(c.off, 8, "pop_front moves the offset");
    CHECK_DQ(d, "pop_front, pop_back", 101, 102, 103, 104, 105);
    acp_push_back_deque(d, dlt_val(S, 300), 4);
    acp_push_back_deque(d, dlt_val(S, 301), 4);  /* wraps to the ring's start */
    CHECK_INT(acp_capacity_deque(d), 32, "push_back with room does not grow");
    CHECK_DQ(d, "push_back across the wrap", 101, 102, 103, 104, 105, 300, 301);
    CHECK_INT(dlt_int(acp_at_deque(d, 24)), 301, "at_deque of the wrapped int");
    CHECK_HEX(acp_at_deque(d, 24), cb(d).body, "at_deque wraps to the body's start");
    CHECK_HEX(acp_at_deque(d, 28), ACP_GA_NULL, "at_deque(size)");
    CHECK_HEX(acp_at_deque(d, -1), ACP_GA_NULL, "at_deque(-1)");
    acp_deque_it_t b = acp_begin_deque(d), e = acp_end_deque(d);
    CHECK_INT(b.index, 0, "begin is logical 0 with a non-zero offset");
    CHECK_INT(e.index, 28, "end index");
    CHECK_INT(acp_distance_deque_it(b, e), 28, "distance");
    acp_pair_t p = acp_dereference_deque_it(acp_advance_deque_it(b, 16), 100);
    CHECK_INT(p.first.size, 8, "dereference: first piece up to the ring's end");
    CHECK_INT(dlt_int(p.first.ga), 105, "dereference: first piece starts at logical 16");
    CHECK_INT(p.second.size, 4, "dereference: second piece");
    CHECK_HEX(p.second.ga, cb(d).body, "dereference: second piece at the ring start");
    p = acp_dereference_deque_it(e, 4);
    CHECK_HEX(p.first.ga, ACP_GA_NULL, "dereference(end) is NULL");
    /* In place, offset 8, capacity 32, size 28. */
    acp_insert_deque(acp_advance_deque_it(b, 4), dlt_val(S, 400), 4);
    CHECK_INT(acp_capacity_deque(d), 32, "insert in place");
    CHECK_DQ(d, "insert with an offset", 101, 400, 102, 103, 104, 105, 300, 301);
    acp_erase_deque(acp_advance_deque_it(b, 8), 8);
    CHECK_DQ(d, "erase", 101, 400, 104, 105, 300, 301);
    acp_deque_it_t r = acp_erase_range_deque(acp_advance_deque_it(b, 16), acp_advance_deque_it(b, 24));
    CHECK_INT(r.index, 16, "erase_range returns start");
    CHECK_DQ(d, "erase_range to the end", 101, 400, 104, 105);
    acp_insert_deque(acp_end_deque(d), dlt_val(S, 500), 4);
    acp_insert_deque(acp_advance_deque_it(b, 1000), dlt_val(S, 501), 4); /* clamped to the end */
    CHECK_DQ(d, "insert at the end", 101, 400, 104, 105, 500, 501);

    acp_deque_t d2 = acp_create_deque(0, R2);
    CHECK_INT(acp_capacity_deque(d2), 0, "create(0): capacity");
    acp_assign_deque(d2, d);
    c = cb(d2);
    CHECK_INT(c.off, 0, "assign linearises");
    CHECK_INT(c.cap, 24, "assign allocates exactly the size");
    CHECK_DQ(d2, "assign", 101, 400, 104, 105, 500, 501);
    acp_deque_it_t b2 = acp_begin_deque(d2);
    acp_assign_range_deque(d, acp_advance_deque_it(b2, 4), acp_advance_deque_it(b2, 12));
    CHECK_DQ(d, "assign_range", 400, 104);
    r = acp_insert_range_deque(acp_advance_deque_it(acp_begin_deque(d), 4), b2, acp_advance_deque_it(b2, 8));
    CHECK_INT(r.index, 4, "insert_range returns it");
    CHECK_DQ(d, "insert_range", 400, 101, 400, 104);
    r = acp_insert_range_deque(acp_begin_deque(d), b2, b2);
    CHECK_INT(r.index, 0, "empty insert_range returns end");
    acp_swap_deque(d, d2);
    CHECK_DQ(d, "swap: first", 101, 400, 104, 105, 500, 501);
    CHECK_DQ(d2, "swap: second", 400, 101, 400, 104);
    CHECK_INT(acp_capacity_deque(d2), 16, "swap: capacity is the size received");
    CHECK_INT(acp_query_rank(cb(d2).body), R2, "swap keeps bodies on the deque's rank");
    acp_assign_range_deque(d2, acp_advance_deque_it(acp_begin_deque(d2), 8), acp_end_deque(d2));
    CHECK_DQ(d2, "assign_range from itself", 400, 104);
    acp_reserve_deque(d2, 40);
    CHECK_INT(acp_capacity_deque(d2), 40, "reserve");
    CHECK_DQ(d2, "reserve keeps the content", 400, 104);
    acp_clear_deque(d2);
    CHECK_INT(acp_size_deque(d2), 0, "clear");
    CHECK_INT(acp_empty_deque(d2), 1, "empty after clear");

    /* Bad input. */
    acp_deque_t null = { ACP_GA_NULL };
    CHECK_INT(acp_size_deque(null), 0, "size of a NULL deque");
    CHECK_INT(acp_empty_deque(null), 1, "empty of a NULL deque");
    acp_push_back_deque(null, dlt_val(S, 1), 4);
    acp_push_back_deque(d, acp_query_starter_ga(S) + DLT_SMEM, 4);
    acp_push_front_deque(d, ACP_GA_NULL, 4);
    CHECK_DQ(d, "pushes from bad GAs change nothing", 101, 400, 104, 105, 500, 501);
    CHECK_HEX(acp_create_deque(8, np).ga, ACP_GA_NULL, "create_deque on rank N");
    acp_assign_range_deque(d2, acp_begin_deque(d), acp_end_deque(d2));
    CHECK_INT(acp_size_deque(d2), 0, "assign_range over two deques is ignored");
    acp_destroy_deque(d);
    acp_destroy_deque(d2);
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    np = acp_procs();
    dlt_fill_values();
    dlt_init_buf();
    scenario(me, me, me);
    scenario((me + 1) % np, (me + 2) % np, (me + 3) % np);
    acp_sync();
    return acpt_finish("t_dl_deque");
}
