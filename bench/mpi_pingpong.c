/*
 * mpi_pingpong - MPI's pingpong and barrier measured the way IMB measures
 * them, and, with --with-acp, ACP's put pingpong and acp_sync in the same
 * job, with the ratio of the two per message size.
 *
 *     mpirun -np 2 mpi_pingpong [--with-acp] [-max BYTES] [-dist]
 *     mpirun -np N mpi_pingpong -barrier [--with-acp]     (the barrier only)
 *
 * MPI pingpong (IMB PingPong): rank 0 sends N bytes with MPI_Send, rank 1
 * receives them with MPI_Recv and sends N bytes back the same way.
 * ACP pingpong (acpbench's method): rank 0 copies N bytes into rank 1's
 * starter memory with one acp_copy and completes it; rank 1 waits for the
 * last byte to change (spinning on memory, no ACP call) and answers the
 * same way. For both, t[usec] is half the round trip and Mbytes/sec is
 * N / t with 1 Mbyte = 2^20 bytes. Sizes 0, 1, 2, 4, ... up to 4 MiB (or
 * -max; -min leaves out smaller ones); repetitions follow IMB (or -reps
 * N): 1000, but at most 40 MiB / N; 10 % of that (at least 2) more run
 * first as warm-up and are not timed. For ACP a
 * 0-byte copy carries no flag, so its row times a 1-byte flag copy and,
 * right after it, the 0-byte copy (the cost of a notification), as in
 * acpbench.
 * The two are measured size by size in turn, so that both see the same
 * machine. Ranks beyond the first two wait in MPI_Barrier / acp_sync.
 *
 * Barrier (IMB Barrier): every rank calls MPI_Barrier (and acp_sync) 1000
 * times after 100 untimed ones; t_min, t_max and t_avg over the ranks of
 * the time per call.
 *
 * Settling: after initialisation every process (with --with-acp, after
 * reading a byte of its peer's starter memory) spins for 50 ms (-settle
 * MS) without calling MPI or ACP before the first size, as acpbench does
 * (see there why), and the ACP loops call only the library's C paths.
 *
 * -dist: rank 0 also times each round trip, and the tables add the
 * minimum, median, 99th percentile and maximum of their halves (t_min,
 * t_p50, t_p99, t_max), as acpbench -dist does (tripspread.h).
 *
 * Received data is checked after the last repetition of each size; any
 * mismatch makes the program exit non-zero.
 *
 * With --with-acp the program calls MPI_Init, then acp_init, uses both,
 * then acp_finalize and MPI_Finalize: libacp finds its peers through the
 * MPI launcher (PMIx under Open MPI's mpirun, PMI-1 under MPICH's mpiexec)
 * and gets the same ranks. It gives acp_init "--acp-size-smem <2 max +
 * 4096>" unless the command line sets --acp-size-smem.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <mpi.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "acp.h"
#include "tripspread.h"

#define DEFAULT_MAX ((size_t)4 << 20)
#define MB          1048576.0 /* IMB's Mbytes: 2^20 bytes */
#define OVERALL_VOL ((size_t)40 << 20)
#define MAX_REPS    1000
#define BARRIER_REPS 1000
#define BARRIER_WARM 100
#define MAX_SIZES   64

static size_t max_size = DEFAULT_MAX, min_size; /* -max, -min */
static int with_acp, barrier_only, me, nprocs, failures;
static double settle_ms = 50;
static acp_ga_t acp_mine, acp_peer; /* starter memory: mine and rank 1 - me's */
static uint8_t *acp_base;

/* Results per size index. */
static size_t sizes[MAX_SIZES];
static int reps_of[MAX_SIZES], nsizes;
static double t_mpi[MAX_SIZES], t_acp[MAX_SIZES];
static int dist; /* -dist: the spread of single round trips (rank 0) */
static trip_spread_t sp_mpi[MAX_SIZES], sp_acp[MAX_SIZES];

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

static int warm_for(int reps) { return reps / 10 < 2 ? 2 : reps / 10; }

static uint8_t pat(size_t seed, size_t i) { return (uint8_t)((i * 131 + seed * 7 + (i >> 8) * 17) % 251); }

