/*
 * t_badinput: wrong calls return their error values, say why, and harm
 * nobody. Run with ACP_VERBOSE=1 in the environment.
 *
 * - Every function before acp_init and after acp_finalize returns its error
 *   value (-1, ACP_GA_NULL, ACP_ATKEY_NULL, NULL, ACP_HANDLE_NULL;
 *   acp_complete returns; acp_inquire 0) and prints one line on stderr
 *   naming the function (stderr is redirected to a file around each call).
 * - GAs with an invalid rank, garbage order handles and local ranges outside
 *   registered memory give ACP_HANDLE_NULL, with a message.
 * - Remote GAs of an unregistered region, or ranges reaching beyond a
 *   region (registered or starter memory), give a handle that completes;
 *   the target's memory, canaries around it included, stays unchanged.
 * - A range beyond starter memory, mine or a peer's, is reported with the
 *   setting that sizes it (--acp-size-smem); the message used to say only
 *   "range leaves the registered region".
 * - Third-party operations (np >= 3) refused at either end: the message
 *   names the rank that refused and the refused GA (over udp a destination
 *   refused by a third rank was blamed on the source's owner, without GA).
 * - GAs of the library's own memories (communication library, engine) of
 *   any rank give ACP_HANDLE_NULL with a message: programs cannot address
 *   them.
 * - Zero-byte copies in every placement complete.
 * - acp_complete/acp_inquire of garbage handles return (inquire 0).
 *
 * Run with --acp-size-smem 4096.
 */
#include <stdbool.h>

#include "acptest.h"

#define SMEM     4096
#define EXCH_OFF 0     /* GA exchange, 8 * (N + 1) bytes */
#define SCR_OFF  2048  /* scratch */
#define REGSZ    512
#define CANARY   0xc3

static int me, nprocs, next;

/* ---- stderr capture -------------------------------------------------------- */

static int saved_stderr = -1;
static FILE *capture_file;
static char captured[8192];

static void capture_begin(void)
{
    fflush(stderr);
    capture_file = tmpfile();
    if (capture_file == NULL)
        FATAL("tmpfile");
    saved_stderr = dup(2);
    dup2(fileno(capture_file), 2);
}

