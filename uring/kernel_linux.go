//go:build linux && !ringstore_nouring

package uring

// This file mirrors include/uapi/linux/io_uring.h (Linux 6.18). Every struct
// has a compile-time size check: a wrong layout fails the build, not the I/O.

import "unsafe"

// SQE is struct io_uring_sqe, one submission queue entry (64 bytes).
// Unions are flattened to the member ringstore uses; the comments name the
// other members that share the slot.
type SQE struct {
	Opcode      Opcode // IORING_OP_*
	Flags       uint8  // IOSQE_*
	IoPrio      uint16
	Fd          int32
	Off         uint64 // also addr2
	Addr        uint64 // also splice_off_in
	Len         uint32
	OpFlags     uint32 // rw_flags, fsync_flags, timeout_flags, ...
	UserData    uint64
	BufIndex    uint16 // also buf_group
	Personality uint16
	FileIndex   uint32 // also splice_fd_in
	Addr3       uint64
	_pad2       uint64
}

// CQE is struct io_uring_cqe, one completion queue entry (16 bytes).
type CQE struct {
	UserData uint64
	Res      int32 // result, or -errno
	Flags    uint32
}

// Params is struct io_uring_params (120 bytes), passed to io_uring_setup.
type Params struct {
	SQEntries    uint32
	CQEntries    uint32
	Flags        uint32
	SQThreadCPU  uint32
	SQThreadIdle uint32 // milliseconds
	Features     uint32
	WQFd         uint32
	Resv         [3]uint32
	SQOff        SQRingOffsets
	CQOff        CQRingOffsets
}

// SQRingOffsets is struct io_sqring_offsets (40 bytes).
type SQRingOffsets struct {
	Head, Tail, RingMask, RingEntries, Flags, Dropped, Array, Resv1 uint32
	UserAddr                                                        uint64
}

// CQRingOffsets is struct io_cqring_offsets (40 bytes).
type CQRingOffsets struct {
	Head, Tail, RingMask, RingEntries, Overflow, CQEs, Flags, Resv1 uint32
	UserAddr                                                        uint64
}

// Timespec is struct __kernel_timespec.
type Timespec struct {
	Sec  int64
	Nsec int64
}

// getEventsArg is struct io_uring_getevents_arg (IORING_ENTER_EXT_ARG).
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWaitUs uint32
	ts        uint64
}

// probeHeader is struct io_uring_probe without its flexible ops array.
type probeHeader struct {
	lastOp uint8
	opsLen uint8
	resv   uint16
	resv2  [3]uint32
}

// probeOp is struct io_uring_probe_op.
type probeOp struct {
	op    uint8
	resv  uint8
	flags uint16
	resv2 uint32
}

// Compile-time layout checks: each line fails to compile when the size is wrong.
var (
	_ [64 - unsafe.Sizeof(SQE{})]byte
	_ [unsafe.Sizeof(SQE{}) - 64]byte
	_ [16 - unsafe.Sizeof(CQE{})]byte
	_ [unsafe.Sizeof(CQE{}) - 16]byte
	_ [120 - unsafe.Sizeof(Params{})]byte
	_ [unsafe.Sizeof(Params{}) - 120]byte
	_ [40 - unsafe.Sizeof(SQRingOffsets{})]byte
	_ [unsafe.Sizeof(SQRingOffsets{}) - 40]byte
	_ [40 - unsafe.Sizeof(CQRingOffsets{})]byte
	_ [unsafe.Sizeof(CQRingOffsets{}) - 40]byte
	_ [24 - unsafe.Sizeof(getEventsArg{})]byte
	_ [unsafe.Sizeof(getEventsArg{}) - 24]byte
	_ [16 - unsafe.Sizeof(probeHeader{})]byte
	_ [8 - unsafe.Sizeof(probeOp{})]byte
	_ [unsafe.Offsetof(SQE{}.UserData) - 32]byte
	_ [32 - unsafe.Offsetof(SQE{}.UserData)]byte
	_ [unsafe.Offsetof(SQE{}.Addr3) - 48]byte
	_ [48 - unsafe.Offsetof(SQE{}.Addr3)]byte
	_ [unsafe.Offsetof(Params{}.SQOff) - 40]byte
	_ [40 - unsafe.Offsetof(Params{}.SQOff)]byte
)

