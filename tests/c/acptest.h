/*
 * acptest.h - small helpers shared by the C tests of libacp.
 *
 * Every test is an ordinary ACP program: it includes acp.h, runs under
 * acprun, checks every value it can and exits non-zero when a check failed.
 * A failed check prints one line
 *
 *     rank R: FAIL file:line: what (got X, want Y)
 *
 * and the test goes on, so that one run shows every wrong value; the
 * collective calls stay matched across ranks because no check returns early.
 *
 * Everything here is static: each test is a single translation unit.
 */
#ifndef ACPTEST_H
#define ACPTEST_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "acp.h"

/* Helpers are static; a test that does not use one must not warn. */
#define ACPT_API static __attribute__((unused))

/* Failures and checks of this process; acpt_me is the rank used in messages. */
static int acpt_failures;
static long acpt_checks;
static int acpt_me = -1;

/* Print at most this many failure lines per process; a broken copy of a
 * megabyte must not bury the other results. All failures are counted. */
#define ACPT_MAX_PRINTED 60

ACPT_API void acpt_vfail(const char *file, int line, const char *got_want,
                       const char *fmt, va_list ap)
{
    acpt_failures++;
    if (acpt_failures > ACPT_MAX_PRINTED) {
        if (acpt_failures == ACPT_MAX_PRINTED + 1)
            printf("rank %d: further failures not printed\n", acpt_me);
        return;
    }
    char what[512];
    vsnprintf(what, sizeof what, fmt, ap);
    printf("rank %d: FAIL %s:%d: %s%s\n", acpt_me, file, line, what, got_want);
    fflush(stdout);
}

/* Unconditional failure with a message (printf format). */
ACPT_API void acpt_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
ACPT_API void acpt_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    acpt_vfail(file, line, "", fmt, ap);
    va_end(ap);
}

/* Compare unsigned values, shown in hex (GAs, bit patterns, words). */
ACPT_API int acpt_check_hex(const char *file, int line, uint64_t got, uint64_t want,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));
ACPT_API int acpt_check_hex(const char *file, int line, uint64_t got, uint64_t want,
                          const char *fmt, ...)
{
    acpt_checks++;
    if (got == want)
        return 1;
    char gw[96];
    snprintf(gw, sizeof gw, " (got 0x%" PRIx64 ", want 0x%" PRIx64 ")", got, want);
    va_list ap;
    va_start(ap, fmt);
    acpt_vfail(file, line, gw, fmt, ap);
    va_end(ap);
    return 0;
}

/* Compare signed values, shown in decimal (ranks, return codes, handles). */
ACPT_API int acpt_check_int(const char *file, int line, int64_t got, int64_t want,
                          const char *fmt, ...) __attribute__((format(printf, 5, 6)));
ACPT_API int acpt_check_int(const char *file, int line, int64_t got, int64_t want,
                          const char *fmt, ...)
{
    acpt_checks++;
    if (got == want)
        return 1;
    char gw[96];
    snprintf(gw, sizeof gw, " (got %" PRId64 ", want %" PRId64 ")", got, want);
    va_list ap;
    va_start(ap, fmt);
    acpt_vfail(file, line, gw, fmt, ap);
    va_end(ap);
    return 0;
}

/* A condition that has no single expected value. */
ACPT_API int acpt_check_true(const char *file, int line, int cond, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
ACPT_API int acpt_check_true(const char *file, int line, int cond, const char *fmt, ...)
{
    acpt_checks++;
    if (cond)
        return 1;
    va_list ap;
    va_start(ap, fmt);
    acpt_vfail(file, line, "", fmt, ap);
    va_end(ap);
    return 0;
}

#define FAIL(...) acpt_fail(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...) acpt_check_true(__FILE__, __LINE__, (cond) != 0, __VA_ARGS__)
#define CHECK_HEX(got, want, ...) \
    acpt_check_hex(__FILE__, __LINE__, (uint64_t)(got), (uint64_t)(want), __VA_ARGS__)
#define CHECK_INT(got, want, ...) \
    acpt_check_int(__FILE__, __LINE__, (int64_t)(got), (int64_t)(want), __VA_ARGS__)

/* ---- byte patterns --------------------------------------------------------
 * A byte that depends on its position and on a seed, so that data shifted by
 * a packet, taken from the wrong rank or left over from an earlier round all
 * show up as mismatches. */
ACPT_API inline uint8_t acpt_pat(uint64_t seed, uint64_t i)
{
    uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (seed + 1) * 0xC2B2AE3D27D4EB4Full;
    x ^= x >> 29;
    x *= 0xBF58476D1CE4E5B9ull;
    return (uint8_t)(x >> 56);
}

ACPT_API void acpt_fill(void *p, size_t n, uint64_t seed)
{
    uint8_t *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = acpt_pat(seed, i);
}

/* Checks n bytes against the pattern; reports the first mismatch and how
 * many bytes differ. */
ACPT_API int acpt_check_fill(const char *file, int line, const void *p, size_t n,
                           uint64_t seed, const char *what)
{
    const uint8_t *b = p;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != acpt_pat(seed, i)) {
            if (bad++ == 0)
                first = i;
        }
    }
    acpt_checks++;
    if (bad == 0)
        return 1;
    acpt_fail(file, line, "%s: %zu of %zu bytes differ, first at offset %zu (got 0x%02x, want 0x%02x)",
              what, bad, n, first, b[first], acpt_pat(seed, first));
    return 0;
}
#define CHECK_FILL(p, n, seed, what) acpt_check_fill(__FILE__, __LINE__, (p), (n), (seed), (what))

