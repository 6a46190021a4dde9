/*
 * t_dl_hashed_ops: every set, multiset and map operation, checked after
 * each step against a model of the contents kept by the test.
 *
 * The model places every key as the library must (CRC-64/XZ >> 16: table
 * (h / num_slots) % num_ranks, slot h % num_slots, spec 2.12), so that it
 * knows which keys are in the caller's tables. After every operation
 * verify() compares with the model: size, size_local, empty, empty_local;
 * a full iteration (begin, increment, dereference) that must visit every
 * key once, at its table and slot, in table and slot order, on its table's
 * rank, with the multiset counter and the map value; begin_local and
 * end_local against that iteration (Q-DL-5: end_local is the first element
 * after the caller's last table, begin_local equals it when the caller's
 * tables are empty); find, retrieve_multiset and retrieve_map of every key
 * present and of keys that were removed.
 *
 * The same scenario runs for the three kinds, every rank at once on
 * containers of its own: A with tables on every rank, B with tables on
 * every rank in reverse order, C with one table on the next rank (the
 * caller's own with one process). Keys of A and B overlap, so merges show
 * that multiset counters add and that map values already there are kept.
 * Operations: insert, merge_local, assign_local, move_local, clear_local
 * (acp_clear_local_set/_multiset are exported without a declaration in
 * acp.h, as in the original), assign, merge, move, swap (also between
 * shapes), the same with a container and itself (no change), remove,
 * clear, end and the null iterator, destroy. Then two containers shared
 * by every rank, with merge_local, move_local and clear_local called by
 * all ranks at once.
 */
#include "dltest.h"

/* Exported by the original and by libacp; acp.h does not declare them. */
void acp_clear_local_set(acp_set_t set);
void acp_clear_local_multiset(acp_multiset_t set);

static int me, np;

enum { SET, MSET, MAP };
static const char *const kname[] = { "set", "multiset", "map" };

/* ---- keys ------------------------------------------------------------------ */

/* ---- one interface for the three kinds ----------------------------------- */

/* Handles and iterators of the three kinds have the same layout; the test
 * keeps them as acp_set_t and hit, and converts at each call. */
typedef struct {
    acp_set_t h;
    int rank, slot;
    acp_ga_t elem;
} hit;

static acp_multiset_t MS(acp_set_t h) { acp_multiset_t r = { h.ga, h.num_ranks, h.num_slots }; return r; }
static acp_map_t MP(acp_set_t h) { acp_map_t r = { h.ga, h.num_ranks, h.num_slots }; return r; }
static acp_set_t of_ms(acp_multiset_t h) { acp_set_t r = { h.ga, h.num_ranks, h.num_slots }; return r; }
static acp_set_t of_mp(acp_map_t h) { acp_set_t r = { h.ga, h.num_ranks, h.num_slots }; return r; }

static hit of_set_it(acp_set_it_t i) { hit r = { i.set, i.rank, i.slot, i.elem }; return r; }
static hit of_ms_it(acp_multiset_it_t i) { hit r = { of_ms(i.set), i.rank, i.slot, i.elem }; return r; }
static hit of_mp_it(acp_map_it_t i) { hit r = { of_mp(i.map), i.rank, i.slot, i.elem }; return r; }
static acp_set_it_t set_it(hit i) { acp_set_it_t r = { i.h, i.rank, i.slot, i.elem }; return r; }
static acp_multiset_it_t ms_it(hit i) { acp_multiset_it_t r = { MS(i.h), i.rank, i.slot, i.elem }; return r; }
static acp_map_it_t mp_it(hit i) { acp_map_it_t r = { MP(i.h), i.rank, i.slot, i.elem }; return r; }

#define BY_KIND(k, s, m, p) ((k) == SET ? (s) : (k) == MSET ? (m) : (p))

