/*
 * t_dl_hashed: sets, multisets and maps.
 *
 * The original tests' shape (one table of 4 slots, keys "A" .. "ABCDEFGH
 * IJKLMNOP") must place the keys in slots 3,0,0,2,1,2,2,1,1,0,3,2,1,0,0,0
 * (CRC-64/ECMA >> 16, spec C.1); the directory, slots and element headers
 * are read directly (spec B.4, B.5). Then every function: find (also the
 * null iterator {num_ranks, 0, 0}), remove, assign, clear, move, swap with
 * another shape, multiset counters, map values (an existing key keeps its
 * value, an empty value removes the key, retrieve truncates), iteration
 * over all ranks' tables and the _local variants. Finally all ranks insert
 * into one set at once, racing on its slot locks.
 */
#include "dltest.h"

static int me, np;

static const char *keyname(int i)
{
    static char k[17];
    memcpy(k, "ABCDEFGHIJKLMNOP", 16);
    k[i + 1] = 0;
    return k;
}
static const int place4[16] = { 3, 0, 0, 2, 1, 2, 2, 1, 1, 0, 3, 2, 1, 0, 0, 0 };

/* A key's bytes in my registered buffer. */
static acp_element_t key(const char *s) { return dlt_bytes(s); }
static acp_element_t value(const char *s)
{
    size_t n = strlen(s);
    memcpy(dlt_buf + 49152, s, n);
    acp_element_t e = { dlt_bufga + 49152, n };
    return e;
}

/* Reads a slot's chain (B.4/B.5): the key lengths in order, checking the
 * prev links, the tail, the count, and that elements are on the table's
 * rank. hdr is 24 for sets, 32 otherwise (key length at hdr - 8). */
static int chain(acp_ga_t table, int s, int hdr, int *lens, const char *what)
{
    uint64_t sl[4];
    memcpy(sl, dlt_read(table + 32 * (uint64_t)s, 32), 32);
    CHECK_INT(sl[0], 0, "%s: slot %d lock is free", what, s);
    int n = 0;
    acp_ga_t prev = 0;
    for (acp_ga_t e = sl[1]; e != 0 && n < 64; n++) {
        uint64_t w[4];
        memcpy(w, dlt_read(e, 32), 32);
        CHECK_HEX(w[1], prev, "%s: slot %d element %d prev", what, s, n);
        CHECK_INT(acp_query_rank(e), acp_query_rank(table), "%s: element on the table's rank", what);
        lens[n] = (int)w[hdr / 8 - 1];
        prev = e;
        e = w[0];
    }
    CHECK_HEX(sl[2], prev, "%s: slot %d tail", what, s);
    CHECK_INT(sl[3], n, "%s: slot %d count", what, s);
    return n;
}

/* The one-table shape of the original tests, for kind 0 set, 1 multiset,
 * 2 map (the same code through the three APIs). */
