/*
 * hello.c - the smallest complete ACP program.
 *
 * Every rank writes a greeting into the starter memory of the next rank
 * (rank procs-1 writes to rank 0) with acp_copy, waits for everybody with
 * acp_sync, and prints and checks what it received.
 *
 *   cc hello.c $(pkg-config --cflags --libs acp) $(pkg-config --variable=rpath acp)
 *   acprun -np 4 ./a.out
 */
#include <stdio.h>
#include <string.h>

#include <acp.h>

#define GREETING_SIZE 64 /* fits the 1024-byte starter memory acprun gives */

static void greeting(char *buf, int from, int to)
{
    snprintf(buf, GREETING_SIZE, "hello from rank %d to rank %d", from, to);
}

int main(int argc, char **argv)
{
    if (acp_init(&argc, &argv) != 0)
        return 1;
    int rank = acp_rank(), procs = acp_procs();
    int next = (rank + 1) % procs, prev = (rank + procs - 1) % procs;

    /* The source of a copy must be registered memory (or starter memory). */
    static char out[GREETING_SIZE];
    greeting(out, rank, next);
    acp_atkey_t key = acp_register_memory(out, sizeof out, 0);
    acp_ga_t src = acp_query_ga(key, out);

    /* The destination is byte 0 of the next rank's starter memory, whose GA
     * every rank can compute without asking. */
    acp_handle_t h = acp_copy(acp_query_starter_ga(next), src, sizeof out, ACP_HANDLE_NULL);
    if (h == ACP_HANDLE_NULL)
        acp_abort("acp_copy failed");

    /* acp_sync completes our copy, then waits until every rank did the
     * same: after it, our starter memory holds the previous rank's words. */
    acp_sync();
    const char *in = acp_query_address(acp_query_starter_ga(rank));
    printf("rank %d of %d received: \"%s\"\n", rank, procs, in);

    char want[GREETING_SIZE];
    greeting(want, prev, rank);
    int ok = strcmp(in, want) == 0;
    if (!ok)
        fprintf(stderr, "rank %d: expected \"%s\"\n", rank, want);

    acp_unregister_memory(key);
    acp_finalize();
    return ok ? 0 : 1;
}