static acp_set_t h_create(int k, int nr, const int *ranks, int slots, int rank)
{
    return BY_KIND(k, acp_create_set(nr, ranks, slots, rank), of_ms(acp_create_multiset(nr, ranks, slots, rank)),
                   of_mp(acp_create_map(nr, ranks, slots, rank)));
}
static void h_destroy(int k, acp_set_t h) { BY_KIND(k, acp_destroy_set(h), acp_destroy_multiset(MS(h)), acp_destroy_map(MP(h))); }
static size_t h_size(int k, acp_set_t h) { return BY_KIND(k, acp_size_set(h), acp_size_multiset(MS(h)), acp_size_map(MP(h))); }
static size_t h_size_local(int k, acp_set_t h)
{
    return BY_KIND(k, acp_size_local_set(h), acp_size_local_multiset(MS(h)), acp_size_local_map(MP(h)));
}
static int h_empty(int k, acp_set_t h) { return BY_KIND(k, acp_empty_set(h), acp_empty_multiset(MS(h)), acp_empty_map(MP(h))); }
static int h_empty_local(int k, acp_set_t h)
{
    return BY_KIND(k, acp_empty_local_set(h), acp_empty_local_multiset(MS(h)), acp_empty_local_map(MP(h)));
}
static hit h_begin(int k, acp_set_t h)
{
    return BY_KIND(k, of_set_it(acp_begin_set(h)), of_ms_it(acp_begin_multiset(MS(h))), of_mp_it(acp_begin_map(MP(h))));
}
static hit h_begin_local(int k, acp_set_t h)
{
    return BY_KIND(k, of_set_it(acp_begin_local_set(h)), of_ms_it(acp_begin_local_multiset(MS(h))),
                   of_mp_it(acp_begin_local_map(MP(h))));
}
static hit h_end(int k, acp_set_t h)
{
    return BY_KIND(k, of_set_it(acp_end_set(h)), of_ms_it(acp_end_multiset(MS(h))), of_mp_it(acp_end_map(MP(h))));
}
static hit h_end_local(int k, acp_set_t h)
{
    return BY_KIND(k, of_set_it(acp_end_local_set(h)), of_ms_it(acp_end_local_multiset(MS(h))),
                   of_mp_it(acp_end_local_map(MP(h))));
}
static hit h_increment(int k, hit it)
{
    return BY_KIND(k, of_set_it(acp_increment_set_it(set_it(it))), of_ms_it(acp_increment_multiset_it(ms_it(it))),
                   of_mp_it(acp_increment_map_it(mp_it(it))));
}
/* The key (first) and, for maps, the value (second). */
static acp_pair_t h_dereference(int k, hit it)
{
    acp_pair_t p = { { 0, 0 }, { 0, 0 } };
    if (k == SET)
        p.first = acp_dereference_set_it(set_it(it));
    else if (k == MSET)
        p.first = acp_dereference_multiset_it(ms_it(it));
    else
        p = acp_dereference_map_it(mp_it(it));
    return p;
}
static hit h_find(int k, acp_set_t h, const char *key)
{
    acp_element_t e = dlt_bytes(key);
    return BY_KIND(k, of_set_it(acp_find_set(h, e)), of_ms_it(acp_find_multiset(MS(h), e)), of_mp_it(acp_find_map(MP(h), e)));
}
static int h_insert(int k, acp_set_t h, const char *key, const char *val)
{
    acp_element_t e = dlt_bytes(key);
    if (k == MAP) {
        acp_pair_t p = { e, dlt_bytes(val) };
        return acp_insert_map(MP(h), p);
    }
    return k == SET ? acp_insert_set(h, e) : acp_insert_multiset(MS(h), e);
}
static void h_remove(int k, acp_set_t h, const char *key)
{
    acp_element_t e = dlt_bytes(key);
    BY_KIND(k, acp_remove_set(h, e), acp_remove_multiset(MS(h), e), acp_remove_map(MP(h), e));
}
static void h_clear(int k, acp_set_t h) { BY_KIND(k, acp_clear_set(h), acp_clear_multiset(MS(h)), acp_clear_map(MP(h))); }
static void h_clear_local(int k, acp_set_t h)
{
    BY_KIND(k, acp_clear_local_set(h), acp_clear_local_multiset(MS(h)), acp_clear_local_map(MP(h)));
}

enum { ASSIGN, ASSIGN_LOCAL, MERGE, MERGE_LOCAL, MOVE, MOVE_LOCAL, SWAP };
static const char *const opname[] = { "assign", "assign_local", "merge", "merge_local", "move", "move_local", "swap" };

