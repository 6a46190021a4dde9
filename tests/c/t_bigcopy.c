/*
 * t_bigcopy: one acp_copy of 4 GiB + 4096 bytes (sizes beyond 32 bits).
 *
 * Ranks 0 and 1 each map 4 GiB + 4096 bytes (private, anonymous, no swap
 * reservation) and register them. Rank 0 writes 16-byte patterns at a few
 * offsets, around 2^31 and 2^32 among them; rank 1 writes a non-zero marker
 * at spots where rank 0's memory is zero. Rank 0 puts the whole range with
 * one acp_copy; rank 1 then finds every pattern at its offset and zeros at
 * the marked spots and at samples across the range. Untouched source pages
 * read as zero without using memory; the destination does use 4 GiB.
 */
#include <sys/mman.h>

#include "acptest.h"

#define SIZE   (((size_t)4 << 30) + 4096)
#define PATLEN 16

static const size_t pat_at[] = {
    0, 4095, 4096, (size_t)1 << 20, ((size_t)1 << 31) - 8, (size_t)1 << 31,
    ((size_t)1 << 32) - 8, ((size_t)1 << 32) - 1, (size_t)1 << 32, ((size_t)1 << 32) + 8, SIZE - PATLEN,
};
static const size_t marked[] = {
    100, ((size_t)1 << 30) + 5, ((size_t)3 << 30) + 7, ((size_t)1 << 32) + 1000, SIZE - 100,
};
#define NPAT (sizeof pat_at / sizeof pat_at[0])
#define NMARK (sizeof marked / sizeof marked[0])

/* Patterns may overlap (2^32 - 8 and 2^32 - 1); the later one wins, so the
 * check recomputes the whole expected image of every patterned byte. */
static uint8_t expected_at(size_t off, int *patterned)
{
    uint8_t v = 0;
    *patterned = 0;
    for (size_t i = 0; i < NPAT; i++) {
        if (off >= pat_at[i] && off < pat_at[i] + PATLEN) {
            v = acpt_pat(pat_at[i], off - pat_at[i]);
            *patterned = 1;
        }
    }
    return v;
}

static void check_destination(const uint8_t *p)
{
    for (size_t i = 0; i < NPAT; i++) {
        for (size_t k = 0; k < PATLEN; k++) {
            size_t off = pat_at[i] + k;
            int pat;
            uint8_t want = expected_at(off, &pat);
            if (!CHECK_HEX(p[off], want, "byte at offset %zu (pattern at %zu)", off, pat_at[i]))
                break;
        }
    }
    for (size_t i = 0; i < NMARK; i++)
        CHECK_HEX(p[marked[i]], 0, "marked byte at offset %zu, zero in the source", marked[i]);
    /* Samples across the whole range: zero wherever no pattern is. */
    size_t bad = 0;
    for (size_t off = 12345; off < SIZE; off += ((size_t)1 << 24) + 17) {
        int pat;
        uint8_t want = expected_at(off, &pat);
        if (p[off] != want && bad++ < 5)
            FAIL("sample at offset %zu: got 0x%02x, want 0x%02x", off, p[off], want);
    }
    CHECK_INT(bad, 0, "samples that differ");
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_bigcopy");
    int me = acp_rank();
    uint8_t *p = NULL;
    acp_atkey_t key = ACP_ATKEY_NULL;
    acp_ga_t ga = ACP_GA_NULL;
    if (me <= 1) {
        p = mmap(NULL, SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED)
            FATAL("mmap of 4 GiB + 4096 bytes");
        if (me == 0) {
            for (size_t i = 0; i < NPAT; i++)
                acpt_fill(p + pat_at[i], PATLEN, pat_at[i]);
        } else {
            for (size_t i = 0; i < NMARK; i++)
                p[marked[i]] = 0xee;
        }
        key = acp_register_memory(p, SIZE, 0);
        ga = acp_query_ga(key, p);
        CHECK(ga != ACP_GA_NULL, "registering 4 GiB + 4096 bytes");
        CHECK_HEX(acp_query_ga(key, p + SIZE - 1), ga + SIZE - 1, "acp_query_ga of the last byte");
        CHECK_HEX(acp_query_ga(key, p + ((size_t)1 << 32)), ga + ((size_t)1 << 32), "acp_query_ga of byte 2^32");
    }
    uint64_t gas[1024];
    if (acp_procs() > 1023)
        FATAL("too many ranks");
    acpt_allgather_u64(ga, gas, 0);

    if (me == 0 && gas[0] != ACP_GA_NULL && gas[1] != ACP_GA_NULL) {
        double t0 = acpt_now();
        acp_handle_t h = acp_copy(gas[1], gas[0], SIZE, ACP_HANDLE_NULL);
        WAIT(h, "acp_copy of 4 GiB + 4096 bytes");
        double t = acpt_now() - t0;
        printf("t_bigcopy: %zu bytes in %.2f s (%.2f GB/s)\n", SIZE, t, (double)SIZE / t / 1e9);
        CHECK_INT(acp_inquire(h), 0, "acp_inquire after acp_complete");
    }
    CHECK_INT(acp_sync(), 0, "acp_sync");
    if (me == 1)
        check_destination(p);
    if (me <= 1) {
        CHECK_INT(acp_unregister_memory(key), 0, "unregister");
        munmap(p, SIZE);
    }
    return acpt_finish("t_bigcopy");
}
