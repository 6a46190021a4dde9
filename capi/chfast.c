/*
 * chfast.c - see chfast.h. The rules mirror ml/ch: send.go's writeSlot in
 * place (slot.go's writeOrdered) and through a staging slot (slot.go's
 * write and checksum), recv.go's take of a message through the ring,
 * fast.go's lock and request table, segbuf's Count and Wait.
 */
#include <sched.h>
#include <string.h>
#include <time.h>

#include "chfast.h"
#include "fastpath.h"
#include "_cgo_export.h"

static void *blocks[ACPCH_MAX_CHANNELS];

#define U32(f, off) ((uint32_t *)((char *)(f) + (off)))
#define U64(f, off) ((uint64_t *)((char *)(f) + (off)))
#define LOAD(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#define STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_RELEASE)

/* Whether payloads of ACPCH_MOVSB_MIN bytes or more are copied with `rep
 * movsb`: Go's decision (ml/ch, internal/memcopy), so that both
 * sides of a channel copy alike. */
static int movsb_fast;

void acpch_copy_by_movsb(int on) { __atomic_store_n(&movsb_fast, on, __ATOMIC_RELAXED); }

/* Copies a message's payload into the receiver's ring. The receiver read
 * those lines last; a copy of vector stores first fetches each one back.
 * `rep movsb` (ERMS) writes them whole: on vm-2c's AMD EPYC a 1 KiB channel
 * message took 0.34 µs one way between distant CPUs where a vector copy
 * took 0.41 and gcc's own expansion of memcpy (`rep movsq`, for a size it
 * can bound, as here) 0.40; on an Intel Xeon (Cascade Lake) glibc's
 * memcpy was the faster, and Go's decision says so there. Short payloads
 * use memcpy; the empty asm hides their bound from gcc, so that it calls
 * glibc. */
static inline void copy_to_ring(void *dst, const void *src, size_t n)
{
#if defined(__x86_64__)
    if (__atomic_load_n(&movsb_fast, __ATOMIC_RELAXED) && n >= ACPCH_MOVSB_MIN) {
        __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
        return;
    }
#endif
    __asm__("" : "+r"(n));
    memcpy(dst, src, n);
}

void acpch_set(uint64_t index, void *fast)
{
    if (index < ACPCH_MAX_CHANNELS)
        __atomic_store_n(&blocks[index], fast, __ATOMIC_SEQ_CST);
}

void acpch_clear(void)
{
    for (size_t i = 0; i < ACPCH_MAX_CHANNELS; i++)
        if (blocks[i] != NULL)
            __atomic_store_n(&blocks[i], NULL, __ATOMIC_SEQ_CST);
}

/* Takes the block's lock, spinning a little: its holders keep it for
 * well under a microsecond, unless the scheduler preempted one. */