static void h_op2(int k, int op, acp_set_t a, acp_set_t b)
{
    switch (op) {
    case ASSIGN: BY_KIND(k, acp_assign_set(a, b), acp_assign_multiset(MS(a), MS(b)), acp_assign_map(MP(a), MP(b))); break;
    case ASSIGN_LOCAL:
        BY_KIND(k, acp_assign_local_set(a, b), acp_assign_local_multiset(MS(a), MS(b)), acp_assign_local_map(MP(a), MP(b)));
        break;
    case MERGE: BY_KIND(k, acp_merge_set(a, b), acp_merge_multiset(MS(a), MS(b)), acp_merge_map(MP(a), MP(b))); break;
    case MERGE_LOCAL:
        BY_KIND(k, acp_merge_local_set(a, b), acp_merge_local_multiset(MS(a), MS(b)), acp_merge_local_map(MP(a), MP(b)));
        break;
    case MOVE: BY_KIND(k, acp_move_set(a, b), acp_move_multiset(MS(a), MS(b)), acp_move_map(MP(a), MP(b))); break;
    case MOVE_LOCAL:
        BY_KIND(k, acp_move_local_set(a, b), acp_move_local_multiset(MS(a), MS(b)), acp_move_local_map(MP(a), MP(b)));
        break;
    case SWAP: BY_KIND(k, acp_swap_set(a, b), acp_swap_multiset(MS(a), MS(b)), acp_swap_map(MP(a), MP(b))); break;
    }
}

/* ---- the model ------------------------------------------------------------ */

#define MAXE 160
#define MAXR 64

/* A key with count 0 is absent (it was there once: find must miss it). */
struct ent {
    char key[24];
    char val[24];
    uint64_t count;
};
struct model {
    const char *name;
    int kind;
    acp_set_t h;
    int ranks[MAXR]; /* table i is on ranks[i] */
    int n;
    struct ent e[MAXE];
};

static void place(const struct model *m, const char *key, int *t, int *s)
{
    dlt_place(key, strlen(key), m->h.num_ranks, m->h.num_slots, t, s);
}

static int local(const struct model *m, const char *key)
{
    int t, s;
    place(m, key, &t, &s);
    return m->ranks[t] == me;
}

static struct ent *lookup(struct model *m, const char *key)
{
    for (int i = 0; i < m->n; i++)
        if (strcmp(m->e[i].key, key) == 0)
            return &m->e[i];
    return NULL;
}

static struct ent *entry_of(struct model *m, const char *key)
{
    struct ent *e = lookup(m, key);
    if (e == NULL) {
        if (m->n == MAXE)
            FATAL("model full");
        e = &m->e[m->n++];
        snprintf(e->key, sizeof e->key, "%s", key);
        e->val[0] = 0;
        e->count = 0;
    }
    return e;
}

/* Adds count of key (value val for a new map key) as insert and merge do;
 * returns what acp_insert_* must return. */
static int m_add(struct model *m, const char *key, const char *val, uint64_t count)
{
    struct ent *e = entry_of(m, key);
    if (e->count > 0) {
        if (m->kind == MSET)
            e->count += count;
        return m->kind != MAP;
    }
    e->count = m->kind == MSET ? count : 1;
    snprintf(e->val, sizeof e->val, "%s", val);
    return 1;
}

static void m_clear(struct model *m, int local_only)
{
    for (int i = 0; i < m->n; i++)
        if (!local_only || local(m, m->e[i].key))
            m->e[i].count = 0;
}

/* The entries of src (its local tables only when local_only) into dst;
 * detach empties them in src. */
static void m_merge(struct model *dst, struct model *src, int local_only, int detach)
{
    for (int i = 0; i < src->n; i++) {
        struct ent *e = &src->e[i];
        if (e->count == 0 || (local_only && !local(src, e->key)))
            continue;
        m_add(dst, e->key, e->val, e->count);
        if (detach)
            e->count = 0;
    }
}

static void m_op2(int op, struct model *a, struct model *b)
{
    if (a == b)
        return; /* a container with itself: no change */
    switch (op) {
    case ASSIGN: m_clear(a, 0); m_merge(a, b, 0, 0); break;
    case ASSIGN_LOCAL: m_clear(a, 1); m_merge(a, b, 1, 0); break;
    case MERGE: m_merge(a, b, 0, 0); break;
    case MERGE_LOCAL: m_merge(a, b, 1, 0); break;
    case MOVE: m_merge(a, b, 0, 1); break;
    case MOVE_LOCAL: m_merge(a, b, 1, 1); break;
    case SWAP: {
        static struct ent tmp[MAXE];
        int n = a->n;
        memcpy(tmp, a->e, sizeof tmp);
        memcpy(a->e, b->e, sizeof tmp);
        memcpy(b->e, tmp, sizeof tmp);
        a->n = b->n;
        b->n = n;
        break;
    }
    }
}

