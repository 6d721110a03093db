package memtable

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// offHeap says New's memtables map their memory.
const offHeap = true

// sysAlloc maps n bytes of anonymous memory (zeroed, off the Go heap), or
// returns nil when the kernel refuses.
func sysAlloc(n int) []byte {
	p, err := unix.MmapPtr(-1, 0, nil, uintptr(n), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil
	}
	return unsafe.Slice((*byte)(p), n)
}

// sysFree unmaps what sysAlloc returned. It cannot fail on such a range;
// if it did, the memory would stay mapped, which is only a leak.
func sysFree(b []byte) {
	_ = unix.MunmapPtr(unsafe.Pointer(unsafe.SliceData(b)), uintptr(len(b)))
}
