/*
 * t_dl_list: every list function, with the original test_acpdl_list's
 * sequence (7 push_backs, iteration, 5 inserts at begin and 2 at begin+2,
 * assign, pop_back, erase, swap, assign_range, insert_range, erases,
 * push_front, pop_front) and the rest: merge and sort with a C comparator,
 * remove, reverse, unique, splice, splice_range (also up to the end),
 * advance both ways, distance, dereference of the end iterator. Elements
 * are spread over all ranks; each rank works at once on lists placed on
 * other ranks. After each step the chain is walked through the element
 * headers (spec B.3) and checked both ways.
 */
#include "dltest.h"

static int me, np;

/* Walks the list through its headers and returns the values; checks the
 * prev links, the tail and the count on the way. */
static int walk(acp_list_t l, int *out, const char *what)
{
    uint64_t h[3];
    memcpy(h, dlt_read(l.ga, 24), 24);
    int n = 0;
    acp_ga_t prev = l.ga;
    for (acp_ga_t e = h[0]; e != l.ga && e != ACP_GA_NULL && n < 64; n++) {
        uint64_t w[3];
        memcpy(w, dlt_read(e, 24), 24);
        CHECK_HEX(w[1], prev, "%s: prev link of element %d", what, n);
        CHECK_INT(w[2], 4, "%s: value size of element %d", what, n);
        out[n] = dlt_int(e + 24);
        prev = e;
        e = w[0];
    }
    CHECK_HEX(h[1], prev, "%s: tail", what);
    CHECK_INT(h[2], n, "%s: count", what);
    return n;
}

#define CHECK_LIST(l, what, ...)                                                       \
    do {                                                                               \
        const int w_[] = { __VA_ARGS__ };                                              \
        int g_[64];                                                                    \
        int n_ = walk((l), g_, (what));                                                \
        CHECK_INT(n_, sizeof w_ / sizeof w_[0], "%s: number of elements", (what));      \
        for (size_t i_ = 0; i_ < sizeof w_ / sizeof w_[0] && (int)i_ < n_; i_++)       \
            CHECK_INT(g_[i_], w_[i_], "%s: element %zu", (what), i_);                   \
        CHECK_INT(acp_size_list(l), sizeof w_ / sizeof w_[0], "%s: acp_size_list", (what)); \
    } while (0)

#define CHECK_EMPTY(l, what)                                                           \
    do {                                                                               \
        int g_[64];                                                                    \
        CHECK_INT(walk((l), g_, (what)), 0, "%s: number of elements", (what));          \
        CHECK_INT(acp_empty_list(l), 1, "%s: acp_empty_list", (what));                  \
    } while (0)

static acp_element_t val(int S, int v) { acp_element_t e = { dlt_val(S, v), 4 }; return e; }

static int comp_calls;
static int cmp_int(const acp_element_t a, const acp_element_t b)
{
    comp_calls++;
    int x = dlt_int(a.ga), y = dlt_int(b.ga);
    return (x > y) - (x < y);
}
/* Orders by value / 10 only, to see that sort and merge are stable. */
static int cmp_tens(const acp_element_t a, const acp_element_t b)
{
    int x = dlt_int(a.ga) / 10, y = dlt_int(b.ga) / 10;
    return (x > y) - (x < y);
}