static void original_shape(int R, int S)
{
    (void)S;
    int ranks[1] = { R };
    acp_set_t set = acp_create_set(1, ranks, 4, R);
    acp_multiset_t ms = acp_create_multiset(1, ranks, 4, R);
    acp_map_t map = acp_create_map(1, ranks, 4, R);
    CHECK(set.ga && ms.ga && map.ga, "create set/multiset/map");
    CHECK_INT(set.num_ranks, 1, "num_ranks");
    CHECK_INT(set.num_slots, 4, "num_slots");
    for (int i = 0; i < 16; i++) {
        CHECK_INT(acp_insert_set(set, key(keyname(i))), 1, "insert_set %s", keyname(i));
        CHECK_INT(acp_insert_multiset(ms, key(keyname(i))), 1, "insert_multiset %s", keyname(i));
        acp_pair_t p = { key(keyname(i)), value("value-of-key-15") };
        CHECK_INT(acp_insert_map(map, p), 1, "insert_map %s", keyname(i));
    }
    /* Duplicates. */
    CHECK_INT(acp_insert_set(set, key("ABC")), 1, "insert_set of a present key");
    CHECK_INT(acp_insert_multiset(ms, key("ABC")), 1, "insert_multiset of a present key");
    CHECK_INT(acp_insert_multiset(ms, key("ABC")), 1, "insert_multiset of a present key");
    acp_pair_t dup = { key("AB"), value("another value") };
    CHECK_INT(acp_insert_map(map, dup), 0, "insert_map of a present key");
    CHECK_INT(acp_size_set(set), 16, "size_set");
    CHECK_INT(acp_size_multiset(ms), 16, "size_multiset counts distinct keys");
    CHECK_INT(acp_size_map(map), 16, "size_map");
    CHECK_INT(acp_retrieve_multiset(ms, key("ABC")), 3, "retrieve_multiset");
    CHECK_INT(acp_retrieve_multiset(ms, key("ABCX")), 0, "retrieve_multiset of an absent key");

    /* Placement (B.4): every key in its slot, in insertion order. */
    acp_ga_t tables[3] = { dlt_word(set.ga), dlt_word(ms.ga), dlt_word(map.ga) };
    const int hdrs[3] = { 24, 32, 32 };
    for (int k = 0; k < 3; k++) {
        CHECK_INT(acp_query_rank(tables[k]), R, "table on rank %d", R);
        for (int s = 0; s < 4; s++) {
            int lens[64], want[16], nw = 0;
            for (int i = 0; i < 16; i++)
                if (place4[i] == s)
                    want[nw++] = i + 1;
            int n = chain(tables[k], s, hdrs[k], lens, "placement");
            CHECK_INT(n, nw, "kind %d slot %d: number of keys", k, s);
            for (int j = 0; j < n && j < nw; j++)
                CHECK_INT(lens[j], want[j], "kind %d slot %d key %d length", k, s, j);
        }
    }
    /* Element words of a multiset ({next, prev, counter, length, key}) and
     * a map ({next, prev, 8 + key + value, key length, key, value}). */
    acp_multiset_it_t mi = acp_find_multiset(ms, key("ABC"));
    CHECK_INT(dlt_word(mi.elem + 16), 3, "multiset element counter word");
    CHECK_INT(dlt_word(mi.elem + 24), 3, "multiset element key length word");
    acp_map_it_t ma = acp_find_map(map, key("AB"));
    CHECK_INT(ma.slot, 0, "find_map slot");
    CHECK_INT(dlt_word(ma.elem + 16), 8 + 2 + 15, "map element size word");
    CHECK_INT(memcmp(dlt_read(ma.elem + 32, 17), "ABvalue-of-key-15", 17), 0, "map element key and value bytes");
    acp_pair_t mp = acp_dereference_map_it(ma);
    CHECK_HEX(mp.first.ga, ma.elem + 32, "dereference_map_it: key");
    CHECK_INT(mp.first.size, 2, "dereference_map_it: key size");
    CHECK_HEX(mp.second.ga, ma.elem + 34, "dereference_map_it: value");
    CHECK_INT(mp.second.size, 15, "dereference_map_it: value size");

    /* Iteration: slots in order, chains in insertion order. */
    int order[16], no = 0;
    for (int s = 0; s < 4; s++)
        for (int i = 0; i < 16; i++)
            if (place4[i] == s)
                order[no++] = i + 1;
    int n = 0;
    for (acp_set_it_t it = acp_begin_set(set); it.rank < (int)set.num_ranks; it = acp_increment_set_it(it), n++) {
        acp_element_t e = acp_dereference_set_it(it);
        CHECK_HEX(e.ga, it.elem + 24, "dereference_set_it: key at elem + 24");
        if (n < 16)
            CHECK_INT(e.size, order[n], "set iteration %d: key length", n);
    }
    CHECK_INT(n, 16, "set iteration count");
    n = 0;
    for (acp_map_it_t it = acp_begin_map(map); it.rank < (int)map.num_ranks; it = acp_increment_map_it(it), n++)
        if (n < 16)
            CHECK_INT(acp_dereference_map_it(it).first.size, order[n], "map iteration %d", n);
    CHECK_INT(n, 16, "map iteration count");
    acp_multiset_it_t me_ = acp_end_multiset(ms);
    CHECK_INT(me_.rank, 1, "end iterator: rank = num_ranks");
    CHECK_HEX(me_.elem, 0, "end iterator: elem NULL");

    /* remove, find. */
    acp_remove_set(set, key("ABCDEF"));
    acp_remove_map(map, key("ABCDEF"));
    acp_remove_multiset(ms, key("ABC"));
    CHECK_INT(acp_retrieve_multiset(ms, key("ABC")), 2, "remove_multiset decrements");
    acp_remove_all_multiset(ms, key("ABC"));
    CHECK_INT(acp_retrieve_multiset(ms, key("ABC")), 0, "remove_all_multiset");
    CHECK_INT(acp_size_multiset(ms), 15, "size after remove_all");
    CHECK_INT(acp_size_set(set), 15, "size after remove");
    acp_set_it_t f = acp_find_set(set, key("ABCDEF"));
    CHECK_INT(f.rank, 1, "find of a removed key: rank = num_ranks");
    CHECK_INT(f.slot, 0, "find of a removed key: slot 0");
    CHECK_HEX(f.elem, 0, "find of a removed key: elem 0");
    acp_map_it_t fm = acp_find_map(map, key("ABCDEF"));
    CHECK(fm.rank == 1 && fm.slot == 0 && fm.elem == 0, "find_map of a removed key is the null iterator");
    f = acp_find_set(set, key("ABCDEFG"));
    CHECK_INT(f.slot, place4[6], "find_set slot");
    CHECK_INT(dlt_word(f.elem + 16), 7, "found element's key length");
    CHECK_INT(memcmp(dlt_read(f.elem + 24, 7), "ABCDEFG", 7), 0, "found element's key");

    /* retrieve_map: full length, truncated copy. */
    memset(dlt_buf + 49152, 0, 64);
    acp_element_t out = { dlt_bufga + 49152, 5 };
    acp_pair_t q = { key("ABCD"), out };
    CHECK_INT(acp_retrieve_map(map, q), 15, "retrieve_map returns the full value length");
    CHECK_INT(memcmp(dlt_buf + 49152, "value\0", 6), 0, "retrieve_map copies at most the buffer size");
    q.first = key("ABCDEF");
    CHECK_INT(acp_retrieve_map(map, q), 0, "retrieve_map of a removed key");
    /* An empty value removes the key and returns 0. */
    acp_pair_t del = { key("ABCD"), { dlt_bufga, 0 } };
    CHECK_INT(acp_insert_map(map, del), 0, "insert_map with an empty value");
    CHECK_INT(acp_size_map(map), 14, "an empty value removed the key");

    /* assign, clear, move, merge (counters add), swap with another shape. */
    acp_set_t s2 = acp_create_set(0, NULL, 3, (R + 1) % np);
    CHECK_INT(s2.num_ranks, np, "num_ranks 0 means every rank");
    acp_assign_set(s2, set);
    CHECK_INT(acp_size_set(s2), 15, "assign_set");
    acp_clear_set(set);
    CHECK_INT(acp_empty_set(set), 1, "clear_set");
    acp_move_set(set, s2);
    CHECK_INT(acp_size_set(set), 15, "move_set: destination");
    CHECK_INT(acp_size_set(s2), 0, "move_set: source emptied");
    acp_insert_set(s2, key("ZZ"));
    acp_swap_set(set, s2);
    CHECK_INT(acp_size_set(set), 1, "swap_set: first");
    CHECK_INT(acp_size_set(s2), 15, "swap_set: second");
    CHECK(acp_find_set(set, key("ZZ")).elem != 0, "swap_set: key moved");
    CHECK(acp_find_set(s2, key("ABCDEFGHIJKLMNOP")).elem != 0, "swap_set: keys re-hashed into the other shape");
    acp_merge_set(set, s2);
    CHECK_INT(acp_size_set(set), 16, "merge_set");
    CHECK_INT(acp_size_set(s2), 15, "merge_set leaves the source");
    acp_merge_set(set, set); /* itself: nothing changes, no deadlock */
    acp_move_set(set, set);
    acp_assign_set(set, set);
    CHECK_INT(acp_size_set(set), 16, "merge/move/assign with itself");

    acp_multiset_t m2 = acp_create_multiset(0, NULL, 2, R);
    acp_insert_multiset(m2, key("A"));
    acp_insert_multiset(m2, key("A"));
    acp_merge_multiset(m2, ms);
    CHECK_INT(acp_retrieve_multiset(m2, key("A")), 3, "merge_multiset adds counters");
    acp_map_t p2 = acp_create_map(0, NULL, 2, R);
    acp_pair_t pa = { key("A"), value("kept") };
    acp_insert_map(p2, pa);
    acp_merge_map(p2, map);
    CHECK_INT(acp_size_map(p2), 14, "merge_map");
    acp_element_t o2 = { dlt_bufga + 49152, 32 };
    acp_pair_t qa = { key("A"), o2 };
    CHECK_INT(acp_retrieve_map(p2, qa), 4, "merge_map keeps the destination's value");

    /* Bad input. */
    acp_set_t bad = set;
    bad.num_ranks = 0;
    CHECK_INT(acp_size_set(bad), 0, "size of a handle with num_ranks 0");
    CHECK_INT(acp_empty_set(bad), 1, "empty of a handle with num_ranks 0");
    CHECK_INT(acp_insert_set(set, key("")), 0, "insert of an empty key");
    acp_element_t badkey = { acp_query_starter_ga(S) + DLT_SMEM, 4 };
    CHECK_INT(acp_insert_set(set, badkey), 0, "insert of a key beyond a region");
    CHECK_HEX(acp_create_set(-1, NULL, 4, R).ga, 0, "create_set(num_ranks -1)");
    CHECK_HEX(acp_create_set(1, ranks, 0, R).ga, 0, "create_set(num_slots 0)");
    int badranks[1] = { np };
    CHECK_HEX(acp_create_set(1, badranks, 4, R).ga, 0, "create_set with ranks[0] = N");
    CHECK_HEX(acp_create_set(1, NULL, 4, R).ga, 0, "create_set with ranks NULL");
    CHECK_HEX(acp_increment_set_it(acp_end_set(set)).elem, 0, "increment of the null iterator");
    CHECK_HEX(acp_dereference_set_it(acp_end_set(set)).ga, 0, "dereference of the null iterator");
    CHECK_INT(acp_size_set(set), 16, "bad input changed nothing");

    acp_destroy_set(set);
    acp_destroy_set(s2);
    acp_destroy_multiset(ms);
    acp_destroy_multiset(m2);
    acp_destroy_map(map);
    acp_destroy_map(p2);
}

