/*
 * ml_cl_shim.c - the communication library's acp_* functions (acp.h), each
 * a forward to a goacp_* export of ml_cl.go.
 *
 * Channels, requests and segmented buffers cross into Go as integers (the
 * handles of ml_cl.go); the casts live here so that the Go side never turns
 * an integer into a pointer.
 */
#include <stdint.h>
#include <stdlib.h>

#include "acp.h"
#include "chfast.h"
#include "_cgo_export.h"

/* ---- program-defined settings ---------------------------------------- */

/* Programs written for the original may define this to size (often: to
 * disable) the communication library's starter memory. The weak reference
 * makes the linker export such a definition from the executable; without
 * one the address is NULL. */
extern size_t iacp_starter_memory_size_cl __attribute__((weak));

int acpcl_program_starter_size(size_t *size)
{
    if (&iacp_starter_memory_size_cl == NULL)
        return 0;
    *size = iacp_starter_memory_size_cl;
    return 1;
}

/* ---- segmented buffers ------------------------------------------------- */

#define SB(h) ((uintptr_t)(h))

acp_segbuf_t acp_create_src_segbuf(int dst_rank, void *buf, size_t segsize, size_t segnum)
{
    return (acp_segbuf_t)goacp_create_segbuf(0, dst_rank, buf, segsize, segnum);
}

/* The first parameter is the source rank; the original header names it
 * dst_rank. */
acp_segbuf_t acp_create_dst_segbuf(int dst_rank, void *buf, size_t segsize, size_t segnum)
{
    return (acp_segbuf_t)goacp_create_segbuf(1, dst_rank, buf, segsize, segnum);
}

int acp_connect_segbuf(acp_segbuf_t segbuf) { return goacp_connect_segbuf(SB(segbuf)); }
int acp_isconnected_segbuf(acp_segbuf_t segbuf) { return goacp_isconnected_segbuf(SB(segbuf)); }
int acp_ready_segbuf(acp_segbuf_t segbuf) { return goacp_ready_segbuf(SB(segbuf)); }
int acp_ack_segbuf(acp_segbuf_t segbuf) { return goacp_ack_segbuf(SB(segbuf)); }
int acp_isready_segbuf(acp_segbuf_t segbuf) { return goacp_isready_segbuf(SB(segbuf)); }
int acp_isacked_segbuf(acp_segbuf_t segbuf) { return goacp_isacked_segbuf(SB(segbuf)); }
int64_t acp_query_segbuf_head(acp_segbuf_t segbuf) { return goacp_query_segbuf(SB(segbuf), 0); }
int64_t acp_query_segbuf_tail(acp_segbuf_t segbuf) { return goacp_query_segbuf(SB(segbuf), 1); }
int64_t acp_query_segbuf_sent(acp_segbuf_t segbuf) { return goacp_query_segbuf(SB(segbuf), 2); }
int acp_disconnect_segbuf(acp_segbuf_t segbuf) { return goacp_disconnect_segbuf(SB(segbuf)); }
int acp_free_segbuf(volatile acp_segbuf_t segbuf) { return goacp_free_segbuf(SB(segbuf)); }

/* ---- channels ------------------------------------------------------------ */

#define CH(h) ((uintptr_t)(h))

acp_ch_t acp_create_ch(int sender, int receiver) { return (acp_ch_t)goacp_create_ch(sender, receiver); }
int acp_free_ch(acp_ch_t ch) { return goacp_free_ch(CH(ch)); }
acp_request_t acp_nbfree_ch(acp_ch_t ch) { return (acp_request_t)goacp_nbfree_ch(CH(ch)); }

/* Sends, receives and waits first try the C fast path (chfast.c). */
acp_request_t acp_nbsend_ch(acp_ch_t ch, void * buf, size_t size)
{
    uintptr_t r = acpch_send(CH(ch), buf, size);
    return (acp_request_t)(r ? r : goacp_nbsend_ch(CH(ch), buf, size));
}

acp_request_t acp_nbrecv_ch(acp_ch_t ch, void * buf, size_t size)
{
    uintptr_t r = acpch_recv(CH(ch), buf, size);
    return (acp_request_t)(r ? r : goacp_nbrecv_ch(CH(ch), buf, size));
}

size_t acp_wait_ch(acp_request_t request)
{
    uintptr_t r = CH(request);
    return (r & ACPCH_REQUEST_BIT) ? acpch_wait(r) : goacp_wait_ch(r);
}

/* Handles are pointer-sized integers, so an array of requests is read as
 * an array of uintptr_t. */
int acp_waitall_ch(acp_request_t *request, int n, size_t *sizes)
{
    int fast = 0;
    for (int i = 0; request != NULL && i < n; i++)
        fast |= (CH(request[i]) & ACPCH_REQUEST_BIT) != 0;
    if (!fast)
        return goacp_waitall_ch((uintptr_t *)request, n, sizes);
    int rc = 0;
    for (int i = 0; i < n; i++) {
        size_t v = acp_wait_ch(request[i]);
        if (v == (size_t)-1)
            rc = -1;
        if (sizes != NULL)
            sizes[i] = v;
    }
    return rc;
}

/* Exported by the original without a declaration in acp.h. */
int acp_send_ch(acp_ch_t ch, void *buf, size_t size);
int acp_recv_ch(acp_ch_t ch, void *buf, size_t size);
void iacp_abort_cl(void);

int acp_send_ch(acp_ch_t ch, void *buf, size_t size) { return goacp_send_ch(CH(ch), buf, size); }
int acp_recv_ch(acp_ch_t ch, void *buf, size_t size) { return goacp_recv_ch(CH(ch), buf, size); }
void iacp_abort_cl(void) { goacp_abort_cl(); }
