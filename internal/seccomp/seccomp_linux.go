package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring system calls. Their numbers are the same on every
// architecture (asm-generic numbering, Linux 5.1).
var ioURingSyscalls = []uint32{
	unix.SYS_IO_URING_SETUP,    // 425
	unix.SYS_IO_URING_ENTER,    // 426
	unix.SYS_IO_URING_REGISTER, // 427
}

// DenyIOURing installs a seccomp filter on every thread of the process that
// makes io_uring_setup, io_uring_enter and io_uring_register fail with
// EPERM, and allows every other system call. Threads the process creates
// later inherit it. It cannot be undone; see the package documentation.
//
// It sets no_new_privs first (prctl PR_SET_NO_NEW_PRIVS), which lets an
// unprivileged process install a filter, then calls seccomp(2) with
// SECCOMP_SET_MODE_FILTER and SECCOMP_FILTER_FLAG_TSYNC so that the filter
// covers all threads of a Go program at once, not only the calling one.
func DenyIOURing() error {
	arch, ok := auditArch[runtime.GOARCH]
	if !ok {
		return fmt.Errorf("seccomp: no filter for linux/%s: %w", runtime.GOARCH, errors.ErrUnsupported)
	}
	return installFilter(denyFilter(arch, ioURingSyscalls, unix.EPERM))
}

// auditArch maps GOARCH to the AUDIT_ARCH_* value the kernel puts in
// seccomp_data.arch for the native system call ABI.
var auditArch = map[string]uint32{
	"amd64": unix.AUDIT_ARCH_X86_64,
	"arm64": unix.AUDIT_ARCH_AARCH64,
}

// Offsets in struct seccomp_data (include/uapi/linux/seccomp.h):
//
//	struct seccomp_data {
//		int   nr;                    // offset 0
//		__u32 arch;                  // offset 4
//		__u64 instruction_pointer;   // offset 8
//		__u64 args[6];               // offset 16
//	};
const (
	offsetNr   = 0
	offsetArch = 4
)

// x32SyscallBit marks the x32 ABI's system calls on x86_64
// (__X32_SYSCALL_BIT). x32 shares the x86_64 numbers for io_uring and
// reports AUDIT_ARCH_X86_64, so the filter clears the bit before comparing.
const x32SyscallBit = 0x40000000

// denyFilter returns a program that fails the system calls nrs of the native
// ABI arch with errno and allows everything else, including every system
// call made through another ABI (which a Go program never makes):
//
//	ld  [arch]
//	jeq #arch, next, allow
//	ld  [nr]
//	and #^x32SyscallBit          (x86_64 only)
//	jeq #nrs[0], deny            (one per system call)
//	...
//	allow: ret #SECCOMP_RET_ALLOW
//	deny:  ret #SECCOMP_RET_ERRNO|errno
func denyFilter(arch uint32, nrs []uint32, errno unix.Errno) []unix.SockFilter {
	var prog []unix.SockFilter
	stmt := func(code uint16, k uint32) int {
		prog = append(prog, unix.SockFilter{Code: code, K: k})
		return len(prog) - 1
	}
	const jeq = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K

	stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offsetArch)
	archCheck := stmt(jeq, arch)
	stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, offsetNr)
	if arch == unix.AUDIT_ARCH_X86_64 {
		stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, ^uint32(x32SyscallBit))
	}
	var nrChecks []int
	for _, nr := range nrs {
		nrChecks = append(nrChecks, stmt(jeq, nr))
	}
	allow := stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ALLOW)
	deny := stmt(unix.BPF_RET|unix.BPF_K, unix.SECCOMP_RET_ERRNO|(uint32(errno)&unix.SECCOMP_RET_DATA))

	// Jump offsets count from the next instruction; BPF jumps only forward.
	prog[archCheck].Jf = uint8(allow - archCheck - 1)
	for _, at := range nrChecks {
		prog[at].Jt = uint8(deny - at - 1)
	}
	return prog
}

// installFilter sets no_new_privs and installs prog on every thread.
func installFilter(prog []unix.SockFilter) error {
	// no_new_privs is a per-thread flag and seccomp(2) checks it on the
	// calling thread, so both calls must run on the same one; TSYNC then
	// sets it on the other threads along with the filter.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("seccomp: prctl(PR_SET_NO_NEW_PRIVS): %w", err)
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	r, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return fmt.Errorf("seccomp: seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): %w", errno)
	}
	if r != 0 {
		// With TSYNC a positive result is the ID of a thread that could
		// not be synchronised (it runs under a filter not derived from
		// ours); no thread got the filter.
		return fmt.Errorf("seccomp: seccomp(SECCOMP_SET_MODE_FILTER, TSYNC): thread %d cannot take the filter", r)
	}
	return nil
}
