/*
 * ml_dl_shim.c - the data library's acp_* functions (acp.h), each a
 * forward to a goacpdl_* export of ml_dl.go.
 *
 * Structs cross into Go as their members: the shims unpack handles and
 * iterators and pack the results, so the Go side deals in scalars and the
 * C compiler checks every definition against the public prototype. The
 * three hashed containers share one set of exports, selected by kind.
 */
#include <stdlib.h>

#include "acp.h"
#include "_cgo_export.h"

/* Kinds of hashed container (ml/dl.Kind). */
enum { DL_SET = 0, DL_MULTISET = 1, DL_MAP = 2 };

/* ---- program-defined settings ---------------------------------------- */

/* Programs written for the original may define this to size (often: to
 * disable) the data library's starter memory. The weak reference makes the
 * linker export such a definition from the executable; without one the
 * address is NULL. */
extern size_t iacp_starter_memory_size_dl __attribute__((weak));

int acpdl_program_starter_size(size_t *size)
{
    if (&iacp_starter_memory_size_dl == NULL)
        return 0;
    *size = iacp_starter_memory_size_dl;
    return 1;
}

/* ---- iterator arithmetic ------------------------------------------------ */

/* Index steps wrap around instead of overflowing an int (undefined in C):
 * garbage indices stay garbage, nothing worse. */
static int index_add(int i, int n) { return (int)((unsigned)i + (unsigned)n); }
static int index_sub(int i, int n) { return (int)((unsigned)i - (unsigned)n); }

/* ---- list comparator --------------------------------------------------- */

typedef int (*acpdl_comp_t)(const acp_element_t, const acp_element_t);

/* Calls the user's comparator with the structs by value, as C does. */
int acpdl_call_comp(void *comp, acp_ga_t ga1, size_t size1, acp_ga_t ga2, size_t size2)
{
    acp_element_t e1 = { ga1, size1 }, e2 = { ga2, size2 };
    return ((acpdl_comp_t)comp)(e1, e2);
}

/* ---- workspace and heap ------------------------------------------------ */

acp_wsd_t acp_create_ws(size_t size)
{
    acp_wsd_t w = goacpdl_create_ws(size);
    return w != NULL ? w : ACP_WSD_NULL;
}
int acp_setparams_ws(size_t proc_start, size_t size_default) { return goacpdl_setparams_ws(proc_start, size_default); }
void acp_destroy_ws(acp_wsd_t WSD) { goacpdl_destroy_ws(WSD); }
int acp_read_ws(acp_wsd_t WSD, acp_ga_t ga, size_t size, size_t offset) { return goacpdl_read_ws(WSD, ga, size, offset, 0); }
int acp_write_ws(acp_wsd_t WSD, const acp_ga_t ga, size_t size, size_t offset) { return goacpdl_read_ws(WSD, ga, size, offset, 1); }

/* Exported by the original without a declaration in acp.h. */
void acp_free_ws(acp_wsd_t WSD);
void acp_free_ws(acp_wsd_t WSD) { goacpdl_destroy_ws(WSD); }

acp_ga_t acp_malloc(size_t size, int rank) { return goacpdl_malloc(size, rank); }
void acp_free(acp_ga_t ga) { goacpdl_free(ga); }

/* ---- vector ------------------------------------------------------------ */