static const char *capture_end(void)
{
    fflush(stderr);
    dup2(saved_stderr, 2);
    close(saved_stderr);
    rewind(capture_file);
    size_t n = fread(captured, 1, sizeof captured - 1, capture_file);
    captured[n] = 0;
    fclose(capture_file);
    return captured;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* The captured text must be one line that names fn. */
static void check_message(const char *file, int line, const char *text, const char *fn, const char *when)
{
    acpt_check_true(file, line, count_lines(text) == 1 && strstr(text, fn) != NULL,
                    "%s %s: stderr should be one line naming %s, was \"%.200s\"", fn, when, fn, text);
}
#define CHECK_MESSAGE(text, fn, when) check_message(__FILE__, __LINE__, (text), (fn), (when))

/* ---- every function outside acp_init .. acp_finalize --------------------- */

static uint8_t buf[64];
static const acp_ga_t fake = 0x4000000000000040ull; /* some GA-looking value */

static int64_t c_rank(void) { return acp_rank(); }
static int64_t c_procs(void) { return acp_procs(); }
static int64_t c_sync(void) { return acp_sync(); }
static int64_t c_finalize(void) { return acp_finalize(); }
static int64_t c_reset(void) { return acp_reset(0); }
static int64_t c_colors(void) { return acp_colors(); }
static int64_t c_starter(void) { return (int64_t)acp_query_starter_ga(0); }
static int64_t c_register(void) { return (int64_t)acp_register_memory(buf, sizeof buf, 0); }
static int64_t c_unregister(void) { return acp_unregister_memory(fake); }
static int64_t c_query_ga(void) { return (int64_t)acp_query_ga(fake, buf); }
static int64_t c_query_address(void) { return (int64_t)(intptr_t)acp_query_address(fake); }
static int64_t c_query_rank(void) { return acp_query_rank(fake); }
static int64_t c_query_color(void) { return acp_query_color(fake); }
static int64_t c_copy(void) { return acp_copy(fake, fake + 64, 8, ACP_HANDLE_NULL); }
static int64_t c_cas4(void) { return acp_cas4(fake, fake + 64, 1, 2, ACP_HANDLE_NULL); }
static int64_t c_cas8(void) { return acp_cas8(fake, fake + 64, 1, 2, ACP_HANDLE_NULL); }
static int64_t c_swap4(void) { return acp_swap4(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_swap8(void) { return acp_swap8(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_add4(void) { return acp_add4(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_add8(void) { return acp_add8(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_xor4(void) { return acp_xor4(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_xor8(void) { return acp_xor8(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_or4(void) { return acp_or4(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_or8(void) { return acp_or8(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_and4(void) { return acp_and4(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_and8(void) { return acp_and8(fake, fake + 64, 1, ACP_HANDLE_NULL); }
static int64_t c_complete(void) { acp_complete(1); acp_complete(ACP_HANDLE_ALL); return 0; }
static int64_t c_inquire(void) { return acp_inquire(1) + acp_inquire(ACP_HANDLE_ALL); }

struct call {
    const char *name;
    int64_t (*fn)(void);
    int64_t want;
    int lines; /* lines on stderr the wrapper produces (two calls: two lines) */
};

static const struct call calls[] = {
    { "acp_rank", c_rank, -1, 1 },
    { "acp_procs", c_procs, -1, 1 },
    { "acp_sync", c_sync, -1, 1 },
    { "acp_finalize", c_finalize, -1, 1 },
    { "acp_reset", c_reset, -1, 1 },
    { "acp_colors", c_colors, -1, 1 },
    { "acp_query_starter_ga", c_starter, 0, 1 },
    { "acp_register_memory", c_register, 0, 1 },
    { "acp_unregister_memory", c_unregister, -1, 1 },
    { "acp_query_ga", c_query_ga, 0, 1 },
    { "acp_query_address", c_query_address, 0, 1 },
    { "acp_query_rank", c_query_rank, -1, 1 },
    { "acp_query_color", c_query_color, -1, 1 },
    { "acp_copy", c_copy, 0, 1 },
    { "acp_cas4", c_cas4, 0, 1 },
    { "acp_cas8", c_cas8, 0, 1 },
    { "acp_swap4", c_swap4, 0, 1 },
    { "acp_swap8", c_swap8, 0, 1 },
    { "acp_add4", c_add4, 0, 1 },
    { "acp_add8", c_add8, 0, 1 },
    { "acp_xor4", c_xor4, 0, 1 },
    { "acp_xor8", c_xor8, 0, 1 },
    { "acp_or4", c_or4, 0, 1 },
    { "acp_or8", c_or8, 0, 1 },
    { "acp_and4", c_and4, 0, 1 },
    { "acp_and8", c_and8, 0, 1 },
    { "acp_complete", c_complete, 0, 2 },
    { "acp_inquire", c_inquire, 0, 2 },
};

static void test_outside(const char *when)
{
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        capture_begin();
        int64_t got = calls[i].fn();
        const char *text = capture_end();
        CHECK_INT(got, calls[i].want, "%s %s: return value", calls[i].name, when);
        CHECK(count_lines(text) == calls[i].lines && strstr(text, calls[i].name) != NULL,
              "%s %s: stderr should be %d line(s) naming the function, was \"%.200s\"", calls[i].name, when,
              calls[i].lines, text);
    }
}

/* ---- rejected at the call ---------------------------------------------------- */

static acp_ga_t st(int r) { return acp_query_starter_ga(r); }

/* Size of my starter memory: the first offset acp_query_address refuses.
 * The refusals it provokes are reported on stderr; they are kept out of the
 * log. */
static size_t starter_size(void)
{
    capture_begin();
    size_t lo = 1, hi = (size_t)1 << 40; /* lo addressable, hi not */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (acp_query_address(st(me) + mid - 1) != NULL)
            lo = mid;
        else
            hi = mid;
    }
    capture_end();
    return lo;
}

static void test_rejected(size_t smem)
{
    acp_ga_t good = st(me) + SCR_OFF;
    const char *text;
    /* Values with a zero rank field (never GAs) and, with two or more ranks,
     * a GA naming rank N: the rank field is linear in the rank (rank + 1 in
     * the top bits), so starter(0) + N * (starter(1) - starter(0)). */
    acp_ga_t bad[4] = { 0x1234, 8, ACP_GA_NULL, ACP_GA_NULL };
    int nbad = 3;
    if (nprocs >= 2) {
        bad[nbad++] = st(0) + (uint64_t)nprocs * (st(1) - st(0));
        CHECK_INT(acp_query_rank(bad[3]), -1, "acp_query_rank of a GA naming rank %d", nprocs);
    }
    for (int i = 0; i < nbad; i++) {
        capture_begin();
        acp_handle_t h1 = acp_copy(bad[i], good, 8, ACP_HANDLE_NULL);
        text = capture_end();
        CHECK_INT(h1, ACP_HANDLE_NULL, "acp_copy to invalid GA 0x%" PRIx64, bad[i]);
        CHECK_MESSAGE(text, "acp_copy", "with an invalid destination");
        CHECK_INT(acp_copy(good, bad[i], 8, ACP_HANDLE_NULL), ACP_HANDLE_NULL, "acp_copy from invalid GA 0x%" PRIx64,
                  bad[i]);
        CHECK_INT(acp_copy(good, bad[i], 0, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                  "zero-byte acp_copy from invalid GA 0x%" PRIx64, bad[i]);
        capture_begin();
        acp_handle_t h2 = acp_add8(good, bad[i], 1, ACP_HANDLE_NULL);
        text = capture_end();
        CHECK_INT(h2, ACP_HANDLE_NULL, "acp_add8 on invalid GA 0x%" PRIx64, bad[i]);
        CHECK_MESSAGE(text, "acp_add8", "with an invalid target");
        CHECK_INT(acp_cas4(bad[i], good, 1, 2, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                  "acp_cas4 with result at invalid GA 0x%" PRIx64, bad[i]);
    }

    /* Local ends outside my registered memory. */
    capture_begin();
    acp_handle_t h = acp_copy(st(next) + SCR_OFF, st(me) + smem - 4, 8, ACP_HANDLE_NULL);
    text = capture_end();
    CHECK_INT(h, ACP_HANDLE_NULL, "acp_copy from the last 4 bytes of my starter memory, 8 bytes");
    CHECK_MESSAGE(text, "acp_copy", "with a source beyond my starter memory");
    CHECK(strstr(text, "--acp-size-smem") != NULL,
          "acp_copy with a source beyond my starter memory: no --acp-size-smem in \"%.300s\"", text);
    CHECK_INT(acp_copy(st(me) + smem - 4, st(next) + SCR_OFF, 8, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
              "acp_copy into the last 4 bytes of my starter memory, 8 bytes");
    CHECK_INT(acp_add4(st(me) + smem, st(next) + SCR_OFF, 1, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
              "acp_add4 with result beyond my starter memory");

    /* Order handles that are not handles. */
    const acp_handle_t orders[] = { -5, -1000, INT64_MIN, INT64_MAX };
    for (size_t i = 0; i < sizeof orders / sizeof orders[0]; i++) {
        capture_begin();
        h = acp_copy(good + 8, good, 8, orders[i]);
        text = capture_end();
        CHECK_INT(h, ACP_HANDLE_NULL, "acp_copy with order %" PRId64, orders[i]);
        CHECK_MESSAGE(text, "acp_copy", "with a garbage order handle");
        CHECK_INT(acp_swap8(good + 8, good, 1, orders[i]), ACP_HANDLE_NULL, "acp_swap8 with order %" PRId64,
                  orders[i]);
    }

    /* Registration errors say why, too. */
    capture_begin();
    acp_atkey_t k = acp_register_memory(NULL, 8, 0);
    text = capture_end();
    CHECK_HEX(k, ACP_ATKEY_NULL, "acp_register_memory(NULL, 8, 0)");
    CHECK_MESSAGE(text, "acp_register_memory", "with a NULL address");
    capture_begin();
    int rc = acp_unregister_memory(0x1234);
    text = capture_end();
    CHECK_INT(rc, -1, "acp_unregister_memory(0x1234)");
    CHECK_MESSAGE(text, "acp_unregister_memory", "with a garbage key");
}

/* GAs of the library's own memories (the communication library's starter
 * memory, segment 1; the engine's words, segment 3) of any rank: refused
 * at the call, with a message; a write there used to break a channel or
 * the barrier. The segment field's unit comes from an acp_malloc GA, which
 * is in segment 2 (the data library's starter memory) at an offset below
 * the unit. */
static void test_library_memory(void)
{
    acp_ga_t m = acp_malloc(8, me);
    if (m == ACP_GA_NULL) {
        printf("rank %d: t_badinput: acp_malloc failed: the library-memory checks are skipped\n", me);
        return;
    }
    uint64_t half = (m - st(me)) / 2, unit = 1;
    while (unit * 2 <= half)
        unit *= 2;
    acp_free(m);
    acp_ga_t good = st(me) + SCR_OFF;
    int ranks[2] = { me, next };
    for (int i = 0; i < (nprocs >= 2 ? 2 : 1); i++) {
        for (uint64_t seg = 1; seg <= 3; seg += 2) {
            acp_ga_t lib = st(ranks[i]) + seg * unit + 64;
            capture_begin();
            acp_handle_t h = acp_copy(lib, good, 8, ACP_HANDLE_NULL);
            const char *text = capture_end();
            CHECK_INT(h, ACP_HANDLE_NULL, "acp_copy into segment %" PRIu64 " of rank %d (GA 0x%" PRIx64 ")", seg,
                      ranks[i], lib);
            CHECK_MESSAGE(text, "acp_copy", "into the library's memory");
            CHECK(strstr(text, "programs cannot address") != NULL,
                  "acp_copy into the library's memory: the message does not say why: \"%.300s\"", text);
            CHECK_INT(acp_copy(good, lib, 8, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                      "acp_copy out of segment %" PRIu64 " of rank %d", seg, ranks[i]);
            CHECK_INT(acp_copy(lib, good, 0, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                      "zero-byte acp_copy into segment %" PRIu64 " of rank %d", seg, ranks[i]);
            CHECK_INT(acp_add8(good, lib, 1, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                      "acp_add8 on segment %" PRIu64 " of rank %d", seg, ranks[i]);
            CHECK_INT(acp_cas8(lib, good, 0, 1, ACP_HANDLE_NULL), ACP_HANDLE_NULL,
                      "acp_cas8 with its result in segment %" PRIu64 " of rank %d", seg, ranks[i]);
        }
    }
    /* the barrier still works */
    CHECK_INT(acp_sync(), 0, "acp_sync after the refused accesses to the library's memory");
}

/* ---- rejected by the owner ---------------------------------------------------- */

/* The next rank's regions: one registered then unregistered, one registered
 * as bytes [64, 64 + 256) of a REGSZ buffer. Both buffers stay allocated and
 * hold the canary, so that any write shows. */
static uint8_t *stale_buf, *part_buf;
static acp_atkey_t part_key;

static void test_owner_rejects(size_t smem)
{
    stale_buf = malloc(REGSZ);
    part_buf = malloc(REGSZ);
    memset(stale_buf, CANARY, REGSZ);
    memset(part_buf, CANARY, REGSZ);
    uint8_t *tail = (uint8_t *)acpt_starter(0) + smem - 64; /* canary at the end of my starter memory */
    memset(tail, CANARY, 64);
    acp_atkey_t k = acp_register_memory(stale_buf, REGSZ, 0);
    part_key = acp_register_memory(part_buf + 64, 256, 0);
    uint64_t stale[64], part[64];
    acpt_allgather_u64(acp_query_ga(k, stale_buf), stale, EXCH_OFF);
    acpt_allgather_u64(acp_query_ga(part_key, part_buf + 64), part, EXCH_OFF);
    CHECK_INT(acp_unregister_memory(k), 0, "unregister the region to be addressed stale");
    CHECK_INT(acp_sync(), 0, "acp_sync");

    acp_ga_t scratch = st(me) + SCR_OFF;
    acpt_fill(acpt_starter(SCR_OFF), 512, 42);
    struct { const char *what; acp_ga_t dst, src; size_t n; int starter; } bad[] = {
        { "put into an unregistered region", stale[next], scratch, 64, 0 },
        { "put of 300 bytes into a 256-byte region", part[next], scratch, 300, 0 },
        { "put of 100 bytes at offset 200 of a 256-byte region", part[next] + 200, scratch, 100, 0 },
        { "put of 1 byte just past a region", part[next] + 256, scratch, 1, 0 },
        { "put of 16 bytes over the end of starter memory", st(next) + smem - 8, scratch, 16, 1 },
        { "put far beyond starter memory", st(next) + ((uint64_t)1 << 32), scratch, 8, 1 },
        { "get from an unregistered region", scratch, stale[next], 64, 0 },
        { "get of 300 bytes from a 256-byte region", scratch, part[next], 300, 0 },
        { "get over the end of starter memory", scratch, st(next) + smem - 8, 16, 1 },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        double t0 = acpt_now();
        capture_begin();
        acp_handle_t h = acp_copy(bad[i].dst, bad[i].src, bad[i].n, ACP_HANDLE_NULL);
        if (h != ACP_HANDLE_NULL)
            acp_complete(h);
        const char *text = capture_end();
        CHECK(h != ACP_HANDLE_NULL, "%s: want a handle that completes, got ACP_HANDLE_NULL", bad[i].what);
        CHECK_INT(acp_inquire(h), 0, "%s: acp_inquire after acp_complete", bad[i].what);
        CHECK(acpt_now() - t0 < 20, "%s: took %.1f s to complete", bad[i].what, acpt_now() - t0);
        CHECK(strstr(text, "acp_copy") != NULL, "%s: no message naming acp_copy on stderr (\"%.200s\")",
              bad[i].what, text);
        if (bad[i].starter)
            CHECK(strstr(text, "--acp-size-smem") != NULL, "%s: no --acp-size-smem in \"%.300s\"", bad[i].what,
                  text);
    }
    /* Atomics the owner must refuse. */
    struct { const char *what; acp_ga_t tgt; } abad[] = {
        { "acp_add8 on an unregistered region", stale[next] + 64 },
        { "acp_add8 just past a region", part[next] + 256 },
        { "acp_add8 past starter memory", st(next) + smem },
    };
    for (size_t i = 0; i < sizeof abad / sizeof abad[0]; i++) {
        acp_handle_t h = acp_add8(scratch, abad[i].tgt, 1, ACP_HANDLE_NULL);
        CHECK(h != ACP_HANDLE_NULL, "%s: want a handle that completes", abad[i].what);
        acp_complete(h);
        CHECK_INT(acp_inquire(h), 0, "%s: acp_inquire after acp_complete", abad[i].what);
    }
    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_BYTES(stale_buf, REGSZ, CANARY, "my unregistered region after others wrote to its stale GA");
    CHECK_BYTES(part_buf, REGSZ, CANARY, "my region and its surroundings after out-of-range puts");
    CHECK_BYTES(tail, 64, CANARY, "the end of my starter memory after out-of-range puts");

    /* The library is still healthy: a put of exactly the region succeeds. */
    CHECK_INT(acp_sync(), 0, "acp_sync");
    WAIT(acp_copy(part[next], scratch, 256, ACP_HANDLE_NULL), "put of exactly the registered range");
    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_BYTES(part_buf, 64, CANARY, "below my region after an exact put");
    CHECK_FILL(part_buf + 64, 256, 42, "my region after an exact put");
    CHECK_BYTES(part_buf + 320, REGSZ - 320, CANARY, "above my region after an exact put");
    CHECK_INT(acp_unregister_memory(part_key), 0, "unregister");
    CHECK_INT(acp_sync(), 0, "acp_sync");
    free(stale_buf);
    free(part_buf);
}

/* ---- third-party operations refused at one end ---------------------------------- */

static void test_third_party_rejects(size_t smem)
{
    int third = (me + 2) % nprocs;
    acp_ga_t far_dst = st(third) + smem - 8, far_src = st(next) + smem - 8, far_res = st(third) + smem;
    struct {
        const char *what;
        int is_atomic;
        acp_ga_t dst, src;
        int refuser;
        acp_ga_t refused;
    } bad[] = {
        { "third-party copy whose destination leaves the third rank's starter memory", 0, far_dst,
          st(next) + SCR_OFF, third, far_dst },
        { "third-party copy whose source leaves its owner's starter memory", 0, st(third) + SCR_OFF, far_src, next,
          far_src },
        { "acp_add8 whose result location leaves the third rank's starter memory", 1, far_res, st(next) + SCR_OFF,
          third, far_res },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        capture_begin();
        acp_handle_t h = bad[i].is_atomic ? acp_add8(bad[i].dst, bad[i].src, 1, ACP_HANDLE_NULL)
                                          : acp_copy(bad[i].dst, bad[i].src, 16, ACP_HANDLE_NULL);
        if (h != ACP_HANDLE_NULL)
            acp_complete(h);
        const char *text = capture_end();
        CHECK(h != ACP_HANDLE_NULL, "%s: want a handle that completes, got ACP_HANDLE_NULL", bad[i].what);
        char by[64], ga[64];
        snprintf(by, sizeof by, "rejected by rank %d", bad[i].refuser);
        snprintf(ga, sizeof ga, "GA 0x%" PRIx64, bad[i].refused);
        CHECK(strstr(text, by) != NULL && strstr(text, ga) != NULL,
              "%s: stderr should name \"%s\" and \"%s\", was \"%.300s\"", bad[i].what, ga, by, text);
    }
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

/* ---- zero bytes, garbage handles ------------------------------------------------ */

static void test_zero_and_garbage(size_t smem)
{
    int third = (me + 2) % nprocs;
    struct { const char *what; acp_ga_t dst, src; } z[] = {
        { "local", st(me) + SCR_OFF, st(me) + SCR_OFF + 64 },
        { "put", st(next) + SCR_OFF, st(me) + SCR_OFF },
        { "get", st(me) + SCR_OFF, st(next) + SCR_OFF },
        { "third party", st(third) + SCR_OFF + 128, st(next) + SCR_OFF },
        { "put at the very end of starter memory", st(next) + smem, st(me) + smem },
    };
    for (size_t i = 0; i < sizeof z / sizeof z[0]; i++) {
        acp_handle_t h = acp_copy(z[i].dst, z[i].src, 0, ACP_HANDLE_NULL);
        CHECK(h != ACP_HANDLE_NULL, "zero-byte copy (%s) returned ACP_HANDLE_NULL", z[i].what);
        acp_complete(h);
        CHECK_INT(acp_inquire(h), 0, "zero-byte copy (%s): acp_inquire after acp_complete", z[i].what);
    }
    acp_handle_t last = acp_copy(st(me) + SCR_OFF, st(me) + SCR_OFF + 64, 0, ACP_HANDLE_ALL);
    CHECK(last != ACP_HANDLE_NULL, "zero-byte copy ordered after everything");
    acp_complete(last);
    const acp_handle_t garbage[] = { -5, -1000, INT64_MIN, INT64_MAX, last + 1, last + 1000000 };
    double t0 = acpt_now();
    for (size_t i = 0; i < sizeof garbage / sizeof garbage[0]; i++) {
        acp_complete(garbage[i]);
        CHECK_INT(acp_inquire(garbage[i]), 0, "acp_inquire(%" PRId64 ")", garbage[i]);
    }
    CHECK(acpt_now() - t0 < 1, "acp_complete of garbage handles took %.2f s", acpt_now() - t0);
    CHECK_INT(acp_sync(), 0, "acp_sync");
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *v = getenv("ACP_VERBOSE");
    if (v == NULL || strcmp(v, "1") != 0)
        printf("t_badinput: warning: run with ACP_VERBOSE=1; messages are checked\n");
    test_outside("before acp_init");

    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    next = (me + 1) % nprocs;
    if (nprocs > 63)
        FATAL("more than 63 ranks");
    acpt_need_smem(SMEM);
    size_t smem = starter_size();
    CHECK(smem >= SMEM, "starter memory size found by probing: %zu", smem);
    test_rejected(smem);
    test_library_memory();
    if (nprocs >= 2)
        test_owner_rejects(smem);
    if (nprocs >= 3)
        test_third_party_rejects(smem);
    test_zero_and_garbage(smem);

    int rc = acp_finalize();
    CHECK_INT(rc, 0, "acp_finalize");
    test_outside("after acp_finalize");
    if (acpt_failures)
        printf("rank %d: t_badinput: %d of %ld checks FAILED\n", acpt_me, acpt_failures, acpt_checks);
    else
        printf("rank %d: t_badinput: all %ld checks passed\n", acpt_me, acpt_checks);
    return acpt_failures ? 1 : 0;
}
