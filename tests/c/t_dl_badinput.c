/*
 * t_dl_badinput: sizes that no memory holds, and sizes that wrap when a
 * header is added. Every such call returns its empty value (spec 2.8) and
 * changes nothing: keys and values of SIZE_MAX and of 1 TiB for sets,
 * multisets and maps (find, insert, remove, retrieve), SIZE_MAX and
 * (size_t)-8 for vector and deque inserts and pushes, SIZE_MAX for
 * reserve, (size_t)-17 for list pushes and inserts (24 + size wrapped to
 * a block whose header then overwrote the next block's boundary tag) and
 * SIZE_MAX for acp_remove_list. The containers live on the next rank;
 * afterwards they still work and hold what they held.
 */
#include "dltest.h"

static int me, np, peer;

#define TIB ((size_t)1 << 40)

static void hashed_keys(void)
{
    acp_element_t huge = { dlt_val(me, 0), SIZE_MAX }, tib = { dlt_val(me, 0), TIB };
    acp_element_t key = { dlt_val(me, 7), 4 }, val = { dlt_val(me, 8), 4 };

    acp_set_t s = acp_create_set(0, NULL, 4, peer);
    CHECK(s.ga != ACP_GA_NULL, "acp_create_set");
    CHECK_HEX(acp_find_set(s, huge).elem, ACP_GA_NULL, "find_set of a SIZE_MAX key");
    CHECK_INT(acp_insert_set(s, huge), 0, "insert_set of a SIZE_MAX key");
    CHECK_INT(acp_insert_set(s, tib), 0, "insert_set of a 1 TiB key");
    acp_remove_set(s, huge);
    CHECK_INT(acp_size_set(s), 0, "set size after the bad calls");
    CHECK_INT(acp_insert_set(s, key), 1, "insert_set of a good key");
    CHECK(acp_find_set(s, key).elem != ACP_GA_NULL, "find_set of the good key");
    acp_destroy_set(s);

    acp_multiset_t ms = acp_create_multiset(0, NULL, 4, peer);
    CHECK_INT(acp_insert_multiset(ms, huge), 0, "insert_multiset of a SIZE_MAX key");
    CHECK_INT(acp_insert_multiset(ms, tib), 0, "insert_multiset of a 1 TiB key");
    CHECK_INT(acp_retrieve_multiset(ms, huge), 0, "retrieve_multiset of a SIZE_MAX key");
    acp_remove_all_multiset(ms, huge);
    CHECK_INT(acp_size_multiset(ms), 0, "multiset size after the bad calls");
    acp_destroy_multiset(ms);

    acp_map_t m = acp_create_map(0, NULL, 4, peer);
    acp_pair_t bad_key = { huge, val }, bad_val = { key, huge }, tib_val = { key, tib };
    CHECK_INT(acp_insert_map(m, bad_key), 0, "insert_map with a SIZE_MAX key");
    CHECK_INT(acp_insert_map(m, bad_val), 0, "insert_map with a SIZE_MAX value");
    CHECK_INT(acp_insert_map(m, tib_val), 0, "insert_map with a 1 TiB value");
    CHECK_INT(acp_size_map(m), 0, "map size after the bad calls");
    acp_pair_t good = { key, val };
    CHECK_INT(acp_insert_map(m, good), 1, "insert_map of a good pair");
    acp_pair_t out = { huge, { dlt_bufga, 8 } };
    CHECK_INT(acp_retrieve_map(m, out), 0, "retrieve_map of a SIZE_MAX key");
    out.first = key;
    CHECK_INT(acp_retrieve_map(m, out), 4, "retrieve_map of the good key");
    int got;
    memcpy(&got, dlt_buf, 4);
    CHECK_INT(got, 8, "the value retrieved");
    acp_destroy_map(m);
}

static void vector_and_deque(void)
{
    acp_vector_t v = acp_create_vector(0, peer);
    acp_push_back_vector(v, dlt_val(me, 10), 8);
    acp_insert_vector(acp_begin_vector(v), dlt_val(me, 0), SIZE_MAX);
    acp_push_back_vector(v, dlt_val(me, 0), (size_t)0 - 8);
    acp_reserve_vector(v, SIZE_MAX);
    CHECK_INT(acp_size_vector(v), 8, "vector size after the bad calls");
    CHECK_INT(acp_capacity_vector(v), 8, "vector capacity after the bad calls");
    CHECK_INTS(acp_at_vector(v, 0), 2, "vector", 10, 11);
    acp_destroy_vector(v);

    acp_deque_t d = acp_create_deque(8, peer);
    acp_push_back_deque(d, dlt_val(me, 20), 8);
    acp_insert_deque(acp_begin_deque(d), dlt_val(me, 0), SIZE_MAX);
    acp_push_back_deque(d, dlt_val(me, 0), (size_t)0 - 8);
    acp_push_front_deque(d, dlt_val(me, 0), (size_t)0 - 8);
    CHECK_INT(acp_size_deque(d), 8, "deque size after the bad calls");
    CHECK_INT(acp_capacity_deque(d), 8, "deque capacity after the bad calls");
    CHECK_INTS(acp_at_deque(d, 0), 2, "deque", 20, 21);
    acp_destroy_deque(d);
}

/* The list's elements are allocated on this rank, so that the block after
 * the one the element would take can be watched while no other rank
 * allocates here (between the two acp_sync calls). */
static void list_sizes(void)
{
    acp_list_t l = acp_create_list(peer);
    acp_sync();
    acp_ga_t probe = acp_malloc(8, me); /* the block a wrapped element would take */
    CHECK(probe != ACP_GA_NULL, "acp_malloc(8)");
    uint64_t *p = acp_query_address(probe);
    uint64_t next = p[2]; /* the header of the block after it */
    acp_free(probe);
    acp_element_t wrap = { dlt_val(me, 0), (size_t)0 - 17 };
    acp_push_back_list(l, wrap, me);
    acp_push_front_list(l, wrap, me);
    acp_list_it_t it = acp_insert_list(acp_end_list(l), wrap, me);
    CHECK_HEX(it.elem, ACP_GA_NULL, "insert_list of (size_t)-17 bytes");
    CHECK_HEX(p[2], next, "the next block's header after the wrapped sizes");
    acp_sync();
    CHECK_INT(acp_size_list(l), 0, "list size after the wrapped sizes");
    acp_push_back_list(l, (acp_element_t){ dlt_val(me, 30), 4 }, me);
    acp_remove_list(l, (acp_element_t){ dlt_val(me, 30), SIZE_MAX });
    CHECK_INT(acp_size_list(l), 1, "list size after remove_list of SIZE_MAX bytes");
    acp_remove_list(l, (acp_element_t){ dlt_val(me, 30), 4 });
    CHECK_INT(acp_size_list(l), 0, "list size after remove_list of the value");
    acp_ga_t g = acp_malloc(100, me);
    CHECK(g != ACP_GA_NULL, "acp_malloc after the wrapped sizes");
    acp_free(g);
    acp_destroy_list(l);
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    np = acp_procs();
    peer = (me + 1) % np;
    dlt_fill_values();
    dlt_init_buf();
    hashed_keys();
    vector_and_deque();
    list_sizes();
    acp_sync();
    return acpt_finish("t_dl_badinput");
}
