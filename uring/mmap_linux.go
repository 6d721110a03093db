//go:build linux && !ringstore_nouring

package uring

// All pointer arithmetic of the package lives in this file. The rings are
// kernel memory mapped into the process (never Go heap), so pointers into
// them are stable until munmap in Ring.Close.

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// u32At returns a pointer to the uint32 at offset off of the mapping m.
func u32At(m []byte, off uint32) *uint32 {
	return (*uint32)(unsafe.Pointer(&m[off]))
}

// sqeSlice views the SQE mapping as a slice of n SQEs.
func sqeSlice(m []byte, n uint32) []SQE {
	return unsafe.Slice((*SQE)(unsafe.Pointer(&m[0])), n)
}

// cqeSlice views the CQE array at offset off of the CQ mapping as n CQEs.
func cqeSlice(m []byte, off, n uint32) []CQE {
	return unsafe.Slice((*CQE)(unsafe.Pointer(&m[off])), n)
}

// u32Slice views n uint32s at offset off of m (the SQ index array).
func u32Slice(m []byte, off, n uint32) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(&m[off])), n)
}

// addrOf returns the address of b's first byte, 0 for an empty slice. The
// caller keeps b alive and unmoved until the kernel is done with it.
func addrOf(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&b[0])))
}

func iovecAddr(iov []unix.Iovec) uint64 {
	if len(iov) == 0 {
		return 0
	}
	return uint64(uintptr(unsafe.Pointer(&iov[0])))
}

func timespecAddr(ts *Timespec) uint64 { return uint64(uintptr(unsafe.Pointer(ts))) }

func setup(entries uint32, p *Params) (int, unix.Errno) {
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(p)), 0)
	return int(fd), errno
}

func enter(fd int, toSubmit, minComplete, flags uint32, arg *getEventsArg) (int, unix.Errno) {
	var argp, argsz uintptr
	if arg != nil {
		argp, argsz = uintptr(unsafe.Pointer(arg)), unsafe.Sizeof(*arg)
	}
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(fd), uintptr(toSubmit), uintptr(minComplete), uintptr(flags), argp, argsz)
	return int(n), errno
}

func register(fd int, opcode uintptr, arg unsafe.Pointer, nrArgs uint32) (int, unix.Errno) {
	n, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(fd), opcode, uintptr(arg), uintptr(nrArgs), 0, 0)
	return int(n), errno
}

// probeBytes allocates a probe buffer for n ops and returns it with typed views.
func newProbeBuffer(n int) ([]byte, *probeHeader, []probeOp) {
	buf := make([]byte, int(unsafe.Sizeof(probeHeader{}))+n*int(unsafe.Sizeof(probeOp{})))
	hdr := (*probeHeader)(unsafe.Pointer(&buf[0]))
	ops := unsafe.Slice((*probeOp)(unsafe.Pointer(&buf[unsafe.Sizeof(probeHeader{})])), n)
	return buf, hdr, ops
}

func bytesPtr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }

func iovecsPtr(iov []unix.Iovec) unsafe.Pointer { return unsafe.Pointer(&iov[0]) }

func int32sPtr(v []int32) unsafe.Pointer { return unsafe.Pointer(&v[0]) }
