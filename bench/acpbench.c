/*
 * acpbench - IMB-style benchmarks of ACP.
 *
 *     acprun -np 2 acpbench [pingpong|get|putbw|getbw|atomic|passive|chpingpong|chbw] [-max BYTES] [-dist]
 *     acprun -np N acpbench sync
 *
 * pingpong: rank 0 copies N bytes into rank 1's starter memory with one
 * acp_copy and completes it; rank 1 waits for the last byte of its buffer to
 * change (spinning on memory, no ACP call) and copies N bytes back into rank
 * 0's starter memory the same way; rank 0 waits likewise. t[usec] is half of
 * the round trip, Mbytes/sec is N / t with 1 MB = 2^20 bytes. The last byte
 * carries a value that changes every iteration, so a wait cannot be
 * satisfied by an earlier message. Because a flag byte may land before the
 * rest of its copy, the data is verified only after both sides completed
 * their copies and synchronised: once per size, every byte of both buffers.
 * Any mismatch makes the program exit non-zero.
 *
 * With -dist, rank 0 also times each round trip, and the table adds the
 * minimum, median, 99th percentile and maximum of their halves (t_min,
 * t_p50, t_p99, t_max; tripspread.h): on a shared machine they tell a
 * size whose every trip was slow from one where a few took a time slice.
 *
 * Sizes 0, 1, 2, 4, ... up to 4 MiB (or -max), those below -min BYTES left
 * out (every benchmark that goes through sizes). A copy of 0 bytes carries no
 * flag, so the 0-byte row times a 1-byte flag copy and, right after it, the
 * 0-byte copy, completed together: the cost of a notification. The waits
 * poll without yielding for their first 4096 turns, then yield every 256
 * (putpingpong.h). Repetitions follow IMB's
 * rule: 1000, but at most 40 MiB / N (640 for 64 KiB ... 10 for 4 MiB);
 * 10 % of that (at least 2) more iterations run first as warm-up and are
 * not timed. -reps N: N repetitions of every size instead (a steadier
 * -dist at large sizes).
 *
 * chpingpong: the same exchange over two channels (rank 0 to 1 and back):
 * acp_nbsend_ch + acp_wait_ch, acp_nbrecv_ch + acp_wait_ch. Every message is
 * checked on arrival (size, first and last byte, which carry the
 * iteration), every byte of the last one of each size after the timing. For each size the
 * put pingpong above runs first, in the same job, and the table shows its
 * time and the ratio channel / put. Sizes up to 16 MiB (or -max).
 *
 * Rounds (chpingpong, chbw): each size is measured in R rounds (-rounds,
 * default 3), the reference then the channel in every round, and the table
 * shows the median of each and the ratio of the medians. On a machine
 * whose CPUs all run ranks, one measurement of either can be off by a
 * factor of two (a thread waiting for a time slice); alternating them and
 * taking medians keeps such a moment from deciding the ratio. With -dist,
 * chpingpong also times each channel round trip on rank 0 and adds the
 * median and 99th percentile of their halves (t_p50, t_p99; medians over
 * the rounds), the put pingpong's median (t_put_p50) and the ratio of the
 * two medians, then the put pingpong's 99th percentile (t_put_p99): where a
 * few trips stall (a wait that slept, a CPU taken away), the mean moves
 * and the median does not, and the two tails tell whose stalls they are.
 *
 * chbw: windowed bandwidth over a channel: rank 0 posts a window of W
 * sends (distinct buffers) and waits for them all (acp_waitall_ch); rank 1
 * posts W receives, waits for them all, and answers with a 0-byte message.
 * W is 64 up to 256 KiB, then 16 MiB / N (at least 4). The reference, run
 * first for each size in the same job, does the same with acp_copy: W puts
 * from rank 0's registered memory into rank 1's, acp_complete, a 1-byte
 * flag put, and a 1-byte answer. The first and last bytes of every
 * message of every window are checked as they arrive, every byte of the
 * last window after the timing. Mbytes/sec = W * N / time of a window.
 * On one node the library copies a channel's messages from 128 KiB with
 * both processes (the sender while it waits in acp_waitall_ch), a put
 * with the one that issues it.
 *
 * get: rank 0 copies N bytes from rank 1's starter memory into its own and
 * completes (a get: a full round trip), rank 1 waits in acp_sync meanwhile;
 * t[usec] is the time of one get (OSU get_latency style).
 *
 * putbw, getbw: unidirectional windowed bandwidth: rank 0 issues W puts (or
 * gets) of N bytes into (from) rank 1's registered memory and completes
 * them all; W as chbw's. Mbytes/sec = W * N / time of a window. With
 * -starter both windows are in the starter memories instead (acpbench
 * then asks for that much more of it), which transports may reach by
 * other paths than registered memory: over ib, copies between starter
 * memories are posted and completed from C, registered memory's through
 * the library's Go side.
 *
 * atomic: latency of acp_cas8, acp_add8 and acp_swap4 by rank 0 on a word of
 * rank 1's starter memory, the old value fetched into rank 0's: time from
 * the call to the end of acp_complete, 10000 times each.
 *
 * sync: acp_sync on every process, 1000 times after 100 untimed ones; the
 * time per call, minimum, maximum and average over the processes (IMB
 * Barrier's columns).
 *
 * noise: fixed work quanta (FWQ) on every process at once, to show what
 * the library's threads take from an application that computes: a loop
 * of about 20 us of arithmetic (calibrated once) timed N times (-quanta,
 * default 100000, about 2 s), first before acp_init (the reference: the Go
 * runtime is loaded but idle), then after acp_init and acp_sync while no
 * ACP call is made. Per phase: the shortest quantum, the median, the 99th
 * percentile and the longest, in microseconds; noise = the share of the
 * time above the shortest quantum, sum(t - t_min) / sum(t); and the main
 * thread's involuntary context switches per second. Run it with as many
 * processes as the host has CPUs.
 *
 * passive: a put pingpong's first half only, rank 0 putting N bytes into
 * rank 1 and completing, measured twice: while rank 1 waits in acp_sync
 * (t_pure), and while rank 1 computes without calling ACP (t_ovrl). Equal
 * times mean the target needs no call into the library to be reached
 * (IMB-RMA's Truly_passive_put idea).
 *
 * Settling: after acp_init every process reads a byte of its peer's
 * starter memory (the first access maps it, through Go), then spins for
 * 50 ms (-settle MS) without calling ACP before the first table, and the
 * per-size loops call only the C paths of the library. After a call into
 * the library's Go side the Go runtime's monitor thread polls every 20 us
 * for about a millisecond, then less often for up to 10 ms; on a machine
 * whose CPUs all run ranks each of its wake-ups preempts one, which
 * doubles the first sizes' latency. mpi_pingpong settles the same way, so
 * both tables show the steady state.
 *
 * Starter memory: acprun gives 1024 bytes per rank by default, so acpbench
 * appends "--acp-size-smem <2 * max + 4096>" to the arguments it passes to
 * acp_init, unless the command line already has --acp-size-smem. The
 * channel benchmarks run with the library's defaults (channel rings in the
 * ring pool that --acp-size-cl-rings adds to the communication library's
 * starter memory on a host).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "acp.h"

#define DEFAULT_MAX    ((size_t)4 << 20)
#define DEFAULT_CH_MAX ((size_t)16 << 20)
#define MB             1048576.0 /* IMB's Mbytes: 2^20 bytes */
#define OVERALL_VOL    ((size_t)40 << 20)
#define MAX_REPS       1000
#define MAX_ROUNDS     99 /* -rounds */
#define STR_(x)        #x
#define STR(x)         STR_(x) /* a macro's value as a string */