/* Tables on every rank; the local variants. Every rank does this with its
 * own containers at once. */
static void spread(void)
{
    acp_map_t m = acp_create_map(0, NULL, 3, me);
    char k[32];
    for (int i = 0; i < 40; i++) {
        snprintf(k, sizeof k, "key-%d-%d", me, i);
        acp_pair_t p = { key(k), value("v") };
        CHECK_INT(acp_insert_map(m, p), 1, "insert %s", k);
    }
    CHECK_INT(acp_size_map(m), 40, "size over all tables");
    /* Count per table by iteration; the local range covers my table. */
    int per[8] = { 0 }, n = 0, prev_rank = 0;
    for (acp_map_it_t it = acp_begin_map(m); it.rank < (int)m.num_ranks; it = acp_increment_map_it(it), n++) {
        CHECK(it.rank >= prev_rank, "iteration goes through the tables in order");
        prev_rank = it.rank;
        CHECK_INT(acp_query_rank(it.elem), it.rank, "element %d on its table's rank", n);
        if (it.rank < 8)
            per[it.rank]++;
    }
    CHECK_INT(n, 40, "iteration over all tables");
    CHECK_INT(acp_size_local_map(m), per[me], "size_local");
    CHECK_INT(acp_empty_local_map(m), per[me] == 0, "empty_local");
    int nl = 0;
    acp_map_it_t el = acp_end_local_map(m);
    for (acp_map_it_t it = acp_begin_local_map(m); !(it.rank == el.rank && it.slot == el.slot && it.elem == el.elem);
         it = acp_increment_map_it(it), nl++) {
        CHECK_INT(it.rank, me, "local iteration stays in my table");
        if (nl > 40)
            break;
    }
    CHECK_INT(nl, per[me], "local iteration count");
    acp_map_t m2 = acp_create_map(0, NULL, 5, (me + 1) % np);
    acp_merge_local_map(m2, m);
    CHECK_INT(acp_size_map(m2), per[me], "merge_local");
    acp_assign_local_map(m2, m);
    CHECK_INT(acp_size_map(m2), per[me], "assign_local");
    acp_move_local_map(m2, m);
    CHECK_INT(acp_size_local_map(m), 0, "move_local empties my table");
    CHECK_INT(acp_size_map(m), 40 - per[me], "move_local leaves the others");
    acp_clear_local_map(m2);
    CHECK_INT(acp_size_local_map(m2), 0, "clear_local_map");
    acp_clear_map(m);
    CHECK_INT(acp_empty_map(m), 1, "clear_map");
    acp_destroy_map(m);
    acp_destroy_map(m2);
}

