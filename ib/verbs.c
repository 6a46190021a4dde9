/*
 * verbs.c - libibverbs through dlopen; see verbs.h.
 *
 * Nothing here may name an ibv_* function symbol directly (the static
 * inline data-path helpers of verbs.h are fine: they call through the
 * context's ops table), otherwise libacp.so would need libibverbs to load.
 * The ib transport's tests check the built library for such references.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "verbs.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the verbs we call, resolved at load time ---------------------------- */

static struct {
	struct ibv_device **(*get_device_list)(int *);
	void (*free_device_list)(struct ibv_device **);
	const char *(*get_device_name)(struct ibv_device *);
	struct ibv_context *(*open_device)(struct ibv_device *);
	int (*close_device)(struct ibv_context *);
	int (*query_device)(struct ibv_context *, struct ibv_device_attr *);
	int (*query_port)(struct ibv_context *, uint8_t, struct _compat_ibv_port_attr *);
	int (*query_gid)(struct ibv_context *, uint8_t, int, union ibv_gid *);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *);
	int (*dealloc_pd)(struct ibv_pd *);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *, void *, size_t, int);
	int (*dereg_mr)(struct ibv_mr *);
	struct ibv_comp_channel *(*create_comp_channel)(struct ibv_context *);
	int (*destroy_comp_channel)(struct ibv_comp_channel *);
	struct ibv_cq *(*create_cq)(struct ibv_context *, int, void *, struct ibv_comp_channel *, int);
	int (*destroy_cq)(struct ibv_cq *);
	int (*get_cq_event)(struct ibv_comp_channel *, struct ibv_cq **, void **);
	void (*ack_cq_events)(struct ibv_cq *, unsigned int);
	struct ibv_srq *(*create_srq)(struct ibv_pd *, struct ibv_srq_init_attr *);
	int (*destroy_srq)(struct ibv_srq *);
	struct ibv_qp *(*create_qp)(struct ibv_pd *, struct ibv_qp_init_attr *);
	int (*modify_qp)(struct ibv_qp *, struct ibv_qp_attr *, int);
	int (*destroy_qp)(struct ibv_qp *);
	int (*get_async_event)(struct ibv_context *, struct ibv_async_event *);
	void (*ack_async_event)(struct ibv_async_event *);
	const char *(*wc_status_str)(enum ibv_wc_status);
	const char *(*event_type_str)(enum ibv_event_type);
	/* optional: rdma-core 32 and later */
	ssize_t (*query_gid_table)(struct ibv_context *, struct ibv_gid_entry *, size_t, uint32_t, size_t);
} v;

static int loaded;

/* The current version of a symbol (the library also carries compatibility
 * versions of most verbs with other structure layouts). */
static void *sym(void *h, const char *name, const char *version)
{
	void *p = dlvsym(h, name, version);
	return p ? p : dlsym(h, name);
}

int acpib_load(char *err, int errlen)
{
	if (loaded)
		return 0;
	void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "%s", dlerror());
		return -1;
	}
	const char *missing = NULL;
