/*
 * t_dl_macros: the type-generic macros of acp.h (spec 2.15).
 *
 * First the expansion of every macro, the reserved ones (acp_back,
 * acp_front, acp_bucket, ...) and the doubly defined acp_size included,
 * compared as text. Then every valid type token of every macro is called
 * and its effect checked, with several element types: a vector of int32,
 * a deque of doubles, a list of 24-byte records, a set of 8-byte binary
 * keys, a multiset of strings and a map from int32 keys to records; the
 * communication-library and workspace tokens (acp_create(ch, ...),
 * acp_create(src_segbuf/dst_segbuf, ...), acp_create(ws, ...),
 * acp_destroy(ws, ...)) as well. Containers live on other ranks than the
 * caller's, list elements on every rank, hashed tables on every rank; every
 * rank works at once on containers of its own.
 */
#include "dltest.h"

static int me, np;

/* ---- expansions -------------------------------------------------------------- */

#define STR_(...) #__VA_ARGS__
#define STR(...) STR_(__VA_ARGS__)
#define EXPANDS(call, want) CHECK_INT(strcmp(STR(call), want), 0, "%s expands to %s (got %s)", #call, want, STR(call))

static void expansions(void)
{
    EXPANDS(acp_assign(range_vector, v, s, e), "acp_assign_range_vector(v, s, e)");
    EXPANDS(acp_assign_range(list, l, s, e), "acp_assign_range_list(l, s, e)");
    EXPANDS(acp_at(deque, d, 4), "acp_at_deque(d, 4)");
    EXPANDS(acp_back(vector, v), "acp_back_vector(v)");
    EXPANDS(acp_begin(local_map, m), "acp_begin_local_map(m)");
    EXPANDS(acp_bucket(map, m, k), "acp_bucket_map(m, k)");
    EXPANDS(acp_bucket_count(set, s), "acp_bucket_count_set(s)");
    EXPANDS(acp_bucket_size(set, s, 1), "acp_bucket_size_set(s, 1)");
    EXPANDS(acp_capacity(vector, v), "acp_capacity_vector(v)");
    EXPANDS(acp_clear(local_map, m), "acp_clear_local_map(m)");
    EXPANDS(acp_count(multiset, s, k), "acp_count_multiset(s, k)");
    EXPANDS(acp_create(src_segbuf, 1, b, 8, 2), "acp_create_src_segbuf(1, b, 8, 2)");
    EXPANDS(acp_destroy(ws, w), "acp_destroy_ws(w)");
    EXPANDS(acp_empty(local_multiset, s), "acp_empty_local_multiset(s)");
    EXPANDS(acp_end(list, l), "acp_end_list(l)");
    EXPANDS(acp_erase(range_deque, s, e), "acp_erase_range_deque(s, e)");
    EXPANDS(acp_erase_range(vector, s, e), "acp_erase_range_vector(s, e)");
    EXPANDS(acp_find(map, m, k), "acp_find_map(m, k)");
    EXPANDS(acp_front(deque, d), "acp_front_deque(d)");
    EXPANDS(acp_insert(range_list, it, s, e), "acp_insert_range_list(it, s, e)");
    EXPANDS(acp_insert_range(deque, it, s, e), "acp_insert_range_deque(it, s, e)");
    EXPANDS(acp_merge(local_set, a, b), "acp_merge_local_set(a, b)");
    EXPANDS(acp_pop_back(list, l), "acp_pop_back_list(l)");
    EXPANDS(acp_pop_front(deque, d, 8), "acp_pop_front_deque(d, 8)");
    EXPANDS(acp_push_back(vector, v, g, 4), "acp_push_back_vector(v, g, 4)");
    EXPANDS(acp_push_front(list, l, e, 0), "acp_push_front_list(l, e, 0)");
    EXPANDS(acp_remove(all_multiset, s, k), "acp_remove_all_multiset(s, k)");
    EXPANDS(acp_reserve(deque, d, 64), "acp_reserve_deque(d, 64)");
    EXPANDS(acp_reverse(list, l), "acp_reverse_list(l)");
    EXPANDS(acp_size(local_set, s), "acp_size_local_set(s)");
    EXPANDS(acp_sort(list, l, c), "acp_sort_list(l, c)");
    EXPANDS(acp_splice(range_list, it, s, e), "acp_splice_range_list(it, s, e)");
    EXPANDS(acp_swap(map, a, b), "acp_swap_map(a, b)");
    EXPANDS(acp_unique(list, l), "acp_unique_list(l)");
    EXPANDS(acp_advance(deque_it, it, 8), "acp_advance_deque_it(it, 8)");
    EXPANDS(acp_decrement(list_it, it), "acp_decrement_list_it(it)");
    EXPANDS(acp_dereference(deque_it, it, 8), "acp_dereference_deque_it(it, 8)");
    EXPANDS(acp_dereference_value(map_it, it), "acp_dereference_value_map_it(it)");
    EXPANDS(acp_distance(list_it, a, b), "acp_distance_list_it(a, b)");
    EXPANDS(acp_increment(multiset_it, it), "acp_increment_multiset_it(it)");
    EXPANDS(acp_size_value(map_it, it), "acp_size_value_map_it(it)");
}

/* ---- values in my registered buffer ----------------------------------------- */

/* Copies n bytes into my registered buffer (beyond what dlt_read uses) and
 * returns their GA; 16 KiB in turns. */
static acp_ga_t put(const void *p, size_t n)
{
    static size_t off;
    if (off + n > 16384)
        off = 0;
    memcpy(dlt_buf + 32768 + off, p, n);
    acp_ga_t g = dlt_bufga + 32768 + off;
    off += (n + 7) & ~(size_t)7;
    return g;
}
static acp_ga_t put_i32(int32_t v) { return put(&v, 4); }
static acp_ga_t put_f64(double v) { return put(&v, 8); }

static int32_t read_i32(acp_ga_t g) { int32_t v; memcpy(&v, dlt_read(g, 4), 4); return v; }
static double read_f64(acp_ga_t g) { double v; memcpy(&v, dlt_read(g, 8), 8); return v; }