/* All ranks insert into one set at once. */
static void shared(void)
{
    uint64_t all[64];
    acp_set_t s = { 0, 0, 0 };
    if (me == 0)
        s = acp_create_set(0, NULL, 2, 0);
    acpt_allgather_u64(s.ga, all, 3500);
    s.ga = all[0];
    s.num_ranks = (uint64_t)np;
    s.num_slots = 2;
    char k[32];
    for (int i = 0; i < 25; i++) {
        snprintf(k, sizeof k, "r%d-%d", me, i);
        CHECK_INT(acp_insert_set(s, key(k)), 1, "shared insert %s", k);
        CHECK_INT(acp_insert_set(s, key("common")), 1, "shared insert of the common key");
    }
    acp_sync();
    CHECK_INT(acp_size_set(s), 25 * np + 1, "every rank's keys, the common key once");
    for (int r = 0; r < np; r++)
        for (int i = 0; i < 25; i += 6) {
            snprintf(k, sizeof k, "r%d-%d", r, i);
            CHECK(acp_find_set(s, key(k)).elem != 0, "find %s", k);
        }
    acp_sync();
    if (me == 0)
        acp_destroy_set(s);
    acp_sync();
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    np = acp_procs();
    dlt_fill_values();
    dlt_init_buf();
    original_shape(me, me);
    original_shape((me + 1) % np, (me + 2) % np);
    spread();
    shared();
    return acpt_finish("t_dl_hashed");
}