static size_t max_size, min_size; /* -max, -min */

/* The size measured after n: sizes double from 1, except that -min is
 * measured itself when it is not a power of two (-min 1088 -max 1088
 * times 1088 bytes alone), and sizes double from it then. */
static size_t size_after(size_t n)
{
    size_t next = n ? 2 * n : 1;
    return n < min_size && next > min_size ? min_size : next;
}
static int me, failures;
static double settle_ms = 50;
static int rounds = 3; /* chpingpong, chbw: alternated rounds per size */
static long quanta = 100000; /* noise: quanta per phase */
static acp_ga_t my_starter, peer_starter; /* peer: rank 1 - me (rank 1 on ranks > 1) */
static uint8_t *my_base;
static const char *bench = "pingpong";

#include "putpingpong.h"
#include "tripspread.h"

static int dist;              /* pingpong -dist: the spread of single round trips */
static int bw_starter;        /* putbw, getbw -starter: the windows in starter memory */
static trip_spread_t spread; /* of the last put_pingpong, on rank 0 with -dist */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The median of v[0..n-1] (sorts v). */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Spins for settle_ms without calling ACP (see "Settling" above). The
 * barrier first, so that the processes end their spins together and the
 * next acp_sync is over before its wait would hand over to Go. */
static void settle(void)
{
    /* The first access to the peer's memory goes through Go (on one host,
     * it maps that memory): once here, before the spin, not in the first
     * row. A get of a byte nobody uses. */
    if (peer_starter != ACP_GA_NULL)
        acp_complete(acp_copy(my_starter + touch_off(), peer_starter + touch_off(), 1, ACP_HANDLE_NULL));
    acp_sync();
    double end = now() + settle_ms * 1e-3;
    while (now() < end)
        ;
}

static int reps_fixed; /* -reps: repetitions of every size instead of IMB's */

static int reps_for(size_t n)
{
    if (reps_fixed > 0)
        return reps_fixed;
    if (n == 0 || OVERALL_VOL / n >= MAX_REPS)
        return MAX_REPS;
    size_t r = OVERALL_VOL / n;
    return r < 1 ? 1 : (int)r;
}

static int warmup_for(int reps) { return reps / 10 < 2 ? 2 : reps / 10; }

static uint8_t pat(size_t seed, size_t i) { return (uint8_t)((i * 131 + seed * 7 + (i >> 8) * 17) % 251); }

/* ---- arguments ------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: acprun -np 2 acpbench [pingpong|get|putbw|getbw|atomic|passive|chpingpong|chbw] [-max BYTES]\n"
                    "                [-min BYTES] [-reps N] [-settle MS] [-rounds R] [-dist] [-starter]\n"
                    "       acprun -np NCPUS acpbench noise [-quanta N]\n"
                    "       acprun -np N acpbench sync [-settle MS]\n");
    exit(2);
}

/* An option's value that is not one: say which and what it takes. */
static void bad_value(const char *opt, const char *val, const char *want)
{
    fprintf(stderr, "acpbench: %s %s: want %s\n", opt, val, want);
    usage();
}

static const char *const modes[] = {"pingpong", "get", "putbw", "getbw", "atomic", "sync", "passive", "chpingpong", "chbw", "noise"};

static int is_mode(const char *a)
{
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        if (strcmp(a, modes[i]) == 0)
            return 1;
    return 0;
}

/* -max must be known before acp_init (it decides the starter size), so the
 * program's own arguments are read first; acp_init removes only --acp-*. */
static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--acp-", 6) == 0) {
            i++; /* its value */
        } else if (strcmp(argv[i], "-max") == 0 && i + 1 < argc) {
            char *end;
            max_size = strtoull(argv[++i], &end, 0);
            if (*end != '\0' || max_size < 1)
                bad_value("-max", argv[i], "a size in bytes of at least 1");
        } else if (strcmp(argv[i], "-settle") == 0 && i + 1 < argc) {
            char *end;
            settle_ms = strtod(argv[++i], &end);
            if (*end != '\0' || settle_ms < 0)
                bad_value("-settle", argv[i], "milliseconds, 0 or more");
        } else if (strcmp(argv[i], "-rounds") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 0);
            if (*end != '\0' || v < 1 || v > MAX_ROUNDS)
                bad_value("-rounds", argv[i], "a whole number from 1 to " STR(MAX_ROUNDS));
            rounds = (int)v;
        } else if (strcmp(argv[i], "-quanta") == 0 && i + 1 < argc) {
            char *end;
            quanta = strtol(argv[++i], &end, 0);
            if (*end != '\0' || quanta < 100)
                bad_value("-quanta", argv[i], "a whole number of at least 100");
        } else if (strcmp(argv[i], "-reps") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 0);
            if (*end != '\0' || v < 1 || v > 100000000)
                bad_value("-reps", argv[i], "a whole number from 1 to 100000000");
            reps_fixed = (int)v;
        } else if (strcmp(argv[i], "-min") == 0 && i + 1 < argc) {
            char *end;
            min_size = strtoull(argv[++i], &end, 0);
            if (*end != '\0')
                bad_value("-min", argv[i], "a size in bytes");
        } else if (strcmp(argv[i], "-dist") == 0) {
            dist = 1;
        } else if (strcmp(argv[i], "-starter") == 0) {
            bw_starter = 1;
        } else if (is_mode(argv[i])) {
            bench = argv[i];
        } else {
            fprintf(stderr, "acpbench: %s: not a benchmark or an option (or its value is missing)\n", argv[i]);
            usage();
        }
    }
    if (max_size == 0)
        max_size = strncmp(bench, "ch", 2) != 0 ? DEFAULT_MAX : DEFAULT_CH_MAX;
    if (bw_starter && strcmp(bench, "putbw") != 0 && strcmp(bench, "getbw") != 0) {
        fprintf(stderr, "acpbench: -starter places the windows of putbw and getbw, not of %s\n", bench);
        usage();
    }
}

/* ---- output --------------------------------------------------------------------- */

/* The CPUs the calling thread may run on, as the kernel lists them. */
static void thread_cpus(char *out, size_t len)
{
    char line[256];
    snprintf(out, len, "unknown");
    FILE *f = fopen("/proc/thread-self/status", "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "Cpus_allowed_list:", 18) == 0) {
            char *v = line + 18 + strspn(line + 18, " \t");
            v[strcspn(v, "\n")] = 0;
            snprintf(out, len, "%s", v);
        }
    fclose(f);
}

/* The library settings this job runs with: every ACP_* variable that is a
 * setting (not the launcher's own plumbing), as the program got them. */
