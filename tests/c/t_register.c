/*
 * t_register: acp_register_memory, acp_unregister_memory, acp_query_ga.
 *
 * GA linearity inside a region and the matching acp_query_address; bounds of
 * acp_query_ga; 300 live registrations at once; overlapping registrations
 * with distinct keys that live and die independently; every way an
 * unregister or a registration must fail; and a neighbour copying into and
 * out of my registered memory through GAs exchanged in starter memory.
 *
 * NMANY (300) registrations live at once: more than the original's ib
 * device held (255, all of which its sample acpbl_test_rm uses), at every
 * job size; run also at np 128, from where libacp's GA layout once left
 * only 252.
 *
 * An unregister right after an atomic whose result goes to the region, or a
 * get into it, was issued waits for that access: the old value (the data)
 * is in the region when the handle completes. The atomic's result used to
 * be dropped (the target incremented all the same) and the unregister
 * returned at once.
 *
 * A range that is not all mapped memory (a size larger than the
 * allocation, a page unmapped in the middle) is refused, on every
 * transport as ib's ibv_reg_mr refuses it: accepted, a peer's put or
 * atomic into the hole killed the owner with SIGSEGV (udp, and shm when
 * the owner serves the access).
 */
#include <sys/mman.h>

#include "acptest.h"

#define BUFSZ   4096
#define NMANY   300
#define SMEM_OFF_GA   0    /* GA exchange (8 * (N + 1) bytes) */
#define SMEM_OFF_KEY  2048 /* key exchange */

static int me, nprocs;

/* A registration of BUFSZ bytes must give GAs that are linear, mine,
 * colour 0, and that translate back to the same pointers. */
static void check_linear(acp_atkey_t key, uint8_t *buf, size_t size)
{
    acp_ga_t ga = acp_query_ga(key, buf);
    CHECK(ga != ACP_GA_NULL, "acp_query_ga(key, base) is ACP_GA_NULL");
    if (ga == ACP_GA_NULL)
        return;
    CHECK_INT(acp_query_rank(ga), me, "acp_query_rank of a registered GA");
    CHECK_INT(acp_query_color(ga), 0, "acp_query_color of a GA registered with colour 0");
    const size_t offs[] = { 0, 1, 3, 8, 100, size / 2, size - 1 };
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
        CHECK_HEX(acp_query_ga(key, buf + offs[i]), ga + offs[i], "acp_query_ga(key, base + %zu)", offs[i]);
        CHECK(acp_query_address(ga + offs[i]) == buf + offs[i], "acp_query_address(ga + %zu) != base + %zu",
              offs[i], offs[i]);
    }
    CHECK_HEX(acp_query_ga(key, buf + size), ACP_GA_NULL, "acp_query_ga(key, base + size)");
    CHECK_HEX(acp_query_ga(key, buf + size + 100), ACP_GA_NULL, "acp_query_ga(key, base + size + 100)");
    CHECK_HEX(acp_query_ga(key, buf - 1), ACP_GA_NULL, "acp_query_ga(key, base - 1)");
    CHECK_HEX(acp_query_ga(ACP_ATKEY_NULL, buf), ACP_GA_NULL, "acp_query_ga(ACP_ATKEY_NULL, base)");
    CHECK(acp_query_address(ga + size) == NULL, "acp_query_address(ga + size) is not NULL");
}

static void test_basic(void)
{
    uint8_t *buf = malloc(BUFSZ);
    acp_atkey_t key = acp_register_memory(buf, BUFSZ, 0);
    CHECK(key != ACP_ATKEY_NULL, "acp_register_memory(malloc'ed %d bytes) is ACP_ATKEY_NULL", BUFSZ);
    check_linear(key, buf, BUFSZ);
    acp_ga_t ga = acp_query_ga(key, buf);
    CHECK_INT(acp_unregister_memory(key), 0, "acp_unregister_memory");
    CHECK_HEX(acp_query_ga(key, buf), ACP_GA_NULL, "acp_query_ga after unregister");
    CHECK(acp_query_address(ga) == NULL, "acp_query_address of an unregistered GA is not NULL");
    CHECK_INT(acp_unregister_memory(key), -1, "second acp_unregister_memory of the same key");
    free(buf);

    /* A region of one byte, and one that is not 8-byte aligned. */
    uint8_t *odd = malloc(64);
    acp_atkey_t k1 = acp_register_memory(odd + 3, 1, 0);
    CHECK(k1 != ACP_ATKEY_NULL, "acp_register_memory(p + 3, 1) is ACP_ATKEY_NULL");
    acp_ga_t g1 = acp_query_ga(k1, odd + 3);
    CHECK(g1 != ACP_GA_NULL, "acp_query_ga of a 1-byte region");
    CHECK(acp_query_address(g1) == odd + 3, "acp_query_address of a 1-byte region");
    CHECK_HEX(acp_query_ga(k1, odd + 4), ACP_GA_NULL, "acp_query_ga one past a 1-byte region");
    CHECK_INT(acp_unregister_memory(k1), 0, "acp_unregister_memory of a 1-byte region");
    free(odd);
}

