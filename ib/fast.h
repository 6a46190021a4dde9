/*
 * fast.h - the ib transport's part of the C fast path: RDMA WRITEs and
 * READs between this process's memory and a peer's memory on colour 0
 * (starter memory, or a registration whose key the Go side learnt),
 * posted and completed by the application thread without entering Go
 * (core/fastremote.h says how the fast path calls it).
 *
 * The Go side keeps everything else: connections, fetching and revoking
 * keys, errors. It describes each ready connection to a peer on colour 0
 * here (an acpib_fastconn), copies the keys it learns into a table here
 * (acpib_fastkey) and this process's registrations into another
 * (acpib_fastreg), polls the same completion queue, and finishes the
 * handles of the operations it finds ended. Work requests posted here
 * carry ACPIB_FAST_TAG in their wr_id and one of ACPIB_FAST_SLOTS slots;
 * both sides take entries of a queue pair from one count (inflight), so
 * together they never post more than its depth.
 *
 * The completion queue has one poller at a time (poll_lock, shared with
 * Go). A poller here finishes the fast path's own successful operations
 * and keeps every other completion, in order, in the stash, which the Go
 * side empties before it polls the queue again.
 *
 * Entries of the two tables are withdrawn while work of the C side may
 * use them: a poster counts itself in the entry's users before it checks
 * valid, and the Go side clears valid before it reads users (both
 * sequentially consistent), so once it has seen users at 0 after clearing
 * valid, no work posted here uses the entry any more. It rewrites an entry
 * only then, and confirms a revoked key to its owner, or deregisters a
 * region of ours, only then.
 */
#ifndef ACP_IB_FAST_H
#define ACP_IB_FAST_H

#include <stdint.h>

#include "fastremote.h"
#include "verbs.h"

#define ACPIB_FAST_SLOTS 256
#define ACPIB_FAST_PER_QP 32 /* the queue pair's depth, shared with the Go side */
#define ACPIB_FAST_TABLE 4096 /* connections, found by rank % ACPIB_FAST_TABLE */
#define ACPIB_FAST_STASH 64
#define ACPIB_FAST_BATCH 16
#define ACPIB_FAST_REGS 4096 /* segments of this process the C side serves (core maxSegments) */
#define ACPIB_FAST_MAPPED 64 /* same-host peers' memories registered here (keys.go, registerMapped) */
#define ACPIB_FAST_TAG (1ull << 62)
/* Status of a stashed completion that stands for a post that failed
 * (vendor_err holds the errno). */
#define ACPIB_POST_FAILED 0xfffe

typedef struct acpib_fastconn {
	struct ibv_qp *qp;
	int32_t rank; /* logical */
	int32_t peer; /* physical (the Go side's index) */
	uint32_t inline_max;
	uint32_t loopback; /* connected to itself: the remote end is our own memory */
	uint32_t ready;    /* 1 while work may be posted (set last) */
	int32_t inflight;    /* work requests on qp, both sides' (at most ACPIB_FAST_PER_QP) */
	uint32_t go_waiting; /* the Go side waits for an entry: wake it when one frees */
	struct {
		uint64_t base, size, off_base;
		uint32_t rkey, valid;
	} starters[4]; /* the peer's starter memories and its engine area (core SegEngine) */
} acpib_fastconn;

/* A key of a peer's registration on colour 0 (keys.go's rkey). */
typedef struct acpib_fastkey {
	uint32_t valid; /* the fields below hold (set last, cleared first) */
	int32_t users;  /* work requests of the C side that use it, not completed */
	int32_t peer;   /* physical */
	int32_t seg;
	uint32_t serial, rkey, color;
	uint32_t read_only; /* peers' reads only: writes and atomics go to the Go side, which fails them */
	uint64_t base, size, off_base;
} acpib_fastkey;

/* A registration of this process (a user segment), registered on colour
 * 0's device. */
typedef struct acpib_fastreg {
	uint32_t valid;
	int32_t users;
	uint32_t lkey, rkey, color;
	uint32_t read_only; /* registered for peers' reads only: never a destination here */
	uint64_t base, size, off_base;
} acpib_fastreg;

typedef struct acpib_fastslot {
	acpib_fastconn *conn; /* stored last (release): posted is then valid */
	acpib_fastkey *key;   /* the remote key it uses, when not starter memory's */
	acpib_fastreg *reg;   /* the local registration it uses, if any */
	acpib_fastreg *target; /* our registration at the remote end (loopback), if any */
	int64_t posted;       /* the coarse clock when it was posted */
	int64_t handle;       /* 0: a signal, which has none */
	uint64_t ga, n;
	int32_t get;
	int32_t next_free;
} acpib_fastslot;

