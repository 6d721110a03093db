//go:build amd64 || arm64

package sstable

// prefetch asks the CPU to bring the cache line holding *p into its cache
// (PREFETCHT0, PRFM PLDL1KEEP) and returns at once: unlike a load, the
// instruction waits for nothing, so the lookup that follows runs while the
// line comes.
//
//go:noescape
func prefetch(p *byte)