/* ---- vector of int32 ----------------------------------------------------------- */

static void check_vector(acp_vector_t v, const int32_t *want, int n, const char *what)
{
    CHECK_INT(acp_size(vector, v), 4 * n, "vector %s: size", what);
    CHECK_INT(acp_empty(vector, v), n == 0, "vector %s: empty", what);
    for (int i = 0; i < n; i++)
        CHECK_INT(read_i32(acp_at(vector, v, 4 * i)), want[i], "vector %s: element %d", what, i);
    CHECK_HEX(acp_at(vector, v, 4 * n), ACP_GA_NULL, "vector %s: at(size)", what);
}
#define CHECK_VECTOR(v, what, ...)                                                          \
    do {                                                                                    \
        const int32_t w_[] = { __VA_ARGS__ };                                               \
        check_vector((v), w_, (int)(sizeof w_ / sizeof w_[0]), (what));                     \
    } while (0)

static void vectors(void)
{
    int R = (me + 1) % np;
    acp_vector_t v = acp_create(vector, 8, R);
    CHECK(v.ga != ACP_GA_NULL, "acp_create(vector, 8, %d)", R);
    CHECK_INT(acp_query_rank(v.ga), R, "vector on rank %d", R);
    CHECK_INT(acp_size(vector, v), 8, "create(vector, 8): size");
    CHECK_INT(acp_capacity(vector, v), 8, "create(vector, 8): capacity");
    acp_clear(vector, v);
    CHECK_VECTOR(v, "clear", );
    CHECK_INT(acp_capacity(vector, v), 8, "clear keeps the capacity");
    for (int i = 1; i <= 5; i++)
        acp_push_back(vector, v, put_i32(10 * i), 4);
    CHECK_VECTOR(v, "push_back", 10, 20, 30, 40, 50);
    CHECK_INT(acp_capacity(vector, v), 24, "capacity after 5 push_backs");
    acp_reserve(vector, v, 64);
    CHECK_INT(acp_capacity(vector, v), 64, "reserve");
    CHECK_VECTOR(v, "reserve", 10, 20, 30, 40, 50);

    acp_vector_it_t b = acp_begin(vector, v), e = acp_end(vector, v);
    CHECK_INT(b.index, 0, "begin(vector)");
    CHECK_INT(e.index, 20, "end(vector)");
    CHECK_INT(acp_distance(vector_it, b, e), 20, "distance(vector_it)");
    acp_vector_it_t it = acp_advance(vector_it, b, 8);
    CHECK_INT(it.index, 8, "advance(vector_it)");
    CHECK_HEX(acp_dereference(vector_it, it), acp_at(vector, v, 8), "dereference(vector_it)");
    CHECK_INT(read_i32(acp_dereference(vector_it, it)), 30, "dereference(vector_it): value");
    it = acp_insert(vector, it, put_i32(-1), 4);
    CHECK_INT(it.index, 8, "insert(vector) returns its iterator");
    CHECK_VECTOR(v, "insert", 10, 20, -1, 30, 40, 50);
    acp_pop_back(vector, v, 4);
    CHECK_VECTOR(v, "pop_back", 10, 20, -1, 30, 40);
    acp_erase(vector, acp_advance(vector_it, b, 4), 4);
    CHECK_VECTOR(v, "erase", 10, -1, 30, 40);

    acp_vector_t w = acp_create(vector, 0, me);
    acp_assign(vector, w, v);
    CHECK_VECTOR(w, "assign", 10, -1, 30, 40);
    acp_insert(range_vector, acp_begin(vector, w), acp_advance(vector_it, acp_begin(vector, v), 8), acp_end(vector, v));
    CHECK_VECTOR(w, "insert(range_vector)", 30, 40, 10, -1, 30, 40);
    acp_insert_range(vector, acp_end(vector, w), acp_begin(vector, v), acp_advance(vector_it, acp_begin(vector, v), 4));
    CHECK_VECTOR(w, "insert_range(vector)", 30, 40, 10, -1, 30, 40, 10);
    acp_erase(range_vector, acp_advance(vector_it, acp_begin(vector, w), 4), acp_advance(vector_it, acp_begin(vector, w), 8));
    CHECK_VECTOR(w, "erase(range_vector)", 30, 10, -1, 30, 40, 10);
    acp_erase_range(vector, acp_begin(vector, w), acp_advance(vector_it, acp_begin(vector, w), 4));
    CHECK_VECTOR(w, "erase_range(vector)", 10, -1, 30, 40, 10);
    acp_assign(range_vector, v, acp_advance(vector_it, acp_begin(vector, w), 8), acp_end(vector, w));
    CHECK_VECTOR(v, "assign(range_vector)", 30, 40, 10);
    acp_assign_range(vector, v, acp_begin(vector, w), acp_advance(vector_it, acp_begin(vector, w), 8));
    CHECK_VECTOR(v, "assign_range(vector)", 10, -1);
    acp_swap(vector, v, w);
    CHECK_VECTOR(v, "swap(vector): first", 10, -1, 30, 40, 10);
    CHECK_VECTOR(w, "swap(vector): second", 10, -1);
    acp_destroy(vector, v);
    acp_destroy(vector, w);
}

/* ---- deque of doubles -------------------------------------------------------- */

static void check_deque(acp_deque_t d, const double *want, int n, const char *what)
{
    CHECK_INT(acp_size(deque, d), 8 * n, "deque %s: size", what);
    CHECK_INT(acp_empty(deque, d), n == 0, "deque %s: empty", what);
    for (int i = 0; i < n; i++)
        CHECK(read_f64(acp_at(deque, d, 8 * i)) == want[i], "deque %s: element %d is %g (want %g)", what, i,
              read_f64(acp_at(deque, d, 8 * i)), want[i]);
    CHECK_HEX(acp_at(deque, d, 8 * n), ACP_GA_NULL, "deque %s: at(size)", what);
}
#define CHECK_DEQUE(d, what, ...)                                                           \
    do {                                                                                    \
        const double w_[] = { __VA_ARGS__ };                                                \
        check_deque((d), w_, (int)(sizeof w_ / sizeof w_[0]), (what));                      \
    } while (0)

