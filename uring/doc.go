// Package uring is ringstore's interface to the Linux io_uring: ring setup,
// submission and completion queues, SQE preparation, registered buffers and
// files, and the opcode probe, spoken to with raw system calls (no cgo, no
// liburing).
//
// It is the lowest layer of ringstore and knows nothing of files, engines or
// fallbacks; package ioengine builds the concurrent, batched, fault-tolerant
// I/O that the engines use on top of it. Most programs want ioengine.
//
// # Layout shared with the kernel
//
//	io_uring_setup(entries, params) -> ring fd
//	mmap(fd, IORING_OFF_SQ_RING)  SQ ring: head tail mask entries flags dropped array[]
//	mmap(fd, IORING_OFF_CQ_RING)  CQ ring: head tail mask entries overflow cqes[] flags
//	                              (one mapping for both when FEAT_SINGLE_MMAP)
//	mmap(fd, IORING_OFF_SQES)     SQE array: entries x 64 bytes
//
//	application                          kernel
//	-----------                          ------
//	fill sqes[tail & mask]
//	store-release sq.tail  ──────────▶   consumes sqes, advances sq.head
//	io_uring_enter(to_submit, min_complete, GETEVENTS)
//	                       ◀──────────   writes cqes[tail & mask], store-release cq.tail
//	read cqes[head & mask]
//	store-release cq.head  ──────────▶   slot free again
//
// The structures are mirrored from include/uapi/linux/io_uring.h in
// kernel_linux.go with compile-time size checks.
//
// # Concurrency
//
// A Ring is not safe for concurrent use: it has one issuer. With
// Config.SingleIssuer the kernel enforces that every submission comes from
// the thread that created the ring (others get EEXIST), so the goroutine that
// owns such a ring must call runtime.LockOSThread before New and keep the
// lock until Close. Completion fields (CQE) are valid until the CQ head is
// advanced past them.
//
// # Memory handed to the kernel
//
// The Prep methods store raw addresses in the SQE. The memory they point to
// must stay alive and unmoved until the completion for that SQE has been
// seen: use off-heap memory (package directio) or pin it with runtime.Pinner
// and keep a reference. iovec arrays and timespecs need only live until the
// kernel has consumed the SQE: until the submitting io_uring_enter call
// returns, or, with SQPOLL (where Submit may return before the kernel
// thread has read the SQE), until the completion.
//
// # Errors
//
// io_uring_enter is retried on EINTR (Go's preemption signals make it
// common). EAGAIN and EBUSY are returned wrapped in ErrBusy: the caller reaps
// completions and retries. EBADR means the kernel lost a completion (FEAT_NODROP
// could not allocate an overflow entry); it is counted and returned as
// ErrLostCompletion. Completion results are the kernel's: a negative Res is
// -errno (see CQE.Err).
//
// On systems other than Linux, and with the build tag ringstore_nouring,
// the package exports only Compiled and NotCompiledReason.
package uring