static void create(struct model *m, const char *name, int kind, int nr, const int *ranks, int slots, int rank)
{
    memset(m, 0, sizeof *m);
    m->name = name;
    m->kind = kind;
    m->h = h_create(kind, nr, ranks, slots, rank);
    int n = nr == 0 ? np : nr;
    for (int i = 0; i < n && i < MAXR; i++)
        m->ranks[i] = nr == 0 ? i : ranks[i];
    CHECK(m->h.ga != ACP_GA_NULL, "%s %s: create", kname[kind], name);
    CHECK_INT(m->h.num_ranks, n, "%s %s: num_ranks", kname[kind], name);
    CHECK_INT(m->h.num_slots, slots, "%s %s: num_slots", kname[kind], name);
    CHECK_INT(acp_query_rank(m->h.ga), rank, "%s %s: directory on rank %d", kname[kind], name, rank);
    for (int i = 0; i < n && i < MAXR; i++)
        CHECK_INT(acp_query_rank(dlt_word(m->h.ga + 8 * (uint64_t)i)), m->ranks[i], "%s %s: table %d's rank",
                  kname[kind], name, i);
}

static void ins(struct model *m, const char *key, const char *val)
{
    int want = m_add(m, key, val, 1);
    CHECK_INT(h_insert(m->kind, m->h, key, val), want, "%s %s: insert %s", kname[m->kind], m->name, key);
}

static void rm(struct model *m, const char *key)
{
    h_remove(m->kind, m->h, key);
    struct ent *e = entry_of(m, key);
    if (e->count > 1 && m->kind == MSET)
        e->count--;
    else
        e->count = 0;
}

static void op2(int op, struct model *a, struct model *b)
{
    h_op2(a->kind, op, a->h, b->h);
    m_op2(op, a, b);
}

/* ---- checking -------------------------------------------------------------- */

static void check_it(hit got, hit want, acp_set_t h, const char *fn, const struct model *m, const char *what)
{
    const char *k = kname[m->kind];
    CHECK_HEX(got.h.ga, h.ga, "%s %s %s: %s: handle in the iterator", k, m->name, what, fn);
    CHECK_INT(got.h.num_ranks, h.num_ranks, "%s %s %s: %s: num_ranks in the iterator", k, m->name, what, fn);
    CHECK_INT(got.rank, want.rank, "%s %s %s: %s: rank", k, m->name, what, fn);
    CHECK_INT(got.slot, want.slot, "%s %s %s: %s: slot", k, m->name, what, fn);
    CHECK_HEX(got.elem, want.elem, "%s %s %s: %s: elem", k, m->name, what, fn);
}

/* The key bytes at e (size < 24) as a string; "" when unreadable. */
static const char *key_at(acp_element_t e)
{
    static char s[32];
    s[0] = 0;
    if (e.ga == ACP_GA_NULL || e.size == 0 || e.size >= 24)
        return s;
    memcpy(s, dlt_read(e.ga, e.size), e.size);
    s[e.size] = 0;
    return s;
}

