/*
 * floor.h - what shm_floor and net_floor share: their command line, the two
 * CPUs their processes run on, the table's title, medians. Each defines
 * its defaults in the floor_opts it passes to floor_parse.
 */
#ifndef ACP_BENCH_FLOOR_H
#define ACP_BENCH_FLOOR_H

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>

#define FLOOR_MAX_ROUNDS 99

typedef struct {
    long min_size, max_size, reps, rounds;
    long cpu[2]; /* -1: the first two this process may use */
} floor_opts;

/* CLOCK_MONOTONIC in seconds. */
static double floor_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static long floor_number(const char *name, const char *opt, const char *s, long lo, long hi)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *s == '\0' || *end != '\0' || v < lo || v > hi) {
        fprintf(stderr, "%s: %s %s: want a whole number from %ld to %ld\n", name, opt, s, lo, hi);
        exit(2);
    }
    return v;
}

/* Parses [-min BYTES] [-max BYTES] [-reps N] [-rounds R] [-cpus A,B] into
 * o, sizes up to size_limit, and settles the two CPUs: those given, which
 * this process must be allowed, or by default the first two it may use
 * (where acprun binds two ranks). A bad value ends the program with
 * status 2 and a message naming it. */
static void floor_parse(int argc, char **argv, const char *name, long size_limit, floor_opts *o)
{
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (val == NULL || (strcmp(opt, "-min") && strcmp(opt, "-max") && strcmp(opt, "-reps") && strcmp(opt, "-rounds") &&
                            strcmp(opt, "-cpus"))) {
            fprintf(stderr, "usage: %s [-min BYTES] [-max BYTES] [-reps N] [-rounds R] [-cpus A,B]\n"
                            "  sizes 0..%ld bytes, R from 1 to %d\n",
                    name, size_limit, FLOOR_MAX_ROUNDS);
            exit(2);
        }
        i++;
        if (strcmp(opt, "-min") == 0)
            o->min_size = floor_number(name, opt, val, 0, size_limit);
        else if (strcmp(opt, "-max") == 0)
            o->max_size = floor_number(name, opt, val, 0, size_limit);
        else if (strcmp(opt, "-reps") == 0)
            o->reps = floor_number(name, opt, val, 1, 100000000);
        else if (strcmp(opt, "-rounds") == 0)
            o->rounds = floor_number(name, opt, val, 1, FLOOR_MAX_ROUNDS);
        else if (sscanf(val, "%ld,%ld", &o->cpu[0], &o->cpu[1]) != 2 || o->cpu[0] < 0 || o->cpu[1] < 0 ||
                 o->cpu[0] >= CPU_SETSIZE || o->cpu[1] >= CPU_SETSIZE) {
            fprintf(stderr, "%s: -cpus %s: want two CPU numbers, as in -cpus 0,1\n", name, val);
            exit(2);
        }
    }
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        fprintf(stderr, "%s: sched_getaffinity: %s\n", name, strerror(errno));
        exit(2);
    }
    if (o->cpu[0] < 0) {
        int k = 0;
        for (int i = 0; i < CPU_SETSIZE && k < 2; i++)
            if (CPU_ISSET(i, &allowed))
                o->cpu[k++] = i;
        if (k < 2) {
            fprintf(stderr, "%s: needs two CPUs, and this process may use fewer (taskset, cgroup): each side spins\n", name);
            exit(2);
        }
    }
    for (int i = 0; i < 2; i++)
        if (!CPU_ISSET(o->cpu[i], &allowed)) {
            fprintf(stderr, "%s: -cpus %ld,%ld: this process may not run on CPU %ld\n", name, o->cpu[0], o->cpu[1],
                    o->cpu[i]);
            exit(2);
        }
}

/* Pins the calling process to cpu; 0 when the kernel refuses (a message
 * said why). */
static int floor_pin(const char *name, long cpu)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET((int)cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set) == 0)
        return 1;
    fprintf(stderr, "%s: cannot run on CPU %ld (-cpus): %s\n", name, cpu, strerror(errno));
    return 0;
}

/* The table's `#` block: what runs, the method, the date and the host. */
static void floor_title(const char *what, const floor_opts *o)
{
    struct utsname u;
    uname(&u);
    time_t t = time(NULL);
    char date[32];
    strftime(date, sizeof date, "%Y-%m-%d %H:%M", localtime(&t));
    printf("#---------------------------------------------------\n");
    printf("# %s, CPUs %ld and %ld\n", what, o->cpu[0], o->cpu[1]);
    printf("# %ld round trips per run, median of %ld alternated rounds, one-way us\n", o->reps, o->rounds);
    printf("# %s, host %s\n", date, u.nodename);
    printf("#---------------------------------------------------\n");
}

static int floor_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v). */
static double floor_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, floor_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* main's status: the forked side (me 1) ends with 0, the timing side with
 * 0 only when the other ended so too. */
static int floor_status(int me, pid_t child)
{
    if (me == 1)
        return 0;
    int status = 0;
    waitpid(child, &status, 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}

#endif