static void deques(void)
{
    int R = (me + 2) % np;
    acp_deque_t d = acp_create(deque, 16, R);
    CHECK(d.ga != ACP_GA_NULL, "acp_create(deque, 16, %d)", R);
    CHECK_INT(acp_query_rank(d.ga), R, "deque on rank %d", R);
    CHECK_INT(acp_empty(deque, d), 1, "create(deque): empty");
    CHECK_INT(acp_capacity(deque, d), 16, "create(deque, 16): capacity");
    acp_push_back(deque, d, put_f64(0.5), 8);
    acp_push_back(deque, d, put_f64(1.5), 8);
    CHECK_DEQUE(d, "push_back", 0.5, 1.5);
    acp_push_front(deque, d, put_f64(-1.0), 8);
    CHECK_DEQUE(d, "push_front", -1.0, 0.5, 1.5);
    CHECK_INT(acp_capacity(deque, d), 24, "push_front into a full deque grows it");
    acp_pop_front(deque, d, 8);
    CHECK_DEQUE(d, "pop_front", 0.5, 1.5);
    acp_push_back(deque, d, put_f64(2.5), 8); /* wraps: the ring starts at byte 8 */
    CHECK_DEQUE(d, "push_back wrapping", 0.5, 1.5, 2.5);
    acp_deque_it_t b = acp_begin(deque, d), e = acp_end(deque, d);
    CHECK_INT(b.index, 0, "begin(deque)");
    CHECK_INT(e.index, 24, "end(deque)");
    CHECK_INT(acp_distance(deque_it, b, e), 24, "distance(deque_it)");
    CHECK_INT(acp_advance(deque_it, b, 16).index, 16, "advance(deque_it)");
    acp_pair_t p = acp_dereference(deque_it, b, 24);
    CHECK_INT(p.first.size, 16, "dereference(deque_it) of a wrapped range: first piece");
    CHECK_INT(p.second.size, 8, "dereference(deque_it) of a wrapped range: second piece");
    CHECK(read_f64(p.first.ga + 8) == 1.5 && read_f64(p.second.ga) == 2.5, "dereference(deque_it): the pieces' values");
    CHECK_HEX(p.second.ga, acp_at(deque, d, 16), "dereference(deque_it): the second piece is at(16)");
    acp_reserve(deque, d, 40);
    CHECK_INT(acp_capacity(deque, d), 40, "reserve(deque)");
    CHECK_DEQUE(d, "reserve", 0.5, 1.5, 2.5);
    acp_insert(deque, acp_advance(deque_it, acp_begin(deque, d), 8), put_f64(9.5), 8);
    CHECK_DEQUE(d, "insert(deque)", 0.5, 9.5, 1.5, 2.5);
    acp_erase(deque, acp_advance(deque_it, acp_begin(deque, d), 16), 8);
    CHECK_DEQUE(d, "erase(deque)", 0.5, 9.5, 2.5);
    acp_pop_back(deque, d, 8);
    CHECK_DEQUE(d, "pop_back(deque)", 0.5, 9.5);

    acp_deque_t f = acp_create(deque, 0, me);
    acp_assign(deque, f, d);
    CHECK_DEQUE(f, "assign(deque)", 0.5, 9.5);
    acp_insert(range_deque, acp_end(deque, f), acp_begin(deque, d), acp_end(deque, d));
    CHECK_DEQUE(f, "insert(range_deque)", 0.5, 9.5, 0.5, 9.5);
    acp_insert_range(deque, acp_begin(deque, f), acp_advance(deque_it, acp_begin(deque, d), 8), acp_end(deque, d));
    CHECK_DEQUE(f, "insert_range(deque)", 9.5, 0.5, 9.5, 0.5, 9.5);
    acp_erase(range_deque, acp_begin(deque, f), acp_advance(deque_it, acp_begin(deque, f), 16));
    CHECK_DEQUE(f, "erase(range_deque)", 9.5, 0.5, 9.5);
    acp_erase_range(deque, acp_advance(deque_it, acp_begin(deque, f), 8), acp_end(deque, f));
    CHECK_DEQUE(f, "erase_range(deque)", 9.5);
    acp_push_back(deque, f, put_f64(3.5), 8);
    acp_assign(range_deque, d, acp_begin(deque, f), acp_end(deque, f));
    CHECK_DEQUE(d, "assign(range_deque)", 9.5, 3.5);
    acp_assign_range(deque, d, acp_advance(deque_it, acp_begin(deque, f), 8), acp_end(deque, f));
    CHECK_DEQUE(d, "assign_range(deque)", 3.5);
    acp_swap(deque, d, f);
    CHECK_DEQUE(d, "swap(deque): first", 9.5, 3.5);
    CHECK_DEQUE(f, "swap(deque): second", 3.5);
    acp_clear(deque, d);
    CHECK_DEQUE(d, "clear(deque)", );
    acp_destroy(deque, d);
    acp_destroy(deque, f);
}

/* ---- list of records ----------------------------------------------------------- */

struct rec {
    int32_t id;
    char tag[12];
    double weight;
};

static struct rec mkrec(int id)
{
    struct rec r;
    memset(&r, 0, sizeof r);
    r.id = id;
    snprintf(r.tag, sizeof r.tag, "rec-%d", id);
    r.weight = id * 0.25;
    return r;
}
static acp_element_t rec_el(int id)
{
    struct rec r = mkrec(id);
    acp_element_t e = { put(&r, sizeof r), sizeof r };
    return e;
}
static int rec_ok(acp_element_t e, int id)
{
    struct rec want = mkrec(id), got;
    if (e.ga == ACP_GA_NULL || e.size != sizeof got)
        return 0;
    memcpy(&got, dlt_read(e.ga, sizeof got), sizeof got);
    return memcmp(&got, &want, sizeof got) == 0;
}
static int rec_id(acp_element_t e)
{
    if (e.ga == ACP_GA_NULL)
        return -1;
    return read_i32(e.ga);
}

