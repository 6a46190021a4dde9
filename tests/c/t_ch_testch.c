/*
 * t_ch_testch: the scenarios of the original channel tests testch01-06,
 * one after another, with every value checked.
 *
 * - testch01: many to one. Rank i sends REPS ints i*10000+r to rank 0 on
 *   channel (i, 0); rank 0 receives each sender's stream in turn.
 * - testch02: one to many. Rank 0 sends REPS ints to every rank i on
 *   channel (0, i); rank 0 never waits for its frees.
 * - testch03: many to one, LEN-byte strings ("%-d" of r), only the last
 *   free waited for.
 * - testch04: one to many, LEN-byte zero-padded strings; no free is ever
 *   waited for, on either side.
 * - testch05/06: many to one ints, each channel freed and waited for.
 * Frees never waited for must not trouble acp_finalize.
 *
 *     acprun -np N t_ch_testch [-r REPS] [-l LEN]   (defaults 100, 64)
 */
#include "acptest.h"

#define MAXP 64

static int me, nprocs, reps = 100, len = 64;

static void testch01(void)
{
    if (me != 0) {
        acp_ch_t c = acp_create_ch(me, 0);
        int *data = malloc(sizeof(int) * (size_t)reps);
        acp_request_t *q = malloc(sizeof *q * (size_t)reps);
        for (int r = 0; r < reps; r++) {
            data[r] = me * 10000 + r;
            q[r] = acp_nbsend_ch(c, &data[r], sizeof(int));
        }
        for (int r = 0; r < reps; r++)
            CHECK_INT(acp_wait_ch(q[r]), 0, "testch01: send %d", r);
        CHECK_INT(acp_wait_ch(acp_nbfree_ch(c)), 0, "testch01: free");
        free(data);
        free(q);
    } else {
        int wrong = 0;
        for (int i = 1; i < nprocs; i++) {
            acp_ch_t c = acp_create_ch(i, 0);
            int *data = malloc(sizeof(int) * (size_t)reps);
            acp_request_t *q = malloc(sizeof *q * (size_t)reps);
            for (int r = 0; r < reps; r++)
                q[r] = acp_nbrecv_ch(c, &data[r], sizeof(int));
            for (int r = 0; r < reps; r++) {
                size_t n = acp_wait_ch(q[r]);
                if (n != sizeof(int) || data[r] != i * 10000 + r)
                    wrong++;
            }
            CHECK_INT(acp_wait_ch(acp_nbfree_ch(c)), 0, "testch01: free of (%d, 0)", i);
            free(data);
            free(q);
        }
        CHECK_INT(wrong, 0, "testch01: Wrong data");
    }
    acp_sync();
}

static void testch02(void)
{
    if (me == 0) {
        int *data = malloc(sizeof(int) * (size_t)reps * (size_t)nprocs);
        for (int i = 1; i < nprocs; i++) {
            acp_ch_t c = acp_create_ch(0, i);
            for (int r = 0; r < reps; r++) {
                int *d = &data[i * reps + r];
                *d = i * 10000 + r;
                acp_request_t q = acp_nbsend_ch(c, d, sizeof(int));
                CHECK_INT(acp_wait_ch(q), 0, "testch02: send %d to %d", r, i);
            }
            CHECK(acp_nbfree_ch(c) != NULL, "testch02: acp_nbfree_ch (never waited)");
        }
        acp_sync();
        free(data);
    } else {
        acp_ch_t c = acp_create_ch(0, me);
        int wrong = 0;
        for (int r = 0; r < reps; r++) {
            int d = -1;
            size_t n = acp_wait_ch(acp_nbrecv_ch(c, &d, sizeof d));
            if (n != sizeof d || d != me * 10000 + r)
                wrong++;
        }
        CHECK_INT(wrong, 0, "testch02: Wrong data");
        CHECK_INT(acp_wait_ch(acp_nbfree_ch(c)), 0, "testch02: receiver's free");
        acp_sync();
    }
}

