/*
 * fast.c - see fast.h. The rules mirror post.go (bounds against the peer's
 * starter memory, inline data or a local key) and endpoint.go (one poller,
 * completions handled in queue order).
 */
#include "fast.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)

static int try_lock(int32_t *w)
{
	int32_t zero = 0;
	return LOAD(w) == 0 && __atomic_compare_exchange_n(w, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void wake(acpib_fast *x)
{
	uint64_t one = 1;
	ssize_t rc = write(x->wake_fd, &one, sizeof(one));
	(void)rc; /* a full counter already wakes the goroutine */
}

/* ---- slots ------------------------------------------------------------------ */

static int slot_take(acpib_fast *x)
{
	acpf_lock(&x->slot_lock);
	int s = x->free_head;
	if (s >= 0)
		x->free_head = x->slots[s].next_free;
	acpf_unlock(&x->slot_lock);
	return s;
}

/* Gives back an entry of c's send queue; a Go side that found the queue
 * full (it announces that before it looks once more) drains it next. */
static void conn_put(acpib_fast *x, acpib_fastconn *c)
{
	__atomic_sub_fetch(&c->inflight, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->go_waiting, __ATOMIC_SEQ_CST) && __atomic_exchange_n(&c->go_waiting, 0, __ATOMIC_SEQ_CST))
		wake(x);
}

/* Ends a use of a key (counted by key_use). A Go side that waits for the
 * key's users to drop to 0 (it set acks_waiting before it read them) is
 * woken by the last one. */
static void key_unuse(acpib_fast *x, acpib_fastkey *k)
{
	if (__atomic_sub_fetch(&k->users, 1, __ATOMIC_SEQ_CST) == 0 && __atomic_load_n(&x->acks_waiting, __ATOMIC_SEQ_CST))
		wake(x);
}

static void reg_unuse(acpib_fastreg *g) { __atomic_sub_fetch(&g->users, 1, __ATOMIC_SEQ_CST); }

static void slot_put(acpib_fast *x, int s)
{
	acpib_fastslot *sl = &x->slots[s];
	if (sl->key != NULL)
		key_unuse(x, sl->key);
	if (sl->reg != NULL)
		reg_unuse(sl->reg);
	if (sl->target != NULL)
		reg_unuse(sl->target);
	sl->key = NULL;
	sl->reg = NULL;
	sl->target = NULL;
	conn_put(x, sl->conn);
	__atomic_sub_fetch(&x->inflight, 1, __ATOMIC_SEQ_CST);
	acpf_lock(&x->slot_lock);
	sl->conn = NULL;
	sl->next_free = x->free_head;
	x->free_head = s;
	acpf_unlock(&x->slot_lock);
}

void acpib_fast_release(acpib_fast *x, uint64_t wr_id, int64_t *handle, int32_t *peer, uint64_t *ga,
                        uint64_t *n, int32_t *get)
{
	int s = (int)(wr_id & (ACPIB_FAST_SLOTS - 1));
	acpib_fastslot *sl = &x->slots[s];
	*handle = sl->handle;
	*peer = sl->conn->peer;
	*ga = sl->ga;
	*n = sl->n;
	*get = sl->get;
	slot_put(x, s);
}

int acpib_fast_oldest(acpib_fast *x, int64_t *posted)
{
	int peer = -1;
	acpf_lock(&x->slot_lock);
	for (int s = 0; s < ACPIB_FAST_SLOTS; s++) {
		acpib_fastslot *sl = &x->slots[s];
		const acpib_fastconn *c = LOAD(&sl->conn);
		if (c == NULL)
			continue;
		int64_t t = __atomic_load_n(&sl->posted, __ATOMIC_RELAXED);
		if (peer < 0 || t < *posted) {
			peer = c->peer;
			*posted = t;
		}
	}
	acpf_unlock(&x->slot_lock);
	return peer;
}

/* ---- the stash ---------------------------------------------------------- */

/* Keeps a completion for the Go side. poll_lock held; there is room. */
static void stash(acpib_fast *x, const acpib_wc *w) { x->stash[x->nstash++] = *w; }

int acpib_fast_take_stash(acpib_fast *x, acpib_wc *out, int max)
{
	int n = (int)x->nstash < max ? (int)x->nstash : max;
	memcpy(out, x->stash, sizeof(out[0]) * (size_t)n);
	memmove(x->stash, x->stash + n, sizeof(out[0]) * (x->nstash - (uint32_t)n));
	x->nstash -= (uint32_t)n;
	return n;
}

/* A post that failed becomes an error completion for the Go side, which
 * fails the operation and the connection. */
static void post_failed(acpib_fast *x, int s, int err)
{
	acpib_wc w;
	memset(&w, 0, sizeof(w));
	w.wr_id = ACPIB_FAST_TAG | (uint64_t)s;
	w.status = ACPIB_POST_FAILED;
	w.vendor_err = (uint32_t)err;
	for (;;) {
		acpf_lock(&x->poll_lock);
		if (x->nstash < ACPIB_FAST_STASH)
			break;
		/* Full: only the Go side empties it. */
		acpf_unlock(&x->poll_lock);
		sched_yield();
	}
	stash(x, &w);
	acpf_unlock(&x->poll_lock);
	wake(x);
}

/* ---- the hooks ------------------------------------------------------------ */

/* The local key of [p, p+n) when it lies in a starter memory of ours, or
 * in a same-host peer's registered here. */
static int local_key(acpib_fast *x, const void *p, uint64_t n, uint32_t *lkey)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	for (int i = 0; i < 3; i++) {
		if (!LOAD(&x->local[i].valid))
			continue;
		uint64_t base = x->local[i].base, size = x->local[i].size;
		if (a >= base && a - base <= size && n <= size - (a - base)) {
			*lkey = x->local[i].lkey;
			return 1;
		}
	}
	uint32_t m = LOAD(&x->nmapped);
	for (uint32_t i = 0; i < m; i++) {
		uint64_t base = x->mapped[i].base, size = x->mapped[i].size;
		if (a >= base && a - base <= size && n <= size - (a - base)) {
			*lkey = x->mapped[i].lkey;
			return 1;
		}
	}
	return 0;
}

