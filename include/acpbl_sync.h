/*
 * acpbl_sync.h - compatibility header for programs written for the original
 * ACP, whose benchmarks and samples include it for get_clock().
 *
 * get_clock() returns a cycle count (rdtsc) on x86-64, as the original did,
 * and CLOCK_MONOTONIC nanoseconds elsewhere. Only differences between two
 * calls on the same machine mean anything.
 */
#ifndef __ACPBL_SYNC_H__
#define __ACPBL_SYNC_H__

#include <stdint.h>

#if defined(__x86_64__)

static inline uint64_t get_clock(void)
{
    uint32_t lo, hi;
    __asm__ __volatile__("rdtsc" : "=a"(lo), "=d"(hi));
    return ((uint64_t)hi << 32) | lo;
}

#else

#include <time.h>

static inline uint64_t get_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif

#endif /* __ACPBL_SYNC_H__ */
