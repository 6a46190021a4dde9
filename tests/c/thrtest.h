/*
 * thrtest.h - what the tests with several threads per rank share: a
 * thread's failure report and running n threads over an array of their
 * arguments. The including test has `me` (its rank), includes acptest.h
 * first, and gives each thread's argument the fields `int t` (the
 * thread's number) and `int failures`, which the main thread adds up.
 */
#ifndef ACP_TESTS_THRTEST_H
#define ACP_TESTS_THRTEST_H

#include <pthread.h>

/* TFAIL(a, fmt, ...): thread a records a failure and reports its first 19
 * (a whole phase failing would otherwise print thousands of lines). */
#define TFAIL(a, ...)                                                               \
    do {                                                                            \
        (a)->failures++;                                                            \
        if ((a)->failures < 20) {                                                   \
            char m_[256];                                                           \
            snprintf(m_, sizeof m_, __VA_ARGS__);                                   \
            printf("rank %d: FAIL %s:%d: thread %d: %s\n", me, __FILE__, __LINE__, \
                   (a)->t, m_);                                                     \
        }                                                                           \
    } while (0)

/* Starts fn in n threads, thread t with the t-th of the arguments at args
 * (each size bytes), and waits for them all. */
static inline void run_threads(void *args, size_t size, int n, void *(*fn)(void *))
{
    pthread_t th[n];
    for (int t = 0; t < n; t++)
        if (pthread_create(&th[t], NULL, fn, (char *)args + (size_t)t * size) != 0)
            FATAL("pthread_create");
    for (int t = 0; t < n; t++)
        pthread_join(th[t], NULL);
}

#endif
