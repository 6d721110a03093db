//go:build !linux

package kv

// dropPageCache does nothing where posix_fadvise is not available.
func dropPageCache(int) {}
