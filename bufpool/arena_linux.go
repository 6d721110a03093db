package bufpool

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// newSharedArena makes the arena of a pool with windows: a memfd of size
// bytes mapped shared, so that its pages can be mapped a second time into
// the files' windows.
func newSharedArena(size int) (memfd int, arena []byte, err error) {
	fd, err := unix.MemfdCreate("ringstore-bufpool", unix.MFD_CLOEXEC)
	if err != nil {
		return -1, nil, fmt.Errorf("memfd_create: %w", err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("ftruncate memfd to %d bytes: %w", size, err)
	}
	b, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return -1, nil, fmt.Errorf("mmap memfd of %d bytes: %w", size, err)
	}
	return fd, b, nil
}

func freeSharedArena(memfd int, arena []byte) error {
	err := unix.Munmap(arena)
	if cerr := unix.Close(memfd); err == nil {
		err = cerr
	}
	return err
}

// prefault allocates every page of b: MADV_POPULATE_WRITE (Linux 5.14), or
// a write to each page where the kernel lacks it.
func prefault(b []byte) {
	if len(b) == 0 || unix.Madvise(b, unix.MADV_POPULATE_WRITE) == nil {
		return
	}
	for i := 0; i < len(b); i += unix.Getpagesize() {
		b[i] = 0
	}
}

// adviseHugePages asks for transparent huge pages (MADV_HUGEPAGE) behind
// a private arena: a lookup in a cached block then misses the TLB once
// per 2 MiB of the arena, not once per 4 KiB frame. Only where the kernel
// backs advised ranges with them (transparent_hugepage "madvise" or
// "always") and only for the arena's 2 MiB-aligned part; a refusal is
// harmless (the arena stays on small pages).
func adviseHugePages(b []byte) {
	if len(b) >= 2<<20 {
		_ = unix.Madvise(b, unix.MADV_HUGEPAGE)
	}
}