static void print_settings(void)
{
    static const char *plumbing[] = {"ACP_BOOTSTRAP_ADDR=", "ACP_JOB_KEY=", "ACP_MYRANK=", "ACP_NPROCS=",
                                     "ACP_BIND_THREAD_CPU=", "ACP_TRANSPORTS=", "ACP_LAUNCHER_DEFAULTS="};
    extern char **environ;
    int any = 0;
    printf("# Settings              :");
    for (char **e = environ; *e != NULL; e++) {
        if (strncmp(*e, "ACP_", 4) != 0)
            continue;
        int skip = 0;
        for (size_t i = 0; i < sizeof plumbing / sizeof plumbing[0]; i++)
            skip |= strncmp(*e, plumbing[i], strlen(plumbing[i])) == 0;
        if (!skip) {
            printf(" %s", *e);
            any = 1;
        }
    }
    printf("%s\n", any ? "" : " the library's defaults");
}

static void print_header(int nprocs)
{
    char host[256] = "unknown", date[64];
    gethostname(host, sizeof host);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", localtime(&t));
    struct utsname u;
    uname(&u);
    const char *tr = getenv("ACP_TRANSPORTS");
    int ch = strncmp(bench, "ch", 2) == 0;
    printf("#------------------------------------------------------------\n");
    printf("#    libacp acpbench (ACP %d.%d.%d %s)\n", ACP_VERSION_MAJOR, ACP_VERSION_MINOR, ACP_VERSION_PATCH,
           ch ? "channels" : "basic layer");
    printf("#------------------------------------------------------------\n");
    printf("# Date                  : %s\n", date);
    printf("# Machine               : %s\n", u.machine);
    printf("# System                : %s %s\n", u.sysname, u.release);
    printf("# Host                  : %s\n", host);
    printf("# Transport             : %s\n",
           tr != NULL && *tr ? tr : "default (shared memory within a host, udp or ib between hosts)");
    print_settings();
    /* Where rank 0's application thread runs (acprun --acp-bind): the
     * whole process pinned, only this thread (over udp alone), or free. */
    char cpus[256];
    thread_cpus(cpus, sizeof cpus);
    const char *thread_pin = getenv("ACP_BIND_THREAD_CPU");
    printf("# Placement             : rank 0's thread on CPU(s) %s%s\n", cpus,
           thread_pin != NULL && *thread_pin ? " (only the thread that called acp_init is pinned)" : "");
    printf("# Processes             : %d\n", nprocs);
    printf("# Minimum message length in bytes:   0\n");
    printf("# Maximum message length in bytes:   %zu\n", max_size);
    printf("# Settle                : %g ms without ACP calls before timing\n", settle_ms);
    if (ch)
        printf("# Rounds                : %d per size, reference and channel alternated; medians\n", rounds);
    printf("#\n");
    if (strcmp(bench, "pingpong") == 0) {
        printf("# Method: acp_copy into the peer's starter memory + acp_complete;\n");
        printf("#         the peer spins on the last byte, then answers the same way.\n");
        printf("# t[usec]    = half the round-trip time\n");
        printf("# Mbytes/sec = bytes / t, 1 Mbyte = 2^20 bytes\n");
        printf("# #bytes 0   = a 1-byte flag copy, then a 0-byte copy (notification)\n");
    } else if (strcmp(bench, "get") == 0) {
        printf("# Method: acp_copy from the peer's starter memory + acp_complete\n");
        printf("#         (the peer waits in acp_sync)\n");
        printf("# t[usec]    = time of one get (a round trip)\n");
        printf("# Mbytes/sec = bytes / t, 1 Mbyte = 2^20 bytes\n");
    } else if (strcmp(bench, "putbw") == 0 || strcmp(bench, "getbw") == 0) {
        printf("# Method: a window of W acp_copy %s the peer's %s memory,\n", bench[0] == 'p' ? "puts into" : "gets from",
               bw_starter ? "starter" : "registered");
        printf("#         then acp_complete(ACP_HANDLE_ALL)\n");
        printf("# W          = 64 up to 256 KiB, then 16 MiB / bytes (at least 4)\n");
        printf("# Mbytes/sec = W * bytes / time of a window, 1 Mbyte = 2^20 bytes\n");
    } else if (strcmp(bench, "atomic") == 0) {
        printf("# Method: the atomic on a word of the peer's starter memory, old value\n");
        printf("#         fetched into the caller's, then acp_complete\n");
        printf("# t[usec]    = time per atomic\n");
    } else if (strcmp(bench, "sync") == 0) {
        printf("# Method: acp_sync on every process\n");
        printf("# t[usec]    = time per call, minimum/maximum/average over the processes\n");
    } else if (strcmp(bench, "noise") == 0) {
        printf("# Method: %ld quanta of fixed work (about 20 us each) on every process,\n", quanta);
        printf("#         before acp_init (ref) and after it, with no ACP call (acp)\n");
        printf("# min, median, p99, max = quantum times [usec]\n");
        printf("# noise      = sum(t - t_min) / sum(t), in %%\n");
        printf("# csw/s      = involuntary context switches of the main thread per second\n");
    } else if (strcmp(bench, "passive") == 0) {
        printf("# Method: acp_copy into the peer's starter memory + acp_complete while the\n");
        printf("#         peer waits in acp_sync (t_pure) or computes without calling\n");
        printf("#         ACP until told to stop (t_ovrl)\n");
        printf("# ratio      = t_ovrl / t_pure (1: the target needs no library call)\n");
    } else if (strcmp(bench, "chpingpong") == 0) {
        printf("# Method: acp_nbsend_ch + acp_wait_ch, the peer acp_nbrecv_ch + acp_wait_ch\n");
        printf("#         and answers on a second channel.\n");
        printf("# t[usec]    = half the round-trip time\n");
        printf("# Mbytes/sec = bytes / t, 1 Mbyte = 2^20 bytes\n");
        printf("# t_put      = the put pingpong (acpbench pingpong), same size, same job\n");
        printf("# ratio      = t / t_put\n");
    } else {
        printf("# Method: a window of W acp_nbsend_ch + acp_waitall_ch; the peer posts\n");
        printf("#         W receives, waits, answers with a 0-byte message.\n");
        printf("# W          = 64 up to 256 KiB, then 16 MiB / bytes (at least 4)\n");
        printf("# Mbytes/sec = W * bytes / time of a window, 1 Mbyte = 2^20 bytes\n");
        printf("# MB/s_put   = the same with W acp_copy puts + acp_complete + flag,\n");
        printf("#              same size, same job\n");
        printf("# ratio      = Mbytes/sec / MB/s_put\n");
    }
    printf("\n");
}

static void print_title(const char *name, int nprocs)
{
    printf("#---------------------------------------------------\n");
    printf("# Benchmarking %s\n", name);
    printf("# #processes = 2\n");
    if (nprocs > 2)
        printf("# ( %d additional processes waiting in acp_sync)\n", nprocs - 2);
    printf("#---------------------------------------------------\n");
}

/* ---- pingpong -------------------------------------------------------------------- */

