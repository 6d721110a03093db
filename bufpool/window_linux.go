package bufpool

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// WindowsSupported tells whether Options.Windows works here.
const WindowsSupported = true

// reserveRange reserves n bytes of address space, inaccessible and with no
// memory behind it.
func reserveRange(n int64) (unsafe.Pointer, error) {
	return unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_NORESERVE)
}

func unmapRange(base unsafe.Pointer, n int64) error {
	return unix.MunmapPtr(base, uintptr(n))
}

// mapFrame maps n bytes of memfd at off, read-only, over addr (inside a
// reserved range). The page tables are filled in by the first reads'
// faults, on the readers' goroutines.
func mapFrame(addr unsafe.Pointer, n int, memfd int, off int64) error {
	_, err := unix.MmapPtr(memfd, off, addr, uintptr(n), unix.PROT_READ, unix.MAP_SHARED|unix.MAP_FIXED)
	return err
}

// moveFrame moves the n-byte mapping at from, page tables and all, over
// to (inside a reserved range). from stays mapped to the same memory
// with empty page tables (MREMAP_DONTUNMAP, for shared mappings since
// Linux 5.13: EINVAL before), so no address of the reserved range is
// ever a hole.
func moveFrame(from, to unsafe.Pointer, n int) error {
	_, err := unix.MremapPtr(from, uintptr(n), to, uintptr(n), unix.MREMAP_MAYMOVE|unix.MREMAP_FIXED|unix.MREMAP_DONTUNMAP)
	return err
}

// mapGap turns n bytes at addr back into reserved, inaccessible space.
func mapGap(addr unsafe.Pointer, n int) error {
	_, err := unix.MmapPtr(-1, 0, addr, uintptr(n), unix.PROT_NONE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	return err
}