static int cmp_calls;
static int cmp_rec(const acp_element_t a, const acp_element_t b)
{
    cmp_calls++;
    int x = rec_id(a), y = rec_id(b);
    return (x > y) - (x < y);
}

static void check_list(acp_list_t l, const int *want, int n, const char *what)
{
    CHECK_INT(acp_size(list, l), n, "list %s: size", what);
    CHECK_INT(acp_empty(list, l), n == 0, "list %s: empty", what);
    int i = 0;
    acp_list_it_t e = acp_end(list, l);
    for (acp_list_it_t it = acp_begin(list, l); it.elem != e.elem && i <= n; it = acp_increment(list_it, it), i++)
        if (i < n)
            CHECK(rec_ok(acp_dereference(list_it, it), want[i]), "list %s: element %d is record %d (got id %d)", what, i,
                  want[i], rec_id(acp_dereference(list_it, it)));
    CHECK_INT(i, n, "list %s: iteration steps", what);
}
#define CHECK_LIST(l, what, ...)                                                            \
    do {                                                                                    \
        const int w_[] = { __VA_ARGS__ };                                                   \
        check_list((l), w_, (int)(sizeof w_ / sizeof w_[0]), (what));                       \
    } while (0)

static void lists(void)
{
    int R = (me + 1) % np, R2 = (me + 3) % np;
    acp_list_t l = acp_create(list, R);
    CHECK(l.ga != ACP_GA_NULL, "acp_create(list, %d)", R);
    CHECK_INT(acp_query_rank(l.ga), R, "list on rank %d", R);
    CHECK_LIST(l, "new", );
    acp_push_back(list, l, rec_el(3), 0);
    acp_push_back(list, l, rec_el(1), 1 % np);
    acp_push_back(list, l, rec_el(2), 2 % np);
    acp_push_front(list, l, rec_el(5), 3 % np);
    CHECK_LIST(l, "push_back, push_front", 5, 3, 1, 2);
    CHECK_INT(acp_query_rank(acp_begin(list, l).elem), 3 % np, "push_front's element on its rank");
    acp_list_it_t it = acp_insert(list, acp_advance(list_it, acp_begin(list, l), 2), rec_el(7), me);
    CHECK(rec_ok(acp_dereference(list_it, it), 7), "insert(list) returns the new element");
    CHECK_INT(acp_query_rank(it.elem), me, "insert(list): the element on the given rank");
    CHECK_LIST(l, "insert(list)", 5, 3, 7, 1, 2);
    it = acp_erase(list, it);
    CHECK(rec_ok(acp_dereference(list_it, it), 1), "erase(list) returns the next element");
    CHECK_LIST(l, "erase(list)", 5, 3, 1, 2);
    cmp_calls = 0;
    acp_sort(list, l, cmp_rec);
    CHECK(cmp_calls > 0, "sort(list) calls the comparator");
    CHECK_LIST(l, "sort(list)", 1, 2, 3, 5);
    acp_reverse(list, l);
    CHECK_LIST(l, "reverse(list)", 5, 3, 2, 1);
    acp_push_back(list, l, rec_el(1), me);
    acp_push_back(list, l, rec_el(1), R2);
    acp_unique(list, l);
    CHECK_LIST(l, "unique(list)", 5, 3, 2, 1);
    acp_remove(list, l, rec_el(3));
    CHECK_LIST(l, "remove(list)", 5, 2, 1);

    acp_list_t m = acp_create(list, R2);
    acp_push_back(list, m, rec_el(4), R2);
    acp_push_back(list, m, rec_el(6), me);
    acp_sort(list, l, cmp_rec);
    acp_merge(list, l, m, cmp_rec);
    CHECK_LIST(l, "merge(list)", 1, 2, 4, 5, 6);
    CHECK_LIST(m, "merge(list): source", );

    acp_list_it_t b = acp_begin(list, l), e = acp_end(list, l);
    CHECK_INT(acp_distance(list_it, b, e), 5, "distance(list_it)");
    CHECK(rec_ok(acp_dereference(list_it, acp_increment(list_it, b)), 2), "increment(list_it)");
    CHECK(rec_ok(acp_dereference(list_it, acp_decrement(list_it, e)), 6), "decrement(list_it) of the end");
    CHECK(rec_ok(acp_dereference(list_it, acp_advance(list_it, b, 3)), 5), "advance(list_it)");
    CHECK_HEX(acp_dereference(list_it, e).ga, ACP_GA_NULL, "dereference(list_it) of the end");
    acp_splice(list, acp_begin(list, l), acp_advance(list_it, acp_begin(list, l), 4));
    CHECK_LIST(l, "splice(list)", 6, 1, 2, 4, 5);
    acp_splice(range_list, acp_end(list, m), acp_advance(list_it, acp_begin(list, l), 1),
               acp_advance(list_it, acp_begin(list, l), 3));
    CHECK_LIST(l, "splice(range_list): source", 6, 4, 5);
    CHECK_LIST(m, "splice(range_list): destination", 1, 2);

    acp_list_t n = acp_create(list, me);
    acp_assign(list, n, l);
    CHECK_LIST(n, "assign(list)", 6, 4, 5);
    acp_assign(range_list, n, acp_begin(list, m), acp_end(list, m));
    CHECK_LIST(n, "assign(range_list)", 1, 2);
    acp_assign_range(list, n, acp_advance(list_it, acp_begin(list, l), 1), acp_end(list, l));
    CHECK_LIST(n, "assign_range(list)", 4, 5);
    acp_insert(range_list, acp_begin(list, n), acp_begin(list, m), acp_end(list, m));
    CHECK_LIST(n, "insert(range_list)", 1, 2, 4, 5);
    acp_insert_range(list, acp_end(list, n), acp_begin(list, l), acp_advance(list_it, acp_begin(list, l), 1));
    CHECK_LIST(n, "insert_range(list)", 1, 2, 4, 5, 6);
    acp_erase(range_list, acp_begin(list, n), acp_advance(list_it, acp_begin(list, n), 2));
    CHECK_LIST(n, "erase(range_list)", 4, 5, 6);
    acp_erase_range(list, acp_advance(list_it, acp_begin(list, n), 1), acp_end(list, n));
    CHECK_LIST(n, "erase_range(list)", 4);
    acp_swap(list, n, m);
    CHECK_LIST(n, "swap(list): first", 1, 2);
    CHECK_LIST(m, "swap(list): second", 4);
    acp_pop_back(list, n);
    CHECK_LIST(n, "pop_back(list)", 1);
    acp_push_back(list, n, rec_el(8), R);
    acp_pop_front(list, n);
    CHECK_LIST(n, "pop_front(list)", 8);
    acp_clear(list, l);
    CHECK_LIST(l, "clear(list)", );
    acp_destroy(list, l);
    acp_destroy(list, m);
    acp_destroy(list, n);
}

