/*
 * acpbench - IMB-style benchmarks of the ACP basic layer.
 *
 *     acprun -np 2 acpbench [pingpong] [-max BYTES]
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
 * Sizes 0, 1, 2, 4, ... up to 4 MiB (or -max). A copy of 0 bytes carries no
 * flag, so the 0-byte row times a 1-byte flag copy issued right after the
 * 0-byte copy: it is the cost of a notification. Repetitions follow IMB's
 * rule: 1000, but at most 40 MiB / N (640 for 64 KiB ... 10 for 4 MiB);
 * 10 % of that (at least 2) more iterations run first as warm-up and are
 * not timed.
 *
 * Starter memory: acprun gives 1024 bytes per rank by default, so acpbench
 * appends "--acp-size-smem <2 * max + 4096>" to the arguments it passes to
 * acp_init, unless the command line already has --acp-size-smem.
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

#define DEFAULT_MAX ((size_t)4 << 20)
#define MB          1048576.0  /* IMB's Mbytes: 2^20 bytes */
#define OVERALL_VOL ((size_t)40 << 20)
#define MAX_REPS    1000

static size_t max_size = DEFAULT_MAX;
static int me, failures;

/* Layout of each rank's starter memory: [0, max) receive buffer (the peer
 * writes here), [max + 64, 2 max + 64) send buffer, then two bytes for the
 * 0-byte row: my flag's source and the peer's flag landing place. */
static size_t send_off(void) { return max_size + 64; }
static size_t flag_off(void) { return 2 * max_size + 128; }
static size_t smem_needed(void) { return 2 * max_size + 4096; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int reps_for(size_t n)
{
    if (n == 0 || OVERALL_VOL / n >= MAX_REPS)
        return MAX_REPS;
    size_t r = OVERALL_VOL / n;
    return r < 1 ? 1 : (int)r;
}

static uint8_t pat(size_t seed, size_t i) { return (uint8_t)((i * 131 + seed * 7 + (i >> 8) * 17) % 251); }

/* ---- arguments ------------------------------------------------------------- */

/* Returns the argv to give acp_init: the program's, plus --acp-size-smem
 * when the command line does not set it. */
static char **with_starter_size(int *argc, char **argv)
{
    for (int i = 1; i < *argc; i++)
        if (strcmp(argv[i], "--acp-size-smem") == 0)
            return argv;
    char **out = calloc((size_t)*argc + 3, sizeof *out);
    static char size[32];
    snprintf(size, sizeof size, "%zu", smem_needed());
    memcpy(out, argv, (size_t)*argc * sizeof *out);
    out[(*argc)++] = "--acp-size-smem";
    out[(*argc)++] = size;
    out[*argc] = NULL;
    return out;
}

static void usage(void)
{
    fprintf(stderr, "usage: acprun -np 2 acpbench [pingpong] [-max BYTES]\n");
    exit(2);
}

/* -max must be known before acp_init (it decides the starter size), so the
 * program's own arguments are read first; acp_init removes only --acp-*. */
static const char *parse_args(int argc, char **argv)
{
    const char *bench = "pingpong";
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--acp-", 6) == 0) {
            i++; /* its value */
        } else if (strcmp(argv[i], "-max") == 0 && i + 1 < argc) {
            max_size = strtoull(argv[++i], NULL, 0);
            if (max_size < 1)
                usage();
        } else if (strcmp(argv[i], "pingpong") == 0) {
            bench = argv[i];
        } else {
            usage();
        }
    }
    return bench;
}

/* ---- output --------------------------------------------------------------------- */

static void print_header(int nprocs)
{
    char host[256] = "unknown", date[64];
    gethostname(host, sizeof host);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", localtime(&t));
    struct utsname u;
    uname(&u);
    const char *tr = getenv("ACP_TRANSPORTS");
    printf("#------------------------------------------------------------\n");
    printf("#    libacp acpbench (ACP %d.%d.%d basic layer)\n", ACP_VERSION_MAJOR, ACP_VERSION_MINOR,
           ACP_VERSION_PATCH);
    printf("#------------------------------------------------------------\n");
    printf("# Date                  : %s\n", date);
    printf("# Machine               : %s\n", u.machine);
    printf("# System                : %s %s\n", u.sysname, u.release);
    printf("# Host                  : %s\n", host);
    printf("# Transport             : %s\n", tr != NULL && *tr ? tr : "default");
    printf("# Processes             : %d\n", nprocs);
    printf("# Minimum message length in bytes:   0\n");
    printf("# Maximum message length in bytes:   %zu\n", max_size);
    printf("#\n");
    printf("# Method: acp_copy into the peer's starter memory + acp_complete;\n");
    printf("#         the peer spins on the last byte, then answers the same way.\n");
    printf("# t[usec]    = half the round-trip time\n");
    printf("# Mbytes/sec = bytes / t, 1 Mbyte = 2^20 bytes\n");
    printf("# #bytes 0   = a 1-byte flag copy after a 0-byte copy (notification)\n");
    printf("\n");
}

/* ---- pingpong -------------------------------------------------------------------- */

