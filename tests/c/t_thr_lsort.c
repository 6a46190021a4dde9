/*
 * t_thr_lsort: acp_sort_list and acp_merge_list while other threads of the
 * rank change the same lists.
 *
 * One thread sorts list A over and over, another merges list B into A over
 * and over, two more push elements onto A and B all the while. The
 * comparator itself calls the library on the list being sorted
 * (acp_size_list) and reads the values through acp_query_address: no lock
 * of the list may be held while it runs. At the end every element pushed
 * must be in A or B exactly once, and A sorted once more must be in order.
 */
#include <pthread.h>

#include "acptest.h"

#define PUSHES 300
#define SORTS 60

static int me;
static acp_list_t A, B;
static volatile int pushing;
static long comparisons, size_calls_failed, bad_values;

static uint64_t value_of(acp_element_t e)
{
    uint64_t v = UINT64_MAX;
    void *p = acp_query_address(e.ga);
    if (p == NULL || e.size != sizeof v)
        __atomic_fetch_add(&bad_values, 1, __ATOMIC_RELAXED);
    else
        memcpy(&v, p, sizeof v);
    return v;
}

static int comp(const acp_element_t x, const acp_element_t y)
{
    __atomic_fetch_add(&comparisons, 1, __ATOMIC_RELAXED);
    if ((comparisons & 15) == 0 && acp_size_list(A) == 0 && acp_size_list(B) == 0)
        __atomic_fetch_add(&size_calls_failed, 1, __ATOMIC_RELAXED);
    uint64_t a = value_of(x), b = value_of(y);
    return a < b ? -1 : a > b;
}

struct parg {
    acp_list_t *l;
    uint64_t base;
};

static void *pusher(void *p)
{
    struct parg *a = p;
    uint64_t *v = malloc(sizeof *v);
    acp_atkey_t k = acp_register_memory(v, sizeof *v, 0);
    acp_ga_t g = acp_query_ga(k, v);
    for (int i = 0; i < PUSHES; i++) {
        /* values out of order, so that sorting moves them */
        *v = a->base + (uint64_t)((i * 7919) % PUSHES);
        acp_element_t e = { g, sizeof *v };
        acp_push_back_list(*a->l, e, me);
    }
    acp_unregister_memory(k);
    free(v);
    __atomic_fetch_sub(&pushing, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static void *sorter(void *p)
{
    (void)p;
    for (int i = 0; i < SORTS || __atomic_load_n(&pushing, __ATOMIC_SEQ_CST) > 0; i++)
        acp_sort_list(A, comp);
    return NULL;
}

static void *merger(void *p)
{
    (void)p;
    for (int i = 0; i < SORTS || __atomic_load_n(&pushing, __ATOMIC_SEQ_CST) > 0; i++)
        acp_merge_list(A, B, comp);
    return NULL;
}

int main(int argc, char **argv)
{
    acpt_init(&argc, &argv);
    me = acp_rank();
    A = acp_create_list(me);
    B = acp_create_list(me);
    if (A.ga == ACP_GA_NULL || B.ga == ACP_GA_NULL)
        FATAL("acp_create_list");

    pushing = 2;
    struct parg pa = { &A, 0 }, pb = { &B, 1000000 };
    pthread_t th[4];
    pthread_create(&th[0], NULL, pusher, &pa);
    pthread_create(&th[1], NULL, pusher, &pb);
    pthread_create(&th[2], NULL, sorter, NULL);
    pthread_create(&th[3], NULL, merger, NULL);
    for (int t = 0; t < 4; t++)
        pthread_join(th[t], NULL);

    acp_merge_list(A, B, comp);
    acp_sort_list(A, comp);
    CHECK_INT(acp_size_list(B), 0, "elements left in B after the last merge");
    CHECK_INT(acp_size_list(A), 2 * PUSHES, "elements in A (pushed: %d onto A, %d onto B)", PUSHES, PUSHES);
    static int seen[2][PUSHES];
    uint64_t last = 0;
    int n = 0, order = 1;
    for (acp_list_it_t it = acp_begin_list(A); it.elem != acp_end_list(A).elem && n < 4 * PUSHES;
         it = acp_increment_list_it(it), n++) {
        uint64_t v = value_of(acp_dereference_list_it(it));
        if (n > 0 && v < last)
            order = 0;
        last = v;
        int which = v >= 1000000;
        uint64_t i = v - (which ? 1000000 : 0);
        if (i < PUSHES)
            seen[which][i]++;
        else
            FAIL("element %d has value %" PRIu64 ", which nobody pushed", n, v);
    }
    CHECK(order, "list A is in order after the last sort");
    int lost = 0, twice = 0;
    for (int w = 0; w < 2; w++)
        for (int i = 0; i < PUSHES; i++) {
            lost += seen[w][i] == 0;
            twice += seen[w][i] > 1;
        }
    CHECK_INT(lost, 0, "pushed elements missing from the lists");
    CHECK_INT(twice, 0, "pushed elements in the lists more than once");
    CHECK_INT(bad_values, 0, "values the comparator or the check could not read (no element's)");
    CHECK_INT(size_calls_failed, 0, "comparator calls that saw both lists empty");
    printf("rank %d: %ld comparisons\n", me, comparisons);
    acp_destroy_list(A);
    acp_destroy_list(B);
    return acpt_finish("t_thr_lsort");
}
