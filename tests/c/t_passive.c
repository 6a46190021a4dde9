/*
 * t_passive: a target that does not call ACP is served all the same.
 *
 * Rank 1 busy-waits on words of its own registered memory without calling
 * any ACP function, while rank 0
 *   1. does acp_add4(+42) on rank 1's word 0xcafebabe with the result in its
 *      own memory (the original Tofu sample atomic.c: "rank0: result =
 *      cafebabe", "rank1: value = cafebae8");
 *   2. acp_copy's 0x12345678 into that word;
 *   3. puts 1 MiB into rank 1's buffer and then a flag, ordered after the
 *      data; rank 1 sees the flag and checks the data without calling ACP;
 *   4. gets 1 MiB from rank 1, checks it, and writes a word rank 1 waits for.
 * Rank 1 acknowledges each stage with a plain store to its own memory, which
 * rank 0 reads with gets before it overwrites the word.
 * Other ranks only take part in the collectives.
 */
#include "acptest.h"

#define BIG     ((size_t)1 << 20)
#define SPIN_S  60.0

struct area {           /* rank 1's registered memory */
    uint32_t value;     /* 1. and 2. */
    uint32_t ack;       /* stages rank 1 has seen; rank 0 reads it with gets */
    uint64_t flag;      /* 3. */
    uint64_t done;      /* 4. */
    uint8_t big[BIG];   /* 3. (put into) */
    uint8_t src[BIG];   /* 4. (got from) */
};

static int spin_until(volatile void *p, int width, uint64_t want, const char *what)
{
    double t0 = acpt_now();
    for (;;) {
        uint64_t v = width == 4 ? __atomic_load_n((volatile uint32_t *)p, __ATOMIC_ACQUIRE)
                                : __atomic_load_n((volatile uint64_t *)p, __ATOMIC_ACQUIRE);
        if (v == want)
            return 1;
        if (acpt_now() - t0 > SPIN_S) {
            FAIL("%s: still 0x%" PRIx64 " after %.0f s of waiting without calling ACP, want 0x%" PRIx64, what, v,
                 SPIN_S, want);
            return 0;
        }
    }
}

/* Rank 1 tells rank 0 what it has seen by a plain store; rank 0 must not
 * overwrite the word before rank 1 has seen the previous value. */
static void ack(struct area *a, uint32_t stage) { __atomic_store_n(&a->ack, stage, __ATOMIC_RELEASE); }

static void passive_rank1(struct area *a)
{
    if (spin_until(&a->value, 4, 0xcafebae8, "word after rank 0's acp_add4(+42)"))
        printf("rank1: value = %x\n", a->value);
    ack(a, 1);
    spin_until(&a->value, 4, 0x12345678, "word after rank 0's acp_copy");
    ack(a, 2);
    if (spin_until(&a->flag, 8, 1, "flag put after 1 MiB of data"))
        CHECK_FILL(a->big, BIG, 11, "1 MiB put before the flag, read right after seeing the flag");
    spin_until(&a->done, 8, 2, "word rank 0 writes after its get");
}

/* Gets rank 1's ack word until it reaches stage: rank 1 does not call ACP
 * meanwhile, so this also checks gets from a passive target. */
static void wait_ack(acp_ga_t me, acp_ga_t a1, uint32_t stage)
{
    volatile uint32_t *seen = acpt_starter(4);
    double t0 = acpt_now();
    do {
        acp_handle_t h = acp_copy(me + 4, a1 + offsetof(struct area, ack), 4, ACP_HANDLE_NULL);
        if (h == ACP_HANDLE_NULL) {
            FAIL("get of rank 1's ack word refused");
            return;
        }
        acp_complete(h);
    } while (*seen < stage && acpt_now() - t0 < SPIN_S);
    CHECK_INT(*seen, stage, "stage rank 1 acknowledged");
}

static void active_rank0(acp_ga_t a1)
{
    /* My source and result words and data live in my starter memory. */
    acp_ga_t me = acp_query_starter_ga(0);
    uint32_t *result = acpt_starter(0); /* 4: ack word fetched from rank 1 */
    uint32_t *word = acpt_starter(8);
    uint64_t *flag = acpt_starter(16), *done = acpt_starter(24);
    uint8_t *data = acpt_starter(64), *back = acpt_starter(64 + BIG);
    *result = 0;
    *word = 0x12345678;
    *flag = 1;
    *done = 2;
    acpt_fill(data, BIG, 11);
    memset(back, 0, BIG);

    acp_handle_t h = acp_add4(me + 0, a1 + offsetof(struct area, value), 42, ACP_HANDLE_NULL);
    WAIT(h, "acp_add4 on rank 1");
    CHECK_HEX(*result, 0xcafebabe, "value fetched by acp_add4 from rank 1");
    printf("rank0: result = %x\n", *result);
    wait_ack(me, a1, 1);

    WAIT(acp_copy(a1 + offsetof(struct area, value), me + 8, 4, ACP_HANDLE_NULL), "acp_copy of a word to rank 1");
    wait_ack(me, a1, 2);

    h = acp_copy(a1 + offsetof(struct area, big), me + 64, BIG, ACP_HANDLE_NULL);
    CHECK(h != ACP_HANDLE_NULL, "put of 1 MiB to rank 1 refused");
    WAIT(acp_copy(a1 + offsetof(struct area, flag), me + 16, 8, h), "put of the flag ordered after the data");

    WAIT(acp_copy(me + 64 + BIG, a1 + offsetof(struct area, src), BIG, ACP_HANDLE_NULL), "get of 1 MiB from rank 1");
    CHECK_FILL(back, BIG, 12, "1 MiB got from rank 1 while it did not call ACP");
    WAIT(acp_copy(a1 + offsetof(struct area, done), me + 24, 8, ACP_HANDLE_NULL), "put of the last word");
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    acpt_need_procs(2, "t_passive");
    int me = acp_rank();
    if (me == 0)
        acpt_need_smem(64 + 2 * BIG);

    struct area *a = aligned_alloc(64, (sizeof(struct area) + 63) / 64 * 64);
    memset(a, 0, sizeof *a);
    a->value = 0xcafebabe;
    acpt_fill(a->src, BIG, 12);
    acp_atkey_t key = acp_register_memory(a, sizeof *a, 0);
    acp_ga_t ga = acp_query_ga(key, a);
    if (ga == ACP_GA_NULL)
        FATAL("registering the area");
    uint64_t gas[4096];
    if (acp_procs() > 4095)
        FATAL("too many ranks");
    acpt_allgather_u64(ga, gas, 0); /* ends with a sync: rank 1's memory is ready */

    if (me == 1)
        passive_rank1(a); /* no ACP call in here */
    else if (me == 0)
        active_rank0(gas[1]);

    CHECK_INT(acp_sync(), 0, "acp_sync");
    CHECK_INT(acp_unregister_memory(key), 0, "unregister the area");
    free(a);
    return acpt_finish("t_passive");
}
