/*
 * verbs.h - the small C layer between the ib transport and libibverbs.
 *
 * libibverbs is opened with dlopen the first time the transport is used, so
 * libacp.so loads (and every other transport works) on machines without the
 * RDMA packages. Only types and the static inline data-path calls of
 * <infiniband/verbs.h> are used directly (they go through the device's ops
 * table and name no library symbol); every other verb is called through a
 * pointer resolved from the loaded library.
 *
 * The Go side calls coarse functions: one call posts a chain of work
 * requests, one call returns a batch of completions.
 */
#ifndef ACP_IB_VERBS_H
#define ACP_IB_VERBS_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

/* Opcodes of acpib_wr. */
enum {
	ACPIB_WRITE = 1,
	ACPIB_READ = 2,
	ACPIB_SEND = 3,
	ACPIB_FETCH_ADD = 4,
	ACPIB_CMP_SWAP = 5,
};

/* Flags of acpib_wr. */
enum {
	ACPIB_INLINE = 1,
	ACPIB_SOLICITED = 2, /* wakes a receiver that waits for solicited events */
};

/* One work request as the Go side describes it. */
typedef struct acpib_wr {
	uint64_t wr_id;
	uint64_t laddr;
	uint64_t raddr;
	uint64_t compare_add;
	uint64_t swap;
	uint32_t len;
	uint32_t lkey;
	uint32_t rkey;
	uint8_t opcode;
	uint8_t flags;
	uint16_t pad;
} acpib_wr;

/* One completion. */
typedef struct acpib_wc {
	uint64_t wr_id;
	uint32_t status;
	uint32_t opcode;
	uint32_t byte_len;
	uint32_t qp_num;
	uint32_t vendor_err;
	uint32_t pad;
} acpib_wc;

/* An open device with the resources every connection on it shares. */
typedef struct acpib_dev {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *channel;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	int cq_size;
	/* attributes */
	int atomic_cap;
	int phys_port_cnt;
	uint32_t max_qp_wr;
	uint32_t max_cqe;
	uint32_t max_srq_wr;
	uint32_t max_qp_rd_atom;
	uint32_t max_qp_init_rd_atom;
	uint64_t max_mr_size;
} acpib_dev;

typedef struct acpib_port {
	int state;
	int link_layer;
	int lid;
	int active_mtu;
	int gid_tbl_len;
	uint32_t max_msg_sz;
} acpib_port;

/* Loading: 0, or -1 with a message in err. */
int acpib_load(char *err, int errlen);

/* Device names separated by NULs into buf; returns the count, or -errno. */
int acpib_device_names(char *buf, int len);

int acpib_open(const char *name, acpib_dev **out, char *err, int errlen);
int acpib_setup(acpib_dev *d, int cq_size, int srq_size, char *err, int errlen);
void acpib_close(acpib_dev *d);

int acpib_query_port(acpib_dev *d, int port, acpib_port *out);
int acpib_query_gid(acpib_dev *d, int port, int index, uint8_t *gid16);

/* One valid GID table entry. */
typedef struct acpib_gid {
	uint8_t gid[16];
	uint32_t index;
	uint32_t port;
	uint32_t type; /* IBV_GID_TYPE_* */
	uint32_t ifindex;
} acpib_gid;

/* The valid entries of every port's GID table, up to max; returns the
 * count, or -errno (-ENOSYS when this libibverbs cannot tell: older than
 * rdma-core 32). */
int acpib_gid_table(acpib_dev *d, acpib_gid *out, int max);

/* Registration with local write and remote read, write and atomic access,
 * or, read_only, with remote read access alone (the adapter never writes
 * it; memory mapped read-only can be registered no other way). NULL on
 * failure with *errnum set. */
struct ibv_mr *acpib_reg_mr(acpib_dev *d, void *addr, size_t len, int read_only, int *errnum);
int acpib_dereg_mr(struct ibv_mr *mr);
uint32_t acpib_mr_lkey(struct ibv_mr *mr);
uint32_t acpib_mr_rkey(struct ibv_mr *mr);

/* An RC queue pair in state INIT on port, sharing the device's CQ and SRQ.
 * max_inline is what was asked for and comes back as what was granted. */
struct ibv_qp *acpib_create_qp(acpib_dev *d, int port, int send_depth, uint32_t *max_inline,
                               uint32_t *qpn, char *err, int errlen);
/* INIT -> RTR: receive from the remote QP. gid16 NULL or use_grh 0 for LID
 * routing (native InfiniBand). */
int acpib_qp_rtr(struct ibv_qp *qp, int port, uint32_t dest_qpn, uint32_t rq_psn, int mtu, int dlid,
                 const uint8_t *gid16, int use_grh, int sgid_index, int max_dest_rd_atomic,
                 char *err, int errlen);
/* RTR -> RTS: send. */
int acpib_qp_rts(struct ibv_qp *qp, uint32_t sq_psn, int max_rd_atomic, int timeout, int retry_cnt,
                 char *err, int errlen);
int acpib_destroy_qp(struct ibv_qp *qp);

/* Posts n chained send work requests (signaled). Returns 0 or an errno. */
int acpib_post_send(struct ibv_qp *qp, const acpib_wr *wrs, int n);
/* Posts n receive buffers of len bytes at base + idx[i] * len to the SRQ,
 * with wr_id tag | idx[i]. Returns 0 or an errno. */
int acpib_post_recv(acpib_dev *d, uint64_t tag, const uint32_t *idx, int n, uint64_t base,
                    uint32_t len, uint32_t lkey);

/* Up to max completions; returns the count, or -1 when polling failed. */
int acpib_poll(acpib_dev *d, acpib_wc *out, int max);
/* Asks for an event at the next completion (solicited_only: at the next
 * arrival of a message sent with ACPIB_SOLICITED, or an error). */
int acpib_arm(acpib_dev *d, int solicited_only);
int acpib_channel_fd(acpib_dev *d);
int acpib_async_fd(acpib_dev *d);
/* Takes the pending completion event, if any (non-blocking). */
void acpib_take_cq_event(acpib_dev *d);
/* Takes one asynchronous event (non-blocking): 1 with its type and QP
 * number, 0 when there is none. */
int acpib_take_async_event(acpib_dev *d, int *type, uint32_t *qpn);

const char *acpib_wc_status_str(int status);
const char *acpib_event_type_str(int type);

#endif