/* One message (putpingpong.h); a refusal ends the benchmark. */
static void send_msg(acp_ga_t mine, acp_ga_t peer, size_t n, uint8_t v, uint8_t *sendbuf, uint8_t *flagbuf)
{
    if (!put_msg(mine, peer, n, v, sendbuf, flagbuf)) {
        fprintf(stderr, "acpbench: rank %d: acp_copy of %zu bytes refused\n", me, n);
        exit(1);
    }
}

/* Verifies the receive buffer after the last iteration of size n: the
 * peer's pattern and the last flag value. */
static void verify(const uint8_t *recv, const uint8_t *flag, size_t n, int peer, uint8_t last)
{
    if (n == 0) {
        if (flag[FLAG_IN] != last) {
            fprintf(stderr, "acpbench: rank %d: 0 bytes: flag is %u, want %u\n", me, flag[FLAG_IN], last);
            failures++;
        }
        return;
    }
    size_t bad = 0, first = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (recv[i] != pat((size_t)peer * 1000 + n, i) && bad++ == 0)
            first = i;
    if (recv[n - 1] != last && bad++ == 0)
        first = n - 1;
    if (bad) {
        fprintf(stderr, "acpbench: rank %d: %zu bytes from rank %d: %zu bytes wrong, first at offset %zu\n", me, n,
                peer, bad, first);
        failures++;
    }
}

static unsigned iter; /* over all sizes: flag values never repeat back to back */

/* Runs the put pingpong for size n on ranks 0 and 1 (others only
 * synchronise) and returns the one-way time in seconds. Collective. */
static double put_pingpong(size_t n, int reps)
{
    acp_ga_t mine = my_starter, peer = peer_starter;
    uint8_t *base = my_base;
    uint8_t *recv = base, *sendbuf = base + send_off(), *flag = base + flag_off();
    int warm = warmup_for(reps);
    uint8_t last = 0;
    if (me <= 1) {
        for (size_t i = 0; i + 1 < n; i++)
            sendbuf[i] = pat((size_t)me * 1000 + n, i);
    }
    double *trips = dist && me == 0 ? trip_buffer(reps) : NULL, tprev = 0;
    acp_sync();
    double t0 = 0;
    if (me <= 1) {
        for (int i = 0; i < warm + reps; i++) {
            if (i == warm)
                tprev = t0 = now();
            last = (uint8_t)(1 + iter++ % 255);
            volatile uint8_t *wait_at = n > 0 ? recv + n - 1 : flag + FLAG_IN;
            if (me == 0) {
                send_msg(mine, peer, n, last, sendbuf, flag);
                wait_byte(wait_at, last);
                if (trips != NULL && i >= warm) {
                    double t1 = now();
                    trips[i - warm] = t1 - tprev;
                    tprev = t1;
                }
            } else {
                wait_byte(wait_at, last);
                send_msg(mine, peer, n, last, sendbuf, flag);
            }
        }
    }
    double t = (now() - t0) / reps / 2; /* seconds, one way */
    if (trips != NULL)
        spread = trip_spread(trips, reps);
    acp_sync(); /* both sides' last copies are complete: data may be checked */
    if (me <= 1)
        verify(recv, flag, n, 1 - me, last);
    return t;
}

static void pingpong(int nprocs)
{
    settle();
    if (me == 0) {
        print_title("PingPong", nprocs);
        printf("%13s%13s%13s%13s", "#bytes", "#repetitions", "t[usec]", "Mbytes/sec");
        if (dist)
            print_trip_titles();
        printf("\n");
    }
    for (size_t n = 0; n <= max_size; n = size_after(n)) {
        if (n < min_size)
            continue; /* -min: on every rank alike */
        int reps = reps_for(n);
        double t = put_pingpong(n, reps);
        if (me == 0) {
            printf("%13zu%13d%13.3f%13.2f", n, reps, t * 1e6, (double)n / MB / t);
            if (dist)
                print_trip_spread(spread);
            printf("\n");
        }
        fflush(stdout);
    }
}

/* ---- channels ---------------------------------------------------------------------- */

static acp_ch_t ch_out, ch_in; /* rank 0 -> 1 and 1 -> 0 */

static void ch_open(void)
{
    if (me > 1)
        return;
    ch_out = acp_create_ch(me, 1 - me);
    ch_in = acp_create_ch(1 - me, me);
    if (ch_out == NULL || ch_in == NULL) {
        fprintf(stderr, "acpbench: rank %d: acp_create_ch failed\n", me);
        exit(1);
    }
}

static void ch_close(void)
{
    if (me > 1)
        return;
    if (acp_free_ch(ch_out) != 0 || acp_free_ch(ch_in) != 0) {
        fprintf(stderr, "acpbench: rank %d: acp_free_ch failed\n", me);
        failures++;
    }
}

static void ch_send(void *buf, size_t n)
{
    acp_request_t r = acp_nbsend_ch(ch_out, buf, n);
    if (r == NULL || acp_wait_ch(r) != 0) {
        fprintf(stderr, "acpbench: rank %d: send of %zu bytes failed\n", me, n);
        exit(1);
    }
}

static void ch_recv(void *buf, size_t n)
{
    acp_request_t r = acp_nbrecv_ch(ch_in, buf, n);
    size_t got = r == NULL ? (size_t)-1 : acp_wait_ch(r);
    if (got != n) {
        fprintf(stderr, "acpbench: rank %d: received %zu bytes, want %zu\n", me, got, n);
        exit(1);
    }
}

/* Checks a received message: the peer's pattern (seed), with v in the
 * first and last byte; full checks every byte, otherwise only those two. */
static void check_msg(const uint8_t *b, size_t n, size_t seed, uint8_t v, int full, const char *what)
{
    if (n == 0)
        return;
    size_t bad = 0, first = 0;
    if (b[0] != v && bad++ == 0)
        first = 0;
    if (b[n - 1] != v && bad++ == 0)
        first = n - 1;
    for (size_t i = 1; full && i + 1 < n; i++)
        if (b[i] != pat(seed, i) && bad++ == 0)
            first = i;
    if (bad) {
        fprintf(stderr, "acpbench: rank %d: %s of %zu bytes: %zu bytes wrong, first at offset %zu\n", me, what, n, bad,
                first);
        failures++;
    }
}

/* One channel pingpong of reps messages of n bytes each way (after a
 * tenth more as warm-up); returns the one-way time in seconds. Collective. */
static trip_spread_t ch_spread; /* of the last ch_pingpong, on rank 0 with -dist */

