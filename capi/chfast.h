/*
 * chfast.h - the C fast path of channels (acp_nbsend_ch, acp_nbrecv_ch,
 * acp_wait_ch).
 *
 * Every channel shares a fast block with this code (ml/ch/fast.go keeps
 * the layout below). Sends that go through the ring (up to 16 KiB, one to
 * five slots) are written in place into the peer's ring when the sender
 * maps it and it has room for the whole message; where it is not mapped
 * but a put lands by itself (ib), its slots are staged, each with its
 * checksum, and put by the C fast path of copies. Receives of messages that
 * came in such slots are taken here once every slot landed (whole, by its
 * checksum, when it came by a put); everything else is Go's, which adopts
 * the receives C posted when their messages are not for C. Requests posted
 * here carry bit 63 in their handle; Go's never do.
 */
#ifndef ACP_CHFAST_H
#define ACP_CHFAST_H

#include <stddef.h>
#include <stdint.h>

/* Fast block offsets (ml/ch/fast.go). */
#define ACPCH_LOCK       0
#define ACPCH_SEND_OK    4
#define ACPCH_RECV_OK    8
#define ACPCH_HANDLE     16
#define ACPCH_POS        24
#define ACPCH_PUBLISHED  32
#define ACPCH_RING       40
#define ACPCH_COUNT      48
#define ACPCH_SEEN       56
#define ACPCH_NEXT       64
#define ACPCH_FILLED     72
#define ACPCH_PUB_AT     80
#define ACPCH_PUT_RING   88
#define ACPCH_STAGE_GA   96
#define ACPCH_STAGE_PTR  104
#define ACPCH_TABLE      128
#define ACPCH_ENTRIES    16
#define ACPCH_ENTRY_SIZE 32
#define ACPCH_STAGE      640
#define ACPCH_PUB_REMOTE    768
#define ACPCH_PUB_STAGE_GA  776
#define ACPCH_PUB_LAST      784
#define ACPCH_PUB_STAGE     792

/* What a sender's C may do (ACPCH_SEND_OK, ml/ch/fast.go). */
#define ACPCH_SEND_IN_PLACE 1
#define ACPCH_SEND_BY_PUT   2

/* Entry states (ml/ch/fast.go). */
#define ACPCH_FREE    0
#define ACPCH_POSTED  1
#define ACPCH_DONE    2
#define ACPCH_ADOPTED 3

/* Slots (ml/ch/slot.go). */
#define ACPCH_SLOT_SIZE   4096
#define ACPCH_SLOT_COUNT  16
#define ACPCH_HEADER_SIZE 64
#define ACPCH_PAYLOAD     (ACPCH_SLOT_SIZE - ACPCH_HEADER_SIZE)
#define ACPCH_KIND_FIRST  1
#define ACPCH_KIND_NEXT   2
#define ACPCH_KIND_ORDERED 0x100
/* Messages up to this size go through the ring (ml/ch/slot.go eagerMax);
 * C takes those of up to ACPCH_MAX_SLOTS slots (all of them, at 16 KiB). */
#define ACPCH_EAGER_MAX   16384
#define ACPCH_MAX_SLOTS   5
/* Payloads from this size are copied into a ring with `rep movsb` when Go
 * says so (ml/ch movsbMin, RingCopyByMovsb). */
#define ACPCH_MOVSB_MIN   512

/* Buffers reaching past this address are refused (ml/ch AddressLimit). */
#define ACPCH_ADDRESS_LIMIT 0x200000000000000

/* Channels whose handle index (low 32 bits) is below this have a fast block. */
#define ACPCH_MAX_CHANNELS 65536

#define ACPCH_REQUEST_BIT (UINT64_C(1) << 63)

/* Enter or remove a channel's fast block (capi/ml_cl.go). */
void acpch_set(uint64_t index, void *fast);
/* Whether payloads of ACPCH_MOVSB_MIN bytes or more go into a ring by
 * `rep movsb` (ml/ch RingCopyByMovsb; set when the library starts). */
void acpch_copy_by_movsb(int on);
void acpch_clear(void);

/* A request handle, or 0: take the ordinary path. */
uintptr_t acpch_send(uintptr_t ch, void *buf, size_t size);
uintptr_t acpch_recv(uintptr_t ch, void *buf, size_t size);
/* Waits for a request of acpch_send/acpch_recv (bit 63 set). */
size_t acpch_wait(uintptr_t request);
/* The number of threads spinning in acpch_wait now: Go's background
 * progress stays away meanwhile (segbuf SetOutsideWaits). */
int32_t acpch_waiting(void);

/* The checksum of a slot written by a put: its header up to the checksum
 * and n payload bytes (ml/ch SlotSum). */
uint64_t acpch_slot_sum(const void *slot, uint64_t n);

#endif
