// Package memcopy holds the library's own copies of memory and which of
// them is this CPU's fastest where the library copies in its own code:
// `rep movsb`, vector loads and stores, or Go's copy. glibc and Go choose
// by size alone; three of the library's copies are not the usual case
// they tune for.
//
//   - A channel's sender writes each message into cache lines that the
//     receiving CPU read last (its ring). On the AMD EPYC this library was
//     measured on, `rep movsb` wrote a 1 KiB message there in 0.34 µs one
//     way where vector stores took 0.41; on an Intel Xeon (Cascade Lake)
//     it was 1-11 % slower than glibc's memcpy at 512 B-2 KiB (bench's
//     shm_floor, ring and ring-movsb).
//   - A put of 4 MiB or more between memories of one node works beyond
//     the caches. On that Xeon glibc's memmove (`rep movsb` there) moved
//     20-30 % less than 32-byte vector loads and stores.
//   - Go's copy turns to non-temporal stores from 1 MiB, which on that
//     Xeon moved a quarter of what `rep movsb` did (Move).
//
// So Intel CPUs without fast short `rep movsb` (FSRM, from Ice Lake on,
// whose string copies are another design this library has not been
// measured on) copy with vectors in both places; other CPUs with
// enhanced `rep movsb` (ERMS) use it for the ring. BENCHMARKS.md,
// 2026-11-28, fifth section.
package memcopy

import "github.com/klauspost/cpuid/v2"

// stringsLag: this CPU's `rep movsb` is slower than vector copies in both
// places above.
var stringsLag = cpuid.CPU.VendorID == cpuid.Intel && !cpuid.CPU.Supports(cpuid.FSRM)

// RingByMovsb reports whether a channel's messages of a few hundred bytes
// and more are copied into the receiver's ring with `rep movsb`.
func RingByMovsb() bool { return cpuid.CPU.Supports(cpuid.ERMS) && !stringsLag }

// LargeByVectors reports whether copies of several MiB between memories
// of this node use AVX2 loads and stores rather than memmove.
func LargeByVectors() bool { return stringsLag && cpuid.CPU.Supports(cpuid.AVX2) }

// HasERMS reports whether `rep movsb` is a fast string copy here
// (enhanced REP MOVSB): the engine's copies from 1 MiB use it, as glibc's
// memcpy does, where Go's copy turns to non-temporal stores.
func HasERMS() bool { return cpuid.CPU.Supports(cpuid.ERMS) }
