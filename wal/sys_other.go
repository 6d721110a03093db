//go:build !linux

package wal

import "os"

// preallocate sets f's size; systems without fallocate get a sparse file.
func preallocate(f *os.File, size int64) error { return f.Truncate(size) }
