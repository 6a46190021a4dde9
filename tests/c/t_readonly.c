/*
 * t_readonly: memory a peer may read but not write, and memory that
 * stopped being accessible after it was registered, never kill its owner.
 *
 * Every rank registers two regions:
 * - RO: RO_SIZE bytes filled with its pattern, then made read-only
 *   (mprotect PROT_READ), as a program exposing a file mapped read-only or
 *   a constant table would;
 * - NA: a page registered readable and writable, then made inaccessible
 *   (mprotect PROT_NONE): what a peer meets when the owner unmapped or
 *   protected memory it had not unregistered.
 * Then every rank, on itself and on its neighbour:
 * - reads RO whole and in pieces (the values are the owner's);
 * - writes into RO (8 bytes, a page, all of it: udp's datagrams, its
 *   fragments received in place and a put of several fragments), applies
 *   every atomic width and kind to it (compare-and-swaps that would
 *   succeed): each handle completes and RO keeps its pattern;
 * - reads and writes NA, atomics on NA: each completes;
 * - reads into its own RO: refused likewise;
 * - with np >= 3, third-party copies out of and into a peer's RO.
 * After a synchronisation every owner checks its RO and is alive to do it,
 * and every rank's ordinary copies to its neighbour still arrive.
 * Over shm, a peer's copy into registered memory goes through the kernel
 * (process_vm_writev), which refuses it; the owner's own progress loop
 * serves atomics and udp's copies: those are what used to die of SIGSEGV.
 *
 * Built a second time as t_readonly_reg (READONLY_BEFORE_REGISTRATION):
 * RO is read-only before it is registered, and there is no NA. That one
 * runs over ib too (registered for remote reads only, refused writes
 * never posted); this one cannot: the adapter writes the pages it pinned
 * at registration whatever their protection since.
 *
 * Run with --acp-size-smem 1048576 and ACP_VERBOSE=1 (the refusals are
 * printed; the test does not read them).
 */
#include <sys/mman.h>

#include "acptest.h"

#define RO_SIZE   (256 * 1024)
#define EXCH_OFF  0      /* GA exchange, 8 * (N + 1) bytes, twice */
#define SCR_OFF   8192   /* scratch: RO_SIZE bytes */
#define TP_OFF    (SCR_OFF + RO_SIZE) /* third-party copies land here: 64 bytes per rank */
#define MSG_OFF   (TP_OFF + 64 * 64)  /* the previous rank's word at the end: 8 bytes */
#define SMEM_NEED (MSG_OFF + 64)

#ifdef READONLY_BEFORE_REGISTRATION
#define PROG "t_readonly_reg"
#else
#define PROG "t_readonly"
#endif

static int me, nprocs;
static long page;

static void *map_pages(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        FATAL("mmap");
    return p;
}

/* Reads RO of rank r into scratch and checks it against r's pattern. */
static void check_ro_of(int r, acp_ga_t ro, const char *when)
{
    acp_ga_t scr = acp_query_starter_ga(me) + SCR_OFF;
    uint8_t *s = acpt_starter(SCR_OFF);
    memset(s, 0, RO_SIZE);
    WAIT(acp_copy(scr, ro, RO_SIZE, ACP_HANDLE_NULL), "acp_copy from a read-only region");
    char what[160];
    snprintf(what, sizeof what, "rank %d's read-only region read by rank %d %s", r, me, when);
    CHECK_FILL(s, RO_SIZE, 1000 + (uint64_t)r, what);
    /* pieces at odd offsets */
    for (size_t off = 1; off < RO_SIZE; off += 40961) {
        size_t n = off % 3000 + 1;
        if (off + n > RO_SIZE)
            n = RO_SIZE - off;
        memset(s, 0, n);
        WAIT(acp_copy(scr, ro + off, n, ACP_HANDLE_NULL), "acp_copy of a piece of a read-only region");
        uint8_t want[3001];
        for (size_t i = 0; i < n; i++)
            want[i] = acpt_pat(1000 + (uint64_t)r, off + i);
        CHECK(memcmp(s, want, n) == 0, "%s: %zu bytes at offset %zu differ", what, n, off);
    }
}