static double ch_pingpong(size_t n, int reps, uint8_t *sbuf, uint8_t *rbuf)
{
    int warm = warmup_for(reps);
    double *trips = dist && me == 0 ? trip_buffer(reps) : NULL, tprev = 0;
    if (me <= 1)
        for (size_t i = 0; i < n; i++)
            sbuf[i] = pat((size_t)me * 1000 + n, i);
    acp_sync();
    double t0 = 0;
    if (me <= 1) {
        for (int i = 0; i < warm + reps; i++) {
            if (i == warm)
                tprev = t0 = now();
            uint8_t v = (uint8_t)(1 + iter++ % 255);
            if (n > 0)
                sbuf[0] = sbuf[n - 1] = v;
            if (me == 0) {
                ch_send(sbuf, n);
                ch_recv(rbuf, n);
                if (trips != NULL && i >= warm) {
                    double t1 = now();
                    trips[i - warm] = t1 - tprev;
                    tprev = t1;
                }
            } else {
                ch_recv(rbuf, n);
                ch_send(sbuf, n);
            }
            check_msg(rbuf, n, (size_t)(1 - me) * 1000 + n, v, 0, "chpingpong message");
        }
    }
    double t = (now() - t0) / reps / 2;
    if (trips != NULL)
        ch_spread = trip_spread(trips, reps);
    if (me <= 1) /* every byte of the last message, outside the timing */
        check_msg(rbuf, n, (size_t)(1 - me) * 1000 + n, rbuf[0], 1, "chpingpong message");
    acp_sync();
    return t;
}

static void chpingpong(int nprocs)
{
    uint8_t *sbuf = NULL, *rbuf = NULL;
    if (me <= 1) {
        sbuf = malloc(max_size + 1);
        rbuf = malloc(max_size + 1);
        if (sbuf == NULL || rbuf == NULL) {
            fprintf(stderr, "acpbench: rank %d: out of memory\n", me);
            exit(1);
        }
    }
    ch_open();
    settle();
    if (me == 0) {
        print_title("PingPong over channels", nprocs);
        printf("%13s%13s%13s%13s%13s%13s", "#bytes", "#repetitions", "t[usec]", "Mbytes/sec", "t_put[usec]", "ratio");
        if (dist)
            printf("%13s%13s%13s%13s%13s", "t_p50", "t_p99", "t_put_p50", "ratio_p50", "t_put_p99");
        printf("\n");
    }
    double tch[MAX_ROUNDS], tref[MAX_ROUNDS], p50ch[MAX_ROUNDS], p99ch[MAX_ROUNDS], p50ref[MAX_ROUNDS],
        p99ref[MAX_ROUNDS];
    for (size_t n = 0; n <= max_size; n = size_after(n)) {
        if (n < min_size)
            continue; /* -min: on every rank alike */
        int reps = reps_for(n);
        for (int k = 0; k < rounds; k++) {
            tref[k] = put_pingpong(n, reps);
            p50ref[k] = spread.p50;
            p99ref[k] = spread.p99;
            tch[k] = ch_pingpong(n, reps, sbuf, rbuf);
            p50ch[k] = ch_spread.p50;
            p99ch[k] = ch_spread.p99;
        }
        double t = median(tch, rounds), tput = median(tref, rounds);
        if (me == 0) {
            printf("%13zu%13d%13.2f%13.2f%13.2f%13.2f", n, reps, t * 1e6, (double)n / MB / t, tput * 1e6, t / tput);
            if (dist) {
                double m = median(p50ch, rounds), mref = median(p50ref, rounds);
                printf("%13.2f%13.2f%13.2f%13.2f%13.2f", m * 1e6, median(p99ch, rounds) * 1e6, mref * 1e6, m / mref,
                       median(p99ref, rounds) * 1e6);
            }
            printf("\n");
        }
        fflush(stdout);
    }
    ch_close();
    free(sbuf);
    free(rbuf);
}

/* ---- windowed bandwidth -------------------------------------------------------------- */

static int window_for(size_t n)
{
    if (n <= ((size_t)256 << 10))
        return 64;
    size_t w = ((size_t)16 << 20) / n;
    return w < 4 ? 4 : (int)w;
}

static int windows_for(size_t n, int w)
{
    size_t vol = (size_t)w * (n ? n : 1);
    size_t k = ((size_t)256 << 20) / vol;
    return k > 100 ? 100 : k < 3 ? 3 : (int)k;
}

/* Registered buffer of the bandwidth benchmarks: the largest window (W
 * messages of N bytes, at most 64 MiB), then two flag bytes. */
static uint8_t *bw_buf;
static acp_ga_t bw_mine, bw_peer;

static size_t bw_len(void)
{
    size_t m = 1;
    for (size_t n = 1; n <= max_size; n = size_after(n))
        if ((size_t)window_for(n) * n > m)
            m = (size_t)window_for(n) * n;
    return m;
}

static size_t flag_pos(void) { return bw_len(); }

/* The bandwidth buffer: the largest window, then the flag byte's line. */
static size_t bw_buf_len(void) { return bw_len() + 64; }

static void bw_setup(void)
{
    size_t len = bw_buf_len();
    if (bw_starter) { /* after the pingpong's layout; smem_extra made room */
        bw_mine = acp_query_starter_ga(me) + pingpong_smem();
        bw_buf = acp_query_address(bw_mine);
    } else {
        bw_buf = calloc(1, len);
        acp_atkey_t key = bw_buf ? acp_register_memory(bw_buf, len, 0) : ACP_ATKEY_NULL;
        if (key == ACP_ATKEY_NULL) {
            fprintf(stderr, "acpbench: rank %d: cannot register %zu bytes\n", me, len);
            exit(1);
        }
        bw_mine = acp_query_ga(key, bw_buf);
    }
    /* Exchange GAs through the starter memory. */
    acp_ga_t st = acp_query_starter_ga(me);
    *(acp_ga_t *)acp_query_address(st) = bw_mine;
    acp_sync();
    if (me <= 1) {
        acp_complete(acp_copy(st + 8, acp_query_starter_ga(1 - me), 8, ACP_HANDLE_NULL));
        bw_peer = *(acp_ga_t *)((uint8_t *)acp_query_address(st) + 8);
    }
    acp_sync();
}

/* Fills a window of w messages of n bytes: message j carries the pattern
 * of seed n + j, which check_msg verifies. */
static void fill_window(uint8_t *buf, size_t n, int w)
{
    for (int j = 0; j < w; j++)
        for (size_t i = 0; i < n; i++)
            buf[(size_t)j * n + i] = pat(n + (size_t)j, i);
}

/* Reference: W puts of n bytes, acp_complete, then a 1-byte flag; the peer
 * answers with a 1-byte flag. Returns seconds per window. */
static double put_bw(size_t n, int w, int windows)
{
    volatile uint8_t *flag = bw_buf + flag_pos();
    if (me == 0)
        fill_window(bw_buf, n, w);
    acp_sync();
    double t0 = 0;
    if (me <= 1) {
        for (int k = 0; k < windows + 1; k++) {
            if (k == 1)
                t0 = now(); /* the first window is the warm-up */
            uint8_t v = (uint8_t)(1 + iter++ % 255);
            if (me == 0) {
                for (int j = 0; j < w; j++) {
                    uint8_t *m = bw_buf + (size_t)j * n;
                    if (n > 0)
                        m[0] = m[n - 1] = v;
                    if (acp_copy(bw_peer + (size_t)j * n, bw_mine + (size_t)j * n, n, ACP_HANDLE_NULL) == ACP_HANDLE_NULL)
                        exit(1);
                }
                acp_complete(ACP_HANDLE_ALL);
                bw_buf[flag_pos() + 1] = v;
                acp_complete(acp_copy(bw_peer + flag_pos(), bw_mine + flag_pos() + 1, 1, ACP_HANDLE_NULL));
                wait_byte(flag, v);
            } else {
                wait_byte(flag, v); /* put after the window completed: the data is in place */
                for (int j = 0; j < w; j++)
                    check_msg(bw_buf + (size_t)j * n, n, n + (size_t)j, v, 0, "put window message");
                bw_buf[flag_pos() + 1] = v;
                acp_complete(acp_copy(bw_peer + flag_pos(), bw_mine + flag_pos() + 1, 1, ACP_HANDLE_NULL));
            }
        }
    }
    double t = (now() - t0) / windows;
    if (me == 1) /* every byte of the last window, outside the timing */
        for (int j = 0; j < w; j++)
            check_msg(bw_buf + (size_t)j * n, n, n + (size_t)j, n ? bw_buf[(size_t)j * n] : 0, 1, "put window message");
    acp_sync();
    return t;
}

