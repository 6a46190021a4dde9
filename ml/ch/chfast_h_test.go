package ch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/internal/cheader"
)

// capi/chfast.c reads the fast block and writes and takes ring slots with
// the numbers of capi/chfast.h: they must be this package's.
func TestChfastHeaderMatches(t *testing.T) {
	defs, err := cheader.Defines("../../capi/chfast.h", "ACPCH_")
	require.NoError(t, err)
	want := map[string]int64{
		"ACPCH_LOCK": fLock, "ACPCH_SEND_OK": fSendOK, "ACPCH_RECV_OK": fRecvOK, "ACPCH_HANDLE": fHandle,
		"ACPCH_POS": fPos, "ACPCH_PUBLISHED": fPublished, "ACPCH_RING": fRing, "ACPCH_COUNT": fCount,
		"ACPCH_SEEN": fSeen, "ACPCH_NEXT": fNext, "ACPCH_FILLED": fFilled, "ACPCH_PUB_AT": fPubAt,
		"ACPCH_PUT_RING": fPutRing, "ACPCH_STAGE_GA": fStageGA, "ACPCH_STAGE_PTR": fStagePtr,
		"ACPCH_STAGE": fStage, "ACPCH_PUB_REMOTE": fPubRemote, "ACPCH_PUB_STAGE_GA": fPubStageGA,
		"ACPCH_PUB_LAST": fPubLast, "ACPCH_PUB_STAGE": fPubStage, "ACPCH_SEND_IN_PLACE": sendInPlace, "ACPCH_SEND_BY_PUT": sendByPut,
		"ACPCH_TABLE": fTable, "ACPCH_ENTRIES": fEntries, "ACPCH_ENTRY_SIZE": fEntrySize,
		"ACPCH_FREE": eFree, "ACPCH_POSTED": ePosted, "ACPCH_DONE": eDone, "ACPCH_ADOPTED": eAdopted,
		"ACPCH_SLOT_SIZE": slotSize, "ACPCH_SLOT_COUNT": slotCount, "ACPCH_HEADER_SIZE": headerSize,
		"ACPCH_KIND_FIRST": slotFirst, "ACPCH_KIND_NEXT": slotNext, "ACPCH_KIND_ORDERED": kindOrdered,
		"ACPCH_EAGER_MAX": eagerMax, "ACPCH_MAX_SLOTS": maxFillSlots, "ACPCH_MOVSB_MIN": movsbMin,
		"ACPCH_ADDRESS_LIMIT": AddressLimit,
	}
	for name, v := range want {
		got, ok := defs[name]
		if assert.True(t, ok, "%s is not defined in capi/chfast.h", name) {
			assert.Equal(t, v, got, name)
		}
	}
	// The slot header's fields, which chfast.c addresses by number.
	assert.Equal(t, []int{0, 8, 12, 16, 24, 32}, []int{hSeq, hKind, hLen, hTotal, hAux, hSum})
}