/* The key of (peer, seg), counted as used; NULL when the table does not
 * hold it. Counted before valid is read: see fast.h. */
static acpib_fastkey *key_use(acpib_fast *x, int32_t peer, uint32_t seg)
{
	acpib_fastkey *keys = LOAD(&x->keys);
	if (keys == NULL)
		return NULL;
	acpib_fastkey *k = &keys[acpib_fast_key_slot(x, peer, (int32_t)seg)];
	__atomic_add_fetch(&k->users, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&k->valid, __ATOMIC_SEQ_CST) && k->peer == peer && k->seg == (int32_t)seg)
		return k;
	key_unuse(x, k);
	return NULL;
}

/* This process's registration of seg, counted as used, or NULL. */
static acpib_fastreg *reg_use(acpib_fast *x, uint32_t seg)
{
	acpib_fastreg *regs = LOAD(&x->regs);
	if (regs == NULL || seg >= ACPIB_FAST_REGS)
		return NULL;
	acpib_fastreg *g = &regs[seg];
	__atomic_add_fetch(&g->users, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&g->valid, __ATOMIC_SEQ_CST))
		return g;
	reg_unuse(g);
	return NULL;
}

/* Whether n bytes at GA offset off lie inside a region of size bytes
 * whose first byte has GA offset off_base (core RegTable.Acquire). */
static int in_bounds(uint64_t off, uint64_t n, uint64_t off_base, uint64_t size)
{
	return off >= off_base && off - off_base <= size && n <= size - (off - off_base);
}

/* Posts one work request of opcode between local memory and at: a copy
 * of n bytes, or an 8-byte atomic (get: its old value lands locally). */