/* Writes and atomics into rank r's RO and NA: every handle completes. */
static void assault(int r, acp_ga_t ro, acp_ga_t na)
{
    acp_ga_t scr = acp_query_starter_ga(me) + SCR_OFF;
    memset(acpt_starter(SCR_OFF), 0x5a, RO_SIZE);
    static const size_t sizes[] = {8, 1, 4096, 65536, RO_SIZE};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        WAIT(acp_copy(ro + (sizes[i] == 1 ? 17 : 0), scr, sizes[i], ACP_HANDLE_NULL),
             "acp_copy into a read-only region");
    /* several in flight at once, then one wait: small ones, and large ones
     * (udp receives fragments from 16 KiB on straight into their
     * destination, where the kernel refuses them) */
    for (int i = 0; i < 8; i++)
        if (acp_copy(ro + 512 * (uint64_t)i, scr, 512, ACP_HANDLE_NULL) == ACP_HANDLE_NULL)
            FAIL("acp_copy into rank %d's read-only region returned ACP_HANDLE_NULL (in flight %d)", r, i);
    for (int i = 0; i < 4; i++)
        if (acp_copy(ro + 65536 * (uint64_t)i, scr, 65536, ACP_HANDLE_NULL) == ACP_HANDLE_NULL)
            FAIL("acp_copy of 64 KiB into rank %d's read-only region returned ACP_HANDLE_NULL (in flight %d)", r, i);
    acp_complete(ACP_HANDLE_ALL);

    acp_ga_t res = scr + RO_SIZE - 64; /* result words: my scratch */
    /* Compare-and-swaps that would succeed (the words' own values): one
     * that fails writes nothing. */
    uint8_t words[8];
    for (int i = 0; i < 8; i++)
        words[i] = acpt_pat(1000 + (uint64_t)r, 64 + (uint64_t)i);
    uint32_t w4;
    uint64_t w8;
    memcpy(&w4, words, 4);
    memcpy(&w8, words, 8);
    WAIT(acp_cas4(res, ro + 64, w4, w4 + 1, ACP_HANDLE_NULL), "acp_cas4 on a read-only region");
    WAIT(acp_cas8(res, ro + 64, w8, w8 + 1, ACP_HANDLE_NULL), "acp_cas8 on a read-only region");
    WAIT(acp_swap4(res, ro + 72, 7, ACP_HANDLE_NULL), "acp_swap4 on a read-only region");
    WAIT(acp_swap8(res, ro + 72, 7, ACP_HANDLE_NULL), "acp_swap8 on a read-only region");
    WAIT(acp_add4(res, ro + 80, 1, ACP_HANDLE_NULL), "acp_add4 on a read-only region");
    WAIT(acp_add8(res, ro + 80, 1, ACP_HANDLE_NULL), "acp_add8 on a read-only region");
    WAIT(acp_xor4(res, ro + 88, 0xff, ACP_HANDLE_NULL), "acp_xor4 on a read-only region");
    WAIT(acp_xor8(res, ro + 88, 0xff, ACP_HANDLE_NULL), "acp_xor8 on a read-only region");
    WAIT(acp_or4(res, ro + 96, 0xff, ACP_HANDLE_NULL), "acp_or4 on a read-only region");
    WAIT(acp_or8(res, ro + 96, 0xff, ACP_HANDLE_NULL), "acp_or8 on a read-only region");
    WAIT(acp_and4(res, ro + 104, 0, ACP_HANDLE_NULL), "acp_and4 on a read-only region");
    WAIT(acp_and8(res, ro + 104, 0, ACP_HANDLE_NULL), "acp_and8 on a read-only region");
    /* An atomic whose result location is the read-only region: its
     * target is my own word; only that the handle completes is checked
     * (whether the target changed when the result could not be delivered
     * is not specified). */
    WAIT(acp_add8(ro + 112, scr + RO_SIZE - 8, 1, ACP_HANDLE_NULL), "acp_add8 with its result in a read-only region");

    if (na == ACP_GA_NULL)
        return;
    WAIT(acp_copy(scr, na, 64, ACP_HANDLE_NULL), "acp_copy from an inaccessible region");
    WAIT(acp_copy(na, scr, 64, ACP_HANDLE_NULL), "acp_copy into an inaccessible region");
    WAIT(acp_copy(na, scr, (size_t)page, ACP_HANDLE_NULL), "acp_copy of a page into an inaccessible region");
    WAIT(acp_add8(res, na, 1, ACP_HANDLE_NULL), "acp_add8 on an inaccessible region");
    WAIT(acp_cas4(res, na + 4, 0, 1, ACP_HANDLE_NULL), "acp_cas4 on an inaccessible region");
    WAIT(acp_copy(na, ro, 64, ACP_HANDLE_NULL), "acp_copy from a read-only into an inaccessible region");
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    nprocs = acp_procs();
    acpt_need_smem(SMEM_NEED);
    page = sysconf(_SC_PAGESIZE);

    uint8_t *ro = map_pages(RO_SIZE);
    acpt_fill(ro, RO_SIZE, 1000 + (uint64_t)me);
    uint64_t ro_of[nprocs + 1], na_of[nprocs + 1];
#ifdef READONLY_BEFORE_REGISTRATION
    uint8_t *na = NULL;
    if (mprotect(ro, RO_SIZE, PROT_READ) != 0)
        FATAL("mprotect");
    acp_atkey_t kro = acp_register_memory(ro, RO_SIZE, 0), kna = ACP_ATKEY_NULL;
    if (kro == ACP_ATKEY_NULL)
        FATAL("acp_register_memory of memory mapped read-only (ACP_VERBOSE=1 says why)");
    acpt_allgather_u64(acp_query_ga(kro, ro), ro_of, EXCH_OFF);
    for (int r = 0; r < nprocs; r++)
        na_of[r] = ACP_GA_NULL;
#else
    uint8_t *na = map_pages((size_t)page);
    memset(na, 0x11, (size_t)page);
    acp_atkey_t kro = acp_register_memory(ro, RO_SIZE, 0);
    acp_atkey_t kna = acp_register_memory(na, (size_t)page, 0);
    if (kro == ACP_ATKEY_NULL || kna == ACP_ATKEY_NULL)
        FATAL("acp_register_memory of a fresh mapping");
    acpt_allgather_u64(acp_query_ga(kro, ro), ro_of, EXCH_OFF);
    acpt_allgather_u64(acp_query_ga(kna, na), na_of, EXCH_OFF);
    if (mprotect(ro, RO_SIZE, PROT_READ) != 0 || mprotect(na, (size_t)page, PROT_NONE) != 0)
        FATAL("mprotect");
#endif
    acp_sync();

    int next = (me + 1) % nprocs;
    check_ro_of(me, ro_of[me], "before anything was written");
    check_ro_of(next, ro_of[next], "before anything was written");
    assault(me, ro_of[me], na_of[me]);
    assault(next, ro_of[next], na_of[next]);
    check_ro_of(next, ro_of[next], "after writes into it were refused");

    if (na != NULL) {
        /* Puts out of my own inaccessible page into the next rank's
         * third-party area (udp sends straight from the source, in batches
         * an unreadable page would fail whole), and a local copy out of it. */
        acp_ga_t tp_next = acp_query_starter_ga(next) + TP_OFF + 64 * (uint64_t)(me % 64);
        WAIT(acp_copy(tp_next, na_of[me], 64, ACP_HANDLE_NULL), "acp_copy out of my inaccessible page to the next rank");
        WAIT(acp_copy(tp_next, na_of[me], 64, ACP_HANDLE_NULL), "acp_copy out of my inaccessible page, again");
        WAIT(acp_copy(acp_query_starter_ga(me) + SCR_OFF, na_of[me], (size_t)page, ACP_HANDLE_NULL),
             "acp_copy of my inaccessible page into my starter memory");
    }

    /* Gets into my own read-only region: from the next rank's (read-only
     * too, and readable) memory, small and large, several in flight. */
    WAIT(acp_copy(ro_of[me] + 8, ro_of[next], 64, ACP_HANDLE_NULL), "acp_copy of 64 bytes into my read-only region");
    WAIT(acp_copy(ro_of[me], ro_of[next], 131072, ACP_HANDLE_NULL), "acp_copy of 128 KiB into my read-only region");
    for (int i = 0; i < 3; i++)
        if (acp_copy(ro_of[me] + 65536 * (uint64_t)i, ro_of[next], 65536, ACP_HANDLE_NULL) == ACP_HANDLE_NULL)
            FAIL("acp_copy of 64 KiB into my read-only region returned ACP_HANDLE_NULL (in flight %d)", i);
    acp_complete(ACP_HANDLE_ALL);
    CHECK_FILL(ro, RO_SIZE, 1000 + (uint64_t)me, "my read-only region after gets into it");

    if (nprocs >= 3) {
        /* third-party: out of next's RO into next2's starter scratch, and
         * from next2's starter memory into next's RO */
        int next2 = (me + 2) % nprocs;
        acp_ga_t far = acp_query_starter_ga(next2) + TP_OFF + 64 * (uint64_t)(me % 64);
        WAIT(acp_copy(far, ro_of[next] + 4096, 64, ACP_HANDLE_NULL), "third-party acp_copy out of a read-only region");
        acp_ga_t mine = acp_query_starter_ga(me) + SCR_OFF;
        uint8_t *s = acpt_starter(SCR_OFF);
        memset(s, 0, 64);
        WAIT(acp_copy(mine, far, 64, ACP_HANDLE_NULL), "acp_copy back from the third rank");
        uint8_t want[64];
        for (int i = 0; i < 64; i++)
            want[i] = acpt_pat(1000 + (uint64_t)next, 4096 + (uint64_t)i);
        CHECK(memcmp(s, want, 64) == 0, "third-party copy of rank %d's read-only bytes to rank %d differs", next, next2);
        WAIT(acp_copy(ro_of[next], far, 64, ACP_HANDLE_NULL), "third-party acp_copy into a read-only region");
        check_ro_of(next, ro_of[next], "after a third-party write into it was refused");
    }

    /* The neighbour is reached as before (over ib a write the adapter
     * refused would have ended the connection). */
    uint64_t *word = acpt_starter(SCR_OFF);
    *word = 0xc0de0000u + (uint64_t)me;
    WAIT(acp_copy(acp_query_starter_ga(next) + MSG_OFF, acp_query_starter_ga(me) + SCR_OFF, 8, ACP_HANDLE_NULL),
         "acp_copy to the next rank's starter memory");
    acp_sync();
    CHECK_HEX(*(uint64_t *)acpt_starter(MSG_OFF), 0xc0de0000u + (uint64_t)((me + nprocs - 1) % nprocs),
              "the word the previous rank put after its refused writes");
    CHECK_FILL(ro, RO_SIZE, 1000 + (uint64_t)me, "my read-only region after the others' writes");
    if (na != NULL && mprotect(na, (size_t)page, PROT_READ) == 0)
        CHECK_BYTES(na, (size_t)page, 0x11, "my inaccessible page after the others' writes");
    acp_sync();
    CHECK_INT(acp_unregister_memory(kro), 0, "acp_unregister_memory of the read-only region");
    if (na != NULL)
        CHECK_INT(acp_unregister_memory(kna), 0, "acp_unregister_memory of the inaccessible region");
    return acpt_finish(PROG);
}