typedef struct acpib_fast {
	acpf_remote hooks; /* first: the fast path holds this as an acpf_remote */
	acpib_dev *dev;    /* colour 0's device */
	int wake_fd;       /* wakes the Go side's progress goroutine */
	uint32_t max_msg;

	/* Shared with the Go side. */
	int64_t clock;       /* coarse clock (Unix ns) the Go side's progress goroutine refreshes */
	int32_t poll_lock;   /* 0 free, 1 held: one completion queue poller */
	uint32_t idle_sleep; /* the progress goroutine sleeps long: wake it */
	uint64_t app_polls;  /* the application polled or issued */
	uint64_t signals;    /* signals posted (a barrier's arrivals), for tests */
	int32_t inflight;    /* work requests of the fast path in flight */
	uint32_t nstash;     /* under poll_lock */
	acpib_wc stash[ACPIB_FAST_STASH];

	int32_t slot_lock;
	int32_t free_head;
	acpib_fastslot slots[ACPIB_FAST_SLOTS];

	/* This process's starter memories, registered on dev. */
	struct {
		uint64_t base, size;
		uint32_t lkey, valid;
	} local[3];
	/* Same-host peers' starter memories mapped here and registered on dev
	 * (local ends of copies to other hosts), the first nmapped valid; kept
	 * until the endpoint closes. */
	struct {
		uint64_t base, size;
		uint32_t lkey, pad;
	} mapped[ACPIB_FAST_MAPPED];
	uint32_t nmapped;

	acpib_fastconn *conns[ACPIB_FAST_TABLE];

	/* Direct-mapped like keys.go's cache, allocated on first use (NULL
	 * until then; the C side then finds nothing). */
	uint32_t nkeys;
	acpib_fastkey *keys;
	acpib_fastreg *regs; /* by segment, ACPIB_FAST_REGS */
	/* The Go side waits for the users of a withdrawn key to drop to 0:
	 * the C side wakes it when they do. */
	uint32_t acks_waiting;
} acpib_fast;

acpib_fast *acpib_fast_new(acpib_dev *dev, int wake_fd, uint32_t max_msg, uint32_t nkeys);
void acpib_fast_free(acpib_fast *x);

/* Publishes a same-host peer's memory registered here; 0 when the table
 * is full (the Go side then serves copies from it). */
int acpib_fast_mapped(acpib_fast *x, uint64_t base, uint64_t size, uint32_t lkey);

/* Publishes (valid 1) or withdraws this process's starter memory seg. */
void acpib_fast_local(acpib_fast *x, int seg, uint64_t base, uint64_t size, uint32_t lkey, int valid);

/* The slot of the key of (peer, seg) in a table of nkeys keys: the Go
 * side's key cache (keys.go, keyCache.slot) uses the same, so that a key
 * it evicts is evicted here too (TestKeySlotsAgreeWithC). */
static inline uint32_t acpib_key_slot(uint32_t nkeys, int32_t peer, int32_t seg)
{
	uint64_t h = (uint64_t)(int64_t)peer * 0x9e3779b97f4a7c15ull ^ (uint64_t)(int64_t)seg * 0xc2b2ae3d27d4eb4full;
	return (uint32_t)((h >> 32) % nkeys);
}

/* The slot of the key of (peer, seg) in the key table. */
uint32_t acpib_fast_key_slot(acpib_fast *x, int32_t peer, int32_t seg);

/* Copies a key into its slot, replacing what the slot held; 0 when that
 * is in use (the key is then not served here), or on no memory. */
int acpib_fast_key_put(acpib_fast *x, const acpib_fastkey *k);

/* Withdraws the key of (peer, seg) when it is registration serial or an
 * older one; returns its slot, or -1 when the table did not hold it. */
int acpib_fast_key_drop(acpib_fast *x, int32_t peer, int32_t seg, uint32_t serial);

/* Work requests of the C side still using key slot s. */
int32_t acpib_fast_key_users(acpib_fast *x, uint32_t s);

/* Publishes this process's registration of segment seg (valid 1), or
 * withdraws it; publishing returns 0 when the entry is still in use or
 * there is no memory (the Go side then serves the segment). */
int acpib_fast_reg(acpib_fast *x, uint32_t seg, const acpib_fastreg *r, int valid);

/* Work requests of the C side still using registration seg. */
int32_t acpib_fast_reg_users(acpib_fast *x, uint32_t seg);

/* For tests: counts a use of the key of (peer, seg) (key 1) or of our
 * registration seg (key 0) as a work request posted here would; returns
 * what acpib_fast_unhold ends, or -1 when the table does not hold it. */
int acpib_fast_hold(acpib_fast *x, int key, int32_t peer, uint32_t seg);
void acpib_fast_unhold(acpib_fast *x, int key, int s);

/* A connection record to fill, then publish with acpib_fast_conn_up;
 * acpib_fast_conn_down stops new work on it (its record stays valid until
 * acpib_fast_free: in-flight work and racing callers may still read it). */
acpib_fastconn *acpib_fast_conn_new(void);
void acpib_fast_conn_up(acpib_fast *x, acpib_fastconn *c);
void acpib_fast_conn_down(acpib_fastconn *c);

/* For the Go side, holding poll_lock: moves up to max stashed completions
 * to out, oldest first; returns the count. */
int acpib_fast_take_stash(acpib_fast *x, acpib_wc *out, int max);

/* Frees the slot of a completion of the fast path and says what it was. */
void acpib_fast_release(acpib_fast *x, uint64_t wr_id, int64_t *handle, int32_t *peer, uint64_t *ga,
                        uint64_t *n, int32_t *get);

/* The physical peer of the oldest work of the fast path in flight, or -1;
 * *posted is when it was posted (the coarse clock). */
int acpib_fast_oldest(acpib_fast *x, int64_t *posted);

#endif
