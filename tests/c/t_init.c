/*
 * t_init: acp_init, acp_rank, acp_procs, acp_sync, acp_finalize.
 *
 * Run as "t_init first --acp-verbose 0 second": acp_init must remove the
 * --acp-* pair wherever it stands (and whatever the launcher appended), keep
 * the program's own arguments in order and terminate argv with NULL.
 * Ranks must be unique and cover 0..N-1: every rank writes a record into
 * slot <rank> of every rank's starter memory, and each rank checks that all
 * N slots were filled by the rank they belong to.
 *
 * With ACPT_SINGLETON=1 in the environment the program is started without a
 * launcher and must be rank 0 of 1.
 */
#include "acptest.h"

#define TABLE_OFF 64  /* slot r: { r + 1, procs } as seen by rank r */
#define SRC_OFF   0   /* my own record, the source of my copies */

static void check_argv(int argc, char **argv)
{
    CHECK_INT(argc, 3, "argc after acp_init");
    if (argc >= 3) {
        CHECK(strcmp(argv[1], "first") == 0, "argv[1] is \"%s\", want \"first\"", argv[1]);
        CHECK(strcmp(argv[2], "second") == 0, "argv[2] is \"%s\", want \"second\"", argv[2]);
    }
    if (argc >= 0)
        CHECK(argv[argc] == NULL, "argv[argc] is not NULL after acp_init");
    for (int i = 0; i < argc; i++)
        CHECK(argv[i] != NULL && strncmp(argv[i], "--acp-", 6) != 0,
              "argv[%d] = \"%s\" left by acp_init", i, argv[i] ? argv[i] : "(null)");
    CHECK(argc >= 1 && argv[0] != NULL && strstr(argv[0], "t_init") != NULL,
          "argv[0] is not the program name");
}

/* Every rank stores { rank + 1, procs } in slot <rank> of every rank. */
static void exchange_records(int me, int n)
{
    uint64_t *src = acpt_starter(SRC_OFF);
    src[0] = (uint64_t)me + 1;
    src[1] = (uint64_t)n;
    acp_ga_t mine = acp_query_starter_ga(me);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    for (int r = 0; r < n; r++) {
        acp_ga_t dst = acp_query_starter_ga(r) + TABLE_OFF + 16 * (uint64_t)me;
        acp_handle_t h = acp_copy(dst, mine + SRC_OFF, 16, ACP_HANDLE_NULL);
        CHECK(h != ACP_HANDLE_NULL, "acp_copy of my record to rank %d returned ACP_HANDLE_NULL", r);
    }
    acp_complete(ACP_HANDLE_ALL);
    CHECK_INT(acp_sync(), 0, "acp_sync");
    const uint64_t *table = acpt_starter(TABLE_OFF);
    for (int r = 0; r < n; r++) {
        CHECK_INT(table[2 * r], r + 1, "slot %d: rank + 1 of the process that wrote it", r);
        CHECK_INT(table[2 * r + 1], n, "slot %d: acp_procs() seen by rank %d", r, r);
    }
}

int main(int argc, char **argv)
{
    int argc0 = argc;
    acpt_init(&argc, &argv);
    CHECK(argc < argc0, "acp_init removed nothing from argv (had %d elements)", argc0);
    check_argv(argc, argv);

    int me = acp_rank(), n = acp_procs();
    CHECK(n >= 1 && n <= 1 << 20, "acp_procs() = %d", n);
    CHECK(me >= 0 && me < n, "acp_rank() = %d outside 0..%d", me, n - 1);
    CHECK_INT(acp_rank(), me, "acp_rank() is stable");
    CHECK_INT(acp_procs(), n, "acp_procs() is stable");
    const char *single = getenv("ACPT_SINGLETON");
    if (single != NULL && strcmp(single, "1") == 0) {
        CHECK_INT(me, 0, "singleton rank");
        CHECK_INT(n, 1, "singleton procs");
    }
    acpt_need_smem(TABLE_OFF + 16 * (size_t)n);
    exchange_records(me, n);
    for (int i = 0; i < 20; i++)
        CHECK_INT(acp_sync(), 0, "acp_sync round %d", i);
    return acpt_finish("t_init");
}
