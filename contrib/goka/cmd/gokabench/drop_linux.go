package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropFile asks the kernel to drop f's pages from the page cache.
func dropFile(f *os.File) error {
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return &os.PathError{Op: "fadvise DONTNEED", Path: f.Name(), Err: err}
	}
	return nil
}