/* ---- hashed containers ---------------------------------------------------------- */

/* Which keys of a container are in the caller's tables: the directory
 * entries, in order, are ranks[0..num_ranks-1] (NULL: every rank). */
static int is_local(const void *key, size_t n, uint64_t num_ranks, uint64_t num_slots, const int *ranks)
{
    int t, s;
    dlt_place(key, n, num_ranks, num_slots, &t, &s);
    return (ranks ? ranks[t] : t) == me;
}

/* A set of 8-byte binary keys. */
#define NK 20
static int64_t skey(int i) { return (int64_t)i * 1000003 + ((int64_t)me << 40); }
static acp_element_t skey_el(int64_t k) { acp_element_t e = { put(&k, 8), 8 }; return e; }

/* The keys present, by iteration; counts per directory entry. */
static int set_keys(acp_set_t s, int64_t *out, int *per_table, const char *what)
{
    int n = 0;
    for (acp_set_it_t it = acp_begin(set, s); it.rank < (int)s.num_ranks && n < 64; it = acp_increment(set_it, it), n++) {
        acp_element_t e = acp_dereference(set_it, it);
        CHECK_INT(e.size, 8, "set %s: dereference(set_it): key size", what);
        memcpy(&out[n], dlt_read(e.ga, 8), 8);
        if (per_table)
            per_table[it.rank]++;
    }
    return n;
}

static void check_set(acp_set_t s, const int *want_ids, int n, const int *ranks, const char *what)
{
    int64_t got[64];
    int per[64] = { 0 }, nl = 0;
    CHECK_INT(acp_size(set, s), n, "set %s: size", what);
    CHECK_INT(acp_empty(set, s), n == 0, "set %s: empty", what);
    int m = set_keys(s, got, per, what);
    CHECK_INT(m, n, "set %s: iteration steps", what);
    for (int i = 0; i < n; i++) {
        int64_t k = skey(want_ids[i]);
        int found = 0;
        for (int j = 0; j < m; j++)
            found += got[j] == k;
        CHECK_INT(found, 1, "set %s: key %d visited once", what, want_ids[i]);
        CHECK(acp_find(set, s, skey_el(k)).elem != ACP_GA_NULL, "set %s: find(set) of key %d", what, want_ids[i]);
        nl += is_local(&k, 8, s.num_ranks, s.num_slots, ranks);
    }
    CHECK_INT(acp_size(local_set, s), nl, "set %s: size(local_set)", what);
    CHECK_INT(acp_empty(local_set, s), nl == 0, "set %s: empty(local_set)", what);
    int i = 0;
    acp_set_it_t le = acp_end(local_set, s);
    for (acp_set_it_t it = acp_begin(local_set, s); !(it.rank == le.rank && it.slot == le.slot && it.elem == le.elem) && i <= n;
         it = acp_increment(set_it, it), i++) {
        int64_t k;
        memcpy(&k, dlt_read(acp_dereference(set_it, it).ga, 8), 8);
        CHECK(is_local(&k, 8, s.num_ranks, s.num_slots, ranks), "set %s: begin(local_set)..end(local_set) holds local keys", what);
    }
    CHECK_INT(i, nl, "set %s: begin(local_set)..end(local_set) steps", what);
}
#define CHECK_SET(s, ranks, what, ...)                                                      \
    do {                                                                                    \
        const int w_[] = { __VA_ARGS__ };                                                   \
        check_set((s), w_, (int)(sizeof w_ / sizeof w_[0]), (ranks), (what));               \
    } while (0)

static void sets(void)
{
    acp_set_t s = acp_create(set, 0, NULL, 4, me);
    CHECK(s.ga != ACP_GA_NULL, "acp_create(set, 0, NULL, 4, %d)", me);
    int ids[NK], n = 0;
    for (int i = 0; i < NK; i++) {
        CHECK_INT(acp_insert(set, s, skey_el(skey(i))), 1, "insert(set) %d", i);
        ids[n++] = i;
    }
    CHECK_INT(acp_insert(set, s, skey_el(skey(3))), 1, "insert(set) of a present key");
    check_set(s, ids, n, NULL, "inserts");
    acp_set_it_t f = acp_find(set, s, skey_el(skey(7)));
    int64_t k7;
    memcpy(&k7, dlt_read(acp_dereference(set_it, f).ga, 8), 8);
    CHECK(k7 == skey(7), "find(set), dereference(set_it): the key's bytes");
    acp_remove(set, s, skey_el(skey(7)));
    CHECK_HEX(acp_find(set, s, skey_el(skey(7))).elem, ACP_GA_NULL, "remove(set)");
    n = 0;
    for (int i = 0; i < NK; i++)
        if (i != 7)
            ids[n++] = i;
    check_set(s, ids, n, NULL, "remove");
    acp_set_it_t end = acp_end(set, s);
    CHECK(end.rank == (int)s.num_ranks && end.slot == 0 && end.elem == ACP_GA_NULL, "end(set) is the null iterator");

    /* t: 2 slots on every rank, directory on the next rank. */
    acp_set_t t = acp_create(set, 0, NULL, 2, (me + 1) % np);
    acp_insert(set, t, skey_el(skey(100)));
    acp_merge(set, t, s);
    int ids2[NK + 1];
    memcpy(ids2, ids, sizeof ids);
    ids2[n] = 100;
    check_set(t, ids2, n + 1, NULL, "merge(set)");
    acp_assign(set, t, s);
    check_set(t, ids, n, NULL, "assign(set)");
    acp_clear(set, t);
    CHECK_SET(t, NULL, "clear(set)", );
    acp_merge(local_set, t, s);
    int want[NK], nw = 0;
    for (int i = 0; i < n; i++) {
        int64_t k = skey(ids[i]);
        if (is_local(&k, 8, s.num_ranks, s.num_slots, NULL))
            want[nw++] = ids[i];
    }
    check_set(t, want, nw, NULL, "merge(local_set)");
    /* assign(local_set): t keeps what is outside my tables, gains s's local keys. */
    acp_insert(set, t, skey_el(skey(200)));
    acp_insert(set, t, skey_el(skey(201)));
    acp_insert(set, t, skey_el(skey(202)));
    acp_assign(local_set, t, s);
    int kept[NK + 3], nk = 0;
    for (int i = 0; i < nw; i++)
        kept[nk++] = want[i]; /* s's local keys, re-inserted */
    for (int id = 200; id <= 202; id++) {
        int64_t k = skey(id);
        if (!is_local(&k, 8, t.num_ranks, t.num_slots, NULL))
            kept[nk++] = id;
    }
    check_set(t, kept, nk, NULL, "assign(local_set)");
    acp_swap(set, s, t);
    check_set(s, kept, nk, NULL, "swap(set): first");
    check_set(t, ids, n, NULL, "swap(set): second");
    acp_destroy(set, s);
    acp_destroy(set, t);
}

