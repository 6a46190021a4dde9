package core

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/libacp/libacp/internal/cheader"
)

// The C fast path reads the fast state through capi/fastpath.h's offsets,
// written there by hand: each must equal this package's, and none may be
// missing on either side, or the two would read different fields.
func TestFastLayoutMatchesCHeader(t *testing.T) {
	goSide := map[string]int64{
		"ACPF_LOCK": fastLock, "ACPF_ISSUED": fastIssued, "ACPF_DONE": fastDone,
		"ACPF_ENABLED": fastEnabled, "ACPF_ME": fastMe, "ACPF_NPROCS": fastNprocs,
		"ACPF_RANK_SHIFT": fastRankShift, "ACPF_SEG_SHIFT": fastSegShift, "ACPF_SEG_MASK": fastSegMask,
		"ACPF_OFF_MASK": fastOffMask, "ACPF_COLOR_MASK": fastColorMask, "ACPF_DEPTH": fastDepth,
		"ACPF_WIN_BASE": fastWinBase, "ACPF_WIN_LEN": fastWinLen,
		"ACPF_BAR_LOCK": fastBarLock, "ACPF_BAR_ON": fastBarOn, "ACPF_BAR_LAST": fastBarLast,
		"ACPF_BAR_LOCALS": fastBarLocals, "ACPF_BAR_EPOCH": fastBarEpoch, "ACPF_BAR_ARRIVE": fastBarArrive,
		"ACPF_BAR_RELEASE": fastBarRelease, "ACPF_BAR_SPIN": fastBarSpin, "ACPF_BAR_YIELD": fastBarYield,
		"ACPF_BAR_ROUNDS": fastBarRounds, "ACPF_BAR_MINE": fastBarMine, "ACPF_WAITING": fastWaiting,
		"ACPF_DEV_ATOMICS": fastDevAtomics, "ACPF_REMOTE": fastRemote, "ACPF_BAR_GAMASK": fastBarGAMask,
		"ACPF_BAR_LEAD": fastBarLead, "ACPF_BAR_PENDING": fastBarPending, "ACPF_BAR_PEERS": fastBarPeers,
		"ACPF_TABLE": fastTable, "ACPF_ENTRY_SIZE": fastEntrySize, "ACPF_MAX_WINDOW": fastMaxWindow,
	}
	cSide, err := cheader.Defines("../capi/fastpath.h", "ACPF_")
	require.NoError(t, err)
	assert.Equal(t, goSide, cSide, "capi/fastpath.h against core/fast.go")

	// The fields must not overlap: each ends before the next begins.
	assert.LessOrEqual(t, fastBarPending+8, fastBarPeers, "the pending count ends before the round table")
	assert.LessOrEqual(t, fastBarPeers+8*fastBarMaxRounds, fastTable, "the round table ends before the starter table")
	assert.LessOrEqual(t, fastBarMaxRounds, 32, "a round's bit in fastBarGAMask (uint32)")
}