#define LOAD(field, name, version)                                   \
	do {                                                             \
		*(void **)&v.field = sym(h, name, version);                  \
		if (!v.field && !missing)                                    \
			missing = name;                                          \
	} while (0)
	LOAD(get_device_list, "ibv_get_device_list", "IBVERBS_1.1");
	LOAD(free_device_list, "ibv_free_device_list", "IBVERBS_1.1");
	LOAD(get_device_name, "ibv_get_device_name", "IBVERBS_1.1");
	LOAD(open_device, "ibv_open_device", "IBVERBS_1.1");
	LOAD(close_device, "ibv_close_device", "IBVERBS_1.1");
	LOAD(query_device, "ibv_query_device", "IBVERBS_1.1");
	LOAD(query_port, "ibv_query_port", "IBVERBS_1.1");
	LOAD(query_gid, "ibv_query_gid", "IBVERBS_1.1");
	LOAD(alloc_pd, "ibv_alloc_pd", "IBVERBS_1.1");
	LOAD(dealloc_pd, "ibv_dealloc_pd", "IBVERBS_1.1");
	LOAD(reg_mr, "ibv_reg_mr", "IBVERBS_1.1");
	LOAD(dereg_mr, "ibv_dereg_mr", "IBVERBS_1.1");
	LOAD(create_comp_channel, "ibv_create_comp_channel", "IBVERBS_1.0");
	LOAD(destroy_comp_channel, "ibv_destroy_comp_channel", "IBVERBS_1.0");
	LOAD(create_cq, "ibv_create_cq", "IBVERBS_1.1");
	LOAD(destroy_cq, "ibv_destroy_cq", "IBVERBS_1.1");
	LOAD(get_cq_event, "ibv_get_cq_event", "IBVERBS_1.1");
	LOAD(ack_cq_events, "ibv_ack_cq_events", "IBVERBS_1.1");
	LOAD(create_srq, "ibv_create_srq", "IBVERBS_1.1");
	LOAD(destroy_srq, "ibv_destroy_srq", "IBVERBS_1.1");
	LOAD(create_qp, "ibv_create_qp", "IBVERBS_1.1");
	LOAD(modify_qp, "ibv_modify_qp", "IBVERBS_1.1");
	LOAD(destroy_qp, "ibv_destroy_qp", "IBVERBS_1.1");
	LOAD(get_async_event, "ibv_get_async_event", "IBVERBS_1.1");
	LOAD(ack_async_event, "ibv_ack_async_event", "IBVERBS_1.1");
	LOAD(wc_status_str, "ibv_wc_status_str", "IBVERBS_1.1");
	LOAD(event_type_str, "ibv_event_type_str", "IBVERBS_1.1");
#undef LOAD
	*(void **)&v.query_gid_table = sym(h, "_ibv_query_gid_table", "IBVERBS_1.11");
	if (missing) {
		snprintf(err, errlen, "libibverbs.so.1 has no %s (too old?)", missing);
		return -1; /* the handle stays open: a library is never unloaded */
	}
	loaded = 1;
	return 0;
}

/* ---- devices --------------------------------------------------------------- */

int acpib_device_names(char *buf, int len)
{
	int n = 0;
	struct ibv_device **list = v.get_device_list(&n);
	if (!list)
		return -errno;
	int used = 0, count = 0;
	for (int i = 0; i < n; i++) {
		const char *name = v.get_device_name(list[i]);
		int l = (int)strlen(name) + 1;
		if (used + l > len)
			break;
		memcpy(buf + used, name, l);
		used += l;
		count++;
	}
	v.free_device_list(list);
	return count;
}

int acpib_open(const char *name, acpib_dev **out, char *err, int errlen)
{
	int n = 0;
	struct ibv_device **list = v.get_device_list(&n);
	if (!list) {
		snprintf(err, errlen, "ibv_get_device_list: %s", strerror(errno));
		return -1;
	}
	struct ibv_device *dev = NULL;
	for (int i = 0; i < n; i++)
		if (strcmp(v.get_device_name(list[i]), name) == 0)
			dev = list[i];
	if (!dev) {
		v.free_device_list(list);
		snprintf(err, errlen, "no device %s", name);
		return -1;
	}
	struct ibv_context *ctx = v.open_device(dev);
	int saved = errno;
	v.free_device_list(list);
	if (!ctx) {
		snprintf(err, errlen, "ibv_open_device(%s): %s", name, strerror(saved));
		return -1;
	}
	struct ibv_device_attr a;
	memset(&a, 0, sizeof a);
	int rc = v.query_device(ctx, &a);
	if (rc) {
		v.close_device(ctx);
		snprintf(err, errlen, "ibv_query_device(%s): %s", name, strerror(rc));
		return -1;
	}
	acpib_dev *d = calloc(1, sizeof *d);
	if (!d) {
		v.close_device(ctx);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	d->ctx = ctx;
	d->atomic_cap = a.atomic_cap;
	d->phys_port_cnt = a.phys_port_cnt;
	d->max_qp_wr = (uint32_t)a.max_qp_wr;
	d->max_cqe = (uint32_t)a.max_cqe;
	d->max_srq_wr = (uint32_t)a.max_srq_wr;
	d->max_qp_rd_atom = (uint32_t)a.max_qp_rd_atom;
	d->max_qp_init_rd_atom = (uint32_t)a.max_qp_init_rd_atom;
	d->max_mr_size = a.max_mr_size;
	/* asynchronous events are read without blocking from the progress loop */
	int fl = fcntl(ctx->async_fd, F_GETFL);
	if (fl >= 0)
		fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK);
	*out = d;
	return 0;
}

