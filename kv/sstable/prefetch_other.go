//go:build !amd64 && !arm64

package sstable

// prefetch does nothing where ringstore has no prefetch instruction for
// the architecture.
func prefetch(*byte) {}