// Setup flags (io_uring_params.flags).
const (
	SetupIOPoll       uint32 = 1 << 0
	SetupSQPoll       uint32 = 1 << 1
	SetupSQAff        uint32 = 1 << 2
	SetupCQSize       uint32 = 1 << 3
	SetupClamp        uint32 = 1 << 4
	SetupAttachWQ     uint32 = 1 << 5
	SetupRDisabled    uint32 = 1 << 6
	SetupSubmitAll    uint32 = 1 << 7
	SetupCoopTaskrun  uint32 = 1 << 8
	SetupTaskrunFlag  uint32 = 1 << 9
	SetupSQE128       uint32 = 1 << 10
	SetupCQE32        uint32 = 1 << 11
	SetupSingleIssuer uint32 = 1 << 12
	SetupDeferTaskrun uint32 = 1 << 13
	SetupNoMmap       uint32 = 1 << 14
	SetupRegisteredFd uint32 = 1 << 15
	SetupNoSQArray    uint32 = 1 << 16
)

// Features reported by the kernel (io_uring_params.features).
const (
	FeatSingleMmap     uint32 = 1 << 0
	FeatNoDrop         uint32 = 1 << 1
	FeatSubmitStable   uint32 = 1 << 2
	FeatRWCurPos       uint32 = 1 << 3
	FeatCurPersonality uint32 = 1 << 4
	FeatFastPoll       uint32 = 1 << 5
	FeatPoll32Bits     uint32 = 1 << 6
	FeatSQPollNonfixed uint32 = 1 << 7
	FeatExtArg         uint32 = 1 << 8
	FeatNativeWorkers  uint32 = 1 << 9
	FeatRsrcTags       uint32 = 1 << 10
	FeatCQESkip        uint32 = 1 << 11
	FeatLinkedFile     uint32 = 1 << 12
	FeatRegRegRing     uint32 = 1 << 13
	FeatRecvSendBundle uint32 = 1 << 14
	FeatMinTimeout     uint32 = 1 << 15
	FeatRWAttr         uint32 = 1 << 16
	FeatNoIOWait       uint32 = 1 << 17
)

// SQE flags (io_uring_sqe.flags, IOSQE_*).
const (
	SQEFixedFile      uint8 = 1 << 0
	SQEIODrain        uint8 = 1 << 1
	SQEIOLink         uint8 = 1 << 2
	SQEIOHardlink     uint8 = 1 << 3
	SQEAsync          uint8 = 1 << 4
	SQEBufferSelect   uint8 = 1 << 5
	SQECQESkipSuccess uint8 = 1 << 6
)

// SQ ring flags (written by the kernel at sq_off.flags).
const (
	sqNeedWakeup uint32 = 1 << 0
	sqCQOverflow uint32 = 1 << 1
	sqTaskrun    uint32 = 1 << 2
)

// io_uring_enter flags.
const (
	enterGetEvents      uint32 = 1 << 0
	enterSQWakeup       uint32 = 1 << 1
	enterSQWait         uint32 = 1 << 2
	enterExtArg         uint32 = 1 << 3
	enterRegisteredRing uint32 = 1 << 4
)

// Fsync and timeout operation flags.
const (
	FsyncDatasync uint32 = 1 << 0 // IORING_FSYNC_DATASYNC
	TimeoutAbs    uint32 = 1 << 0 // IORING_TIMEOUT_ABS
)

// mmap offsets.
const (
	offSQRing uint64 = 0
	offCQRing uint64 = 0x8000000
	offSQEs   uint64 = 0x10000000
)

// io_uring_register opcodes.
const (
	registerBuffers   uintptr = 0
	unregisterBuffers uintptr = 1
	registerFiles     uintptr = 2
	unregisterFiles   uintptr = 3
	registerProbe     uintptr = 8
)

const probeOpSupported uint16 = 1 << 0 // IO_URING_OP_SUPPORTED

// Opcode is an io_uring operation (IORING_OP_*).
type Opcode uint8

// The opcodes, in kernel order.
const (
	OpNop Opcode = iota
	OpReadv
	OpWritev
	OpFsync
	OpReadFixed
	OpWriteFixed
	OpPollAdd
	OpPollRemove
	OpSyncFileRange
	OpSendmsg
	OpRecvmsg
	OpTimeout
	OpTimeoutRemove
	OpAccept
	OpAsyncCancel
	OpLinkTimeout
	OpConnect
	OpFallocate
	OpOpenat
	OpClose
	OpFilesUpdate
	OpStatx
	OpRead
	OpWrite
	OpFadvise
	OpMadvise
	OpSend
	OpRecv
	OpOpenat2
	OpEpollCtl
	OpSplice
	OpProvideBuffers
	OpRemoveBuffers
	OpTee
	OpShutdown
	OpRenameat
	OpUnlinkat
	OpMkdirat
	OpSymlinkat
	OpLinkat
	OpMsgRing
	OpFsetxattr
	OpSetxattr
	OpFgetxattr
	OpGetxattr
	OpSocket
	OpUringCmd
	OpSendZC
	OpSendmsgZC
	OpReadMultishot
	OpWaitid
	OpFutexWait
	OpFutexWake
	OpFutexWaitv
	OpFixedFdInstall
	OpFtruncate
	OpBind
	OpListen
)
