// Package crc32c computes CRC-32C (Castagnoli) checksums, the checksum of
// every ringstore format: the same values as hash/crc32 with
// crc32.MakeTable(crc32.Castagnoli), faster on long inputs.
//
// On amd64 with AVX-512 and VPCLMULQDQ, inputs of at least 256 bytes are
// folded with carry-less multiplications, 256 bytes per step in four
// 512-bit accumulators (Intel's "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ Instruction", with CRC-32C's constants); the
// standard library's CRC-32C uses the SSE4.2 CRC32 instruction, three
// streams of 8 bytes. Shorter inputs, the tail under 16 bytes and every
// other machine use hash/crc32.
//
// The functions are safe for concurrent use; they keep no state.
package crc32c

import "hash/crc32"

// Size is the size of a CRC-32C checksum in bytes.
const Size = 4

// Table is hash/crc32's table for CRC-32C, for the APIs that take one.
var Table = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C checksum of p.
func Checksum(p []byte) uint32 { return Update(0, p) }

// Update returns the result of adding the bytes in p to crc, as
// crc32.Update(crc, Table, p) does.
func Update(crc uint32, p []byte) uint32 {
	if n := foldable(len(p)); n > 0 {
		crc = ^fold(^crc, p[:n])
		p = p[n:]
	}
	if len(p) == 0 {
		return crc
	}
	return crc32.Update(crc, Table, p)
}