static void testch03(void)
{
    char *buf = calloc((size_t)len + 1, 1);
    if (me != 0) {
        acp_ch_t c = acp_create_ch(me, 0);
        for (int r = 0; r < reps; r++) {
            memset(buf, 0, (size_t)len + 1);
            snprintf(buf, (size_t)len + 1, "%-d", r);
            CHECK_INT(acp_wait_ch(acp_nbsend_ch(c, buf, (size_t)len)), 0, "testch03: send %d", r);
        }
        acp_nbfree_ch(c); /* not waited for */
    } else {
        acp_ch_t cs[MAXP];
        acp_request_t last = NULL;
        int wrong = 0;
        for (int i = 1; i < nprocs; i++) {
            cs[i] = acp_create_ch(i, 0);
            for (int r = 0; r < reps; r++) {
                memset(buf, 0x7f, (size_t)len);
                size_t n = acp_wait_ch(acp_nbrecv_ch(cs[i], buf, (size_t)len));
                char want[32];
                snprintf(want, sizeof want, "%-d", r);
                if (n != (size_t)len || strncmp(buf, want, (size_t)len) != 0)
                    wrong++;
            }
            last = acp_nbfree_ch(cs[i]);
        }
        CHECK_INT(wrong, 0, "testch03: Wrong data");
        if (last != NULL)
            CHECK_INT(acp_wait_ch(last), 0, "testch03: the last free");
    }
    free(buf);
    acp_sync();
}

static void testch04(void)
{
    char *buf = calloc((size_t)len + 1, 1);
    if (me == 0) {
        for (int i = 1; i < nprocs; i++) {
            acp_ch_t c = acp_create_ch(0, i);
            char **m = malloc(sizeof *m * (size_t)reps);
            acp_request_t *q = malloc(sizeof *q * (size_t)reps);
            for (int r = 0; r < reps; r++) {
                m[r] = calloc((size_t)len + 1, 1);
                snprintf(m[r], (size_t)len + 1, "%0*d", len < 10 ? len : 10, r);
                q[r] = acp_nbsend_ch(c, m[r], (size_t)len);
            }
            for (int r = 0; r < reps; r++) {
                CHECK_INT(acp_wait_ch(q[r]), 0, "testch04: send %d to %d", r, i);
                free(m[r]);
            }
            free(m);
            free(q);
            acp_nbfree_ch(c); /* never waited for */
        }
    } else {
        acp_ch_t c = acp_create_ch(0, me);
        int wrong = 0;
        for (int r = 0; r < reps; r++) {
            memset(buf, 0, (size_t)len + 1);
            size_t n = acp_wait_ch(acp_nbrecv_ch(c, buf, (size_t)len));
            char want[32];
            snprintf(want, sizeof want, "%0*d", len < 10 ? len : 10, r);
            if (n != (size_t)len || strncmp(buf, want, (size_t)len) != 0)
                wrong++;
        }
        CHECK_INT(wrong, 0, "testch04: messages out of order or wrong");
        acp_nbfree_ch(c); /* never waited for */
    }
    free(buf);
    acp_sync();
}

static void testch05(void)
{
    if (me != 0) {
        acp_ch_t c = acp_create_ch(me, 0);
        for (int r = 0; r < reps; r++) {
            int d = me * 10000 + r + 1;
            CHECK_INT(acp_wait_ch(acp_nbsend_ch(c, &d, sizeof d)), 0, "testch05: send %d", r);
        }
        CHECK_INT(acp_wait_ch(acp_nbfree_ch(c)), 0, "testch05: sender's free");
    } else {
        acp_ch_t cs[MAXP];
        for (int i = 1; i < nprocs; i++)
            cs[i] = acp_create_ch(i, 0);
        int wrong = 0;
        /* Round robin over the senders. */
        for (int r = 0; r < reps; r++) {
            for (int i = 1; i < nprocs; i++) {
                int d = 0;
                size_t n = acp_wait_ch(acp_nbrecv_ch(cs[i], &d, sizeof d));
                if (n != sizeof d || d != i * 10000 + r + 1)
                    wrong++;
            }
        }
        CHECK_INT(wrong, 0, "testch05: Wrong data");
        for (int i = 1; i < nprocs; i++)
            CHECK_INT(acp_wait_ch(acp_nbfree_ch(cs[i])), 0, "testch05: free of (%d, 0)", i);
    }
    acp_sync();
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "-r") == 0)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "-l") == 0)
            len = atoi(argv[++i]);
    }
    acpt_need_procs(2, "t_ch_testch");
    me = acp_rank();
    nprocs = acp_procs();
    if (nprocs > MAXP || reps < 1 || len < 1)
        FATAL("bad arguments");
    testch01();
    testch02();
    testch03();
    testch04();
    testch05();
    return acpt_finish("t_ch_testch");
}
