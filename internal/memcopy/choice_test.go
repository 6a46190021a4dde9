package memcopy

import (
	"testing"

	"github.com/klauspost/cpuid/v2"
	"github.com/stretchr/testify/assert"
)

// The two choices come from one judgement of the CPU's string copies:
// where vectors win beyond the caches, they win for the ring too.
func TestChoicesAgree(t *testing.T) {
	t.Logf("%s (%s): ERMS %v, FSRM %v, AVX2 %v; ring by movsb %v, large copies by vectors %v",
		cpuid.CPU.BrandName, cpuid.CPU.VendorString, cpuid.CPU.Supports(cpuid.ERMS), cpuid.CPU.Supports(cpuid.FSRM),
		cpuid.CPU.Supports(cpuid.AVX2), RingByMovsb(), LargeByVectors())
	assert.False(t, RingByMovsb() && LargeByVectors(), "rep movsb cannot be both the faster and the slower copy")
	if LargeByVectors() {
		assert.True(t, cpuid.CPU.Supports(cpuid.AVX2), "the large copy's loop is AVX2")
		assert.Equal(t, cpuid.Intel, cpuid.CPU.VendorID)
	}
	if RingByMovsb() {
		assert.True(t, cpuid.CPU.Supports(cpuid.ERMS), "rep movsb without ERMS is slow everywhere")
	}
	if cpuid.CPU.VendorID == cpuid.AMD {
		assert.Equal(t, cpuid.CPU.Supports(cpuid.ERMS), RingByMovsb(), "measured on AMD: rep movsb into the ring")
		assert.False(t, LargeByVectors())
	}
}
