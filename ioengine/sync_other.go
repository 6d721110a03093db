//go:build !linux

package ioengine

import "golang.org/x/sys/unix"

// fdatasync falls back to fsync where the system has no fdatasync.
func fdatasync(fd int) error { return unix.Fsync(fd) }