void acp_assign_vector(acp_vector_t vector1, acp_vector_t vector2) { goacpdl_vector_op2(0, vector1.ga, vector2.ga); }
void acp_swap_vector(acp_vector_t vector1, acp_vector_t vector2) { goacpdl_vector_op2(1, vector1.ga, vector2.ga); }
void acp_assign_range_vector(acp_vector_t vector, acp_vector_it_t start, acp_vector_it_t end)
{
    goacpdl_assign_range_vector(vector.ga, start.vector.ga, start.index, end.vector.ga, end.index);
}
acp_ga_t acp_at_vector(acp_vector_t vector, int index) { return goacpdl_at_vector(vector.ga, index, 0); }
acp_ga_t acp_dereference_vector_it(acp_vector_it_t it) { return goacpdl_at_vector(it.vector.ga, it.index, 1); }
acp_vector_it_t acp_begin_vector(acp_vector_t vector) { acp_vector_it_t it = { vector, 0 }; return it; }
acp_vector_it_t acp_end_vector(acp_vector_t vector)
{
    acp_vector_it_t it = { vector, (int)goacpdl_vector_query(3, vector.ga) };
    return it;
}
size_t acp_size_vector(acp_vector_t vector) { return goacpdl_vector_query(0, vector.ga); }
size_t acp_capacity_vector(acp_vector_t vector) { return goacpdl_vector_query(1, vector.ga); }
int acp_empty_vector(acp_vector_t vector) { return (int)goacpdl_vector_query(2, vector.ga); }
void acp_clear_vector(acp_vector_t vector) { goacpdl_vector_sized(0, vector.ga, 0); }
void acp_pop_back_vector(acp_vector_t vector, size_t size) { goacpdl_vector_sized(1, vector.ga, size); }
void acp_reserve_vector(acp_vector_t vector, size_t size) { goacpdl_vector_sized(2, vector.ga, size); }
void acp_destroy_vector(acp_vector_t vector) { goacpdl_vector_sized(3, vector.ga, 0); }
acp_vector_t acp_create_vector(size_t size, int rank) { acp_vector_t v = { goacpdl_create_vector(size, rank) }; return v; }
acp_vector_it_t acp_erase_vector(acp_vector_it_t it, size_t size) { goacpdl_erase_vector(it.vector.ga, it.index, size); return it; }
acp_vector_it_t acp_erase_range_vector(acp_vector_it_t start, acp_vector_it_t end)
{
    return goacpdl_erase_range_vector(start.vector.ga, start.index, end.vector.ga, end.index) ? start : end;
}
acp_vector_it_t acp_insert_vector(acp_vector_it_t it, const acp_ga_t ga, size_t size)
{
    goacpdl_insert_vector(it.vector.ga, it.index, ga, size);
    return it;
}
acp_vector_it_t acp_insert_range_vector(acp_vector_it_t it, acp_vector_it_t start, acp_vector_it_t end)
{
    goacpdl_insert_range_vector(it.vector.ga, it.index, start.vector.ga, start.index, end.vector.ga, end.index);
    return it;
}
void acp_push_back_vector(acp_vector_t vector, const acp_ga_t ga, size_t size) { goacpdl_push_vector(vector.ga, ga, size); }
acp_vector_it_t acp_advance_vector_it(acp_vector_it_t it, int n) { it.index = index_add(it.index, n); return it; }
int acp_distance_vector_it(acp_vector_it_t first, acp_vector_it_t last) { return index_sub(last.index, first.index); }

/* ---- deque ------------------------------------------------------------- */

