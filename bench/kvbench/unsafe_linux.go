package kvbench

// The only unsafe code of the package: mincore(2), which x/sys/unix does not
// wrap on Linux, needs the addresses of the mapping and of the vector.

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// mincore fills vec with one byte per page of the mapping m (bit 0 set when
// the page is resident). vec must have at least one byte per page of m; m
// must be a whole mapping from unix.Mmap (page-aligned).
func mincore(m, vec []byte) error {
	if len(m) == 0 {
		return nil
	}
	_, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if e != 0 {
		return e
	}
	return nil
}