static int64_t post_op(acpf_remote *r, void *state, acpf_take_fn take, int get, const acpf_end *at, uint64_t ga,
                       void *local, const acpf_end *mine, uint64_t n, uint8_t opcode, uint64_t compare_add,
                       uint64_t swap)
{
	acpib_fast *x = (acpib_fast *)r;
	/* Other colours are other devices' (the Go side's paths). */
	if (at->color != 0 || n == 0 || n > x->max_msg || at->rank < 0)
		return 0;
	acpib_fastconn *c = LOAD(&x->conns[(uint32_t)at->rank % ACPIB_FAST_TABLE]);
	if (c == NULL || c->rank != at->rank || !LOAD(&c->ready))
		return 0;
	/* The remote end. Out of bounds, a key not learnt yet, or one of
	 * another colour: the Go side fetches it or reports the error. */
	uint64_t raddr;
	uint32_t rkey;
	acpib_fastkey *k = NULL;
	acpib_fastreg *t = NULL, *g = NULL; /* released at decline: set before any jump there */
	if (at->seg <= 3) {
		const __typeof__(c->starters[0]) *st = &c->starters[at->seg];
		if (!st->valid || !in_bounds(at->off, n, st->off_base, st->size))
			return 0;
		raddr = st->base + (at->off - st->off_base);
		rkey = st->rkey;
	} else {
		/* A registration: a peer's, with the key the Go side learnt, or
		 * over the loopback connection ours (an atomic's target under
		 * --acp-ib-atomics nic) with our own key, counted as used as a
		 * local end's is, so that unregistering it waits for this work
		 * (fastRegUsers). Counted either way, released at decline. */
		uint64_t base, size, off_base;
		uint32_t color;
		if (c->loopback) {
			if ((t = reg_use(x, at->seg)) == NULL)
				return 0;
			base = t->base, size = t->size, off_base = t->off_base, color = t->color, rkey = t->rkey;
		} else {
			if ((k = key_use(x, c->peer, at->seg)) == NULL)
				return 0;
			base = k->base, size = k->size, off_base = k->off_base, color = k->color, rkey = k->rkey;
		}
		/* Registered for reads only: the Go side fails a write or an
		 * atomic into it (posted, it would end the connection). */
		uint32_t read_only = k != NULL ? k->read_only : t->read_only;
		if (color != at->color || !in_bounds(at->off, n, off_base, size) || (read_only && opcode != ACPIB_READ))
			goto decline;
		raddr = base + (at->off - off_base);
	}
	/* The local end. */
	uint32_t lkey = 0;
	int inl = 0;
	if (local == NULL) {
		g = reg_use(x, mine->seg);
		if (g == NULL || g->color != mine->color || !in_bounds(mine->off, n, g->off_base, g->size) ||
		    (get && g->read_only))
			goto decline;
		local = (void *)(uintptr_t)(g->base + (mine->off - g->off_base));
		lkey = g->lkey;
	} else if (!local_key(x, local, n, &lkey)) {
		if (get || n > c->inline_max)
			goto decline;
		inl = 1;
	}
	/* A full queue pair or slot pool: the caller polls to make room (its
	 * own completions free both) or declines to the Go side. The entry
	 * taken here goes back without waking a Go side that waits for one:
	 * nothing was freed, and the completion that frees one wakes it. The
	 * caller retries at once, so a wake here would make the Go side look,
	 * fail and ask again at every retry. */
	if (__atomic_add_fetch(&c->inflight, 1, __ATOMIC_SEQ_CST) > ACPIB_FAST_PER_QP) {
		__atomic_sub_fetch(&c->inflight, 1, __ATOMIC_SEQ_CST);
		goto full;
	}
	int s = slot_take(x);
	if (s < 0) {
		__atomic_sub_fetch(&c->inflight, 1, __ATOMIC_SEQ_CST);
		goto full;
	}
	/* Counted before the progress goroutine's sleep flag is read: it
	 * either sees this work or is woken below. */
	__atomic_add_fetch(&x->inflight, 1, __ATOMIC_SEQ_CST);
	int64_t h = take != NULL ? take(state) : 0;
	acpib_fastslot *sl = &x->slots[s];
	sl->handle = h;
	sl->ga = ga;
	sl->n = n;
	sl->get = get;
	sl->key = k;
	sl->reg = g;
	sl->target = t;
	/* The Go side's timer finds work that stays unacknowledged (a peer
	 * gone while the adapter retries for ever) by this time: a load of
	 * the clock its progress goroutine keeps, no clock read here. */
	__atomic_store_n(&sl->posted, __atomic_load_n(&x->clock, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
	__atomic_store_n(&sl->conn, c, __ATOMIC_RELEASE);

	acpib_wr w;
	memset(&w, 0, sizeof(w));
	w.wr_id = ACPIB_FAST_TAG | (uint64_t)s;
	w.laddr = (uint64_t)(uintptr_t)local;
	w.raddr = raddr;
	w.len = (uint32_t)n;
	w.lkey = lkey;
	w.rkey = rkey;
	w.opcode = opcode;
	w.compare_add = compare_add;
	w.swap = swap;
	w.flags = inl ? ACPIB_INLINE : 0;
	int rc = acpib_post_send(c->qp, &w, 1);
	if (rc != 0)
		post_failed(x, s, rc);
	__atomic_fetch_add(&x->app_polls, 1, __ATOMIC_RELAXED);
	if (__atomic_load_n(&x->idle_sleep, __ATOMIC_SEQ_CST))
		wake(x);
	return take != NULL ? h : 1;

	int64_t out;
full:
	out = ACPF_FULL;
	goto unpin;
decline:
	out = 0;
unpin:
	if (k != NULL)
		key_unuse(x, k);
	if (t != NULL)
		reg_unuse(t);
	if (g != NULL)
		reg_unuse(g);
	return out;
}

static int64_t fast_copy(acpf_remote *r, void *state, acpf_take_fn take, int get, const acpf_end *at, uint64_t ga,
                         void *local, const acpf_end *mine, uint64_t n)
{
	return post_op(r, state, take, get, at, ga, local, mine, n, get ? ACPIB_READ : ACPIB_WRITE, 0, 0);
}

/* An 8-byte fetch-and-add or compare-and-swap on the adapters
 * (--acp-ib-atomics nic), the target possibly ours (the loopback
 * connection's record); the old value lands at the result location as a
 * read's bytes would. The Go side reports a failed one as a read of the
 * word. */
static int64_t fast_atomic(acpf_remote *r, void *state, acpf_take_fn take, int cas, const acpf_end *at, uint64_t ga,
                           void *local, const acpf_end *mine, uint64_t a, uint64_t b)
{
	return post_op(r, state, take, 1, at, ga, local, mine, 8, cas ? ACPIB_CMP_SWAP : ACPIB_FETCH_ADD, a, cas ? b : 0);
}

/* A barrier's arrival: always inline (the value lives on our stack), no
 * handle. */
static int fast_signal(acpf_remote *r, const acpf_end *at, uint64_t ga, uint64_t value)
{
	acpib_fast *x = (acpib_fast *)r;
	int64_t rc = post_op(r, NULL, NULL, 0, at, ga, &value, NULL, 8, ACPIB_WRITE, 0, 0);
	if (rc == 1)
		__atomic_fetch_add(&x->signals, 1, __ATOMIC_RELAXED);
	return (int)rc;
}

static int fast_poll(acpf_remote *r, int64_t *handles, int max, int *pending)
{
	acpib_fast *x = (acpib_fast *)r;
	__atomic_fetch_add(&x->app_polls, 1, __ATOMIC_RELAXED);
	/* Nothing of ours in flight: what the wait waits for is the Go side's,
	 * which polls the queue itself (polling here would only move its
	 * completions through the stash). */
	*pending = LOAD(&x->inflight) == 0;
	if (*pending || !try_lock(&x->poll_lock))
		return 0;
	if (max > ACPIB_FAST_BATCH)
		max = ACPIB_FAST_BATCH;
	int k = 0, stashed = 0;
	/* Poll only with room for everything the batch may bring. */
	if (x->nstash + (uint32_t)max <= ACPIB_FAST_STASH) {
		acpib_wc wc[ACPIB_FAST_BATCH];
		int n = acpib_poll(x->dev, wc, max);
		for (int i = 0; i < n; i++) {
			if ((wc[i].wr_id & ACPIB_FAST_TAG) && !(wc[i].wr_id & (1ull << 63)) && wc[i].status == IBV_WC_SUCCESS) {
				acpib_fastslot *sl = &x->slots[wc[i].wr_id & (ACPIB_FAST_SLOTS - 1)];
				if (sl->handle != 0)
					handles[k++] = sl->handle;
				slot_put(x, (int)(wc[i].wr_id & (ACPIB_FAST_SLOTS - 1)));
			} else {
				stash(x, &wc[i]);
				stashed = 1;
			}
		}
	}
	/* The wait goes to Go when completions wait for it there, and when
	 * nothing of ours is in flight (the operation is Go's). */
	*pending = x->nstash > 0 || LOAD(&x->inflight) == 0;
	acpf_unlock(&x->poll_lock);
	/* A message or an error for the Go side: its progress goroutine may
	 * sleep on an event that this poll consumed the reason for. */
	if (stashed && __atomic_load_n(&x->idle_sleep, __ATOMIC_SEQ_CST))
		wake(x);
	return k;
}

/* ---- set-up ------------------------------------------------------------------ */

acpib_fast *acpib_fast_new(acpib_dev *dev, int wake_fd, uint32_t max_msg, uint32_t nkeys)
{
	acpib_fast *x = calloc(1, sizeof(*x));
	if (x == NULL)
		return NULL;
	x->hooks.copy = fast_copy;
	x->hooks.poll = fast_poll;
	x->hooks.atomic = fast_atomic;
	x->hooks.signal = fast_signal;
	x->dev = dev;
	x->wake_fd = wake_fd;
	x->max_msg = max_msg;
	x->nkeys = nkeys > 0 ? nkeys : 1;
	x->free_head = -1;
	for (int s = ACPIB_FAST_SLOTS - 1; s >= 0; s--) {
		x->slots[s].next_free = x->free_head;
		x->free_head = s;
	}
	return x;
}

void acpib_fast_free(acpib_fast *x)
{
	free(x->keys);
	free(x->regs);
	free(x);
}

/* ---- keys and registrations ------------------------------------------------- */

uint32_t acpib_fast_key_slot(acpib_fast *x, int32_t peer, int32_t seg) { return acpib_key_slot(x->nkeys, peer, seg); }

int acpib_fast_key_put(acpib_fast *x, const acpib_fastkey *k)
{
	acpib_fastkey *keys = x->keys;
	if (keys == NULL) {
		keys = calloc(x->nkeys, sizeof(*keys));
		if (keys == NULL)
			return 0;
		__atomic_store_n(&x->keys, keys, __ATOMIC_RELEASE);
	}
	acpib_fastkey *e = &keys[acpib_fast_key_slot(x, k->peer, k->seg)];
	__atomic_store_n(&e->valid, 0, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&e->users, __ATOMIC_SEQ_CST) != 0)
		return 0;
	e->peer = k->peer;
	e->seg = k->seg;
	e->serial = k->serial;
	e->rkey = k->rkey;
	e->color = k->color;
	e->read_only = k->read_only;
	e->base = k->base;
	e->size = k->size;
	e->off_base = k->off_base;
	__atomic_store_n(&e->valid, 1, __ATOMIC_SEQ_CST);
	return 1;
}

int acpib_fast_key_drop(acpib_fast *x, int32_t peer, int32_t seg, uint32_t serial)
{
	acpib_fastkey *keys = LOAD(&x->keys);
	if (keys == NULL)
		return -1;
	uint32_t s = acpib_fast_key_slot(x, peer, seg);
	acpib_fastkey *e = &keys[s];
	if (!e->valid || e->peer != peer || e->seg != seg || e->serial > serial)
		return -1;
	__atomic_store_n(&e->valid, 0, __ATOMIC_SEQ_CST);
	return (int)s;
}

int32_t acpib_fast_key_users(acpib_fast *x, uint32_t s)
{
	acpib_fastkey *keys = LOAD(&x->keys);
	return keys == NULL ? 0 : __atomic_load_n(&keys[s].users, __ATOMIC_SEQ_CST);
}

int acpib_fast_hold(acpib_fast *x, int key, int32_t peer, uint32_t seg)
{
	if (key) {
		acpib_fastkey *k = key_use(x, peer, seg);
		return k == NULL ? -1 : (int)(k - x->keys);
	}
	return reg_use(x, seg) == NULL ? -1 : (int)seg;
}

void acpib_fast_unhold(acpib_fast *x, int key, int s)
{
	if (key)
		key_unuse(x, &x->keys[s]);
	else
		reg_unuse(&x->regs[s]);
}

int acpib_fast_reg(acpib_fast *x, uint32_t seg, const acpib_fastreg *r, int valid)
{
	if (seg >= ACPIB_FAST_REGS)
		return 0;
	acpib_fastreg *regs = x->regs;
	if (regs == NULL) {
		if (!valid)
			return 1;
		regs = calloc(ACPIB_FAST_REGS, sizeof(*regs));
		if (regs == NULL)
			return 0;
		__atomic_store_n(&x->regs, regs, __ATOMIC_RELEASE);
	}
	acpib_fastreg *g = &regs[seg];
	__atomic_store_n(&g->valid, 0, __ATOMIC_SEQ_CST);
	if (!valid)
		return 1;
	if (__atomic_load_n(&g->users, __ATOMIC_SEQ_CST) != 0)
		return 0;
	g->lkey = r->lkey;
	g->rkey = r->rkey;
	g->color = r->color;
	g->read_only = r->read_only;
	g->base = r->base;
	g->size = r->size;
	g->off_base = r->off_base;
	__atomic_store_n(&g->valid, 1, __ATOMIC_SEQ_CST);
	return 1;
}

int32_t acpib_fast_reg_users(acpib_fast *x, uint32_t seg)
{
	acpib_fastreg *regs = LOAD(&x->regs);
	return regs == NULL || seg >= ACPIB_FAST_REGS ? 0 : __atomic_load_n(&regs[seg].users, __ATOMIC_SEQ_CST);
}

int acpib_fast_mapped(acpib_fast *x, uint64_t base, uint64_t size, uint32_t lkey)
{
	uint32_t m = x->nmapped;
	if (m >= ACPIB_FAST_MAPPED)
		return 0;
	x->mapped[m].base = base;
	x->mapped[m].size = size;
	x->mapped[m].lkey = lkey;
	__atomic_store_n(&x->nmapped, m + 1, __ATOMIC_RELEASE);
	return 1;
}

void acpib_fast_local(acpib_fast *x, int seg, uint64_t base, uint64_t size, uint32_t lkey, int valid)
{
	if (seg < 0 || seg > 2)
		return;
	__atomic_store_n(&x->local[seg].valid, 0, __ATOMIC_RELEASE);
	if (!valid)
		return;
	x->local[seg].base = base;
	x->local[seg].size = size;
	x->local[seg].lkey = lkey;
	__atomic_store_n(&x->local[seg].valid, 1, __ATOMIC_RELEASE);
}

acpib_fastconn *acpib_fast_conn_new(void) { return calloc(1, sizeof(acpib_fastconn)); }

void acpib_fast_conn_up(acpib_fast *x, acpib_fastconn *c)
{
	__atomic_store_n(&c->ready, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&x->conns[(uint32_t)c->rank % ACPIB_FAST_TABLE], c, __ATOMIC_RELEASE);
}

void acpib_fast_conn_down(acpib_fastconn *c) { __atomic_store_n(&c->ready, 0, __ATOMIC_RELEASE); }