/* Ranges with a hole: refused; the mapped part alone is accepted. */
static void test_unmapped(void)
{
    long page = sysconf(_SC_PAGESIZE);
    /* Pages 0 and 2 mapped, 1 and 3 not (nothing else can be placed in
     * holes this small while the test runs: it maps nothing else). */
    uint8_t *m = mmap(NULL, 4 * (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        FATAL("mmap of 4 pages");
    if (munmap(m + page, (size_t)page) != 0 || munmap(m + 3 * page, (size_t)page) != 0)
        FATAL("munmap of pages 1 and 3");
    CHECK_HEX(acp_register_memory(m, 3 * (size_t)page, 0), ACP_ATKEY_NULL,
              "acp_register_memory of 3 pages whose middle one is unmapped");
    CHECK_HEX(acp_register_memory(m + page - 8, 16, 0), ACP_ATKEY_NULL,
              "acp_register_memory of 16 bytes reaching into an unmapped page");
    CHECK_HEX(acp_register_memory(m + 2 * page, 2 * (size_t)page, 0), ACP_ATKEY_NULL,
              "acp_register_memory running past the end of a mapping");
    uint8_t *small = malloc(64);
    CHECK_HEX(acp_register_memory(small, (size_t)1 << 40, 0), ACP_ATKEY_NULL,
              "acp_register_memory of a 64-byte allocation with size 2^40");
    free(small);
    acp_atkey_t a = acp_register_memory(m + page - 8, 8, 0), b = acp_register_memory(m + 2 * page, (size_t)page, 0);
    CHECK(a != ACP_ATKEY_NULL, "acp_register_memory of the last 8 bytes before the hole");
    CHECK(b != ACP_ATKEY_NULL, "acp_register_memory of the page after the hole");
    CHECK_INT(acp_unregister_memory(a), 0, "unregister the 8 bytes before the hole");
    CHECK_INT(acp_unregister_memory(b), 0, "unregister the page after the hole");
    munmap(m, (size_t)page);
    munmap(m + 2 * page, (size_t)page);
}

static void test_rejects(void)
{
    uint8_t buf[64];
    CHECK_HEX(acp_register_memory(NULL, 64, 0), ACP_ATKEY_NULL, "acp_register_memory(NULL, 64, 0)");
    CHECK_HEX(acp_register_memory(buf, 0, 0), ACP_ATKEY_NULL, "acp_register_memory(buf, 0, 0)");
    CHECK_HEX(acp_register_memory((void *)(UINTPTR_MAX - 100), 4096, 0), ACP_ATKEY_NULL,
              "acp_register_memory of a range that wraps around");
    CHECK_HEX(acp_register_memory(buf, SIZE_MAX, 0), ACP_ATKEY_NULL, "acp_register_memory(buf, SIZE_MAX, 0)");
    CHECK_HEX(acp_register_memory(buf, 64, -1), ACP_ATKEY_NULL, "acp_register_memory with colour -1");
    CHECK_HEX(acp_register_memory(buf, 64, acp_colors()), ACP_ATKEY_NULL,
              "acp_register_memory with colour acp_colors()");
    CHECK_HEX(acp_register_memory(buf, 64, 1 << 30), ACP_ATKEY_NULL, "acp_register_memory with colour 2^30");

    test_unmapped();

    CHECK_INT(acp_unregister_memory(ACP_ATKEY_NULL), -1, "acp_unregister_memory(ACP_ATKEY_NULL)");
    CHECK_INT(acp_unregister_memory(0x1234), -1, "acp_unregister_memory(0x1234)");
    CHECK_INT(acp_unregister_memory(~(acp_atkey_t)0), -1, "acp_unregister_memory(~0)");
    /* libacp's key is the GA of the region's first byte, so the starter GA
     * is what a program would pass to try to unregister starter memory. */
    CHECK_INT(acp_unregister_memory(acp_query_starter_ga(me)), -1, "acp_unregister_memory(my starter GA)");
    CHECK(acp_query_address(acp_query_starter_ga(me)) != NULL, "starter memory gone after a refused unregister");
    CHECK_HEX(acp_query_ga(0x1234, buf), ACP_GA_NULL, "acp_query_ga(0x1234, buf)");
    CHECK_HEX(acp_query_ga(acp_query_starter_ga(me), NULL), ACP_GA_NULL, "acp_query_ga(starter, NULL)");
}

static void test_many(void)
{
    static uint8_t bufs[NMANY][16];
    static acp_atkey_t keys[NMANY];
    static acp_ga_t gas[NMANY];
    for (int i = 0; i < NMANY; i++) {
        keys[i] = acp_register_memory(bufs[i], sizeof bufs[i], 0);
        CHECK(keys[i] != ACP_ATKEY_NULL, "registration %d of %d is ACP_ATKEY_NULL", i, NMANY);
        gas[i] = acp_query_ga(keys[i], bufs[i]);
    }
    for (int i = 0; i < NMANY; i++) {
        CHECK(gas[i] != ACP_GA_NULL, "acp_query_ga of registration %d", i);
        CHECK(acp_query_address(gas[i] + 5) == bufs[i] + 5, "acp_query_address in registration %d", i);
        for (int j = 0; j < i; j++) {
            if (keys[j] == keys[i] || gas[j] == gas[i]) {
                FAIL("registrations %d and %d share a key or a GA", j, i);
                break;
            }
        }
    }
    for (int i = 0; i < NMANY; i++)
        CHECK_INT(acp_unregister_memory(keys[i]), 0, "unregister %d of %d", i, NMANY);
    for (int i = 0; i < NMANY; i++)
        CHECK(acp_query_address(gas[i]) == NULL, "GA of unregistered region %d still resolves", i);

    /* Registration is cheap and slots are recycled: acp_malloc does this on
     * every call. */
    for (int i = 0; i < 5000; i++) {
        acp_atkey_t k = acp_register_memory(bufs[0], 8, 0);
        if (k == ACP_ATKEY_NULL || acp_unregister_memory(k) != 0) {
            FAIL("register/unregister cycle %d failed", i);
            break;
        }
    }
}

/* Overlapping and identical ranges: each registration is independent. */
static void test_overlap(void)
{
    uint8_t *buf = malloc(BUFSZ);
    acp_atkey_t a = acp_register_memory(buf, BUFSZ, 0);
    acp_atkey_t b = acp_register_memory(buf + 1024, 1024, 0);
    acp_atkey_t c = acp_register_memory(buf, BUFSZ, 0);
    CHECK(a != ACP_ATKEY_NULL && b != ACP_ATKEY_NULL && c != ACP_ATKEY_NULL, "overlapping registrations");
    CHECK(a != b && b != c && a != c, "overlapping registrations share a key (0x%" PRIx64 " 0x%" PRIx64
          " 0x%" PRIx64 ")", a, b, c);
    check_linear(b, buf + 1024, 1024);
    CHECK_HEX(acp_query_ga(b, buf + 1023), ACP_GA_NULL, "acp_query_ga(inner key, just below its range)");
    CHECK(acp_query_ga(a, buf + 1500) != ACP_GA_NULL, "acp_query_ga(outer key, inside the inner range)");
    CHECK_INT(acp_unregister_memory(a), 0, "unregister the first of two identical registrations");
    CHECK_HEX(acp_query_ga(a, buf), ACP_GA_NULL, "acp_query_ga of the unregistered key");
    check_linear(c, buf, BUFSZ);
    check_linear(b, buf + 1024, 1024);
    CHECK_INT(acp_unregister_memory(a), -1, "double unregister");
    CHECK_INT(acp_unregister_memory(c), 0, "unregister the second identical registration");
    CHECK_INT(acp_unregister_memory(b), 0, "unregister the inner registration");
    free(buf);
}

/*
 * Each rank registers a buffer and publishes GA and key; the next rank puts
 * data into it and gets it back; a foreign key cannot be unregistered, and
 * the region keeps working after that attempt.
 */
static void test_remote(void)
{
    uint8_t *buf = malloc(BUFSZ);
    memset(buf, 0, BUFSZ);
    acp_atkey_t key = acp_register_memory(buf, BUFSZ, 0);
    acp_ga_t ga = acp_query_ga(key, buf);
    uint64_t gas[1024], keys[1024];
    acpt_allgather_u64(ga, gas, SMEM_OFF_GA);
    acpt_allgather_u64(key, keys, SMEM_OFF_KEY);
    int next = (me + 1) % nprocs, prev = (me + nprocs - 1) % nprocs;

    if (nprocs > 1)
        CHECK_INT(acp_unregister_memory(keys[next]), -1, "acp_unregister_memory(key of rank %d)", next);
    CHECK(acp_query_address(gas[next]) == (next == me ? buf : NULL), "acp_query_address(GA of rank %d)", next);

    /* Put 1000 bytes into the next rank's region at offset 100, from my
     * starter memory. */
    uint8_t *st = acpt_starter(3072);
    acpt_fill(st, 1000, 7000 + (uint64_t)me);
    acp_handle_t h = acp_copy(gas[next] + 100, acp_query_starter_ga(me) + 3072, 1000, ACP_HANDLE_NULL);
    WAIT(h, "acp_copy into the next rank's registered memory");
    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_FILL(buf + 100, 1000, 7000 + (uint64_t)prev, "data put into my registered memory by the previous rank");
    CHECK_BYTES(buf, 100, 0, "my registered memory below the put");
    CHECK_BYTES(buf + 1100, BUFSZ - 1100, 0, "my registered memory above the put");

    /* Get it back into my own registered memory at offset 2000. */
    h = acp_copy(ga + 2000, gas[next] + 100, 1000, ACP_HANDLE_NULL);
    WAIT(h, "acp_copy from the next rank's registered memory");
    CHECK_FILL(buf + 2000, 1000, 7000 + (uint64_t)me, "data got back from the next rank");
    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_INT(acp_unregister_memory(key), 0, "unregister my exchanged region");
    CHECK_INT(acp_sync(), 0, "acp_sync");
    free(buf);
}

/*
 * The next rank's registered counter (GA in starter memory at
 * SMEM_OFF_GA): NINFLIGHT times, register a fresh region, fetch-and-add
 * into it, unregister it at once, then complete. Then a get of 4 KiB into
 * a region unregistered just after the get was issued.
 */
#define NINFLIGHT 100
static void test_unregister_in_flight(void)
{
    int next = (me + 1) % nprocs;
    uint64_t *counter = calloc(1, BUFSZ);
    acpt_fill(counter + 1, BUFSZ - 8, 9000 + (uint64_t)me);
    acp_atkey_t ck = acp_register_memory(counter, BUFSZ, 0);
    uint64_t gas[256];
    acpt_allgather_u64(acp_query_ga(ck, counter), gas, SMEM_OFF_GA);
    int lost = 0, refused = 0;
    for (int i = 0; i < NINFLIGHT; i++) {
        uint64_t *res = malloc(64);
        res[0] = 0xdeadbeef;
        acp_atkey_t k = acp_register_memory(res, 64, 0);
        acp_handle_t h = acp_add8(acp_query_ga(k, res), gas[next], 1, ACP_HANDLE_NULL);
        refused += acp_unregister_memory(k) != 0;
        acp_complete(h);
        lost += res[0] != (uint64_t)i;
        free(res);
    }
    CHECK_INT(refused, 0, "unregisters refused with an atomic in flight");
    CHECK_INT(lost, 0, "fetched values not in the region unregistered while the atomic was in flight (of %d)",
              NINFLIGHT);
    uint8_t *in = malloc(BUFSZ - 8);
    memset(in, 0, BUFSZ - 8);
    acp_atkey_t k = acp_register_memory(in, BUFSZ - 8, 0);
    acp_handle_t h = acp_copy(acp_query_ga(k, in), gas[next] + 8, BUFSZ - 8, ACP_HANDLE_NULL);
    CHECK_INT(acp_unregister_memory(k), 0, "unregister with a get into the region in flight");
    acp_complete(h);
    CHECK_FILL(in, BUFSZ - 8, 9000 + (uint64_t)next, "data of a get into a region unregistered while in flight");
    free(in);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_INT(counter[0], NINFLIGHT, "my counter after the previous rank's %d fetch-and-adds", NINFLIGHT);
    CHECK_INT(acp_unregister_memory(ck), 0, "unregister my counter");
    CHECK_INT(acp_sync(), 0, "acp_sync");
    free(counter);
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    /* The key exchange (8 * (N + 1) bytes at 2048) ends with the starter
     * memory of 4096 bytes; the data at 3072 is written only after it. */
    if (nprocs > 255)
        FATAL("more than 255 ranks");
    acpt_need_smem(4096);
    test_basic();
    test_rejects();
    test_many();
    test_overlap();
    test_remote();
    test_unregister_in_flight();
    return acpt_finish("t_register");
}
