package arrowscan

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapFile maps size bytes of f read-only and shared: pages are faulted in
// from the page cache only when arrow-go touches them.
func mapFile(f *os.File, size int64) ([]byte, error) {
	return unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
}

func unmapFile(b []byte) error { return unix.Munmap(b) }
