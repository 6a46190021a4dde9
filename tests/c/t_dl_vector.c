/*
 * t_dl_vector: every vector function, with the scenario of the original
 * test_acpdl_vector (capacities 8, 8, 16, 16, 24, 24, 32 for seven 4-byte
 * push_backs; seven inserts at begin and begin+8 giving 305, 304, 402,
 * 401, 303, 302, 301; an assign_range giving 304, 402). Each rank runs it
 * at once on vectors placed on other ranks, with values read from a third
 * rank; the control block is also read directly (spec B.1) on the owner.
 * Bad input leaves vectors unchanged.
 */
#include "dltest.h"

static int me, np;

/* Reads the control block {body, size, capacity}: directly when it is
 * mine (B.1), else with acp_copy. */
static void cb(acp_vector_t v, uint64_t w[3])
{
    if (acp_query_rank(v.ga) == me) {
        uint64_t *p = acp_query_address(v.ga);
        memcpy(w, p, 24);
    } else {
        memcpy(w, dlt_read(v.ga, 24), 24);
    }
}

static void scenario(int R, int R2, int S)
{
    uint64_t w[3];
    acp_vector_t v = acp_create_vector(0, R);
    CHECK(v.ga != ACP_GA_NULL, "acp_create_vector(0, %d)", R);
    CHECK_INT(acp_query_rank(v.ga), R, "vector's rank");
    CHECK_INT(acp_empty_vector(v), 1, "empty_vector of a new vector");
    cb(v, w);
    CHECK_HEX(w[0], 0, "body of create(0)");
    CHECK_INT(w[1], 0, "size of create(0)");
    CHECK_INT(w[2], 0, "capacity of create(0)");
    const int caps[7] = { 8, 8, 16, 16, 24, 24, 32 };
    for (int i = 0; i < 7; i++) {
        acp_push_back_vector(v, dlt_val(S, 100 + i), 4);
        CHECK_INT(acp_capacity_vector(v), caps[i], "capacity after push_back %d", i + 1);
        CHECK_INT(acp_size_vector(v), 4 * (i + 1), "size after push_back %d", i + 1);
        cb(v, w);
        CHECK_INT(w[2], caps[i], "capacity word after push_back %d", i + 1);
        CHECK_INT(acp_query_rank(w[0]), R, "body on the vector's rank");
    }
    CHECK_INT(acp_empty_vector(v), 0, "empty_vector after push_back");
    for (int i = 0; i < 7; i++)
        CHECK_INT(dlt_int(acp_at_vector(v, 4 * i)), 100 + i, "at_vector(%d)", 4 * i);
    CHECK_HEX(acp_at_vector(v, 28), ACP_GA_NULL, "at_vector(size)");
    CHECK_HEX(acp_at_vector(v, -1), ACP_GA_NULL, "at_vector(-1)");
    cb(v, w);
    CHECK_HEX(acp_at_vector(v, 8), w[0] + 8, "at_vector is body + index");
    acp_vector_it_t it = acp_begin_vector(v), end = acp_end_vector(v);
    CHECK_INT(it.index, 0, "begin index");
    CHECK_INT(end.index, 28, "end index");
    CHECK_INT(acp_distance_vector_it(it, end), 28, "distance begin..end");
    for (int i = 0; i < 7; i++) {
        CHECK_INT(dlt_int(acp_dereference_vector_it(it)), 100 + i, "dereference at %d", it.index);
        it = acp_advance_vector_it(it, 4);
    }
    CHECK_HEX(acp_dereference_vector_it(acp_advance_vector_it(it, -40)), ACP_GA_NULL, "dereference at -12");
    acp_destroy_vector(v);

    v = acp_create_vector(24, R);
    CHECK_INT(acp_size_vector(v), 24, "create(24): size (the vector holds 24 bytes)");
    CHECK_INT(acp_capacity_vector(v), 24, "create(24): capacity");
    acp_push_back_vector(v, dlt_val(S, 200), 4);
    CHECK_INT(acp_size_vector(v), 28, "size after push_back");
    CHECK_INT(acp_capacity_vector(v), 32, "capacity after push_back");
    CHECK_INT(dlt_int(acp_at_vector(v, 24)), 200, "pushed value");
    acp_clear_vector(v);
    CHECK_INT(acp_size_vector(v), 0, "size after clear");
    CHECK_INT(acp_capacity_vector(v), 32, "capacity after clear");
    acp_reserve_vector(v, 61);
    CHECK_INT(acp_capacity_vector(v), 64, "capacity after reserve(61)");
    acp_reserve_vector(v, 8);
    CHECK_INT(acp_capacity_vector(v), 64, "reserve never shrinks");
    acp_clear_vector(v);
    for (int i = 1; i <= 5; i++) {
        it = acp_insert_vector(acp_begin_vector(v), dlt_val(S, 300 + i), 4);
        CHECK_INT(it.index, 0, "insert returns its iterator");
    }
    acp_insert_vector(acp_advance_vector_it(acp_begin_vector(v), 8), dlt_val(S, 401), 4);
    acp_insert_vector(acp_advance_vector_it(acp_begin_vector(v), 8), dlt_val(S, 402), 4);
    cb(v, w);
    CHECK_INTS(w[0], w[1] / 4, "after 7 inserts", 305, 304, 402, 401, 303, 302, 301);

    acp_vector_t v2 = acp_create_vector(0, R2);
    acp_assign_vector(v2, v);
    cb(v2, w);
    CHECK_INT(w[1], 28, "assign: size");
    CHECK_INT(w[2], 32, "assign: capacity");
    CHECK_INTS(w[0], w[1] / 4, "assign", 305, 304, 402, 401, 303, 302, 301);
    acp_pop_back_vector(v2, 4);
    acp_erase_vector(acp_advance_vector_it(acp_begin_vector(v2), 8), 8);
    cb(v2, w);
    CHECK_INTS(w[0], w[1] / 4, "pop_back, erase", 305, 304, 303, 302);
    acp_swap_vector(v, v2);
    cb(v, w);
    CHECK_INTS(w[0], w[1] / 4, "swap: first", 305, 304, 303, 302);
    CHECK_INT(acp_query_rank(w[0]), R, "swap keeps bodies on the vector's rank");
    cb(v2, w);
    CHECK_INTS(w[0], w[1] / 4, "swap: second", 305, 304, 402, 401, 303, 302, 301);
    CHECK_INT(acp_query_rank(w[0]), R2, "swap keeps bodies on the vector's rank");

    acp_vector_it_t b2 = acp_begin_vector(v2);
    acp_assign_range_vector(v, acp_advance_vector_it(b2, 4), acp_advance_vector_it(b2, 12));
    cb(v, w);
    CHECK_INTS(w[0], w[1] / 4, "assign_range", 304, 402);
    /* insert_range reads the source vector's body (Q-DL-2). */
    acp_insert_range_vector(acp_begin_vector(v), b2, acp_advance_vector_it(b2, 8));
    cb(v, w);
    CHECK_INTS(w[0], w[1] / 4, "insert_range", 305, 304, 304, 402);
    acp_vector_it_t b = acp_begin_vector(v);
    it = acp_erase_range_vector(acp_advance_vector_it(b, 4), acp_advance_vector_it(b, 12));
    CHECK_INT(it.index, 4, "erase_range returns start");
    cb(v, w);
    CHECK_INTS(w[0], w[1] / 4, "erase_range", 305, 402);
    it = acp_erase_range_vector(acp_advance_vector_it(b, 4), b);
    CHECK_INT(it.index, 0, "empty erase_range returns end");
    /* Ends in two vectors: nothing erased, the result is end. */
    acp_vector_it_t e2 = acp_end_vector(v2);
    it = acp_erase_range_vector(acp_begin_vector(v), e2);
    CHECK_HEX(it.vector.ga, e2.vector.ga, "erase_range over two vectors returns end");
    CHECK_INT(it.index, e2.index, "erase_range over two vectors returns end");
    cb(v, w);
    CHECK_INTS(w[0], w[1] / 4, "erase_range over two vectors erases nothing", 305, 402);
    /* A range inside the same vector. */
    acp_assign_range_vector(v2, acp_advance_vector_it(b2, 8), acp_advance_vector_it(b2, 16));
    cb(v2, w);
    CHECK_INTS(w[0], w[1] / 4, "assign_range from itself", 402, 401);
    acp_insert_range_vector(acp_advance_vector_it(acp_begin_vector(v2), 4), acp_begin_vector(v2),
                            acp_end_vector(v2));
    cb(v2, w);
    CHECK_INTS(w[0], w[1] / 4, "insert_range from itself", 402, 402, 401, 401);

    /* Bad input: nothing changes, nothing crashes. */
    acp_vector_t null = { ACP_GA_NULL };
    CHECK_INT(acp_size_vector(null), 0, "size of a NULL vector");
    CHECK_INT(acp_empty_vector(null), 1, "empty of a NULL vector");
    CHECK_HEX(acp_at_vector(null, 0), ACP_GA_NULL, "at of a NULL vector");
    acp_push_back_vector(null, dlt_val(S, 1), 4);
    acp_assign_range_vector(v, acp_begin_vector(v2), acp_end_vector(v)); /* two vectors: ignored */
    cb(v, w);
    CHECK_INTS(w[0], w[1] / 4, "assign_range over two vectors is ignored", 305, 402);
    acp_push_back_vector(v, ACP_GA_NULL, 4);
    acp_push_back_vector(v, acp_query_starter_ga(S) + DLT_SMEM, 4); /* past the end of a region */
    CHECK_INT(acp_size_vector(v), 8, "push_back from a bad GA changes nothing");
    CHECK_HEX(acp_create_vector(8, -1).ga, ACP_GA_NULL, "create_vector on rank -1");
    CHECK_HEX(acp_create_vector(8, np).ga, ACP_GA_NULL, "create_vector on rank N");
    CHECK_HEX(acp_create_vector(1ull << 30, R).ga, ACP_GA_NULL, "create_vector larger than the heap");
    size_t cap = acp_capacity_vector(v);
    acp_reserve_vector(v, 1ull << 30);
    CHECK_INT(acp_capacity_vector(v), cap, "reserve larger than the heap changes nothing");
    CHECK_INT(acp_size_vector(v), 8, "reserve larger than the heap keeps the content");
    acp_destroy_vector(v);
    acp_destroy_vector(v2);
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    np = acp_procs();
    dlt_fill_values();
    dlt_init_buf();
    /* My own rank first (direct layout reads), then spread over ranks. */
    scenario(me, me, me);
    scenario((me + 1) % np, (me + 2) % np, (me + 3) % np);
    acp_sync();
    return acpt_finish("t_dl_vector");
}