static void usage(void)
{
    if (me == 0)
        fprintf(stderr, "usage: mpirun -np 2 mpi_pingpong [--with-acp] [-max BYTES] [-min BYTES] [-reps N] [-barrier] [-settle MS] [-dist]\n");
    MPI_Finalize();
    exit(2);
}

static void parse_args(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (strncmp(argv[i], "--acp-", 6) == 0) {
            i++; /* its value, for acp_init */
        } else if (strcmp(argv[i], "--with-acp") == 0) {
            with_acp = 1;
        } else if (strcmp(argv[i], "-reps") == 0 && i + 1 < argc) {
            char *end;
            long v = strtol(argv[++i], &end, 0);
            if (*end != '\0' || v < 1 || v > 100000000) {
                if (me == 0)
                    fprintf(stderr, "mpi_pingpong: -reps %s: must be a number of repetitions, 1 to 10^8\n", argv[i]);
                usage();
            }
            reps_fixed = (int)v;
        } else if (strcmp(argv[i], "-min") == 0 && i + 1 < argc) {
            char *end;
            min_size = strtoull(argv[++i], &end, 0);
            if (*end != '\0') {
                if (me == 0)
                    fprintf(stderr, "mpi_pingpong: -min %s: must be a number of bytes\n", argv[i]);
                usage();
            }
        } else if (strcmp(argv[i], "-dist") == 0) {
            dist = 1;
        } else if (strcmp(argv[i], "-barrier") == 0) {
            barrier_only = 1; /* any number of processes: only the barrier table */
        } else if (strcmp(argv[i], "-max") == 0 && i + 1 < argc) {
            char *end;
            max_size = strtoull(argv[++i], &end, 0);
            if (*end != '\0' || max_size < 1) {
                if (me == 0)
                    fprintf(stderr, "mpi_pingpong: -max %s: must be a number of bytes, 1 or more\n", argv[i]);
                usage();
            }
        } else if (strcmp(argv[i], "-settle") == 0 && i + 1 < argc) {
            char *end;
            settle_ms = strtod(argv[++i], &end);
            if (*end != '\0' || settle_ms < 0) {
                if (me == 0)
                    fprintf(stderr, "mpi_pingpong: -settle %s: must be a number of milliseconds, 0 or more\n", argv[i]);
                usage();
            }
        } else {
            if (me == 0)
                fprintf(stderr, "mpi_pingpong: unknown argument \"%s\"\n", argv[i]);
            usage();
        }
    }
}

/* ---- MPI ------------------------------------------------------------------- */

static uint8_t *mpi_send, *mpi_recv;

/* Records round trip i (rank 0 with -dist): the time since the last. */
static void trip_done(double *trips, int i, int warm, double *tprev)
{
    if (trips != NULL && i >= warm) {
        double t1 = MPI_Wtime();
        trips[i - warm] = t1 - *tprev;
        *tprev = t1;
    }
}