/* A multiset of strings. */
static acp_element_t str_el(const char *s) { acp_element_t e = { put(s, strlen(s)), strlen(s) }; return e; }

static uint64_t count(acp_multiset_t m, const char *key) { return acp_retrieve_multiset(m, str_el(key)); }

/* Sum of the counters and number of distinct keys by iteration (all, and
 * between begin(local_multiset) and end(local_multiset)). */
static void ms_walk(acp_multiset_t m, int local, size_t *keys, uint64_t *total)
{
    *keys = 0;
    *total = 0;
    acp_multiset_it_t it = local ? acp_begin(local_multiset, m) : acp_begin(multiset, m);
    acp_multiset_it_t e = local ? acp_end(local_multiset, m) : acp_end(multiset, m);
    for (; !(it.rank == e.rank && it.slot == e.slot && it.elem == e.elem) && *keys < 100; it = acp_increment(multiset_it, it)) {
        acp_element_t k = acp_dereference(multiset_it, it);
        char s[32] = { 0 };
        if (k.size > 0 && k.size < sizeof s)
            memcpy(s, dlt_read(k.ga, k.size), k.size);
        (*keys)++;
        *total += count(m, s);
        if (local)
            CHECK(is_local(s, k.size, m.num_ranks, m.num_slots, NULL), "multiset: key %s between the local iterators is local", s);
    }
}

static const char *const words[] = { "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa" };
#define NW 10

static void multisets(void)
{
    acp_multiset_t m = acp_create(multiset, 0, NULL, 3, (me + 1) % np);
    CHECK(m.ga != ACP_GA_NULL, "acp_create(multiset)");
    CHECK_INT(acp_empty(multiset, m), 1, "empty(multiset) when new");
    uint64_t total = 0;
    size_t local_keys = 0;
    uint64_t local_total = 0;
    for (int i = 0; i < NW; i++)
        for (int j = 0; j <= i % 3; j++) {
            CHECK_INT(acp_insert(multiset, m, str_el(words[i])), 1, "insert(multiset) %s", words[i]);
            total++;
        }
    for (int i = 0; i < NW; i++)
        if (is_local(words[i], strlen(words[i]), m.num_ranks, m.num_slots, NULL)) {
            local_keys++;
            local_total += (uint64_t)(i % 3 + 1);
        }
    CHECK_INT(acp_size(multiset, m), NW, "size(multiset) counts distinct keys");
    CHECK_INT(acp_size(local_multiset, m), local_keys, "size(local_multiset)");
    CHECK_INT(acp_empty(multiset, m), 0, "empty(multiset)");
    CHECK_INT(acp_empty(local_multiset, m), local_keys == 0, "empty(local_multiset)");
    size_t keys;
    uint64_t sum;
    ms_walk(m, 0, &keys, &sum);
    CHECK_INT(keys, NW, "begin(multiset)..end(multiset): keys");
    CHECK_INT(sum, total, "begin(multiset)..end(multiset): counters");
    ms_walk(m, 1, &keys, &sum);
    CHECK_INT(keys, local_keys, "begin(local_multiset)..end(local_multiset): keys");
    CHECK_INT(sum, local_total, "begin(local_multiset)..end(local_multiset): counters");
    acp_multiset_it_t f = acp_find(multiset, m, str_el("gamma"));
    CHECK_INT(memcmp(dlt_read(acp_dereference(multiset_it, f).ga, 5), "gamma", 5), 0, "find(multiset)");
    CHECK_INT(count(m, "gamma"), 3, "gamma counted 3 times");
    acp_remove(multiset, m, str_el("gamma"));
    CHECK_INT(count(m, "gamma"), 2, "remove(multiset) takes one count");
    acp_remove(all_multiset, m, str_el("gamma"));
    CHECK_INT(count(m, "gamma"), 0, "remove(all_multiset)");
    CHECK_INT(acp_size(multiset, m), NW - 1, "size after remove(all_multiset)");
    acp_multiset_it_t end = acp_end(multiset, m);
    CHECK(end.rank == (int)m.num_ranks && end.elem == ACP_GA_NULL, "end(multiset)");

    int two[2] = { np - 1, 0 };
    acp_multiset_t m2 = acp_create(multiset, np > 1 ? 2 : 1, two, 2, me);
    acp_insert(multiset, m2, str_el("alpha"));
    acp_merge(multiset, m2, m);
    CHECK_INT(count(m2, "alpha"), 2, "merge(multiset) adds counters");
    CHECK_INT(count(m2, "kappa"), 1, "merge(multiset): a new key");
    CHECK_INT(acp_size(multiset, m2), NW - 1, "merge(multiset): size");
    acp_assign(multiset, m2, m);
    CHECK_INT(count(m2, "alpha"), 1, "assign(multiset)");
    CHECK_INT(count(m2, "delta"), 1, "assign(multiset)");
    CHECK_INT(count(m2, "epsilon"), 2, "assign(multiset)");
    acp_clear(multiset, m2);
    CHECK_INT(acp_empty(multiset, m2), 1, "clear(multiset)");
    acp_merge(local_multiset, m2, m);
    acp_merge(local_multiset, m2, m);
    for (int i = 0; i < NW; i++) {
        uint64_t want = i == 2 || !is_local(words[i], strlen(words[i]), m.num_ranks, m.num_slots, NULL) ? 0 : 2u * (i % 3 + 1);
        CHECK_INT(count(m2, words[i]), want, "merge(local_multiset) twice: %s", words[i]);
    }
    /* assign(local_multiset): my tables of m2 are cleared (its directory is
     * {N-1, 0}), then m's local keys are merged once more. */
    acp_insert(multiset, m2, str_el("omega"));
    acp_assign(local_multiset, m2, m);
    uint64_t after[NW];
    for (int i = 0; i < NW; i++) {
        uint64_t k = (uint64_t)(i % 3 + 1);
        int lm = i != 2 && is_local(words[i], strlen(words[i]), m.num_ranks, m.num_slots, NULL);
        int lm2 = is_local(words[i], strlen(words[i]), m2.num_ranks, m2.num_slots, two);
        after[i] = (lm ? k : 0) + (lm && !lm2 ? 2 * k : 0);
        CHECK_INT(count(m2, words[i]), after[i], "assign(local_multiset): %s", words[i]);
    }
    CHECK_INT(count(m2, "omega"), is_local("omega", 5, m2.num_ranks, m2.num_slots, two) ? 0 : 1,
              "assign(local_multiset) clears only my tables of the destination");
    acp_swap(multiset, m, m2);
    CHECK_INT(acp_size(multiset, m2), NW - 1, "swap(multiset): second");
    for (int i = 0; i < NW; i++) {
        CHECK_INT(count(m2, words[i]), i == 2 ? 0 : i % 3 + 1, "swap(multiset): second: %s", words[i]);
        CHECK_INT(count(m, words[i]), after[i], "swap(multiset): first: %s", words[i]);
    }
    acp_destroy(multiset, m);
    acp_destroy(multiset, m2);
}