/* Checks that n bytes all equal v. */
ACPT_API int acpt_check_bytes(const char *file, int line, const void *p, size_t n,
                            uint8_t v, const char *what)
{
    const uint8_t *b = p;
    size_t bad = 0, first = 0;
    for (size_t i = 0; i < n; i++) {
        if (b[i] != v) {
            if (bad++ == 0)
                first = i;
        }
    }
    acpt_checks++;
    if (bad == 0)
        return 1;
    acpt_fail(file, line, "%s: %zu of %zu bytes differ, first at offset %zu (got 0x%02x, want 0x%02x)",
              what, bad, n, first, b[first], v);
    return 0;
}
#define CHECK_BYTES(p, n, v, what) acpt_check_bytes(__FILE__, __LINE__, (p), (n), (v), (what))

/* ---- start and end -------------------------------------------------------- */

ACPT_API double acpt_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A setup step that cannot fail without making the rest meaningless. */
ACPT_API void acpt_fatal(const char *file, int line, const char *what)
{
    printf("rank %d: FAIL %s:%d: %s (cannot continue)\n", acpt_me, file, line, what);
    fflush(stdout);
    exit(1);
}
#define FATAL(what) acpt_fatal(__FILE__, __LINE__, (what))

/* A test's own size setting from the environment (an emulated adapter
 * runs fewer rounds): def when name is unset; a value that is not an
 * integer from min to max fails the test, naming the variable. */
ACPT_API long acpt_env_long(const char *name, long def, long min, long max)
{
    const char *v = getenv(name);
    if (v == NULL)
        return def;
    char *end;
    long n = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || n < min || n > max) {
        char what[256];
        snprintf(what, sizeof what, "%s=%s: give an integer from %ld to %ld", name, v, min, max);
        acpt_fatal(__FILE__, __LINE__, what);
    }
    return n;
}

ACPT_API void acpt_init(int *argc, char ***argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines of several ranks interleave whole */
    if (acp_init(argc, argv) != 0)
        FATAL("acp_init returned non-zero");
    acpt_me = acp_rank();
}

/* Finalizes and returns the exit status of the test. */
ACPT_API int acpt_finish(const char *name)
{
    if (acp_finalize() != 0)
        FAIL("acp_finalize returned non-zero");
    if (acpt_failures)
        printf("rank %d: %s: %d of %ld checks FAILED\n", acpt_me, name, acpt_failures, acpt_checks);
    else
        printf("rank %d: %s: all %ld checks passed\n", acpt_me, name, acpt_checks);
    return acpt_failures ? 1 : 0;
}

/* Ends a test that needs more ranks than it got, successfully. */
ACPT_API void acpt_need_procs(int n, const char *name)
{
    if (acp_procs() >= n)
        return;
    if (acp_rank() == 0)
        printf("%s: skipped: needs %d ranks\n", name, n);
    acp_finalize();
    exit(0);
}

/* Stops with a clear message when the starter memory is too small for the
 * layout the test uses: it has no meaning otherwise. The last byte of a
 * region of n bytes is addressable exactly when the region is that large. */
ACPT_API void acpt_need_smem(size_t n)
{
    acp_ga_t ga = acp_query_starter_ga(acp_rank());
    if (ga == ACP_GA_NULL || acp_query_address(ga + n - 1) == NULL) {
        printf("rank %d: FAIL: starter memory is smaller than %zu bytes; run with --acp-size-smem %zu\n",
               acpt_me, n, n);
        fflush(stdout);
        exit(1);
    }
}

/* Local pointer into the caller's own starter memory. */
ACPT_API void *acpt_starter(size_t off)
{
    return (char *)acp_query_address(acp_query_starter_ga(acp_rank())) + off;
}

/* Waits for a handle; a NULL handle is a failure of the call that gave it. */
ACPT_API void acpt_wait(const char *file, int line, acp_handle_t h, const char *what)
{
    acpt_checks++;
    if (h == ACP_HANDLE_NULL) {
        acpt_fail(file, line, "%s returned ACP_HANDLE_NULL", what);
        return;
    }
    acp_complete(h);
}
#define WAIT(h, what) acpt_wait(__FILE__, __LINE__, (h), (what))

/*
 * Every rank contributes v; out[r] receives rank r's value. Uses the
 * starter memory bytes [off, off + 8 * (N + 1)) the way ACP programs
 * exchange GAs: store in my starter memory, synchronise, copy each peer's
 * slot into my own memory. Collective.
 */
ACPT_API void acpt_allgather_u64(uint64_t v, uint64_t *out, size_t off)
{
    int n = acp_procs();
    acp_ga_t mine = acp_query_starter_ga(acp_rank());
    uint64_t *slot = acpt_starter(off);
    *slot = v;
    acp_sync();
    for (int r = 0; r < n; r++) {
        acp_handle_t h = acp_copy(mine + off + 8 + 8 * (uint64_t)r,
                                  acp_query_starter_ga(r) + off, 8, ACP_HANDLE_NULL);
        if (h == ACP_HANDLE_NULL)
            FATAL("acp_copy of a peer's starter slot returned ACP_HANDLE_NULL");
    }
    acp_complete(ACP_HANDLE_ALL);
    memcpy(out, slot + 1, 8 * (size_t)n);
    acp_sync(); /* nobody reuses the slots before everybody has read them */
}

/* The length of this process's region that starts at ga (a starter
 * memory, a registration): the largest n for which ga + n - 1 has an
 * address here; 0 when ga has none. */
ACPT_API uint64_t acpt_region_size(acp_ga_t ga)
{
    if (acp_query_address(ga) == NULL)
        return 0;
    uint64_t lo = 1, hi = (uint64_t)1 << 36; /* lo addressable, hi not */
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (acp_query_address(ga + mid - 1) != NULL)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

#endif /* ACPTEST_H */