static double mpi_pingpong(size_t n, int reps, trip_spread_t *sp)
{
    int peer = 1 - me;
    for (size_t i = 0; i < n; i++)
        mpi_send[i] = pat((size_t)me * 1000 + n, i);
    memset(mpi_recv, 0, n);
    double t0 = 0, *trips = dist && me == 0 ? trip_buffer(reps) : NULL, tprev = 0;
    int warm = warm_for(reps);
    for (int i = 0; i < warm + reps; i++) {
        if (i == warm)
            tprev = t0 = MPI_Wtime();
        if (me == 0) {
            MPI_Send(mpi_send, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
            MPI_Recv(mpi_recv, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            trip_done(trips, i, warm, &tprev);
        } else {
            MPI_Recv(mpi_recv, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(mpi_send, (int)n, MPI_BYTE, peer, 1, MPI_COMM_WORLD);
        }
    }
    double t = (MPI_Wtime() - t0) / reps / 2;
    if (trips != NULL)
        *sp = trip_spread(trips, reps);
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        if (mpi_recv[i] != pat((size_t)peer * 1000 + n, i))
            bad++;
    if (bad) {
        fprintf(stderr, "mpi_pingpong: rank %d: MPI, %zu bytes from rank %d: %zu bytes wrong\n", me, n, peer, bad);
        failures++;
    }
    return t;
}

/* ---- ACP (acpbench's method) ---------------------------------------------- */

#include "putpingpong.h"

static void acp_send_msg(acp_ga_t mine, acp_ga_t peer, size_t n, uint8_t v, uint8_t *sendbuf, uint8_t *flagbuf)
{
    if (!put_msg(mine, peer, n, v, sendbuf, flagbuf)) {
        fprintf(stderr, "mpi_pingpong: rank %d: acp_copy of %zu bytes refused\n", me, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

static unsigned acp_iter; /* over all sizes: flag values never repeat back to back */

static double acp_pingpong(size_t n, int reps, uint8_t *lastp, trip_spread_t *sp)
{
    acp_ga_t mine = acp_mine, peer = acp_peer;
    uint8_t *base = acp_base;
    uint8_t *recv = base, *sendbuf = base + send_off(), *flag = base + flag_off();
    for (size_t i = 0; i + 1 < n; i++)
        sendbuf[i] = pat((size_t)me * 1000 + n, i);
    uint8_t last = 0;
    double t0 = 0, *trips = dist && me == 0 ? trip_buffer(reps) : NULL, tprev = 0;
    int warm = warm_for(reps);
    for (int i = 0; i < warm + reps; i++) {
        if (i == warm)
            tprev = t0 = MPI_Wtime();
        last = (uint8_t)(1 + acp_iter++ % 255);
        volatile uint8_t *wait_at = n > 0 ? recv + n - 1 : flag + FLAG_IN;
        if (me == 0) {
            acp_send_msg(mine, peer, n, last, sendbuf, flag);
            wait_byte(wait_at, last);
            trip_done(trips, i, warm, &tprev);
        } else {
            wait_byte(wait_at, last);
            acp_send_msg(mine, peer, n, last, sendbuf, flag);
        }
    }
    double t = (MPI_Wtime() - t0) / reps / 2;
    if (trips != NULL)
        *sp = trip_spread(trips, reps);
    *lastp = last;
    return t;
}

/* After both sides completed their copies and synchronised. */
static void acp_verify(size_t n, uint8_t last)
{
    uint8_t *base = acp_base;
    int peer = 1 - me;
    size_t bad = 0;
    if (n == 0) {
        bad = base[flag_off() + FLAG_IN] != last;
    } else {
        for (size_t i = 0; i + 1 < n; i++)
            if (base[i] != pat((size_t)peer * 1000 + n, i))
                bad++;
        bad += base[n - 1] != last;
    }
    if (bad) {
        fprintf(stderr, "mpi_pingpong: rank %d: ACP, %zu bytes from rank %d: %zu bytes wrong\n", me, n, peer, bad);
        failures++;
    }
}

/* ---- barrier ----------------------------------------------------------------- */

typedef struct {
    double min, max, avg;
} spread_t;

static spread_t barrier_time(int acp)
{
    for (int i = 0; i < BARRIER_WARM; i++)
        acp ? (void)acp_sync() : (void)MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < BARRIER_REPS; i++)
        acp ? (void)acp_sync() : (void)MPI_Barrier(MPI_COMM_WORLD);
    double t = (MPI_Wtime() - t0) / BARRIER_REPS;
    spread_t s;
    MPI_Reduce(&t, &s.min, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &s.max, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    MPI_Reduce(&t, &s.avg, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    s.avg /= nprocs;
    return s;
}

/* ---- output --------------------------------------------------------------------- */

static void print_header(void)
{
    char host[256] = "unknown", date[64], lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len = 0;
    gethostname(host, sizeof host);
    time_t t = time(NULL);
    strftime(date, sizeof date, "%a %b %e %H:%M:%S %Y", localtime(&t));
    struct utsname u;
    uname(&u);
    MPI_Get_library_version(lib, &len);
    char *nl = strchr(lib, '\n');
    if (nl)
        *nl = '\0';
    const char *tr = getenv("ACP_TRANSPORTS");
    printf("#------------------------------------------------------------\n");
    printf("#    libacp mpi_pingpong: MPI%s in one job\n", with_acp ? " and ACP" : "");
    printf("#------------------------------------------------------------\n");
    printf("# Date                  : %s\n", date);
    printf("# Machine               : %s\n", u.machine);
    printf("# System                : %s %s\n", u.sysname, u.release);
    printf("# Host                  : %s\n", host);
    printf("# MPI                   : %s\n", lib);
    /* Which of Open MPI's transports: `mpirun --mca btl tcp,self` reaches
     * the processes as OMPI_MCA_btl; MPICH names its device in the
     * library version above. */
    const char *btl = getenv("OMPI_MCA_btl");
    printf("# MPI transport         : %s%s\n", btl != NULL && *btl ? "btl " : "the library's default",
           btl != NULL && *btl ? btl : " (Open MPI: shared memory within a host)");
    if (with_acp)
        printf("# ACP                   : libacp %d.%d.%d, transports %s\n", ACP_VERSION_MAJOR, ACP_VERSION_MINOR,
               ACP_VERSION_PATCH, tr != NULL && *tr ? tr : "default");
    printf("# Processes             : %d\n", nprocs);
    printf("# Minimum message length in bytes:   0\n");
    printf("# Maximum message length in bytes:   %zu\n", max_size);
    printf("# Settle                : %g ms without MPI or ACP calls before timing\n", settle_ms);
    printf("#\n");
    printf("# t[usec]    = half the round-trip time (PingPong), time per call (Barrier)\n");
    printf("# Mbytes/sec = bytes / t, 1 Mbyte = 2^20 bytes\n");
    printf("\n");
}

static void print_pingpong(const char *what, const double *t, const trip_spread_t *sp)
{
    printf("#---------------------------------------------------\n");
    printf("# Benchmarking PingPong (%s)\n", what);
    printf("# #processes = 2\n");
    if (nprocs > 2)
        printf("# ( %d additional processes waiting in %s)\n", nprocs - 2, t == t_acp ? "acp_sync" : "MPI_Barrier");
    printf("#---------------------------------------------------\n");
    printf("%13s%13s%13s%13s", "#bytes", "#repetitions", "t[usec]", "Mbytes/sec");
    if (dist)
        print_trip_titles();
    printf("\n");
    for (int i = 0; i < nsizes; i++) {
        printf("%13zu%13d%13.3f%13.2f", sizes[i], reps_of[i], t[i] * 1e6, (double)sizes[i] / MB / t[i]);
        if (dist)
            print_trip_spread(sp[i]);
        printf("\n");
    }
    printf("\n");
}

static void print_barrier(const char *what, spread_t s)
{
    printf("#---------------------------------------------------\n");
    printf("# Benchmarking Barrier (%s)\n", what);
    printf("# #processes = %d\n", nprocs);
    printf("#---------------------------------------------------\n");
    printf("%13s%13s%13s%13s\n", "#repetitions", "t_min[usec]", "t_max[usec]", "t_avg[usec]");
    printf("%13d%13.2f%13.2f%13.2f\n", BARRIER_REPS, s.min * 1e6, s.max * 1e6, s.avg * 1e6);
    printf("\n");
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    setvbuf(stdout, NULL, _IOLBF, 0);
    parse_args(argc, argv);
    if (nprocs < 2 && !barrier_only) {
        if (me == 0)
            fprintf(stderr, "mpi_pingpong: needs 2 processes (mpirun -np 2 mpi_pingpong)\n");
        MPI_Finalize();
        return 2;
    }
    if (with_acp) {
        argv = with_starter_size(&argc, argv);
        if (acp_init(&argc, &argv) != 0) {
            fprintf(stderr, "mpi_pingpong: rank %d: acp_init failed\n", me);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (acp_rank() != me || acp_procs() != nprocs) {
            fprintf(stderr, "mpi_pingpong: rank %d: ACP says rank %d of %d, MPI rank %d of %d\n", me, acp_rank(),
                    acp_procs(), me, nprocs);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        acp_mine = acp_query_starter_ga(me);
        acp_peer = nprocs > 1 ? acp_query_starter_ga(me == 1 ? 0 : 1) : ACP_GA_NULL;
        acp_base = acp_query_address(acp_mine);
        if (acp_query_address(acp_mine + smem_needed() - 1) == NULL) {
            fprintf(stderr, "mpi_pingpong: rank %d: starter memory smaller than %zu bytes; give --acp-size-smem %zu\n",
                    me, smem_needed(), smem_needed());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
    }
    mpi_send = malloc(max_size);
    mpi_recv = malloc(max_size);
    if (mpi_send == NULL || mpi_recv == NULL) {
        fprintf(stderr, "mpi_pingpong: rank %d: cannot allocate 2 × %zu bytes\n", me, max_size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (me == 0)
        print_header();
    if (with_acp) {
        /* The first access to the peer's memory and the first acp_sync go
         * through Go (they map the peer's memory and engine area). */
        if (acp_peer != ACP_GA_NULL)
            acp_complete(acp_copy(acp_mine + touch_off(), acp_peer + touch_off(), 1, ACP_HANDLE_NULL));
        acp_sync();
    }
    MPI_Barrier(MPI_COMM_WORLD); /* then all end the settling spin together */
    for (double end = MPI_Wtime() + settle_ms * 1e-3; MPI_Wtime() < end;)
        ; /* settle: no MPI or ACP calls */

    for (size_t n = 0; n <= max_size && nsizes < MAX_SIZES && !barrier_only; n = n ? 2 * n : 1) {
        if (n < min_size)
            continue;
        int reps = reps_for(n);
        sizes[nsizes] = n;
        reps_of[nsizes] = reps;
        MPI_Barrier(MPI_COMM_WORLD);
        if (me <= 1)
            t_mpi[nsizes] = mpi_pingpong(n, reps, &sp_mpi[nsizes]);
        MPI_Barrier(MPI_COMM_WORLD);
        if (with_acp) {
            uint8_t last = 0;
            acp_sync();
            if (me <= 1)
                t_acp[nsizes] = acp_pingpong(n, reps, &last, &sp_acp[nsizes]);
            acp_sync(); /* both sides' last copies are complete: data may be checked */
            if (me <= 1)
                acp_verify(n, last);
        }
        nsizes++;
    }
    spread_t mpi_bar = barrier_time(0), acp_bar = {0, 0, 0};
    if (with_acp)
        acp_bar = barrier_time(1);

    if (me == 0) {
        if (!barrier_only)
            print_pingpong("MPI_Send/MPI_Recv", t_mpi, sp_mpi);
        if (with_acp && !barrier_only)
            print_pingpong("acp_copy put + acp_complete; peer spins on the last byte", t_acp, sp_acp);
        print_barrier("MPI_Barrier", mpi_bar);
        if (with_acp)
            print_barrier("acp_sync", acp_bar);
        if (with_acp && !barrier_only) {
            printf("#---------------------------------------------------\n");
            printf("# Comparison: ACP put pingpong / MPI pingpong (same job)\n");
            printf("#---------------------------------------------------\n");
            printf("%13s%13s%13s%13s\n", "#bytes", "MPI t[usec]", "ACP t[usec]", "ACP/MPI");
            for (int i = 0; i < nsizes; i++)
                printf("%13zu%13.2f%13.2f%13.2f\n", sizes[i], t_mpi[i] * 1e6, t_acp[i] * 1e6, t_acp[i] / t_mpi[i]);
            printf("%13s%13.2f%13.2f%13.2f\n", "barrier", mpi_bar.avg * 1e6, acp_bar.avg * 1e6, acp_bar.avg / mpi_bar.avg);
            printf("\n");
        }
    }
    int fin = 0;
    if (with_acp)
        fin = acp_finalize();
    int all = failures + (fin != 0), total = 0;
    MPI_Allreduce(&all, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (failures)
        fprintf(stderr, "mpi_pingpong: rank %d: %d verification failure(s)\n", me, failures);
    if (fin != 0)
        fprintf(stderr, "mpi_pingpong: rank %d: acp_finalize failed\n", me);
    free(mpi_send);
    free(mpi_recv);
    MPI_Finalize();
    return total ? 1 : 0;
}