void acp_assign_deque(acp_deque_t deque1, acp_deque_t deque2) { goacpdl_deque_op2(0, deque1.ga, deque2.ga); }
void acp_swap_deque(acp_deque_t deque1, acp_deque_t deque2) { goacpdl_deque_op2(1, deque1.ga, deque2.ga); }
void acp_assign_range_deque(acp_deque_t deque, acp_deque_it_t start, acp_deque_it_t end)
{
    goacpdl_assign_range_deque(deque.ga, start.deque.ga, start.index, end.deque.ga, end.index);
}
acp_ga_t acp_at_deque(acp_deque_t deque, int index) { return goacpdl_at_deque(deque.ga, index); }
acp_deque_it_t acp_begin_deque(acp_deque_t deque) { acp_deque_it_t it = { deque, 0 }; return it; }
acp_deque_it_t acp_end_deque(acp_deque_t deque)
{
    acp_deque_it_t it = { deque, (int)goacpdl_deque_query(3, deque.ga) };
    return it;
}
size_t acp_size_deque(acp_deque_t deque) { return goacpdl_deque_query(0, deque.ga); }
size_t acp_capacity_deque(acp_deque_t deque) { return goacpdl_deque_query(1, deque.ga); }
int acp_empty_deque(acp_deque_t deque) { return (int)goacpdl_deque_query(2, deque.ga); }
void acp_clear_deque(acp_deque_t deque) { goacpdl_deque_sized(0, deque.ga, 0); }
void acp_pop_back_deque(acp_deque_t deque, size_t size) { goacpdl_deque_sized(1, deque.ga, size); }
void acp_pop_front_deque(acp_deque_t deque, size_t size) { goacpdl_deque_sized(4, deque.ga, size); }
void acp_reserve_deque(acp_deque_t deque, size_t size) { goacpdl_deque_sized(2, deque.ga, size); }
void acp_destroy_deque(acp_deque_t deque) { goacpdl_deque_sized(3, deque.ga, 0); }
acp_deque_t acp_create_deque(size_t size, int rank) { acp_deque_t d = { goacpdl_create_deque(size, rank) }; return d; }
acp_deque_it_t acp_erase_deque(acp_deque_it_t it, size_t size) { goacpdl_erase_deque(it.deque.ga, it.index, size); return it; }
acp_deque_it_t acp_erase_range_deque(acp_deque_it_t start, acp_deque_it_t end)
{
    return goacpdl_erase_range_deque(start.deque.ga, start.index, end.deque.ga, end.index) ? start : end;
}
acp_deque_it_t acp_insert_deque(acp_deque_it_t it, const acp_ga_t ga, size_t size)
{
    goacpdl_insert_deque(it.deque.ga, it.index, ga, size);
    return it;
}
acp_deque_it_t acp_insert_range_deque(acp_deque_it_t it, acp_deque_it_t start, acp_deque_it_t end)
{
    return goacpdl_insert_range_deque(it.deque.ga, it.index, start.deque.ga, start.index, end.deque.ga, end.index) ? it : end;
}
void acp_push_back_deque(acp_deque_t deque, const acp_ga_t ga, size_t size) { goacpdl_push_deque(deque.ga, ga, size, 0); }
void acp_push_front_deque(acp_deque_t deque, const acp_ga_t ga, size_t size) { goacpdl_push_deque(deque.ga, ga, size, 1); }
acp_deque_it_t acp_advance_deque_it(acp_deque_it_t it, int n) { it.index = index_add(it.index, n); return it; }
int acp_distance_deque_it(acp_deque_it_t first, acp_deque_it_t last) { return index_sub(last.index, first.index); }
acp_pair_t acp_dereference_deque_it(acp_deque_it_t it, size_t size)
{
    acp_pair_t p = { { 0, 0 }, { 0, 0 } };
    goacpdl_dereference_deque_it(it.deque.ga, it.index, size, &p);
    return p;
}

/* ---- list -------------------------------------------------------------- */

static acp_list_it_t list_it(acp_list_t list, acp_ga_t elem) { acp_list_it_t it = { list, elem }; return it; }