/* A map from int32 keys to records. */
static acp_element_t ikey(int32_t k) { acp_element_t e = { put_i32(k), 4 }; return e; }

static int map_value(acp_map_t m, int32_t k)
{
    memset(dlt_buf + 30000, 0, sizeof(struct rec));
    acp_pair_t q = { ikey(k), { dlt_bufga + 30000, sizeof(struct rec) } };
    size_t n = acp_retrieve_map(m, q);
    if (n == 0)
        return -1;
    struct rec r;
    memcpy(&r, dlt_buf + 30000, sizeof r);
    struct rec want = mkrec(r.id);
    if (n != sizeof r || memcmp(&r, &want, sizeof r) != 0)
        return -2;
    return r.id;
}

static void maps(void)
{
    acp_map_t m = acp_create(map, 0, NULL, 5, me);
    CHECK(m.ga != ACP_GA_NULL, "acp_create(map)");
    size_t nl = 0;
    for (int32_t k = 0; k < 15; k++) {
        acp_pair_t p = { ikey(k * 7), rec_el(1000 + k) };
        CHECK_INT(acp_insert(map, m, p), 1, "insert(map) %d", k * 7);
        nl += is_local(&(int32_t){ k * 7 }, 4, m.num_ranks, m.num_slots, NULL);
    }
    acp_pair_t dup = { ikey(14), rec_el(1) };
    CHECK_INT(acp_insert(map, m, dup), 0, "insert(map) of a present key");
    CHECK_INT(map_value(m, 14), 1002, "the present key keeps its value");
    CHECK_INT(acp_size(map, m), 15, "size(map)");
    CHECK_INT(acp_size(local_map, m), nl, "size(local_map)");
    CHECK_INT(acp_empty(map, m), 0, "empty(map)");
    CHECK_INT(acp_empty(local_map, m), nl == 0, "empty(local_map)");
    acp_map_it_t f = acp_find(map, m, ikey(21));
    acp_pair_t p = acp_dereference(map_it, f);
    CHECK_INT(p.first.size, 4, "dereference(map_it): key size");
    CHECK_INT(read_i32(p.first.ga), 21, "dereference(map_it): key");
    CHECK(rec_ok(p.second, 1003), "dereference(map_it): value");
    int n = 0;
    int32_t sum = 0;
    for (acp_map_it_t it = acp_begin(map, m); it.rank < (int)m.num_ranks && n < 30; it = acp_increment(map_it, it), n++) {
        acp_pair_t q = acp_dereference(map_it, it);
        int32_t k = read_i32(q.first.ga);
        sum += k;
        CHECK(rec_ok(q.second, 1000 + k / 7), "begin(map)..: value of key %d", k);
    }
    CHECK_INT(n, 15, "begin(map)..end(map) steps");
    CHECK_INT(sum, 7 * (14 * 15 / 2), "begin(map)..end(map): every key");
    acp_map_it_t end = acp_end(map, m);
    CHECK(end.rank == (int)m.num_ranks && end.slot == 0 && end.elem == ACP_GA_NULL, "end(map)");
    n = 0;
    acp_map_it_t le = acp_end(local_map, m);
    for (acp_map_it_t it = acp_begin(local_map, m); !(it.rank == le.rank && it.slot == le.slot && it.elem == le.elem) && n < 30;
         it = acp_increment(map_it, it), n++)
        CHECK_INT(it.rank, me, "begin(local_map)..end(local_map) stays in my table");
    CHECK_INT(n, nl, "begin(local_map)..end(local_map) steps");
    acp_remove(map, m, ikey(21));
    CHECK_INT(map_value(m, 21), -1, "remove(map)");

    int last[1] = { np - 1 };
    acp_map_t m2 = acp_create(map, 1, last, 3, 0);
    acp_pair_t own = { ikey(0), rec_el(5) };
    acp_insert(map, m2, own);
    acp_merge(map, m2, m);
    CHECK_INT(acp_size(map, m2), 14, "merge(map)");
    CHECK_INT(map_value(m2, 0), 5, "merge(map) keeps the destination's value");
    CHECK_INT(map_value(m2, 98), 1014, "merge(map): a new key's value");
    acp_assign(map, m2, m);
    CHECK_INT(map_value(m2, 0), 1000, "assign(map)");
    acp_clear(local_map, m2);
    CHECK_INT(acp_size(map, m2), me == np - 1 ? 0 : 14, "clear(local_map) (m2's only table is on rank N-1)");
    acp_clear(map, m2);
    CHECK_INT(acp_empty(map, m2), 1, "clear(map)");
    acp_merge(local_map, m2, m);
    acp_merge(local_map, m2, m);
    CHECK_INT(acp_size(map, m2), nl - (size_t)is_local(&(int32_t){ 21 }, 4, m.num_ranks, m.num_slots, NULL),
              "merge(local_map)");
    acp_pair_t other = { ikey(-5), rec_el(-5) };
    acp_insert(map, m2, other);
    acp_assign(local_map, m2, m);
    size_t want = nl - (size_t)is_local(&(int32_t){ 21 }, 4, m.num_ranks, m.num_slots, NULL) + (me != np - 1);
    CHECK_INT(acp_size(map, m2), want, "assign(local_map)");
    CHECK_INT(map_value(m2, -5), me == np - 1 ? -1 : -5, "assign(local_map) clears only my tables");
    acp_swap(map, m, m2);
    CHECK_INT(acp_size(map, m), want, "swap(map): first");
    CHECK_INT(acp_size(map, m2), 14, "swap(map): second");
    CHECK_INT(map_value(m2, 98), 1014, "swap(map): second's values");
    acp_destroy(map, m);
    acp_destroy(map, m2);
}