/* Channels: W sends of n bytes from distinct buffers, waited for together;
 * the peer answers with a 0-byte message. Returns seconds per window. */
static double ch_bw(size_t n, int w, int windows, uint8_t *sbuf, uint8_t *rbuf, acp_request_t *req, size_t *got)
{
    if (me == 0)
        fill_window(sbuf, n, w);
    acp_sync();
    double t0 = 0;
    if (me <= 1) {
        for (int k = 0; k < windows + 1; k++) {
            if (k == 1)
                t0 = now();
            uint8_t v = (uint8_t)(1 + iter++ % 255);
            if (me == 0) {
                for (int j = 0; j < w; j++) {
                    uint8_t *m = sbuf + (size_t)j * n;
                    if (n > 0)
                        m[0] = m[n - 1] = v;
                    req[j] = acp_nbsend_ch(ch_out, m, n);
                }
                if (acp_waitall_ch(req, w, got) != 0) {
                    fprintf(stderr, "acpbench: rank 0: a send of a %zu-byte window failed\n", n);
                    exit(1);
                }
                ch_recv(NULL, 0);
            } else {
                for (int j = 0; j < w; j++)
                    req[j] = acp_nbrecv_ch(ch_in, rbuf + (size_t)j * n, n);
                if (acp_waitall_ch(req, w, got) != 0) {
                    fprintf(stderr, "acpbench: rank 1: a receive of a %zu-byte window failed\n", n);
                    exit(1);
                }
                for (int j = 0; j < w; j++) {
                    if (got[j] != n) {
                        fprintf(stderr, "acpbench: rank 1: received %zu bytes, want %zu\n", got[j], n);
                        failures++;
                    }
                    check_msg(rbuf + (size_t)j * n, n, n + (size_t)j, v, 0, "chbw message");
                }
                ch_send(NULL, 0);
            }
        }
    }
    double t = (now() - t0) / windows;
    if (me == 1) /* every byte of the last window, outside the timing */
        for (int j = 0; j < w; j++)
            check_msg(rbuf + (size_t)j * n, n, n + (size_t)j, n ? rbuf[(size_t)j * n] : 0, 1, "chbw message");
    acp_sync();
    return t;
}

static void chbw(int nprocs)
{
    bw_setup();
    ch_open();
    settle();
    uint8_t *sbuf = NULL, *rbuf = NULL;
    acp_request_t *req = calloc(64, sizeof *req);
    size_t *got = calloc(64, sizeof *got);
    if (me <= 1) {
        sbuf = malloc(bw_len() + 1);
        rbuf = malloc(bw_len() + 1);
        if (sbuf == NULL || rbuf == NULL) {
            fprintf(stderr, "acpbench: rank %d: out of memory\n", me);
            exit(1);
        }
    }
    if (me == 0) {
        print_title("Uniband over channels", nprocs);
        printf("%13s%13s%13s%13s%13s%13s\n", "#bytes", "#repetitions", "Mbytes/sec", "Msg/sec", "MB/s_put", "ratio");
    }
    double tch[MAX_ROUNDS], tref[MAX_ROUNDS];
    for (size_t n = 0; n <= max_size; n = size_after(n)) {
        if (n < min_size)
            continue; /* -min: on every rank alike */
        int w = window_for(n), windows = windows_for(n, w);
        for (int k = 0; k < rounds; k++) {
            tref[k] = put_bw(n, w, windows);
            tch[k] = ch_bw(n, w, windows, sbuf, rbuf, req, got);
        }
        double t = median(tch, rounds), tput = median(tref, rounds);
        double bw = (double)w * (double)n / MB / t, bwput = (double)w * (double)n / MB / tput;
        if (me == 0)
            printf("%13zu%13d%13.2f%13.0f%13.2f%13.2f\n", n, w * windows, bw, w / t, bwput, n ? bw / bwput : 0.0);
        fflush(stdout);
    }
    ch_close();
    free(sbuf);
    free(rbuf);
    free(req);
    free(got);
}

/* ---- get, bandwidth, atomics, sync, passive target ----------------------------------- */

static void get_latency(int nprocs)
{
    settle();
    acp_ga_t mine = acp_query_starter_ga(me), peer = acp_query_starter_ga(1);
    uint8_t *base = acp_query_address(mine);
    if (me == 0) {
        print_title("Get", nprocs);
        printf("%13s%13s%13s%13s\n", "#bytes", "#repetitions", "t[usec]", "Mbytes/sec");
    }
    if (me == 1)
        for (size_t i = 0; i < max_size; i++)
            base[send_off() + i] = pat(4242, i);
    for (size_t n = 0; n <= max_size; n = size_after(n)) {
        if (n < min_size)
            continue; /* -min: on every rank alike */
        int reps = reps_for(n), warm = warmup_for(reps);
        acp_sync();
        double t0 = 0;
        if (me == 0) {
            for (int i = 0; i < warm + reps; i++) {
                if (i == warm)
                    t0 = now();
                acp_handle_t h = acp_copy(mine, peer + send_off(), n, ACP_HANDLE_NULL);
                if (h == ACP_HANDLE_NULL)
                    exit(1);
                acp_complete(h);
            }
            double t = (now() - t0) / reps;
            for (size_t i = 0; i < n; i++)
                if (base[i] != pat(4242, i)) {
                    fprintf(stderr, "acpbench: get of %zu bytes: byte %zu wrong\n", n, i);
                    failures++;
                    break;
                }
            printf("%13zu%13d%13.3f%13.2f\n", n, reps, t * 1e6, (double)n / MB / t);
            fflush(stdout);
        }
        acp_sync();
    }
}

/* The value of the first and last byte of message j of a window of
 * n-byte messages in putbw/getbw (never 0: a missing message shows). */
static uint8_t bw_mark(size_t n, int j) { return (uint8_t)(1 + (n + (size_t)j) % 255); }

