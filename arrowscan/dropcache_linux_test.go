package arrowscan

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// dropCache evicts the file's pages from the page cache, so pread and mmap
// read from the device like direct and pool.
func dropCache(b *testing.B, path string) {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		b.Fatal(err)
	}
}
