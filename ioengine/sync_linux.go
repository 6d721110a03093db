package ioengine

import "golang.org/x/sys/unix"

func fdatasync(fd int) error { return unix.Fdatasync(fd) }

// pwriteDSync writes buf at off and makes it durable (pwritev2 with
// RWF_DSYNC).
func pwriteDSync(fd int, buf []byte, off int64) (int, error) {
	return unix.Pwritev2(fd, [][]byte{buf}, off, unix.RWF_DSYNC)
}