static void verify(struct model *m, const char *what)
{
    const int k = m->kind;
    const char *kn = kname[k], *mn = m->name;
    const acp_set_t h = m->h;
    const int nr = (int)h.num_ranks;
    size_t n = 0, nl = 0;
    for (int i = 0; i < m->n; i++)
        if (m->e[i].count > 0) {
            n++;
            nl += (size_t)local(m, m->e[i].key);
        }
    CHECK_INT(h_size(k, h), n, "%s %s %s: size", kn, mn, what);
    CHECK_INT(h_size_local(k, h), nl, "%s %s %s: size_local", kn, mn, what);
    CHECK_INT(h_empty(k, h), n == 0, "%s %s %s: empty", kn, mn, what);
    CHECK_INT(h_empty_local(k, h), nl == 0, "%s %s %s: empty_local", kn, mn, what);

    /* The caller's tables: directory entries [lo, hi). */
    int lo = -1, hi = 0;
    for (int i = 0; i < nr && i < MAXR; i++)
        if (m->ranks[i] == me) {
            if (lo < 0)
                lo = i;
            hi = i + 1;
        }
    hit null = { h, nr, 0, ACP_GA_NULL };
    check_it(h_end(k, h), null, h, "end", m, what);
    hit want_bl = null, want_el = null;
    int have_bl = 0, have_el = 0;

    /* Every key once, at its place, in order. */
    char seen[MAXE] = { 0 };
    int steps = 0, pt = -1, ps = -1;
    hit it = h_begin(k, h);
    for (; it.rank < nr && steps <= (int)n + 2; it = h_increment(k, it), steps++) {
        CHECK(it.rank > pt || (it.rank == pt && it.slot >= ps), "%s %s %s: iteration order at step %d", kn, mn, what, steps);
        pt = it.rank;
        ps = it.slot;
        if (!have_bl && it.rank >= lo && it.rank < hi && m->ranks[it.rank] == me) {
            want_bl = it;
            have_bl = 1;
        }
        if (!have_el && hi > 0 && it.rank >= hi) {
            want_el = it;
            have_el = 1;
        }
        acp_pair_t p = h_dereference(k, it);
        CHECK_HEX(p.first.ga, it.elem + (k == SET ? 24 : 32), "%s %s %s: dereference: key after the header", kn, mn, what);
        const char *key = key_at(p.first);
        struct ent *e = lookup(m, key);
        if (e == NULL || e->count == 0) {
            FAIL("%s %s %s: iteration step %d found key \"%s\", which is not there", kn, mn, what, steps, key);
            continue;
        }
        if (seen[e - m->e]++)
            FAIL("%s %s %s: iteration visits key %s twice", kn, mn, what, key);
        int t, s;
        place(m, key, &t, &s);
        CHECK_INT(it.rank, t, "%s %s %s: key %s: table", kn, mn, what, key);
        CHECK_INT(it.slot, s, "%s %s %s: key %s: slot", kn, mn, what, key);
        CHECK_INT(acp_query_rank(it.elem), m->ranks[t], "%s %s %s: key %s: element on its table's rank", kn, mn, what, key);
        if (k == MSET)
            CHECK_INT(dlt_word(it.elem + 16), e->count, "%s %s %s: key %s: counter", kn, mn, what, key);
        if (k == MAP) {
            CHECK_HEX(p.second.ga, p.first.ga + p.first.size, "%s %s %s: key %s: value after the key", kn, mn, what, key);
            CHECK_INT(p.second.size, strlen(e->val), "%s %s %s: key %s: value size", kn, mn, what, key);
            if (p.second.size == strlen(e->val))
                CHECK_INT(memcmp(key_at(p.second), e->val, p.second.size), 0, "%s %s %s: key %s: value bytes", kn, mn,
                          what, key);
        }
    }
    CHECK_INT(steps, n, "%s %s %s: iteration steps", kn, mn, what);
    check_it(it, null, h, "iteration's end", m, what);
    if (!have_bl)
        want_bl = want_el;
    check_it(h_begin_local(k, h), want_bl, h, "begin_local", m, what);
    check_it(h_end_local(k, h), want_el, h, "end_local", m, what);

    /* find and retrieve of every key, present or removed. */
    for (int i = 0; i < m->n; i++) {
        struct ent *e = &m->e[i];
        hit f = h_find(k, h, e->key);
        if (e->count == 0) {
            check_it(f, null, h, "find of a removed key", m, what);
        } else {
            int t, s;
            place(m, e->key, &t, &s);
            CHECK(f.rank == t && f.slot == s && f.elem != ACP_GA_NULL, "%s %s %s: find %s: {%d, %d, %s} (want {%d, %d, elem})",
                  kn, mn, what, e->key, f.rank, f.slot, f.elem ? "elem" : "NULL", t, s);
            if (f.elem != ACP_GA_NULL)
                CHECK_INT(strcmp(key_at(h_dereference(k, f).first), e->key), 0, "%s %s %s: find %s: key bytes", kn, mn,
                          what, e->key);
        }
        if (k == MSET)
            CHECK_INT(acp_retrieve_multiset(MS(h), dlt_bytes(e->key)), e->count, "%s %s %s: retrieve %s", kn, mn, what, e->key);
        if (k == MAP) {
            memset(dlt_buf + 30000, 0, 32);
            acp_pair_t q = { dlt_bytes(e->key), { dlt_bufga + 30000, 32 } };
            size_t want = e->count ? strlen(e->val) : 0;
            CHECK_INT(acp_retrieve_map(MP(h), q), want, "%s %s %s: retrieve %s", kn, mn, what, e->key);
            if (want)
                CHECK_INT(memcmp(dlt_buf + 30000, e->val, want + 1), 0, "%s %s %s: retrieve %s: value", kn, mn, what, e->key);
        }
    }
}