acp_list_t acp_create_list(int rank) { acp_list_t l = { goacpdl_create_list(rank) }; return l; }
void acp_destroy_list(acp_list_t list) { goacpdl_list_op(0, list.ga); }
void acp_clear_list(acp_list_t list) { goacpdl_list_op(1, list.ga); }
void acp_pop_back_list(acp_list_t list) { goacpdl_list_op(2, list.ga); }
void acp_pop_front_list(acp_list_t list) { goacpdl_list_op(3, list.ga); }
void acp_reverse_list(acp_list_t list) { goacpdl_list_op(4, list.ga); }
void acp_unique_list(acp_list_t list) { goacpdl_list_op(5, list.ga); }
size_t acp_size_list(acp_list_t list) { return goacpdl_list_query(0, list.ga); }
int acp_empty_list(acp_list_t list) { return (int)goacpdl_list_query(1, list.ga); }
acp_list_it_t acp_begin_list(acp_list_t list) { return list_it(list, goacpdl_list_query(2, list.ga)); }
acp_list_it_t acp_end_list(acp_list_t list) { return list_it(list, list.ga); }
void acp_assign_list(acp_list_t list1, acp_list_t list2) { goacpdl_list_op2(0, list1.ga, list2.ga); }
void acp_swap_list(acp_list_t list1, acp_list_t list2) { goacpdl_list_op2(1, list1.ga, list2.ga); }
void acp_assign_range_list(acp_list_t list, acp_list_it_t start, acp_list_it_t end)
{
    goacpdl_list_range(0, list.ga, 0, start.list.ga, start.elem, end.list.ga, end.elem);
}
acp_list_it_t acp_insert_range_list(acp_list_it_t it, acp_list_it_t start, acp_list_it_t end)
{
    return list_it(it.list, goacpdl_list_range(1, it.list.ga, it.elem, start.list.ga, start.elem, end.list.ga, end.elem));
}
void acp_splice_range_list(acp_list_it_t it, acp_list_it_t start, acp_list_it_t end)
{
    goacpdl_list_range(2, it.list.ga, it.elem, start.list.ga, start.elem, end.list.ga, end.elem);
}
acp_list_it_t acp_erase_range_list(acp_list_it_t start, acp_list_it_t end)
{
    goacpdl_list_range(3, start.list.ga, start.elem, start.list.ga, start.elem, end.list.ga, end.elem);
    return end;
}
void acp_splice_list(acp_list_it_t it1, acp_list_it_t it2)
{
    goacpdl_list_range(4, it1.list.ga, it1.elem, it2.list.ga, it2.elem, 0, 0);
}
acp_list_it_t acp_erase_list(acp_list_it_t it) { return list_it(it.list, goacpdl_list_step(0, it.list.ga, it.elem, 0)); }
acp_list_it_t acp_advance_list_it(acp_list_it_t it, int n) { return list_it(it.list, goacpdl_list_step(1, it.list.ga, it.elem, n)); }
acp_list_it_t acp_increment_list_it(acp_list_it_t it) { return list_it(it.list, goacpdl_list_step(2, it.list.ga, it.elem, 1)); }
acp_list_it_t acp_decrement_list_it(acp_list_it_t it) { return list_it(it.list, goacpdl_list_step(3, it.list.ga, it.elem, -1)); }
int acp_distance_list_it(acp_list_it_t first, acp_list_it_t last)
{
    return (int)goacpdl_list_distance(first.list.ga, first.elem, last.list.ga, last.elem);
}
acp_list_it_t acp_insert_list(acp_list_it_t it, const acp_element_t elem, int rank)
{
    return list_it(it.list, goacpdl_list_insert(0, it.list.ga, it.elem, elem.ga, elem.size, rank));
}
void acp_push_back_list(acp_list_t list, const acp_element_t elem, int rank)
{
    goacpdl_list_insert(1, list.ga, list.ga, elem.ga, elem.size, rank);
}
void acp_push_front_list(acp_list_t list, const acp_element_t elem, int rank)
{
    goacpdl_list_insert(2, list.ga, list.ga, elem.ga, elem.size, rank);
}
void acp_remove_list(acp_list_t list, const acp_element_t elem)
{
    goacpdl_list_insert(3, list.ga, list.ga, elem.ga, elem.size, 0);
}
acp_element_t acp_dereference_list_it(acp_list_it_t it)
{
    acp_element_t e = { 0, 0 };
    goacpdl_dereference_list_it(it.list.ga, it.elem, &e);
    return e;
}
void acp_merge_list(acp_list_t list1, acp_list_t list2, int (*comp)(const acp_element_t elem1, const acp_element_t elem2))
{
    goacpdl_list_order(1, list1.ga, list2.ga, (void *)comp);
}
void acp_sort_list(acp_list_t list, int (*comp)(const acp_element_t elem1, const acp_element_t elem2))
{
    goacpdl_list_order(0, list.ga, 0, (void *)comp);
}

/* ---- set, multiset, map ------------------------------------------------ */