static void copy_bw(int nprocs, int put)
{
    bw_setup();
    settle();
    if (me == 0) {
        print_title(put ? "Unidir_put" : "Unidir_get", nprocs);
        printf("%13s%13s%13s%13s\n", "#bytes", "#repetitions", "Mbytes/sec", "Msg/sec");
    }
    for (size_t n = 1; n <= max_size; n = size_after(n)) {
        if (n < min_size)
            continue; /* -min: on every rank alike */
        int w = window_for(n), windows = windows_for(n, w);
        if (me == (put ? 0 : 1)) {
            fill_window(bw_buf, n, w);
            /* first and last byte: the message's mark, as check_msg wants */
            for (int j = 0; j < w; j++)
                bw_buf[(size_t)j * n] = bw_buf[(size_t)j * n + n - 1] = bw_mark(n, j);
        }
        acp_sync();
        double t0 = 0;
        if (me == 0) {
            for (int k = 0; k < windows + 1; k++) {
                if (k == 1)
                    t0 = now(); /* the first window is the warm-up */
                for (int j = 0; j < w; j++) {
                    acp_ga_t a = bw_mine + (size_t)j * n, b = bw_peer + (size_t)j * n;
                    if (acp_copy(put ? b : a, put ? a : b, n, ACP_HANDLE_NULL) == ACP_HANDLE_NULL)
                        exit(1);
                }
                acp_complete(ACP_HANDLE_ALL);
            }
        }
        double t = (now() - t0) / windows;
        acp_sync();
        if (me == (put ? 1 : 0)) /* the data of the last window */
            for (int j = 0; j < w; j++)
                check_msg(bw_buf + (size_t)j * n, n, n + (size_t)j, bw_mark(n, j), 1, put ? "put window" : "get window");
        if (me == 0)
            printf("%13zu%13d%13.2f%13.0f\n", n, w * windows, (double)w * (double)n / MB / t, w / t);
        fflush(stdout);
        acp_sync();
    }
}

static void atomic_latency(int nprocs)
{
    settle();
    const int reps = 10000, warm = 1000;
    acp_ga_t mine = acp_query_starter_ga(me), word = acp_query_starter_ga(1) + 64;
    const char *names[] = {"acp_cas8", "acp_add8", "acp_swap4"};
    if (me == 0) {
        print_title("Atomics (fetch to the caller)", nprocs);
        printf("%13s%13s%13s", "#operation", "#repetitions", "t[usec]");
        if (dist)
            print_trip_titles();
        printf("\n");
    }
    double *times = dist && me == 0 ? trip_buffer(reps) : NULL;
    for (int k = 0; k < 3; k++) {
        acp_sync();
        if (me == 0) {
            double t0 = 0, tprev = 0;
            for (int i = 0; i < warm + reps; i++) {
                if (i == warm)
                    tprev = t0 = now();
                acp_handle_t h = k == 0 ? acp_cas8(mine + 64, word, (uint64_t)i, (uint64_t)i + 1, ACP_HANDLE_NULL)
                               : k == 1 ? acp_add8(mine + 64, word + 8, 1, ACP_HANDLE_NULL)
                                        : acp_swap4(mine + 72, word + 16, (uint32_t)i, ACP_HANDLE_NULL);
                if (h == ACP_HANDLE_NULL)
                    exit(1);
                acp_complete(h);
                if (times != NULL && i >= warm) {
                    double t1 = now();
                    times[i - warm] = t1 - tprev;
                    tprev = t1;
                }
            }
            printf("%13s%13d%13.3f", names[k], reps, (now() - t0) / reps * 1e6);
            if (times != NULL)
                print_trip_spread(spread_of(times, reps, 1));
            printf("\n");
            fflush(stdout);
        }
        acp_sync();
    }
    /* cas8 counted up from 0 by one each time: all must have succeeded. */
    if (me == 1) {
        uint64_t *w = (uint64_t *)acp_query_address(word);
        if (w[0] != (uint64_t)(reps + warm) || w[1] != (uint64_t)(reps + warm)) {
            fprintf(stderr, "acpbench: atomics: counters %" PRIu64 " and %" PRIu64 ", want %d\n", w[0], w[1], reps + warm);
            failures++;
        }
    }
}

static void sync_latency(int nprocs)
{
    settle();
    const int reps = 1000, warm = 100;
    for (int i = 0; i < warm; i++)
        acp_sync();
    double t0 = now();
    for (int i = 0; i < reps; i++)
        acp_sync();
    double t = (now() - t0) / reps;
    /* min, max and average over the processes, through rank 0's starter memory */
    acp_ga_t at0 = acp_query_starter_ga(0), mine = acp_query_starter_ga(me);
    double *slot = acp_query_address(mine);
    slot[0] = t;
    acp_complete(acp_copy(at0 + 8 * (1 + (size_t)me), mine, 8, ACP_HANDLE_NULL));
    acp_sync();
    if (me == 0) {
        double lo = 1e9, hi = 0, sum = 0;
        for (int r = 0; r < nprocs; r++) {
            double v = slot[1 + r];
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            sum += v;
        }
        printf("#---------------------------------------------------\n");
        printf("# Benchmarking Barrier (acp_sync)\n");
        printf("# #processes = %d\n", nprocs);
        printf("#---------------------------------------------------\n");
        printf("%13s%13s%13s%13s\n", "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]");
        printf("%13d%13.2f%13.2f%13.2f\n", reps, lo * 1e6, hi * 1e6, sum / nprocs * 1e6);
    }
}

/* ---- noise: fixed work quanta ----------------------------------------------------- */

struct fwq {
    double min, med, p99, max, noise, csw; /* usec, usec, usec, usec, %, 1/s */
};

static long fwq_iters;           /* arithmetic steps in one quantum */
static struct fwq fwq_ref;       /* before acp_init */
static volatile double fwq_sink; /* keeps the work from being optimised away */

static void fwq_work(long iters)
{
    double x = fwq_sink;
    for (long i = 0; i < iters; i++)
        x = x * 1.0000001 + 1e-9;
    fwq_sink = x;
}

/* The main thread's involuntary context switches so far, or -1. */
static long involuntary_switches(void)
{
    FILE *f = fopen("/proc/thread-self/status", "r");
    char line[256];
    long n = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL)
        if (sscanf(line, "nonvoluntary_ctxt_switches: %ld", &n) == 1)
            break;
    if (f != NULL)
        fclose(f);
    return n;
}

/* Steps for a quantum of about 20 us: the fastest of 50 timings of 10,000. */
static long fwq_calibrate(void)
{
    double best = 1;
    for (int i = 0; i < 50; i++) {
        double t0 = now();
        fwq_work(10000);
        double t = now() - t0;
        if (t < best)
            best = t;
    }
    long iters = (long)(10000 * 20e-6 / best);
    return iters < 100 ? 100 : iters;
}

static struct fwq fwq_run(void)
{
    double *t = malloc((size_t)quanta * sizeof *t);
    if (t == NULL) {
        fprintf(stderr, "acpbench: cannot allocate %ld quantum times\n", quanta);
        exit(1);
    }
    long c0 = involuntary_switches();
    double start = now();
    for (long q = 0; q < quanta; q++) {
        double t0 = now();
        fwq_work(fwq_iters);
        t[q] = now() - t0;
    }
    double elapsed = now() - start;
    long c1 = involuntary_switches();
    double sum = 0;
    for (long q = 0; q < quanta; q++)
        sum += t[q];
    qsort(t, (size_t)quanta, sizeof *t, cmp_double);
    struct fwq r = {t[0] * 1e6, t[quanta / 2] * 1e6, t[quanta * 99 / 100] * 1e6, t[quanta - 1] * 1e6,
                    100 * (sum - (double)quanta * t[0]) / sum, c0 < 0 || c1 < 0 ? -1 : (double)(c1 - c0) / elapsed};
    free(t);
    return r;
}

