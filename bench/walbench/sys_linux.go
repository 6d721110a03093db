package walbench

import "golang.org/x/sys/unix"

// fdatasync is the flush every durable write in this benchmark ends with.
func fdatasync(fd int) error {
	for {
		err := unix.Fdatasync(fd)
		if err != unix.EINTR {
			return err
		}
	}
}

// preallocate reserves size bytes for fd's file.
func preallocate(fd int, size int64) error { return unix.Fallocate(fd, 0, 0, size) }
