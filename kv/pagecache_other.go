//go:build !linux

package kv

// dropPageCache does nothing where posix_fadvise is not available.
func dropPageCache(int) {}

// startWriteback does nothing where sync_file_range is not available: the
// fsync at the end of a table writes all of it.
func startWriteback(int, int64, int64) {}