int acpib_setup(acpib_dev *d, int cq_size, int srq_size, char *err, int errlen)
{
	d->pd = v.alloc_pd(d->ctx);
	if (!d->pd) {
		snprintf(err, errlen, "ibv_alloc_pd: %s", strerror(errno));
		return -1;
	}
	d->channel = v.create_comp_channel(d->ctx);
	if (!d->channel) {
		snprintf(err, errlen, "ibv_create_comp_channel: %s", strerror(errno));
		return -1;
	}
	int fl = fcntl(d->channel->fd, F_GETFL);
	if (fl >= 0)
		fcntl(d->channel->fd, F_SETFL, fl | O_NONBLOCK);
	d->cq = v.create_cq(d->ctx, cq_size, NULL, d->channel, 0);
	if (!d->cq) {
		snprintf(err, errlen, "ibv_create_cq(%d entries): %s", cq_size, strerror(errno));
		return -1;
	}
	d->cq_size = d->cq->cqe;
	struct ibv_srq_init_attr sa;
	memset(&sa, 0, sizeof sa);
	sa.attr.max_wr = (uint32_t)srq_size;
	sa.attr.max_sge = 1;
	d->srq = v.create_srq(d->pd, &sa);
	if (!d->srq) {
		snprintf(err, errlen, "ibv_create_srq(%d entries): %s", srq_size, strerror(errno));
		return -1;
	}
	return 0;
}

void acpib_close(acpib_dev *d)
{
	if (!d)
		return;
	if (d->srq)
		v.destroy_srq(d->srq);
	if (d->cq)
		v.destroy_cq(d->cq);
	if (d->channel)
		v.destroy_comp_channel(d->channel);
	if (d->pd)
		v.dealloc_pd(d->pd);
	v.close_device(d->ctx);
	free(d);
}

int acpib_query_port(acpib_dev *d, int port, acpib_port *out)
{
	struct ibv_port_attr a;
	memset(&a, 0, sizeof a);
	/* what the inline ibv_query_port of verbs.h does, minus the symbol */
	struct verbs_context *vctx = verbs_get_ctx_op(d->ctx, query_port);
	int rc = vctx ? vctx->query_port(d->ctx, (uint8_t)port, &a, sizeof a)
	              : v.query_port(d->ctx, (uint8_t)port, (struct _compat_ibv_port_attr *)&a);
	if (rc)
		return rc;
	out->state = a.state;
	out->link_layer = a.link_layer;
	out->lid = a.lid;
	out->active_mtu = a.active_mtu;
	out->gid_tbl_len = a.gid_tbl_len;
	out->max_msg_sz = a.max_msg_sz;
	return 0;
}

int acpib_query_gid(acpib_dev *d, int port, int index, uint8_t *gid16)
{
	union ibv_gid g;
	int rc = v.query_gid(d->ctx, (uint8_t)port, index, &g);
	if (rc)
		return rc;
	memcpy(gid16, g.raw, 16);
	return 0;
}

int acpib_gid_table(acpib_dev *d, acpib_gid *out, int max)
{
	if (!v.query_gid_table)
		return -ENOSYS;
	struct ibv_gid_entry *e = calloc((size_t)max, sizeof *e);
	if (!e)
		return -ENOMEM;
	ssize_t n = v.query_gid_table(d->ctx, e, (size_t)max, 0, sizeof *e);
	if (n < 0) {
		free(e);
		return (int)n;
	}
	for (ssize_t i = 0; i < n; i++) {
		memcpy(out[i].gid, e[i].gid.raw, 16);
		out[i].index = e[i].gid_index;
		out[i].port = e[i].port_num;
		out[i].type = e[i].gid_type;
		out[i].ifindex = e[i].ndev_ifindex;
	}
	free(e);
	return (int)n;
}

/* ---- memory ------------------------------------------------------------------ */

struct ibv_mr *acpib_reg_mr(acpib_dev *d, void *addr, size_t len, int read_only, int *errnum)
{
	errno = 0;
	int access = read_only ? IBV_ACCESS_REMOTE_READ
	                       : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
	                             IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_mr *mr = v.reg_mr(d->pd, addr, len, access);
	*errnum = mr ? 0 : (errno ? errno : EINVAL);
	return mr;
}

