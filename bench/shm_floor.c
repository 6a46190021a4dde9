/*
 * shm_floor.c - what this host's CPUs allow two processes that share
 * memory, with no library between them: the floor under acpbench's
 * same-node pingpongs.
 *
 *   build/bench/shm_floor [-min BYTES] [-max BYTES] [-reps N] [-rounds R] [-cpus A,B]
 *
 * Two processes (one forks the other) share one anonymous mapping, each
 * pinned to one CPU (by default the first two this process may use,
 * where acprun binds two ranks),
 * and time a pingpong in four ways for each message size:
 *
 *   flag        the sender copies the message into the peer's buffer, its
 *               last byte a value new each trip, and the receiver polls that
 *               byte and reads nothing else: acpbench's put pingpong without
 *               the library. One cache line crosses each way, however long
 *               the message; at 0 bytes the message is that byte alone.
 *   flag+read   the same, and the receiver then copies the message into a
 *               buffer of its own, as the receiver of a message must at
 *               least read it: every line crosses each way. The least a
 *               channel can cost.
 *   ring        a channel's message without the library (capi/chfast.c):
 *               the sender copies the payload into the next slot of the
 *               receiver's ring (16 slots of 4 KiB, a 64-byte header) with
 *               glibc's memcpy and stores the slot's sequence number last;
 *               the receiver polls that number, copies the payload into a
 *               buffer of its own and releases slots every half ring.
 *               Every line of the message crosses each way.
 *   ring-movsb  the same with `rep movsb` into the ring (x86-64 only; the
 *               library's choice from 512 bytes on CPUs with ERMS).
 *
 * Each size runs R alternated rounds (default 5) of the four, and the
 * table shows the median of each, the ratio of flag+read to flag and that
 * of the faster ring to flag. A library's channel/put ratio at a size
 * (acpbench chpingpong) cannot be much lower than read/flag: a channel's
 * receiver must read the message, a put pingpong's need not.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "floor.h"

#define SLOT_SIZE 4096
#define SLOT_COUNT 16
#define HEADER_SIZE 64
#define PAYLOAD (SLOT_SIZE - HEADER_SIZE)

enum { MODE_FLAG, MODE_FLAG_READ, MODE_RING, MODE_RING_MOVSB, MODES };

/* One process's receiving side, in the shared mapping. */
struct side {
    char ring[SLOT_SIZE * SLOT_COUNT];
    _Alignas(64) uint64_t released; /* the receiver's count of slots it gave back */
    _Alignas(128) char flagbuf[PAYLOAD + 128];
};

struct shared {
    struct side side[2];
    _Alignas(128) uint64_t arrived[2]; /* barrier counts */
    _Alignas(128) int failed;          /* a side found a message wrong: both stop */
};

static struct shared *sh;
static int me;
static uint64_t sent, taken; /* slots written to the peer, taken from mine */
static char *mine_priv;      /* the receiver's own buffer */
static char *source;         /* what the sender copies from */

/* Every wait checks it: the other side may have stopped. */
static inline void check_peer(void)
{
    if (__atomic_load_n(&sh->failed, __ATOMIC_RELAXED))
        exit(1);
}

static void barrier(void)
{
    static uint64_t round;
    round++;
    __atomic_store_n(&sh->arrived[me], round, __ATOMIC_RELEASE);
    while (__atomic_load_n(&sh->arrived[1 - me], __ATOMIC_ACQUIRE) < round)
        check_peer();
}

static void copy_movsb(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
#else
    memcpy(dst, src, n);
#endif
}

static void copy_in(int mode, void *dst, const void *src, size_t n)
{
    if (mode == MODE_RING_MOVSB) {
        copy_movsb(dst, src, n);
        return;
    }
    __asm__("" : "+r"(n)); /* glibc's memcpy, not gcc's expansion for a known bound */
    memcpy(dst, src, n);
}

static void ring_send(int mode, size_t n)
{
    struct side *peer = &sh->side[1 - me];
    while (sent - __atomic_load_n(&peer->released, __ATOMIC_ACQUIRE) >= SLOT_COUNT)
        check_peer();
    char *s = peer->ring + (sent % SLOT_COUNT) * SLOT_SIZE;
    if (n > 0)
        copy_in(mode, s + HEADER_SIZE, source, n);
    *(uint32_t *)(s + 12) = (uint32_t)n;
    __atomic_store_n((uint64_t *)s, sent + 1, __ATOMIC_RELEASE);
    sent++;
}