/* The functions every hashed container has. H is the handle type, IT the
 * iterator type, M the iterator's first member, NAME the suffix. */
#define DL_HASHED(H, IT, M, NAME, KIND)                                                        \
    static IT NAME##_it(H h, int rank, int slot, acp_ga_t elem)                                \
    {                                                                                          \
        IT it;                                                                                 \
        it.M = h;                                                                              \
        it.rank = rank;                                                                        \
        it.slot = slot;                                                                        \
        it.elem = elem;                                                                        \
        return it;                                                                             \
    }                                                                                          \
    static IT NAME##_iter(int op, H h, IT from, acp_ga_t kga, size_t ksize)                   \
    {                                                                                          \
        int rank = from.rank, slot = from.slot;                                                \
        acp_ga_t elem = from.elem;                                                             \
        goacpdl_h_iter(KIND, op, h.ga, h.num_ranks, h.num_slots, &rank, &slot, &elem, kga, ksize); \
        return NAME##_it(h, rank, slot, elem);                                                 \
    }                                                                                          \
    H acp_create_##NAME(int num_ranks, const int *ranks, int num_slots, int rank)              \
    {                                                                                          \
        H h;                                                                                   \
        uint64_t nr = (uint64_t)(int64_t)num_ranks;                                            \
        h.ga = goacpdl_h_create(KIND, num_ranks, (int *)ranks, num_slots, rank, &nr);          \
        h.num_ranks = nr;                                                                      \
        h.num_slots = (uint64_t)(int64_t)num_slots;                                            \
        return h;                                                                              \
    }                                                                                          \
    void acp_destroy_##NAME(H h) { goacpdl_h_op(KIND, 0, h.ga, h.num_ranks, h.num_slots); }    \
    void acp_clear_##NAME(H h) { goacpdl_h_op(KIND, 1, h.ga, h.num_ranks, h.num_slots); }      \
    int acp_empty_##NAME(H h) { return (int)goacpdl_h_op(KIND, 2, h.ga, h.num_ranks, h.num_slots); } \
    int acp_empty_local_##NAME(H h) { return (int)goacpdl_h_op(KIND, 3, h.ga, h.num_ranks, h.num_slots); } \
    size_t acp_size_##NAME(H h) { return goacpdl_h_op(KIND, 4, h.ga, h.num_ranks, h.num_slots); } \
    size_t acp_size_local_##NAME(H h) { return goacpdl_h_op(KIND, 5, h.ga, h.num_ranks, h.num_slots); } \
    void acp_clear_local_##NAME(H h) { goacpdl_h_op(KIND, 6, h.ga, h.num_ranks, h.num_slots); } \
    IT acp_begin_##NAME(H h) { return NAME##_iter(0, h, NAME##_it(h, 0, 0, 0), 0, 0); }        \
    IT acp_begin_local_##NAME(H h) { return NAME##_iter(1, h, NAME##_it(h, 0, 0, 0), 0, 0); }  \
    IT acp_end_local_##NAME(H h) { return NAME##_iter(2, h, NAME##_it(h, 0, 0, 0), 0, 0); }    \
    IT acp_end_##NAME(H h) { return NAME##_it(h, (int)h.num_ranks, 0, 0); }                    \
    IT acp_increment_##NAME##_it(IT it) { return NAME##_iter(3, it.M, it, 0, 0); }             \
    IT acp_find_##NAME(H h, acp_element_t key) { return NAME##_iter(4, h, NAME##_it(h, 0, 0, 0), key.ga, key.size); } \
    void acp_remove_##NAME(H h, acp_element_t key)                                             \
    {                                                                                          \
        goacpdl_h_key(KIND, 1, h.ga, h.num_ranks, h.num_slots, key.ga, key.size, 0, 0);        \
    }                                                                                          \
    void acp_assign_##NAME(H h1, H h2) { goacpdl_h_op2(KIND, 0, h1.ga, h1.num_ranks, h1.num_slots, h2.ga, h2.num_ranks, h2.num_slots); } \
    void acp_assign_local_##NAME(H h1, H h2) { goacpdl_h_op2(KIND, 1, h1.ga, h1.num_ranks, h1.num_slots, h2.ga, h2.num_ranks, h2.num_slots); } \
    void acp_merge_##NAME(H h1, H h2) { goacpdl_h_op2(KIND, 2, h1.ga, h1.num_ranks, h1.num_slots, h2.ga, h2.num_ranks, h2.num_slots); } \
    void acp_merge_local_##NAME(H h1, H h2) { goacpdl_h_op2(KIND, 3, h1.ga, h1.num_ranks, h1.num_slots, h2.ga, h2.num_ranks, h2.num_slots); } \
    void acp_move_##NAME(H h1, H h2) { goacpdl_h_op2(KIND, 4, h1.ga, h1.num_ranks, h1.num_slots, h2.ga, h2.num_ranks, h2.num_slots); } \
    void acp_move_local_##NAME(H h1, H h2) { goacpdl_h_op2(KIND, 5, h1.ga, h1.num_ranks, h1.num_slots, h2.ga, h2.num_ranks, h2.num_slots); } \
    void acp_swap_##NAME(H h1, H h2) { goacpdl_h_op2(KIND, 6, h1.ga, h1.num_ranks, h1.num_slots, h2.ga, h2.num_ranks, h2.num_slots); }