int acpib_dereg_mr(struct ibv_mr *mr) { return v.dereg_mr(mr); }
uint32_t acpib_mr_lkey(struct ibv_mr *mr) { return mr->lkey; }
uint32_t acpib_mr_rkey(struct ibv_mr *mr) { return mr->rkey; }

/* ---- queue pairs ------------------------------------------------------------- */

struct ibv_qp *acpib_create_qp(acpib_dev *d, int port, int send_depth, uint32_t *max_inline,
                               uint32_t *qpn, char *err, int errlen)
{
	struct ibv_qp_init_attr ia;
	memset(&ia, 0, sizeof ia);
	ia.send_cq = d->cq;
	ia.recv_cq = d->cq;
	ia.srq = d->srq;
	ia.qp_type = IBV_QPT_RC;
	ia.sq_sig_all = 1;
	ia.cap.max_send_wr = (uint32_t)send_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_inline_data = *max_inline;
	struct ibv_qp *qp = v.create_qp(d->pd, &ia);
	if (!qp && *max_inline) {
		/* some devices have no inline data: go without */
		ia.cap.max_inline_data = 0;
		qp = v.create_qp(d->pd, &ia);
	}
	if (!qp) {
		snprintf(err, errlen, "ibv_create_qp: %s", strerror(errno));
		return NULL;
	}
	*max_inline = ia.cap.max_inline_data;
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = (uint8_t)port;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int rc = v.modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (rc) {
		v.destroy_qp(qp);
		snprintf(err, errlen, "ibv_modify_qp(INIT): %s", strerror(rc));
		return NULL;
	}
	*qpn = qp->qp_num;
	return qp;
}

int acpib_qp_rtr(struct ibv_qp *qp, int port, uint32_t dest_qpn, uint32_t rq_psn, int mtu, int dlid,
                 const uint8_t *gid16, int use_grh, int sgid_index, int max_dest_rd_atomic,
                 char *err, int errlen)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn & 0xffffff;
	a.max_dest_rd_atomic = (uint8_t)max_dest_rd_atomic;
	a.min_rnr_timer = 12; /* 0.64 ms before a sender retries when no receive is posted */
	a.ah_attr.port_num = (uint8_t)port;
	a.ah_attr.dlid = (uint16_t)dlid;
	if (use_grh && gid16) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, gid16, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)sgid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	int rc = v.modify_qp(qp, &a,
	                     IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
	                         IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (rc)
		snprintf(err, errlen, "ibv_modify_qp(RTR): %s", strerror(rc));
	return rc;
}

