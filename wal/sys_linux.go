package wal

import (
	"os"

	"golang.org/x/sys/unix"
)

// preallocate reserves size bytes for f so that appends never meet a full
// disk; the reserved range reads as zeros.
func preallocate(f *os.File, size int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		}
		return nil
	}
}
