/*
 * dltest.h - helpers of the data-library tests: a value table in every
 * rank's starter memory and a registered scratch buffer to read results.
 */
#ifndef DLTEST_H
#define DLTEST_H

#include "acptest.h"

#define DLT_SMEM 4096 /* run with --acp-size-smem 4096 */

/* Every rank's starter memory holds the int i at byte 4*i (i < 1024), so
 * the GA of a 4-byte value v (< 1024) on rank r is dlt_val(r, v). */
ACPT_API void dlt_fill_values(void)
{
    acpt_need_smem(DLT_SMEM);
    int *p = acpt_starter(0);
    for (int i = 0; i < DLT_SMEM / 4; i++)
        p[i] = i;
    acp_sync();
}

ACPT_API acp_ga_t dlt_val(int rank, int v) { return acp_query_starter_ga(rank) + 4 * (uint64_t)v; }

/* A registered local buffer to copy results into. */
static uint8_t *dlt_buf;
static acp_ga_t dlt_bufga;
#define DLT_BUF (1 << 16)

ACPT_API void dlt_init_buf(void)
{
    dlt_buf = calloc(1, DLT_BUF);
    acp_atkey_t k = acp_register_memory(dlt_buf, DLT_BUF, 0);
    dlt_bufga = acp_query_ga(k, dlt_buf);
    if (dlt_bufga == ACP_GA_NULL)
        FATAL("cannot register the result buffer");
}

/* Reads n bytes at ga (any rank) into the buffer and returns it. */
ACPT_API void *dlt_read(acp_ga_t ga, size_t n)
{
    memset(dlt_buf, 0xee, n);
    if (n > 0)
        acp_complete(acp_copy(dlt_bufga, ga, n, ACP_HANDLE_NULL));
    return dlt_buf;
}

/* The bytes of s (a key, a value: at most 128 of them) in my registered
 * buffer, beyond what dlt_read uses, at the next of 128 places in turn, so
 * that the key and the value of one call do not overlap. */
ACPT_API acp_element_t dlt_bytes(const char *s)
{
    static int turn;
    size_t off = 32768 + 128 * (size_t)(turn++ % 128);
    size_t n = strlen(s);
    memcpy(dlt_buf + off, s, n);
    acp_element_t e = { dlt_bufga + off, n };
    return e;
}

ACPT_API uint64_t dlt_word(acp_ga_t ga) { uint64_t w; memcpy(&w, dlt_read(ga, 8), 8); return w; }

ACPT_API int dlt_int(acp_ga_t ga)
{
    int v;
    if (ga == ACP_GA_NULL)
        return -1;
    memcpy(&v, dlt_read(ga, 4), 4);
    return v;
}

/* CRC-64/XZ (reflected 0xC96C5795D7870F42, initial value and final XOR
 * all ones; "123456789" gives 0x995DC9BBDF1939FA). */
ACPT_API uint64_t dlt_crc64(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t c = ~0ull;
    for (size_t i = 0; i < n; i++) {
        c ^= b[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ ((c & 1) ? 0xC96C5795D7870F42ull : 0);
    }
    return ~c;
}

/* Where a hashed container keeps a key (spec 2.12): h = CRC-64 >> 16,
 * directory entry (h / num_slots) % num_ranks, slot h % num_slots. */
ACPT_API void dlt_place(const void *key, size_t n, uint64_t num_ranks, uint64_t num_slots, int *table, int *slot)
{
    uint64_t h = dlt_crc64(key, n) >> 16;
    *table = (int)((h / num_slots) % num_ranks);
    *slot = (int)(h % num_slots);
}

/* Checks that the n ints at ga equal want[0..n-1]. */
#define CHECK_INTS(ga, n, what, ...)                                                        \
    do {                                                                                    \
        const int want_[] = { __VA_ARGS__ };                                                \
        int got_[64];                                                                       \
        memcpy(got_, dlt_read((ga), 4 * (size_t)(n)), 4 * (size_t)(n));                     \
        CHECK_INT((n), sizeof want_ / sizeof want_[0], "%s: number of ints", (what));        \
        for (size_t i_ = 0; i_ < sizeof want_ / sizeof want_[0] && i_ < (size_t)(n); i_++)  \
            CHECK_INT(got_[i_], want_[i_], "%s: int %zu", (what), i_);                       \
    } while (0)

#endif /* DLTEST_H */