/* ---- the scenario ---------------------------------------------------------- */

static struct model A, B, C;

static void scenario(int k)
{
    char key[24], val[24];
    int rev[MAXR], one[1] = { (me + 1) % np };
    for (int i = 0; i < np && i < MAXR; i++)
        rev[i] = np - 1 - i;
    create(&A, "A", k, 0, NULL, 3, me);
    create(&B, "B", k, np, rev, 2, (me + 1) % np);
    create(&C, "C", k, 1, one, 4, (me + 2) % np);
    verify(&C, "new");

    /* A: 30 keys over every rank's table; in a multiset every fourth key
     * three times. B: 12 keys, 6 of them A's (maps: another value). */
    for (int i = 0; i < 30; i++) {
        snprintf(key, sizeof key, "%c%d-a%d", kname[k][1], me, i);
        snprintf(val, sizeof val, "A%d.%d", i, me);
        ins(&A, key, val);
        if (i % 4 == 0) {
            ins(&A, key, "not stored");
            ins(&A, key, "not stored");
        }
    }
    verify(&A, "after inserts");
    for (int i = 0; i < 12; i++) {
        if (i < 6)
            snprintf(key, sizeof key, "%c%d-a%d", kname[k][1], me, 4 * i + 1);
        else
            snprintf(key, sizeof key, "%c%d-b%d", kname[k][1], me, i);
        snprintf(val, sizeof val, "Bvalue%d.%d", i, me);
        ins(&B, key, val);
        if (i % 3 == 0)
            ins(&B, key, "not stored");
    }
    verify(&B, "after inserts");

    op2(MERGE_LOCAL, &C, &A);
    verify(&C, "merge_local(C, A)");
    verify(&A, "source of merge_local");
    op2(MERGE_LOCAL, &B, &A);
    verify(&B, "merge_local(B, A)");
    op2(ASSIGN_LOCAL, &B, &A);
    verify(&B, "assign_local(B, A)");
    verify(&A, "source of assign_local");
    op2(MOVE_LOCAL, &C, &A);
    verify(&C, "move_local(C, A)");
    verify(&A, "source of move_local");
    h_clear_local(k, B.h);
    m_clear(&B, 1);
    verify(&B, "clear_local");

    op2(ASSIGN, &C, &B);
    verify(&C, "assign(C, B)");
    verify(&B, "source of assign");
    op2(MERGE, &C, &A);
    verify(&C, "merge(C, A)");
    op2(MOVE, &B, &C);
    verify(&B, "move(B, C)");
    verify(&C, "source of move");
    op2(SWAP, &A, &B);
    verify(&A, "swap(A, B)");
    verify(&B, "swap(A, B)");
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "%c%d-c%d", kname[k][1], me, i);
        snprintf(val, sizeof val, "C%d", i);
        ins(&C, key, val);
    }
    op2(SWAP, &C, &A); /* different shapes: re-hashed */
    verify(&A, "swap(C, A)");
    verify(&C, "swap(C, A)");

    /* With itself: nothing changes. */
    for (int op = ASSIGN; op <= SWAP; op++) {
        op2(op, &C, &C);
        char w[32];
        snprintf(w, sizeof w, "%s(C, C)", opname[op]);
        verify(&C, w);
    }

    /* remove: a present key, a counted key (multiset: one count), an
     * absent one. */
    for (int i = 0; i < C.n; i += 3)
        rm(&C, C.e[i].key);
    rm(&C, "never-inserted");
    verify(&C, "removes");

    h_clear(k, A.h);
    m_clear(&A, 0);
    verify(&A, "clear");
    hit end = h_end(k, A.h), null = { A.h, (int)A.h.num_ranks, 0, ACP_GA_NULL };
    check_it(h_increment(k, end), null, A.h, "increment of the null iterator", &A, "");
    acp_pair_t p = h_dereference(k, end);
    CHECK(p.first.ga == ACP_GA_NULL && p.first.size == 0 && p.second.ga == ACP_GA_NULL && p.second.size == 0,
          "%s: dereference of the null iterator", kname[k]);

    h_destroy(k, A.h);
    h_destroy(k, B.h);
    h_destroy(k, C.h);
}

