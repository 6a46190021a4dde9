/*
 * tripspread.h - the spread of a pingpong's single round trips (-dist in
 * acpbench and mpi_pingpong). On a shared machine the mean of a size's
 * repetitions hides whether every trip was slow or a few took a time
 * slice: rank 0 times each of its iterations (one send and the wait for
 * the answer: a round trip), and the table shows the minimum, median, 99th
 * percentile and maximum of their halves next to the mean.
 */
#ifndef ACP_BENCH_TRIPSPREAD_H
#define ACP_BENCH_TRIPSPREAD_H

#include <stdio.h>
#include <stdlib.h>

typedef struct {
    double min, p50, p99, max; /* seconds, one way (half a round trip) */
} trip_spread_t;

static int cmp_trip(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Room for n round trips (reused from size to size). */
static double *trip_buffer(int n)
{
    static double *v;
    static int cap;
    if (n > cap) {
        free(v);
        v = malloc((size_t)n * sizeof *v);
        if (v == NULL) {
            fprintf(stderr, "-dist: cannot allocate %d round-trip times\n", n);
            exit(1);
        }
        cap = n;
    }
    return v;
}

/* The spread of n times v (sorted in place), each multiplied by scale. */
static trip_spread_t spread_of(double *v, int n, double scale)
{
    qsort(v, (size_t)n, sizeof *v, cmp_trip);
    int k = (int)(0.99 * (n - 1) + 0.5);
    return (trip_spread_t){v[0] * scale, (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) * scale, v[k] * scale,
                           v[n - 1] * scale};
}

/* The spread of n round trips v (sorted in place), halved. */
static trip_spread_t trip_spread(double *v, int n) { return spread_of(v, n, 0.5); }

/* The column titles and one row's columns, in microseconds. */
static void print_trip_titles(void) { printf("%13s%13s%13s%13s", "t_min", "t_p50", "t_p99", "t_max"); }
static void print_trip_spread(trip_spread_t s)
{
    printf("%13.3f%13.3f%13.3f%13.3f", s.min * 1e6, s.p50 * 1e6, s.p99 * 1e6, s.max * 1e6);
}

#endif
