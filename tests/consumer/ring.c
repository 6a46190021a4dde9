/*
 * ring.c - a complete ACP program that a newcomer builds against an
 * installed libacp (pkg-config, acpcc, CMake, modules) and runs under
 * acprun with several processes. It checks what it receives and exits
 * non-zero when a value is wrong.
 *
 * Every rank registers a buffer and publishes its GA in its starter
 * memory. Then, with N ranks:
 *   1. rank r puts 16 words into rank r+1's buffer;
 *   2. rank r copies rank r+1's words into rank r+2's buffer (neither end
 *      is the caller's when N >= 3);
 *   3. every rank adds r+1 to a counter in rank 0's starter memory.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <acp.h>

#define WORDS 16

static int failures;

static void check(uint64_t got, uint64_t want, const char *what, int rank)
{
    if (got != want) {
        printf("rank %d: FAIL %s (got %" PRIu64 ", want %" PRIu64 ")\n", rank, what, got, want);
        failures++;
    }
}

static uint64_t word(int phase, int rank, int i) { return (uint64_t)phase << 40 | (uint64_t)rank << 20 | (uint64_t)i; }

int main(int argc, char **argv)
{
    if (acp_init(&argc, &argv) != 0)
        return 1;
    int me = acp_rank(), n = acp_procs();
    int next = (me + 1) % n, next2 = (me + 2) % n, prev = (me + n - 1) % n, prev2 = (me + 2 * n - 2) % n;

    /* buffer: [0, WORDS) source, [WORDS, 2*WORDS) put target, [2*WORDS, 3*WORDS) copy target */
    static uint64_t buf[3 * WORDS];
    for (int i = 0; i < WORDS; i++)
        buf[i] = word(1, me, i);
    acp_atkey_t key = acp_register_memory(buf, sizeof buf, 0);
    if (key == ACP_ATKEY_NULL)
        acp_abort("acp_register_memory failed");

    /* starter memory: [0] my buffer's GA, [1] the counter (rank 0's is used), [2..] GAs of the others */
    uint64_t *starter = (uint64_t *)acp_query_address(acp_query_starter_ga(me));
    starter[0] = acp_query_ga(key, buf);
    acp_sync();
    acp_ga_t my_starter = acp_query_starter_ga(me);
    acp_complete(acp_copy(my_starter + 16, acp_query_starter_ga(next), 8, ACP_HANDLE_NULL));
    acp_complete(acp_copy(my_starter + 24, acp_query_starter_ga(next2), 8, ACP_HANDLE_NULL));
    acp_ga_t next_buf = starter[2], next2_buf = starter[3];
    acp_sync();

    /* 1. put; acp_sync completes it and waits for everybody's. */
    acp_complete(acp_copy(next_buf + 8 * WORDS, starter[0], 8 * WORDS, ACP_HANDLE_NULL));
    acp_sync();
    /* 2. the third-party copy of what rank r+1 received */
    acp_handle_t h = acp_copy(next2_buf + 16 * WORDS, next_buf + 8 * WORDS, 8 * WORDS, ACP_HANDLE_NULL);
    /* 3. started after the copy (order = h): add to rank 0's counter; the
     * old value lands in my starter word 4 */
    acp_handle_t a = acp_add8(my_starter + 32, acp_query_starter_ga(0) + 8, (uint64_t)me + 1, h);
    if (h == ACP_HANDLE_NULL || a == ACP_HANDLE_NULL)
        acp_abort("acp_copy or acp_add8 returned ACP_HANDLE_NULL");
    acp_complete(a);
    acp_sync();

    for (int i = 0; i < WORDS; i++) {
        check(buf[WORDS + i], word(1, prev, i), "word put by the previous rank", me);
        check(buf[2 * WORDS + i], word(1, prev2, i), "word copied from rank r-1 by rank r-2", me);
    }
    if (me == 0)
        check(starter[1], (uint64_t)n * (n + 1) / 2, "counter after every rank's acp_add8", me);
    check(starter[4] <= (uint64_t)n * (n + 1) / 2 - (me + 1), 1, "old value fetched by acp_add8 is in range", me);

    acp_unregister_memory(key);
    acp_finalize();
    printf("rank %d of %d: %s\n", me, n, failures ? "FAILED" : "ring ok");
    return failures ? 1 : 0;
}
