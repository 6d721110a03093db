//go:build !linux

package walbench

import "golang.org/x/sys/unix"

// fdatasync falls back to fsync where the system has no fdatasync.
func fdatasync(fd int) error {
	for {
		err := unix.Fsync(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// preallocate sets the file's size where the system has no fallocate.
func preallocate(fd int, size int64) error { return unix.Ftruncate(fd, size) }
