//go:build amd64 && !purego

package crc32c

import "golang.org/x/sys/cpu"

// minFold is the shortest input the folding code takes: its four
// accumulators start with 256 bytes.
const minFold = 256

var hasFold = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPCLMULQDQ

// foldable returns how many leading bytes of an input of n bytes fold
// takes: a multiple of 16, at least minFold, or 0.
func foldable(n int) int {
	if !hasFold || n < minFold {
		return 0
	}
	return n &^ 15
}

// fold returns the CRC-32C of p, without the pre- and post-inversion,
// starting from crc. len(p) ≥ minFold and a multiple of 16. In
// crc32c_amd64.s.
//
//go:noescape
func fold(crc uint32, p []byte) uint32