/* Waits until *p == v. Yields now and then: on an oversubscribed machine
 * the peer and the library's progress need the core too. */
static void wait_byte(volatile uint8_t *p, uint8_t v)
{
    for (unsigned i = 1; __atomic_load_n(p, __ATOMIC_ACQUIRE) != v; i++)
        if (i % 256 == 0)
            sched_yield();
}

/* One message of n bytes from my send buffer into the peer's receive
 * buffer, flag value v in the last byte (or in the flag byte for n = 0). */
static void send_msg(acp_ga_t mine, acp_ga_t peer, size_t n, uint8_t v, uint8_t *sendbuf, uint8_t *flagbuf)
{
    acp_handle_t h;
    if (n > 0) {
        sendbuf[n - 1] = v;
        h = acp_copy(peer, mine + send_off(), n, ACP_HANDLE_NULL);
    } else {
        flagbuf[0] = v;
        acp_copy(peer, mine + send_off(), 0, ACP_HANDLE_NULL);
        h = acp_copy(peer + flag_off() + 1, mine + flag_off(), 1, ACP_HANDLE_NULL);
    }
    if (h == ACP_HANDLE_NULL) {
        fprintf(stderr, "acpbench: rank %d: acp_copy of %zu bytes refused\n", me, n);
        exit(1);
    }
    acp_complete(h);
}

/* Verifies the receive buffer after the last iteration of size n: the
 * peer's pattern and the last flag value. */
static void verify(const uint8_t *recv, const uint8_t *flag, size_t n, int peer, uint8_t last)
{
    if (n == 0) {
        if (flag[1] != last) {
            fprintf(stderr, "acpbench: rank %d: 0 bytes: flag is %u, want %u\n", me, flag[1], last);
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

static void pingpong(int nprocs)
{
    acp_ga_t mine = acp_query_starter_ga(me);
    acp_ga_t peer = acp_query_starter_ga(1 - me);
    uint8_t *base = acp_query_address(mine);
    uint8_t *recv = base, *sendbuf = base + send_off(), *flag = base + flag_off();
    unsigned iter = 0; /* over all sizes: flag values never repeat back to back */

    if (me == 0) {
        printf("#---------------------------------------------------\n");
        printf("# Benchmarking PingPong\n");
        printf("# #processes = 2\n");
        if (nprocs > 2)
            printf("# ( %d additional processes waiting in acp_sync)\n", nprocs - 2);
        printf("#---------------------------------------------------\n");
        printf("%13s%13s%13s%13s\n", "#bytes", "#repetitions", "t[usec]", "Mbytes/sec");
    }
    for (size_t n = 0; n <= max_size; n = n ? 2 * n : 1) {
        int reps = reps_for(n), warm = reps / 10 < 2 ? 2 : reps / 10;
        uint8_t last = 0;
        if (me <= 1) {
            for (size_t i = 0; i + 1 < n; i++)
                sendbuf[i] = pat((size_t)me * 1000 + n, i);
        }
        acp_sync();
        double t0 = 0;
        if (me <= 1) {
            for (int i = 0; i < warm + reps; i++) {
                if (i == warm)
                    t0 = now();
                last = (uint8_t)(1 + iter++ % 255);
                volatile uint8_t *wait_at = n > 0 ? recv + n - 1 : flag + 1;
                if (me == 0) {
                    send_msg(mine, peer, n, last, sendbuf, flag);
                    wait_byte(wait_at, last);
                } else {
                    wait_byte(wait_at, last);
                    send_msg(mine, peer, n, last, sendbuf, flag);
                }
            }
        }
        double t = (now() - t0) / reps / 2; /* seconds, one way */
        acp_sync(); /* both sides' last copies are complete: data may be checked */
        if (me <= 1)
            verify(recv, flag, n, 1 - me, last);
        if (me == 0)
            printf("%13zu%13d%13.2f%13.2f\n", n, reps, t * 1e6, (double)n / MB / t);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    const char *bench = parse_args(argc, argv);
    argv = with_starter_size(&argc, argv);
    if (acp_init(&argc, &argv) != 0) {
        fprintf(stderr, "acpbench: acp_init failed\n");
        return 1;
    }
    me = acp_rank();
    int nprocs = acp_procs();
    if (nprocs < 2) {
        if (me == 0)
            fprintf(stderr, "acpbench: %s needs 2 processes (acprun -np 2 acpbench %s)\n", bench, bench);
        acp_finalize();
        return 2;
    }
    acp_ga_t mine = acp_query_starter_ga(me);
    if (acp_query_address(mine + smem_needed() - 1) == NULL) {
        fprintf(stderr, "acpbench: rank %d: starter memory smaller than %zu bytes; give --acp-size-smem %zu or more\n",
                me, smem_needed(), smem_needed());
        acp_finalize();
        return 1;
    }
    if (me == 0)
        print_header(nprocs);
    pingpong(nprocs);
    acp_sync();
    int fin = acp_finalize();
    if (failures)
        fprintf(stderr, "acpbench: rank %d: %d verification failure(s)\n", me, failures);
    return failures || fin != 0 ? 1 : 0;
}
