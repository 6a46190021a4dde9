/*
 * acp_shim.c - defines every acp_* function of acp.h as a forward to its
 * goacp_* export (the .go files of capi/).
 *
 * Compiling these definitions against acp.h lets the C compiler check each
 * one against the public prototype; cgo alone cannot write some of the
 * header's types (const char*).
 *
 * Copies, atomics, completion checks and acp_sync first try the C fast path
 * (fastpath.c), which finishes operations on directly reachable memory
 * without entering Go, and otherwise forwards; so do the rank and GA
 * queries, which programs call in loops and which the fast state answers.
 */
#include "acp.h"
#include "fastpath.h"
#include "_cgo_export.h"

int acp_init(int *argc, char ***argv) { return goacp_init(argc, argv); }
int acp_finalize(void) { return goacp_finalize(); }
int acp_reset(int rank) { return goacp_reset(rank); }
void acp_abort(const char* str) { goacp_abort((char *)str); }
int acp_sync(void)
{
    int64_t ep = acpfast_sync(NULL);
    if (ep == 0)
        return 0;
    return ep > 0 ? goacp_sync_finish(ep) : goacp_sync();
}
int acp_rank(void)
{
    int r;
    return acpfast_rank(NULL, &r) ? r : goacp_rank();
}
int acp_procs(void)
{
    int n;
    return acpfast_procs(NULL, &n) ? n : goacp_procs();
}
acp_ga_t acp_query_starter_ga(int rank)
{
    acp_ga_t ga;
    return acpfast_starter_ga(NULL, rank, &ga) ? ga : goacp_query_starter_ga(rank);
}
acp_atkey_t acp_register_memory(void *addr, size_t size, int color) { return goacp_register_memory(addr, size, color); }
int acp_unregister_memory(acp_atkey_t atkey) { return goacp_unregister_memory(atkey); }
acp_ga_t acp_query_ga(acp_atkey_t atkey, void *addr) { return goacp_query_ga(atkey, addr); }
void* acp_query_address(acp_ga_t ga)
{
    void *p;
    return acpfast_query_address(NULL, ga, &p) ? p : goacp_query_address(ga);
}
int acp_query_rank(acp_ga_t ga)
{
    int r;
    return acpfast_query_rank(NULL, ga, &r) ? r : goacp_query_rank(ga);
}
int acp_query_color(acp_ga_t ga)
{
    int c;
    return acpfast_query_color(NULL, ga, &c) ? c : goacp_query_color(ga);
}
int acp_colors(void) { return goacp_colors(); }
acp_handle_t acp_copy(acp_ga_t dst, acp_ga_t src, size_t size, acp_handle_t order)
{
    acp_handle_t h = acpfast_copy(NULL, dst, src, size, order);
    return h ? h : goacp_copy(dst, src, size, order);
}
acp_handle_t acp_cas4(acp_ga_t dst, acp_ga_t src, uint32_t oldval, uint32_t newval, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 1, dst, src, oldval, newval, order);
    return h ? h : goacp_cas4(dst, src, oldval, newval, order);
}
acp_handle_t acp_cas8(acp_ga_t dst, acp_ga_t src, uint64_t oldval, uint64_t newval, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 2, dst, src, oldval, newval, order);
    return h ? h : goacp_cas8(dst, src, oldval, newval, order);
}
acp_handle_t acp_swap4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 3, dst, src, value, 0, order);
    return h ? h : goacp_swap4(dst, src, value, order);
}
acp_handle_t acp_swap8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 4, dst, src, value, 0, order);
    return h ? h : goacp_swap8(dst, src, value, order);
}
acp_handle_t acp_add4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 5, dst, src, value, 0, order);
    return h ? h : goacp_add4(dst, src, value, order);
}
acp_handle_t acp_add8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 6, dst, src, value, 0, order);
    return h ? h : goacp_add8(dst, src, value, order);
}
acp_handle_t acp_xor4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 7, dst, src, value, 0, order);
    return h ? h : goacp_xor4(dst, src, value, order);
}
acp_handle_t acp_xor8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 8, dst, src, value, 0, order);
    return h ? h : goacp_xor8(dst, src, value, order);
}
acp_handle_t acp_or4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 9, dst, src, value, 0, order);
    return h ? h : goacp_or4(dst, src, value, order);
}
acp_handle_t acp_or8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 10, dst, src, value, 0, order);
    return h ? h : goacp_or8(dst, src, value, order);
}
acp_handle_t acp_and4(acp_ga_t dst, acp_ga_t src, uint32_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 11, dst, src, value, 0, order);
    return h ? h : goacp_and4(dst, src, value, order);
}
acp_handle_t acp_and8(acp_ga_t dst, acp_ga_t src, uint64_t value, acp_handle_t order)
{
    acp_handle_t h = acpfast_atomic(NULL, 12, dst, src, value, 0, order);
    return h ? h : goacp_and8(dst, src, value, order);
}
void acp_complete(acp_handle_t handle)
{
    if (!acpfast_wait(NULL, handle))
        goacp_complete(handle);
}
int acp_inquire(acp_handle_t handle) { return acpfast_test(NULL, handle) ? 0 : goacp_inquire(handle); }