/* Two containers shared by every rank, the _local variants called by all
 * ranks at once, as SPMD programs use them: each rank inserts its keys
 * into S (sets and multisets also one common key), merges its tables of S
 * into D (twice: multiset counters add), moves its tables of S into D
 * (S ends empty, D holds everything), clears its tables of D (D ends
 * empty). Every rank checks both containers between the steps. */
static void together(int k)
{
    static struct model S, D;
    char key[24], val[24];
    uint64_t g[MAXR + 1];
    int rev[MAXR];
    for (int i = 0; i < np && i < MAXR; i++)
        rev[i] = np - 1 - i;
    memset(&S, 0, sizeof S);
    memset(&D, 0, sizeof D);
    S.name = "shared S";
    D.name = "shared D";
    S.kind = D.kind = k;
    if (me == 0) {
        S.h = h_create(k, 0, NULL, 3, 0);
        D.h = h_create(k, np, rev, 2, np - 1);
    }
    acpt_allgather_u64(S.h.ga, g, 3500);
    S.h.ga = g[0];
    acpt_allgather_u64(D.h.ga, g, 3500);
    D.h.ga = g[0];
    S.h.num_ranks = D.h.num_ranks = (uint64_t)np;
    S.h.num_slots = 3;
    D.h.num_slots = 2;
    for (int i = 0; i < np; i++) {
        S.ranks[i] = i;
        D.ranks[i] = rev[i];
    }
    CHECK(S.h.ga != ACP_GA_NULL && D.h.ga != ACP_GA_NULL, "%s: shared containers", kname[k]);

    for (int r = 0; r < np; r++)
        for (int i = 0; i < 12; i++) {
            snprintf(key, sizeof key, "%c-t%d-%d", kname[k][1], r, i);
            snprintf(val, sizeof val, "T%d.%d", r, i);
            for (int j = 0; j <= (k == MSET && i % 5 == 0); j++) {
                if (r == me)
                    ins(&S, key, val);
                else
                    m_add(&S, key, val, 1);
            }
        }
    if (k != MAP) {
        for (int r = 0; r < np; r++)
            m_add(&S, "common", "", 1);
        CHECK_INT(h_insert(k, S.h, "common", ""), 1, "%s: insert of the common key", kname[k]);
    }
    acp_sync();
    verify(&S, "inserts by every rank");
    verify(&D, "new");
    acp_sync();
    for (int round = 0; round < 2; round++) {
        h_op2(k, MERGE_LOCAL, D.h, S.h);
        m_merge(&D, &S, 0, 0);
        acp_sync();
        verify(&D, round ? "merge_local by every rank twice" : "merge_local by every rank");
        verify(&S, "source of merge_local by every rank");
        acp_sync();
    }
    h_op2(k, MOVE_LOCAL, D.h, S.h);
    m_merge(&D, &S, 0, 1);
    acp_sync();
    verify(&D, "move_local by every rank");
    verify(&S, "source of move_local by every rank");
    acp_sync();
    h_clear_local(k, D.h);
    m_clear(&D, 0);
    acp_sync();
    verify(&D, "clear_local by every rank");
    acp_sync();
    if (me == 0) {
        h_destroy(k, S.h);
        h_destroy(k, D.h);
    }
    acp_sync();
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    np = acp_procs();
    if (np > MAXR)
        FATAL("more ranks than the test's tables hold");
    dlt_fill_values();
    dlt_init_buf();
    CHECK_HEX(dlt_crc64("123456789", 9), 0x995DC9BBDF1939FAull, "the test's CRC-64/XZ");
    for (int k = SET; k <= MAP; k++)
        scenario(k);
    for (int k = SET; k <= MAP; k++)
        together(k);
    acp_sync();
    return acpt_finish("t_dl_hashed_ops");
}
