package bufpool

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// WindowsSupported tells whether Options.Windows works here.
const WindowsSupported = true

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

// reserveRange reserves n bytes of address space, inaccessible and with no
// memory behind it.
func reserveRange(n int64) (unsafe.Pointer, error) {
	return unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
}

func unmapRange(base unsafe.Pointer, n int64) error {
	return unix.MunmapPtr(base, uintptr(n))
}

// mapFrame maps n bytes of memfd at off, read-only, over addr (inside a
// reserved range), with its page tables filled in.
func mapFrame(addr unsafe.Pointer, n int, memfd int, off int64) error {
	_, err := unix.MmapPtr(memfd, off, addr, uintptr(n), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED|unix.MAP_POPULATE)
	return err
}

// mapGap turns n bytes at addr back into reserved, inaccessible space.
func mapGap(addr unsafe.Pointer, n int) error {
	_, err := unix.MmapPtr(-1, 0, addr, uintptr(n), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
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