int acpib_qp_rts(struct ibv_qp *qp, uint32_t sq_psn, int max_rd_atomic, int timeout, int retry_cnt,
                 char *err, int errlen)
{
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn & 0xffffff;
	a.timeout = (uint8_t)timeout;
	a.retry_cnt = (uint8_t)retry_cnt;
	a.rnr_retry = 7; /* retry for ever: the receiver reposts its buffers */
	a.max_rd_atomic = (uint8_t)max_rd_atomic;
	int rc = v.modify_qp(qp, &a,
	                     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	                         IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (rc)
		snprintf(err, errlen, "ibv_modify_qp(RTS): %s", strerror(rc));
	return rc;
}

int acpib_destroy_qp(struct ibv_qp *qp) { return v.destroy_qp(qp); }

/* ---- data path ------------------------------------------------------------- */

#define MAX_CHAIN 32

int acpib_post_send(struct ibv_qp *qp, const acpib_wr *wrs, int n)
{
	struct ibv_send_wr w[MAX_CHAIN];
	struct ibv_sge s[MAX_CHAIN];
	while (n > 0) {
		int k = n < MAX_CHAIN ? n : MAX_CHAIN;
		memset(w, 0, sizeof(w[0]) * (size_t)k);
		for (int i = 0; i < k; i++) {
			const acpib_wr *r = &wrs[i];
			s[i].addr = r->laddr;
			s[i].length = r->len;
			s[i].lkey = r->lkey;
			w[i].wr_id = r->wr_id;
			w[i].sg_list = &s[i];
			w[i].num_sge = r->len || r->opcode == ACPIB_FETCH_ADD || r->opcode == ACPIB_CMP_SWAP ? 1 : 0;
			w[i].send_flags = IBV_SEND_SIGNALED;
			if (r->flags & ACPIB_INLINE)
				w[i].send_flags |= IBV_SEND_INLINE;
			if (r->flags & ACPIB_SOLICITED)
				w[i].send_flags |= IBV_SEND_SOLICITED;
			w[i].next = i + 1 < k ? &w[i + 1] : NULL;
			switch (r->opcode) {
			case ACPIB_WRITE:
			case ACPIB_READ:
				w[i].opcode = r->opcode == ACPIB_WRITE ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
				w[i].wr.rdma.remote_addr = r->raddr;
				w[i].wr.rdma.rkey = r->rkey;
				break;
			case ACPIB_SEND:
				w[i].opcode = IBV_WR_SEND;
				break;
			case ACPIB_FETCH_ADD:
			case ACPIB_CMP_SWAP:
				/* swap is ignored by fetch-and-add */
				w[i].opcode = r->opcode == ACPIB_FETCH_ADD ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_ATOMIC_CMP_AND_SWP;
				w[i].wr.atomic.remote_addr = r->raddr;
				w[i].wr.atomic.rkey = r->rkey;
				w[i].wr.atomic.compare_add = r->compare_add;
				w[i].wr.atomic.swap = r->swap;
				break;
			default:
				return EINVAL;
			}
		}
		struct ibv_send_wr *bad = NULL;
		int rc = ibv_post_send(qp, w, &bad);
		if (rc)
			return rc;
		wrs += k;
		n -= k;
	}
	return 0;
}

int acpib_post_recv(acpib_dev *d, uint64_t tag, const uint32_t *idx, int n, uint64_t base,
                    uint32_t len, uint32_t lkey)
{
	struct ibv_recv_wr w[MAX_CHAIN];
	struct ibv_sge s[MAX_CHAIN];
	while (n > 0) {
		int k = n < MAX_CHAIN ? n : MAX_CHAIN;
		for (int i = 0; i < k; i++) {
			s[i].addr = base + (uint64_t)idx[i] * len;
			s[i].length = len;
			s[i].lkey = lkey;
			w[i].wr_id = tag | idx[i];
			w[i].sg_list = &s[i];
			w[i].num_sge = 1;
			w[i].next = i + 1 < k ? &w[i + 1] : NULL;
		}
		struct ibv_recv_wr *bad = NULL;
		int rc = ibv_post_srq_recv(d->srq, w, &bad);
		if (rc)
			return rc;
		idx += k;
		n -= k;
	}
	return 0;
}

int acpib_poll(acpib_dev *d, acpib_wc *out, int max)
{
	struct ibv_wc wc[MAX_CHAIN];
	if (max > MAX_CHAIN)
		max = MAX_CHAIN;
	int n = ibv_poll_cq(d->cq, max, wc);
	for (int i = 0; i < n; i++) {
		out[i].wr_id = wc[i].wr_id;
		out[i].status = wc[i].status;
		out[i].opcode = wc[i].opcode;
		out[i].byte_len = wc[i].byte_len;
		out[i].qp_num = wc[i].qp_num;
		out[i].vendor_err = wc[i].vendor_err;
	}
	return n;
}

int acpib_arm(acpib_dev *d, int solicited_only) { return ibv_req_notify_cq(d->cq, solicited_only); }

int acpib_channel_fd(acpib_dev *d) { return d->channel->fd; }
int acpib_async_fd(acpib_dev *d) { return d->ctx->async_fd; }

void acpib_take_cq_event(acpib_dev *d)
{
	struct ibv_cq *cq;
	void *ctx;
	if (v.get_cq_event(d->channel, &cq, &ctx) == 0)
		v.ack_cq_events(cq, 1);
}

int acpib_take_async_event(acpib_dev *d, int *type, uint32_t *qpn)
{
	struct ibv_async_event ev;
	if (v.get_async_event(d->ctx, &ev) != 0)
		return 0;
	*type = ev.event_type;
	*qpn = 0;
	switch (ev.event_type) {
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		*qpn = ev.element.qp->qp_num;
		break;
	default:
		break;
	}
	v.ack_async_event(&ev);
	return 1;
}

const char *acpib_wc_status_str(int status) { return v.wc_status_str((enum ibv_wc_status)status); }
const char *acpib_event_type_str(int type) { return v.event_type_str((enum ibv_event_type)type); }