/* acp_clear_local_set and _multiset are exported by the original but not
 * declared in acp.h. */
void acp_clear_local_set(acp_set_t h);
void acp_clear_local_multiset(acp_multiset_t h);

DL_HASHED(acp_set_t, acp_set_it_t, set, set, DL_SET)
DL_HASHED(acp_multiset_t, acp_multiset_it_t, set, multiset, DL_MULTISET)
DL_HASHED(acp_map_t, acp_map_it_t, map, map, DL_MAP)

int acp_insert_set(acp_set_t set, acp_element_t key)
{
    return (int)goacpdl_h_key(DL_SET, 0, set.ga, set.num_ranks, set.num_slots, key.ga, key.size, 0, 0);
}
int acp_insert_multiset(acp_multiset_t set, acp_element_t key)
{
    return (int)goacpdl_h_key(DL_MULTISET, 0, set.ga, set.num_ranks, set.num_slots, key.ga, key.size, 0, 0);
}
void acp_remove_all_multiset(acp_multiset_t set, acp_element_t key)
{
    goacpdl_h_key(DL_MULTISET, 2, set.ga, set.num_ranks, set.num_slots, key.ga, key.size, 0, 0);
}
uint64_t acp_retrieve_multiset(acp_multiset_t set, acp_element_t key)
{
    return goacpdl_h_key(DL_MULTISET, 3, set.ga, set.num_ranks, set.num_slots, key.ga, key.size, 0, 0);
}
int acp_insert_map(acp_map_t map, acp_pair_t pair)
{
    return (int)goacpdl_h_key(DL_MAP, 0, map.ga, map.num_ranks, map.num_slots, pair.first.ga, pair.first.size,
                              pair.second.ga, pair.second.size);
}
size_t acp_retrieve_map(acp_map_t map, acp_pair_t pair)
{
    return goacpdl_h_key(DL_MAP, 3, map.ga, map.num_ranks, map.num_slots, pair.first.ga, pair.first.size,
                         pair.second.ga, pair.second.size);
}

static acp_pair_t dereference_h(int kind, acp_ga_t elem)
{
    acp_pair_t p = { { 0, 0 }, { 0, 0 } };
    goacpdl_h_dereference(kind, elem, &p);
    return p;
}
acp_element_t acp_dereference_set_it(acp_set_it_t it) { return dereference_h(DL_SET, it.elem).first; }
acp_element_t acp_dereference_multiset_it(acp_multiset_it_t it) { return dereference_h(DL_MULTISET, it.elem).first; }
acp_pair_t acp_dereference_map_it(acp_map_it_t it) { return dereference_h(DL_MAP, it.elem); }