static void print_fwq(int rank, const char *phase, const struct fwq *r)
{
    printf("%8d%8s%12.2f%12.2f%12.2f%12.1f%12.3f%12.1f\n", rank, phase, r->min, r->med, r->p99, r->max, r->noise,
           r->csw);
}

/* The reference ran before acp_init; now the same with the library up. */
static void noise(int nprocs)
{
    acp_sync();
    struct fwq mine[2] = {fwq_ref, fwq_run()};
    memcpy(my_base, mine, sizeof mine);
    acp_sync();
    if (me == 0) {
        printf("#---------------------------------------------------\n");
        printf("# Benchmarking Fixed work quanta (%ld steps each)\n", fwq_iters);
        printf("# #processes = %d\n", nprocs);
        printf("#---------------------------------------------------\n");
        printf("%8s%8s%12s%12s%12s%12s%12s%12s\n", "#rank", "phase", "min[usec]", "median", "p99", "max",
               "noise[%]", "csw/s");
        double ref = 0, acp = 0;
        for (int r = 0; r < nprocs; r++) {
            struct fwq got[2];
            if (r == 0) {
                memcpy(got, mine, sizeof got);
            } else {
                acp_complete(acp_copy(my_starter + 4096 - sizeof got, acp_query_starter_ga(r), sizeof got,
                                      ACP_HANDLE_NULL));
                memcpy(got, my_base + 4096 - sizeof got, sizeof got);
            }
            print_fwq(r, "ref", &got[0]);
            print_fwq(r, "acp", &got[1]);
            for (int k = 0; k < 2; k++)
                if (!(got[k].min > 0 && got[k].min <= got[k].med && got[k].med <= got[k].p99 &&
                      got[k].p99 <= got[k].max && got[k].noise >= 0 && got[k].noise < 100)) {
                    fprintf(stderr, "acpbench: rank %d: quantum times out of order\n", r);
                    failures++;
                }
            ref += got[0].noise;
            acp += got[1].noise;
        }
        printf("# mean noise: ref %.3f %%, acp %.3f %%\n", ref / nprocs, acp / nprocs);
    }
    acp_sync();
}

/* Work that keeps a core busy without calling ACP, about `us` microseconds. */
static void compute(double us)
{
    double t0 = now();
    volatile double x = 1;
    while ((now() - t0) * 1e6 < us)
        for (int i = 0; i < 100; i++)
            x = x * 1.0000001 + 1e-9;
}

static void passive(int nprocs)
{
    settle();
    acp_ga_t mine = acp_query_starter_ga(me), peer = acp_query_starter_ga(1);
    if (me == 0) {
        print_title("Truly passive put", nprocs);
        printf("%13s%13s%13s%13s%13s\n", "#bytes", "#repetitions", "t_pure[usec]", "t_ovrl[usec]", "ratio");
    }
    for (size_t n = 0; n <= max_size; n = size_after(n)) {
        if (n < min_size)
            continue; /* -min: on every rank alike */
        int reps = reps_for(n) / 10 + 5;
        double t[2] = {0, 0};
        for (int busy = 0; busy < 2; busy++) {
            uint8_t v = (uint8_t)(1 + iter++ % 255); /* same sequence on every rank */
            acp_sync();
            if (me == 0) {
                double t0 = now();
                for (int i = 0; i < reps; i++) {
                    acp_handle_t h = acp_copy(peer + send_off(), mine + send_off(), n, ACP_HANDLE_NULL);
                    if (h == ACP_HANDLE_NULL)
                        exit(1);
                    acp_complete(h);
                }
                t[busy] = (now() - t0) / reps;
                if (busy) { /* tell rank 1 to stop computing */
                    uint8_t *flag = my_base + flag_off();
                    flag[0] = v;
                    acp_complete(acp_copy(peer + flag_off() + FLAG_IN, mine + flag_off(), 1, ACP_HANDLE_NULL));
                }
            } else if (me == 1 && busy) {
                volatile uint8_t *flag = my_base + flag_off() + FLAG_IN;
                while (*flag != v)
                    compute(100); /* no call into ACP until rank 0 is done */
            }
            acp_sync(); /* t_pure: rank 1 waits here, inside the library */
        }
        if (me == 0) {
            printf("%13zu%13d%13.2f%13.2f%13.2f\n", n, reps, t[0] * 1e6, t[1] * 1e6, t[0] > 0 ? t[1] / t[0] : 0.0);
            fflush(stdout);
        }
    }
}

int main(int argc, char **argv)
{
    parse_args(argc, argv);
    if (strcmp(bench, "noise") == 0) {
        fwq_iters = fwq_calibrate();
        fwq_ref = fwq_run();
    }
    if (bw_starter)
        smem_extra = bw_buf_len();
    argv = with_starter_size(&argc, argv);
    if (acp_init(&argc, &argv) != 0) {
        fprintf(stderr, "acpbench: acp_init failed\n");
        return 1;
    }
    me = acp_rank();
    int nprocs = acp_procs();
    if (nprocs < 2 && strcmp(bench, "sync") != 0 && strcmp(bench, "noise") != 0) {
        if (me == 0)
            fprintf(stderr, "acpbench: %s needs 2 processes (acprun -np 2 acpbench %s)\n", bench, bench);
        acp_finalize();
        return 2;
    }
    my_starter = acp_query_starter_ga(me);
    peer_starter = nprocs > 1 ? acp_query_starter_ga(me == 1 ? 0 : 1) : ACP_GA_NULL;
    my_base = acp_query_address(my_starter);
    if (acp_query_address(my_starter + smem_needed() - 1) == NULL) {
        fprintf(stderr, "acpbench: rank %d: starter memory smaller than %zu bytes; give --acp-size-smem %zu or more\n",
                me, smem_needed(), smem_needed());
        acp_finalize();
        return 1;
    }
    if (me == 0)
        print_header(nprocs);
    if (strcmp(bench, "chpingpong") == 0)
        chpingpong(nprocs);
    else if (strcmp(bench, "get") == 0)
        get_latency(nprocs);
    else if (strcmp(bench, "putbw") == 0 || strcmp(bench, "getbw") == 0)
        copy_bw(nprocs, bench[0] == 'p');
    else if (strcmp(bench, "atomic") == 0)
        atomic_latency(nprocs);
    else if (strcmp(bench, "sync") == 0)
        sync_latency(nprocs);
    else if (strcmp(bench, "passive") == 0)
        passive(nprocs);
    else if (strcmp(bench, "noise") == 0)
        noise(nprocs);
    else if (strcmp(bench, "chbw") == 0)
        chbw(nprocs);
    else
        pingpong(nprocs);
    acp_sync();
    int fin = acp_finalize();
    if (failures)
        fprintf(stderr, "acpbench: rank %d: %d verification failure(s)\n", me, failures);
    return failures || fin != 0 ? 1 : 0;
}