static int trylock(char *f)
{
    int32_t *w = (int32_t *)(f + ACPCH_LOCK);
    for (int i = 0; i < 1000; i++) {
        int32_t zero = 0;
        if (LOAD(w) == 0 && __atomic_compare_exchange_n(w, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
            return 1;
    }
    return 0;
}

static void unlock(char *f) { __atomic_store_n((int32_t *)(f + ACPCH_LOCK), 0, __ATOMIC_RELEASE); }

/* The fast block of channel ch, locked, or NULL. */
static char *lock_channel(uintptr_t ch)
{
    uint64_t idx = ch & 0xffffffffu;
    if (idx == 0 || idx >= ACPCH_MAX_CHANNELS)
        return NULL;
    char *f = __atomic_load_n(&blocks[idx], __ATOMIC_ACQUIRE);
    if (f == NULL || !trylock(f))
        return NULL;
    if (LOAD(U64(f, ACPCH_HANDLE)) != (uint64_t)ch) {
        unlock(f);
        return NULL;
    }
    return f;
}

/* Slot checksums (ml/ch slot.go slotChecksum): four 64-bit lanes, word i of
 * the header (up to the checksum) and then of the payload into lane i mod
 * 4 by a multiply-and-rotate step, the lanes combined with the length and
 * mixed. */
#define SUM_K1 UINT64_C(0x9e3779b97f4a7c15)
#define SUM_K2 UINT64_C(0xc2b2ae3d27d4eb4f)

static inline uint64_t sum_rotl(uint64_t x, int r) { return x << r | x >> (64 - r); }
static inline uint64_t sum_step(uint64_t lane, uint64_t w) { return sum_rotl(lane + w * SUM_K2, 31) * SUM_K1; }
static inline uint64_t sum_word(const unsigned char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return w; /* little-endian hosts only, as the slot layout */
}

uint64_t acpch_slot_sum(const void *slot, uint64_t n)
{
    const unsigned char *s = slot, *p = s + ACPCH_HEADER_SIZE;
    uint64_t v[4] = {UINT64_C(0x60ea27f6a71f6764), SUM_K2, 0, UINT64_C(0x61c8864680b583eb)};
    for (int i = 0; i < 4; i++)
        v[i] = sum_step(v[i], sum_word(s + 8 * i));
    uint64_t m = n;
    for (; m >= 32; p += 32, m -= 32) {
        v[0] = sum_step(v[0], sum_word(p));
        v[1] = sum_step(v[1], sum_word(p + 8));
        v[2] = sum_step(v[2], sum_word(p + 16));
        v[3] = sum_step(v[3], sum_word(p + 24));
    }
    int i = 0;
    for (; m >= 8; p += 8, m -= 8, i++)
        v[i] = sum_step(v[i], sum_word(p));
    if (m > 0) {
        unsigned char w[8] = {0};
        memcpy(w, p, m);
        v[i] = sum_step(v[i], sum_word(w));
    }
    uint64_t h = sum_rotl(v[0], 1) + sum_rotl(v[1], 7) + sum_rotl(v[2], 12) + sum_rotl(v[3], 18) + n;
    h ^= h >> 33;
    h *= SUM_K2;
    h ^= h >> 29;
    h *= SUM_K1;
    h ^= h >> 32;
    return h;
}

/* Request handles: bit 63, 16 bits of the channel handle's generation,
 * 16 bits of its index, 31 bits of the request's sequence number. */
static uint64_t request_handle(uint64_t ch, uint64_t q)
{
    return ACPCH_REQUEST_BIT | ((ch >> 32) & 0xffff) << 47 | (ch & 0xffff) << 31 | (q & 0x7fffffff);
}

static uint64_t *entry(char *f, uint64_t q)
{
    return U64(f, ACPCH_TABLE + (q % ACPCH_ENTRIES) * ACPCH_ENTRY_SIZE);
}

/* segbuf countCheck */
static uint64_t count_check(uint64_t v)
{
    uint64_t z = v + UINT64_C(0x9e3779b97f4a7c15);
    z = (z ^ z >> 30) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ z >> 27) * UINT64_C(0x94d049bb133111eb);
    return z ^ z >> 31;
}

/* Slots a message of size bytes takes in the ring (slot.go). */
static uint64_t slots_for(uint64_t size)
{
    return size <= ACPCH_PAYLOAD ? 1 : (size + ACPCH_PAYLOAD - 1) / ACPCH_PAYLOAD;
}

/* Payload bytes of the slot at offset off of a message of size bytes. */
static uint64_t slot_bytes(uint64_t size, uint64_t off)
{
    return size - off < ACPCH_PAYLOAD ? size - off : ACPCH_PAYLOAD;
}

/* The slot of ring position pos. */
static char *slot_at(char *ring, uint64_t pos) { return ring + (pos % ACPCH_SLOT_COUNT) * ACPCH_SLOT_SIZE; }

/* Writes the header fields of slot i of a message of size bytes, whose
 * payload of n bytes starts at offset off of the message (slot.go
 * header): the first slot carries the size, the others their offset.
 * The sequence number and the checksum are the caller's: their order
 * differs between slots written in place and slots put. */
static void set_header(char *s, uint64_t i, uint32_t flags, uint64_t n, uint64_t size, uint64_t off)
{
    *(uint32_t *)(s + 8) = (i == 0 ? ACPCH_KIND_FIRST : ACPCH_KIND_NEXT) | flags;
    *(uint32_t *)(s + 12) = (uint32_t)n;
    *(uint64_t *)(s + 16) = size;
    *(uint64_t *)(s + 24) = off;
}

/* Stages the k slots of a message from tail on in the staging slots, each
 * with its header and checksum (send.go writeSlot, slot.go write), and
 * puts them into
 * the receiver's ring: one put per run of slots that does not wrap around
 * the ring, so one or two. Each staging slot's entry gets the handle of
 * the put that reads it. Returns 0 when the fast path of copies declined
 * a put; a run already put then holds exactly what Go writes there again
 * when it sends the message (the receiver takes no slot twice: a slot is
 * taken by its sequence number). */
static int put_slots(char *f, uint64_t tail, uint64_t k, const char *buf, size_t size)
{
    char *stage = (char *)(uintptr_t)*U64(f, ACPCH_STAGE_PTR);
    for (uint64_t i = 0, off = 0; i < k; i++, off += ACPCH_PAYLOAD) {
        char *s = slot_at(stage, tail + i);
        uint64_t n = slot_bytes(size, off);
        *(uint64_t *)s = tail + i + 1;
        set_header(s, i, 0, n, size, off);
        if (n > 0)
            memcpy(s + ACPCH_HEADER_SIZE, buf + off, n);
        *(uint64_t *)(s + 32) = acpch_slot_sum(s, n);
    }
    acp_ga_t ring = (acp_ga_t)*U64(f, ACPCH_PUT_RING), from = (acp_ga_t)*U64(f, ACPCH_STAGE_GA);
    for (uint64_t i = 0; i < k;) {
        /* The run from slot i to the ring's end or the message's. */
        uint64_t first = (tail + i) % ACPCH_SLOT_COUNT, run = ACPCH_SLOT_COUNT - first;
        if (run > k - i)
            run = k - i;
        uint64_t off = first * ACPCH_SLOT_SIZE;
        size_t bytes = (run - 1) * ACPCH_SLOT_SIZE + ACPCH_HEADER_SIZE + slot_bytes(size, (i + run - 1) * ACPCH_PAYLOAD);
        acp_handle_t h = acpfast_copy(NULL, ring + off, from + off, bytes, ACP_HANDLE_NULL);
        if (h == ACP_HANDLE_NULL)
            return 0;
        for (uint64_t j = 0; j < run; j++)
            *U64(f, ACPCH_STAGE + ((first + j) % ACPCH_SLOT_COUNT) * 8) = (uint64_t)h;
        i += run;
    }
    return 1;
}

uintptr_t acpch_send(uintptr_t ch, void *buf, size_t size)
{
    if (size > ACPCH_EAGER_MAX || (buf == NULL && size > 0))
        return 0;
    char *f = lock_channel(ch);
    if (f == NULL)
        return 0;
    uintptr_t h = 0;
    uint32_t mode = LOAD(U32(f, ACPCH_SEND_OK));
    if (mode != ACPCH_SEND_IN_PLACE && mode != ACPCH_SEND_BY_PUT)
        goto out;
    /* Room for every slot of the message: the receiver released them
     * (segbuf Pair.Count). */
    uint64_t tail = *U64(f, ACPCH_POS), seen = *U64(f, ACPCH_SEEN), k = slots_for(size);
    uint64_t *rec = (uint64_t *)(uintptr_t)*U64(f, ACPCH_COUNT);
    uint64_t v = LOAD(&rec[0]), c = LOAD(&rec[1]);
    if (c == count_check(v) && v > seen)
        *U64(f, ACPCH_SEEN) = seen = v;
    if (tail - seen + k > ACPCH_SLOT_COUNT)
        goto out;
    uint64_t q = *U64(f, ACPCH_NEXT), *e = entry(f, q);
    if (LOAD(&e[1]) != ACPCH_FREE)
        goto out;
    if (mode == ACPCH_SEND_BY_PUT) {
        /* A staging slot is free once the put that last read it
         * completed (send.go slotFree); when that is not known here, Go
         * decides. That put alone: operations issued before it may be
         * Go's (a release of slots), which only Go's progress sees
         * complete, and waiting for those handed every send for a while to
         * Go. A message of several slots is sent here too: through Go,
         * each of its puts was a call into Go and the post of a work
         * request from there (a 4 KiB message took milliseconds one way
         * over Soft-RoCE, 8-17 times a put's). */
        for (uint64_t i = 0; i < k; i++) {
            uint64_t *stage = U64(f, ACPCH_STAGE + ((tail + i) % ACPCH_SLOT_COUNT) * 8);
            if (*stage != 0 && !acpfast_op_done(NULL, (acp_handle_t)*stage))
                goto out;
        }
        if (!put_slots(f, tail, k, buf, size))
            goto out;
    } else {
        /* The slots in place, each one's sequence number last
         * (writeOrdered). */
        char *ring = (char *)(uintptr_t)*U64(f, ACPCH_RING);
        for (uint64_t i = 0, off = 0; i < k; i++, off += ACPCH_PAYLOAD) {
            char *s = slot_at(ring, tail + i);
            uint64_t n = slot_bytes(size, off);
            if (n > 0)
                copy_to_ring(s + ACPCH_HEADER_SIZE, (char *)buf + off, n);
            set_header(s, i, ACPCH_KIND_ORDERED, n, size, off);
            *(uint64_t *)(s + 32) = 0;
            STORE((uint64_t *)s, tail + i + 1);
        }
    }
    *U64(f, ACPCH_POS) = tail + k;
    *U64(f, ACPCH_NEXT) = q + 1;
    h = request_handle(ch, q);
    e[0] = h;
    e[2] = 0;
    STORE(&e[1], ACPCH_DONE);
out:
    unlock(f);
    return h;
}

static int release_slots(char *f, uint64_t head);

uintptr_t acpch_recv(uintptr_t ch, void *buf, size_t size)
{
    if ((buf == NULL && size > 0) || (uintptr_t)buf + size < (uintptr_t)buf ||
        (uintptr_t)buf + size > ACPCH_ADDRESS_LIMIT)
        return 0; /* Go says why */
    char *f = lock_channel(ch);
    if (f == NULL)
        return 0;
    uintptr_t h = 0;
    uint64_t q = *U64(f, ACPCH_NEXT), *e = entry(f, q);
    if (LOAD(U32(f, ACPCH_RECV_OK)) && LOAD(&e[1]) == ACPCH_FREE) {
        h = request_handle(ch, q);
        e[0] = h;
        e[2] = (uint64_t)(uintptr_t)buf;
        e[3] = size;
        STORE(&e[1], ACPCH_POSTED);
        *U64(f, ACPCH_NEXT) = q + 1;
        /* Slots released by a put go back here, at one short of the half
         * at which fill releases them: a receiver that posts its next
         * receive has usually answered the last message, so the put is
         * off the round trip, where fill's release came between a
         * pingpong's every fourth message and its answer (over Soft-RoCE
         * a post is 20-30 us of the poster's time). */
        uint64_t head = *U64(f, ACPCH_POS);
        if (*U64(f, ACPCH_PUB_AT) == 0 && head - *U64(f, ACPCH_PUBLISHED) >= ACPCH_SLOT_COUNT / 2 - 1)
            release_slots(f, head);
    }
    unlock(f);
    return h;
}

/* Whether the slot at s holds slot seq whole (slot.go landed), with its
 * header copied to h. Slots written in place (ORDERED) are whole once their
 * number is there; a put's bytes land in any order, and while we read them
 * (the adapter writes the slot as we poll), so the header is read once,
 * into h, the checksum is computed over the slot as it is, and h must be
 * what the slot holds after that. */
static int slot_landed(const char *s, uint64_t seq, char h[ACPCH_HEADER_SIZE])
{
    if (LOAD((const uint64_t *)s) != seq)
        return 0;
    for (int i = 0; i < ACPCH_HEADER_SIZE; i += 8) {
        uint64_t w = __atomic_load_n((const uint64_t *)(s + i), __ATOMIC_ACQUIRE);
        memcpy(h + i, &w, 8);
    }
    uint32_t kind = *(uint32_t *)(h + 8), n = *(uint32_t *)(h + 12);
    if (n > ACPCH_PAYLOAD)
        return 0; /* a header still half old */
    if (kind & ACPCH_KIND_ORDERED)
        return 1;
    if (acpch_slot_sum(s, n) != LOAD((const uint64_t *)(s + 32)))
        return 0;
    for (int i = 0; i < 40; i += 8)
        if (LOAD((const uint64_t *)(s + i)) != *(uint64_t *)(h + i))
            return 0;
    return *(uint64_t *)h == seq;
}

/* The message whose first slot is at head, when all its slots landed
 * whole: its size in *total and its slot count in *k. Returns 1 when it is
 * ready, 0 when a slot is still missing, -1 when it is not for C (a
 * rendezvous, or not what a sender writes: Go takes it and reports the
 * error). */
static int landed_message(char *ring, uint64_t head, uint64_t *total, uint64_t *k)
{
    char h[ACPCH_HEADER_SIZE];
    if (!slot_landed(slot_at(ring, head), head + 1, h))
        return 0;
    uint32_t kind = *(uint32_t *)(h + 8) & ~ACPCH_KIND_ORDERED, n = *(uint32_t *)(h + 12);
    uint64_t t = *(uint64_t *)(h + 16);
    if (kind != ACPCH_KIND_FIRST || t > ACPCH_EAGER_MAX || n != slot_bytes(t, 0))
        return -1;
    uint64_t m = slots_for(t);
    if (m > ACPCH_MAX_SLOTS)
        return -1;
    for (uint64_t i = 1; i < m; i++) {
        if (!slot_landed(slot_at(ring, head + i), head + i + 1, h))
            return 0;
        uint64_t off = i * ACPCH_PAYLOAD;
        if ((*(uint32_t *)(h + 8) & ~ACPCH_KIND_ORDERED) != ACPCH_KIND_NEXT || *(uint32_t *)(h + 12) != slot_bytes(t, off) ||
            *(uint64_t *)(h + 16) != t || *(uint64_t *)(h + 24) != off)
            return -1;
    }
    *total = t;
    *k = m;
    return 1;
}

/* Releases slots up to head with a put of {head, check} into the sender's
 * record (segbuf Pair.flush), where Go says where it is (over ib); returns
 * 0 when Go must release them. Each release starts once the one before,
 * Go's or ours (ACPCH_PUB_LAST), completed, so that the record ends with
 * the largest count, and the staged bytes are written only once the put
 * before, which may read them, is done. That put alone: see acpch_send. */
static int release_by_put(char *f, uint64_t head)
{
    acp_ga_t remote = (acp_ga_t)*U64(f, ACPCH_PUB_REMOTE);
    acp_handle_t last = (acp_handle_t)*U64(f, ACPCH_PUB_LAST);
    if (remote == 0 || (last != 0 && !acpfast_op_done(NULL, last)))
        return 0;
    uint64_t *st = U64(f, ACPCH_PUB_STAGE);
    st[0] = head;
    st[1] = count_check(head);
    acp_handle_t h = acpfast_lib_copy(NULL, remote, (acp_ga_t)*U64(f, ACPCH_PUB_STAGE_GA), 16, ACP_HANDLE_NULL);
    if (h == ACP_HANDLE_NULL)
        return 0;
    *U64(f, ACPCH_PUB_LAST) = (uint64_t)h;
    return 1;
}

/* Releases the slots taken up to head (recv.go publish): in place when the
 * sender's record is mapped here, else by a put; 0 when Go must. */
static int release_slots(char *f, uint64_t head)
{
    uint64_t *rec = (uint64_t *)(uintptr_t)*U64(f, ACPCH_PUB_AT);
    if (rec != NULL) {
        STORE(&rec[0], head);
        STORE(&rec[1], count_check(head));
    } else if (!release_by_put(f, head)) {
        return 0;
    }
    *U64(f, ACPCH_PUBLISHED) = head;
    return 1;
}

/* fill takes landed messages of up to ACPCH_MAX_SLOTS ordered slots into
 * the receives C posted, in order, once all of a message's slots are there
 * (the ring always has room for them: the receiver releases slots when
 * half the ring waits, so a sender is never stopped short of five). Returns
 * 1 when Go must take over (a slot C does not handle, or Go has work on the
 * channel), and sets *publish when half the ring waits to be released. */
static int fill(char *f, int *publish)
{
    uint64_t filled = *U64(f, ACPCH_FILLED), next = *U64(f, ACPCH_NEXT);
    if (filled == next)
        return 0;
    if (!LOAD(U32(f, ACPCH_RECV_OK)))
        return 1;
    uint64_t head = *U64(f, ACPCH_POS);
    char *ring = (char *)(uintptr_t)*U64(f, ACPCH_RING);
    int rc = 0;
    for (; filled != next; filled++) {
        uint64_t t = 0, k = 0;
        int ready = landed_message(ring, head, &t, &k);
        if (ready <= 0) {
            rc = ready < 0;
            break;
        }
        uint64_t *e = entry(f, filled), cap = e[3];
        /* Ask for every line of the message at once: they are in the
         * sender's cache, and the copy below would otherwise wait for them
         * a few at a time. */
        for (uint64_t i = 0; i < k; i++) {
            char *s = slot_at(ring, head + i) + ACPCH_HEADER_SIZE;
            uint64_t n = *(uint32_t *)(s - ACPCH_HEADER_SIZE + 12);
            for (uint64_t o = 0; o < n; o += 64)
                __builtin_prefetch(s + o);
        }
        for (uint64_t i = 0, off = 0; i < k && off < cap; i++, off += ACPCH_PAYLOAD) {
            char *s = slot_at(ring, head + i);
            uint64_t n = *(uint32_t *)(s + 12);
            memcpy((char *)(uintptr_t)e[2] + off, s + ACPCH_HEADER_SIZE, n < cap - off ? n : cap - off);
        }
        e[2] = t < cap ? t : cap;
        STORE(&e[1], ACPCH_DONE);
        head += k;
    }
    *U64(f, ACPCH_FILLED) = filled;
    *U64(f, ACPCH_POS) = head;
    if (head - *U64(f, ACPCH_PUBLISHED) >= ACPCH_SLOT_COUNT / 2 && !release_slots(f, head))
        *publish = 1;
    return rc;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* segbuf's wait: this long in all before Go's sleeping wait takes over. */
#define SPIN_FOR 1000000
/* A spinning wait runs a pass of Go's background progress this often
 * (the goroutine stays away meanwhile: other channels' queued work goes
 * on). */
#define PASS_EVERY 250000

static int32_t waiting;

int32_t acpch_waiting(void) { return __atomic_load_n(&waiting, __ATOMIC_RELAXED); }

static size_t wait_request(uintptr_t h, int *counted);

size_t acpch_wait(uintptr_t h)
{
    int counted = 0;
    size_t n = wait_request(h, &counted);
    if (counted)
        __atomic_sub_fetch(&waiting, 1, __ATOMIC_RELAXED);
    return n;
}

/* acpch_wait; *counted is set once the wait counts in waiting. */
static size_t wait_request(uintptr_t h, int *counted)
{
    uint64_t idx = (h >> 31) & 0xffff, gen = (h >> 47) & 0xffff, q = h & 0x7fffffff;
    uint64_t spin = acpfast_spin(), start = 0, pass = PASS_EVERY;
    for (uint32_t i = 1;; i++) {
        char *f = __atomic_load_n(&blocks[idx], __ATOMIC_ACQUIRE);
        if (f == NULL)
            return goacp_wait_ch(h); /* not a live request: Go says why */
        /* A finished request is claimed without the lock: the one who
         * turns its state from DONE to FREE owns the result (Go's
         * orphanAll claims the same way). */
        uint64_t *e = entry(f, q);
        if (LOAD(&e[1]) == ACPCH_DONE && LOAD(&e[0]) == h) {
            uint64_t n = LOAD(&e[2]), state = ACPCH_DONE;
            if (__atomic_compare_exchange_n(&e[1], &state, ACPCH_FREE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                return n;
        }
        if (!trylock(f)) {
            sched_yield();
            continue;
        }
        uint64_t ch = LOAD(U64(f, ACPCH_HANDLE)), state = LOAD(&e[1]);
        if ((ch & 0xffffffffu) != idx || ((ch >> 32) & 0xffff) != gen || e[0] != h || state == ACPCH_FREE) {
            unlock(f);
            return goacp_wait_ch(h);
        }
        if (state == ACPCH_ADOPTED) {
            uintptr_t gh = e[3];
            STORE(&e[1], ACPCH_FREE);
            unlock(f);
            return goacp_wait_ch(gh);
        }
        /* A posted receive: take what landed (sends are done at once). */
        int publish = 0, adopt = state == ACPCH_POSTED ? fill(f, &publish) : 0;
        /* Claimed as above: a thread waiting on the same request may have
         * taken it without the lock meanwhile, and then it is not ours
         * (storing FREE here gave both waiters the message). */
        uint64_t done = ACPCH_DONE;
        size_t n = LOAD(&e[1]) == ACPCH_DONE ? e[2] : 0;
        if (__atomic_compare_exchange_n(&e[1], &done, ACPCH_FREE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            unlock(f);
            if (publish)
                goacp_ch_publish(ch);
            return n;
        }
        unlock(f);
        if (publish)
            goacp_ch_publish(ch);
        if (start == 0) {
            start = now_ns();
            *counted = 1;
            __atomic_add_fetch(&waiting, 1, __ATOMIC_RELAXED);
        }
        /* Busy for the engine's spin time, then yielding now and then,
         * then Go's wait, which sleeps (segbuf Wait). */
        if (!adopt && (i & 31) == 0) {
            uint64_t waited = now_ns() - start;
            if (waited > SPIN_FOR)
                adopt = 1;
            else if (waited >= spin)
                sched_yield();
            if (!adopt && waited >= pass) {
                goacp_ch_pass();
                pass = waited + PASS_EVERY;
            }
        }
        if (adopt)
            goacp_ch_adopt(ch);
    }
}
