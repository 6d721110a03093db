//go:build !linux

package ioengine

import "golang.org/x/sys/unix"

// fdatasync falls back to fsync where the system has no fdatasync.
func fdatasync(fd int) error { return unix.Fsync(fd) }

// pwriteDSync writes buf at off and makes it durable: a pwrite and an
// fsync where there is no RWF_DSYNC.
func pwriteDSync(fd int, buf []byte, off int64) (int, error) {
	n, err := unix.Pwrite(fd, buf, off)
	if err != nil {
		return n, err
	}
	return n, unix.Fsync(fd)
}