static void scenario(int R, int R2, int S)
{
    acp_list_t l = acp_create_list(R);
    CHECK(l.ga != ACP_GA_NULL, "acp_create_list(%d)", R);
    CHECK_INT(acp_query_rank(l.ga), R, "list's rank");
    CHECK_HEX(dlt_word(l.ga), l.ga, "empty list: head is the control block");
    CHECK_EMPTY(l, "new list");
    CHECK_HEX(acp_begin_list(l).elem, l.ga, "begin of an empty list is the end");
    for (int i = 0; i < 7; i++)
        acp_push_back_list(l, val(S, 100 + i), i % np);
    CHECK_LIST(l, "push_back", 100, 101, 102, 103, 104, 105, 106);
    CHECK_INT(acp_empty_list(l), 0, "empty after push_back");
    int i = 0;
    for (acp_list_it_t it = acp_begin_list(l); it.elem != acp_end_list(l).elem; it = acp_increment_list_it(it), i++) {
        CHECK_INT(acp_query_rank(it.elem), i % np, "element %d on rank %d", i, i % np);
        acp_element_t e = acp_dereference_list_it(it);
        CHECK_HEX(e.ga, it.elem + 24, "dereference: value at elem + 24");
        CHECK_INT(e.size, 4, "dereference: size");
        CHECK_INT(dlt_int(e.ga), 100 + i, "iteration value %d", i);
    }
    CHECK_INT(i, 7, "iteration steps");
    acp_list_it_t b = acp_begin_list(l), e = acp_end_list(l);
    CHECK_INT(acp_distance_list_it(b, e), 7, "distance begin..end");
    acp_list_it_t a3 = acp_advance_list_it(b, 3);
    CHECK_INT(dlt_int(acp_dereference_list_it(a3).ga), 103, "advance 3");
    CHECK_INT(dlt_int(acp_dereference_list_it(acp_advance_list_it(a3, -2)).ga), 101, "advance -2");
    CHECK_HEX(acp_advance_list_it(a3, -10).elem, b.elem, "advance back stops at the first element");
    CHECK_HEX(acp_advance_list_it(a3, 10).elem, l.ga, "advance stops at the end");
    CHECK_INT(dlt_int(acp_dereference_list_it(acp_decrement_list_it(e)).ga), 106, "decrement(end) is the last");
    CHECK_HEX(acp_decrement_list_it(b).elem, b.elem, "decrement(begin) stays");
    CHECK_HEX(acp_increment_list_it(e).elem, l.ga, "increment(end) stays");
    CHECK_HEX(acp_dereference_list_it(e).ga, ACP_GA_NULL, "dereference(end)");
    CHECK_INT(acp_distance_list_it(a3, e), 4, "distance from the 4th to the end");
    acp_destroy_list(l);

    l = acp_create_list(R);
    acp_push_back_list(l, val(S, 1), R);
    acp_clear_list(l);
    CHECK_EMPTY(l, "clear");
    for (i = 1; i <= 5; i++) {
        acp_list_it_t it = acp_insert_list(acp_begin_list(l), val(S, 300 + i), (i + me) % np);
        CHECK_INT(dlt_int(acp_dereference_list_it(it).ga), 300 + i, "insert returns the new element");
    }
    for (i = 1; i <= 2; i++)
        acp_insert_list(acp_advance_list_it(acp_begin_list(l), 2), val(S, 400 + i), i % np);
    CHECK_LIST(l, "inserts", 305, 304, 402, 401, 303, 302, 301);

    acp_list_t l2 = acp_create_list(R2);
    acp_assign_list(l2, l);
    CHECK_LIST(l2, "assign", 305, 304, 402, 401, 303, 302, 301);
    acp_pop_back_list(l2);
    acp_list_it_t it = acp_erase_list(acp_advance_list_it(acp_begin_list(l2), 2));
    CHECK_INT(dlt_int(acp_dereference_list_it(it).ga), 401, "erase returns the next element");
    CHECK_LIST(l2, "pop_back, erase", 305, 304, 401, 303, 302);
    acp_swap_list(l, l2);
    CHECK_LIST(l, "swap: first", 305, 304, 401, 303, 302);
    CHECK_LIST(l2, "swap: second", 305, 304, 402, 401, 303, 302, 301);
    acp_list_it_t b2 = acp_begin_list(l2);
    acp_assign_range_list(l, acp_advance_list_it(b2, 1), acp_advance_list_it(b2, 3));
    CHECK_LIST(l, "assign_range", 304, 402);
    it = acp_insert_range_list(acp_advance_list_it(acp_begin_list(l), 1), acp_advance_list_it(b2, 5), acp_end_list(l2));
    CHECK_INT(dlt_int(acp_dereference_list_it(it).ga), 302, "insert_range returns the first copy");
    CHECK_LIST(l, "insert_range", 304, 302, 301, 402);
    it = acp_insert_range_list(acp_begin_list(l), b2, b2); /* empty: nothing, no corruption */
    CHECK_LIST(l, "empty insert_range", 304, 302, 301, 402);
    acp_erase_list(acp_begin_list(l));
    acp_erase_list(acp_begin_list(l));
    acp_erase_list(acp_begin_list(l));
    CHECK_LIST(l, "3 erases", 402);
    CHECK_HEX(acp_erase_list(acp_end_list(l)).elem, ACP_GA_NULL, "erase(end)");
    acp_push_front_list(l, val(S, 500), me);
    acp_push_front_list(l, val(S, 501), R2);
    acp_pop_front_list(l);
    CHECK_LIST(l, "push_front, pop_front", 500, 402);
    /* erase_range reaching the end (Q-DL-4). */
    it = acp_erase_range_list(acp_advance_list_it(acp_begin_list(l2), 4), acp_end_list(l2));
    CHECK_HEX(it.elem, l2.ga, "erase_range returns end");
    CHECK_LIST(l2, "erase_range to the end", 305, 304, 402, 401);

    /* sort and merge with a comparator (stable), reverse, remove, unique. */
    acp_clear_list(l);
    const int unsorted[] = { 42, 17, 45, 12, 40, 17 };
    for (i = 0; i < 6; i++)
        acp_push_back_list(l, val(S, unsorted[i]), (i + 1) % np);
    acp_sort_list(l, cmp_tens);
    CHECK_LIST(l, "stable sort by tens", 17, 12, 17, 42, 45, 40);
    comp_calls = 0;
    acp_sort_list(l, cmp_int);
    CHECK(comp_calls > 0, "the comparator was called");
    CHECK_LIST(l, "sort", 12, 17, 17, 40, 42, 45);
    acp_clear_list(l2);
    const int other[] = { 11, 17, 44, 90 };
    for (i = 0; i < 4; i++)
        acp_push_back_list(l2, val(S, other[i]), i % np);
    acp_merge_list(l, l2, cmp_int);
    CHECK_LIST(l, "merge", 11, 12, 17, 17, 17, 40, 42, 44, 45, 90);
    CHECK_EMPTY(l2, "merged-from list");
    acp_unique_list(l);
    CHECK_LIST(l, "unique", 11, 12, 17, 40, 42, 44, 45, 90);
    acp_remove_list(l, val(S, 42));
    acp_remove_list(l, val(S, 11));
    acp_remove_list(l, val(S, 90));
    CHECK_LIST(l, "remove (first, middle, last)", 12, 17, 40, 44, 45);
    acp_reverse_list(l);
    CHECK_LIST(l, "reverse", 45, 44, 40, 17, 12);

    /* splice between lists, and splice_range up to the end. */
    acp_push_back_list(l2, val(S, 600), R2);
    acp_splice_list(acp_advance_list_it(acp_begin_list(l2), 1), acp_advance_list_it(acp_begin_list(l), 2));
    CHECK_LIST(l, "splice: source", 45, 44, 17, 12);
    CHECK_LIST(l2, "splice: destination", 600, 40);
    acp_splice_range_list(acp_begin_list(l2), acp_advance_list_it(acp_begin_list(l), 2), acp_end_list(l));
    CHECK_LIST(l, "splice_range: source", 45, 44);
    CHECK_LIST(l2, "splice_range: destination", 17, 12, 600, 40);
    acp_splice_range_list(acp_end_list(l2), acp_begin_list(l2), acp_advance_list_it(acp_begin_list(l2), 2));
    CHECK_LIST(l2, "splice_range within a list", 600, 40, 17, 12);

    /* Bad input. */
    acp_list_t null = { ACP_GA_NULL };
    CHECK_INT(acp_size_list(null), 0, "size of a NULL list");
    CHECK_INT(acp_empty_list(null), 1, "empty of a NULL list (Q-DL-4)");
    acp_push_back_list(l, val(S, 1), np);          /* bad rank */
    acp_push_back_list(l, val(S, 1), -1);
    acp_element_t bad = { acp_query_starter_ga(S) + DLT_SMEM, 4 };
    acp_push_back_list(l, bad, R);                 /* value beyond a region */
    it = acp_insert_list(acp_begin_list(l), bad, R);
    CHECK_HEX(it.elem, ACP_GA_NULL, "a failed insert gives elem ACP_GA_NULL");
    CHECK_LIST(l, "failed pushes change nothing", 45, 44);
    acp_assign_range_list(l, acp_begin_list(l2), acp_end_list(l)); /* two lists: ignored */
    CHECK_LIST(l, "assign_range over two lists is ignored", 45, 44);
    CHECK_HEX(acp_create_list(np).ga, ACP_GA_NULL, "create_list on rank N");
    acp_destroy_list(l);
    acp_destroy_list(l2);
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
    return acpt_finish("t_dl_list");
}