static void ring_recv(size_t n, uint8_t v)
{
    struct side *my = &sh->side[me];
    char *s = my->ring + (taken % SLOT_COUNT) * SLOT_SIZE;
    while (__atomic_load_n((uint64_t *)s, __ATOMIC_ACQUIRE) != taken + 1)
        check_peer();
    size_t len = *(uint32_t *)(s + 12);
    for (size_t o = 0; o < len; o += 64)
        __builtin_prefetch(s + HEADER_SIZE + o);
    memcpy(mine_priv, s + HEADER_SIZE, len);
    if (len != n || (n > 0 && (uint8_t)mine_priv[n - 1] != v)) {
        fprintf(stderr, "shm_floor: ring: message of %zu bytes arrived wrong\n", n);
        __atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
        exit(1);
    }
    taken++;
    if (taken % (SLOT_COUNT / 2) == 0)
        __atomic_store_n(&my->released, taken, __ATOMIC_RELEASE);
}

static void flag_send(size_t n, uint8_t v)
{
    char *dst = sh->side[1 - me].flagbuf;
    if (n == 0) {
        __atomic_store_n((uint8_t *)dst, v, __ATOMIC_RELEASE);
        return;
    }
    copy_in(MODE_FLAG, dst, source, n);
}

static void flag_recv(int mode, size_t n, uint8_t v)
{
    char *buf = sh->side[me].flagbuf;
    volatile uint8_t *p = (uint8_t *)buf + (n > 0 ? n - 1 : 0);
    while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
        check_peer();
    if (mode == MODE_FLAG_READ && n > 0) {
        __asm__("" : "+r"(n));
        memcpy(mine_priv, buf, n);
    }
}

static unsigned trip; /* flag values never repeat back to back, over all runs */

/* One pingpong of reps round trips (a tenth more first, untimed); rank 0's
 * one-way time in seconds. Both processes call it. */
static double pingpong(int mode, size_t n, int reps)
{
    int warm = reps / 10 + 2;
    barrier();
    double t0 = 0;
    for (int i = 0; i < warm + reps; i++) {
        if (i == warm)
            t0 = floor_now();
        uint8_t v = (uint8_t)(1 + trip++ % 255);
        if (n > 0)
            source[n - 1] = (char)v;
        int first = me == 0;
        for (int turn = 0; turn < 2; turn++, first = !first) {
            if (first) {
                if (mode == MODE_FLAG || mode == MODE_FLAG_READ)
                    flag_send(n, v);
                else
                    ring_send(mode, n);
            } else {
                if (mode == MODE_FLAG || mode == MODE_FLAG_READ)
                    flag_recv(mode, n, v);
                else
                    ring_recv(n, v);
            }
        }
    }
    double t = (floor_now() - t0) / reps / 2;
    barrier();
    return t;
}

int main(int argc, char **argv)
{
    floor_opts o = {.min_size = 0, .max_size = 2048, .reps = 20000, .rounds = 5, .cpu = {-1, -1}};
    floor_parse(argc, argv, "shm_floor", PAYLOAD, &o);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    mine_priv = aligned_alloc(64, SLOT_SIZE);
    source = aligned_alloc(64, SLOT_SIZE);
    if (sh == MAP_FAILED || mine_priv == NULL || source == NULL) {
        fprintf(stderr, "shm_floor: out of memory\n");
        return 1;
    }
    memset(sh, 0, sizeof *sh);
    memset(source, 0x5a, SLOT_SIZE);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("shm_floor: fork");
        return 1;
    }
    me = child == 0;
    if (me == 1)
        prctl(PR_SET_PDEATHSIG, SIGKILL); /* never outlive the timing side */
    if (!floor_pin("shm_floor", o.cpu[me])) {
        __atomic_store_n(&sh->failed, 1, __ATOMIC_RELAXED);
        return 2;
    }
    if (me == 0) {
        floor_title("shm_floor: two processes, no library", &o);
        printf("%13s%13s%13s%13s%13s%13s%13s\n", "#bytes", "flag", "flag+read", "ring", "ring-movsb", "read/flag",
               "ring/flag");
    }
    double t[MODES][FLOOR_MAX_ROUNDS];
    for (long n = o.min_size; n <= o.max_size; n = n ? 2 * n : 1) {
        for (int k = 0; k < o.rounds; k++)
            for (int m = 0; m < MODES; m++)
                t[m][k] = pingpong(m, (size_t)n, (int)o.reps);
        if (me == 0) {
            double f = floor_median(t[MODE_FLAG], (int)o.rounds), fr = floor_median(t[MODE_FLAG_READ], (int)o.rounds),
                   r = floor_median(t[MODE_RING], (int)o.rounds), rm = floor_median(t[MODE_RING_MOVSB], (int)o.rounds);
            printf("%13ld%13.3f%13.3f%13.3f%13.3f%13.2f%13.2f\n", n, f * 1e6, fr * 1e6, r * 1e6, rm * 1e6, fr / f,
                   (r < rm ? r : rm) / f);
            fflush(stdout);
        }
        if (n == o.max_size)
            break;
    }
    return floor_status(me, child);
}