/* ---- channels, segmented buffers, workspaces ---------------------------------- */

static void cl_ws(void)
{
    int next = (me + 1) % np, prev = (me + np - 1) % np;
    if (np == 1) {
        CHECK(acp_create(ch, 0, 0) == NULL, "acp_create(ch, 0, 0): a channel to oneself");
        static uint8_t b[8];
        CHECK(acp_create(src_segbuf, 0, b, 8, 1) == NULL, "acp_create(src_segbuf) to oneself");
        CHECK(acp_create(dst_segbuf, 0, b, 8, 1) == NULL, "acp_create(dst_segbuf) from oneself");
    } else {
        /* A ring of channels carrying a double. */
        acp_ch_t out = acp_create(ch, me, next), in = acp_create(ch, prev, me);
        CHECK(out != NULL && in != NULL, "acp_create(ch)");
        double v = 0.5 + me, w = 0;
        acp_request_t s = acp_nbsend_ch(out, &v, sizeof v);
        CHECK_INT(acp_wait_ch(acp_nbrecv_ch(in, &w, sizeof w)), sizeof w, "channel message size");
        CHECK(w == 0.5 + prev, "channel message value %g (want %g)", w, 0.5 + prev);
        CHECK_INT(acp_wait_ch(s), 0, "send");
        CHECK_INT(acp_free_ch(out), 0, "free_ch");
        CHECK_INT(acp_free_ch(in), 0, "free_ch");

        /* A ring of segmented buffers carrying an int64. */
        static int64_t sv, dv;
        acp_segbuf_t sb = acp_create(src_segbuf, next, &sv, 8, 1);
        acp_segbuf_t db = acp_create(dst_segbuf, prev, &dv, 8, 1);
        CHECK(sb != NULL && db != NULL, "acp_create(src_segbuf), acp_create(dst_segbuf)");
        CHECK_INT(acp_connect_segbuf(sb), 0, "connect source");
        sv = 1000 + me;
        CHECK_INT(acp_ack_segbuf(sb), 0, "ack");
        CHECK_INT(acp_connect_segbuf(db), 0, "connect destination");
        double t0 = acpt_now();
        while (acp_isacked_segbuf(db) != 0 && acpt_now() - t0 < 10)
            ;
        CHECK_INT(dv, 1000 + prev, "segment value");
        CHECK_INT(acp_ready_segbuf(db), 0, "ready");
        CHECK_INT(acp_disconnect_segbuf(sb), 0, "disconnect source");
        CHECK_INT(acp_disconnect_segbuf(db), 0, "disconnect destination");
        CHECK_INT(acp_free_segbuf(db), 0, "free destination");
        CHECK_INT(acp_free_segbuf(sb), 0, "free source");
    }

    /* A workspace of 16 bytes per rank. */
    CHECK_INT(acp_setparams_ws(0, 16), 0, "acp_setparams_ws(0, 16)");
    acp_wsd_t w = acp_create(ws, 16 * (size_t)np);
    CHECK(w != ACP_WSD_NULL, "acp_create(ws)");
    if (w != ACP_WSD_NULL) {
        CHECK_INT(w->ngas, np, "acp_create(ws): chunks");
        double x[2] = { me + 0.25, me + 0.75 };
        CHECK_INT(acp_write_ws(w, put(x, 16), 16, 16 * (size_t)next), 0, "write_ws");
        acp_sync();
        double y[2];
        memcpy(y, w->data, 16);
        CHECK(y[0] == prev + 0.25 && y[1] == prev + 0.75, "my chunk holds what the previous rank wrote");
        acp_destroy(ws, w);
    }
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    np = acp_procs();
    if (np > 64)
        FATAL("more ranks than the test's tables hold");
    dlt_fill_values();
    dlt_init_buf();
    expansions();
    vectors();
    deques();
    lists();
    sets();
    multisets();
    maps();
    cl_ws();
    return acpt_finish("t_dl_macros");
}
