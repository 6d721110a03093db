// Package ioengine is what ringstore's engines call to read, write and
// sync: batches of positional requests run on one of three backends.
//
//	uring    io_uring; one ring goroutine, locked to its OS thread (the
//	         ring's single issuer), gathers the requests of all concurrent
//	         callers into as few io_uring_enter calls as it can
//	sqpoll   the same with a kernel submission thread (IORING_SETUP_SQPOLL)
//	syscall  pread/pwrite/fsync/fdatasync, one call per request, serially
//	         on the caller's goroutine
//
// With Options.Inline the uring backend has no ring goroutine: each call
// locks its goroutine to its thread, submits its requests and waits for
// their completions itself, one call at a time. That saves the hand-offs
// to and from the ring goroutine (each a cross-CPU wake-up, tens of
// microseconds on a VM) for an engine with a single caller that waits for
// every call, such as a log's committer; concurrent callers only queue on
// each other.
//
// A thread blocked in io_uring_enter keeps its goroutine's P until Go's
// system monitor takes it back. With Options.ParkWaits as well, an inline
// call that must wait parks its goroutine on Go's poller instead: a
// duplicate of the ring's fd, readable once a completion is posted, so the
// P runs other goroutines while the requests are in flight. Such a ring is
// made without COOP_TASKRUN (uring.Config.PromptTaskrun): with it, a
// completion would wait until the submitting thread next entered the
// kernel, and that thread is then running other goroutines. A park lasts
// at most 20 ms before the call looks at the CQ again (a backstop: the
// kernel wakes the fd's pollers at each completion). Stats.Parks counts
// the parks.
//
// # The switch and the fallback
//
// RINGSTORE_IO_URING, read once per process and cached (EnvSwitch): unset or
// exactly "true" lets Options.Mode Auto use io_uring; any other value
// (empty, "TRUE", "1", bytes that are not UTF-8) means the syscall backend.
// Modes URing and SQPoll override the variable. The build tag
// ringstore_nouring, and every system but Linux, compile io_uring out.
//
// When io_uring is wanted but the kernel refuses the ring (EPERM from a
// seccomp filter or kernel.io_uring_disabled, ENOSYS, ENOMEM, EINVAL after
// stepping down through flag sets) or the ring fails its start-up self-test
// (a NOP and a read of a temporary file), New falls back to the syscall
// backend, logs the reason once per process and keeps it in
// FallbackReason. Results are identical on every backend.
//
// # Requests
//
// A Request is a read, write, fsync or fdatasync. Requests of one call run
// concurrently unless Link chains them: a linked request starts after the
// previous one completed in full, and a failure cancels the rest of its
// chain (ErrCanceled). Short transfers and -EAGAIN completions are
// submitted again for the remainder, so a request ends complete, at end of
// file (io.EOF), or with an *OpError naming op, descriptor, offset and
// length and wrapping the errno. A short write is finished before the
// fdatasync linked after it runs.
//
// # Starting without waiting
//
// Start begins a call and returns a Pending whose Wait waits for it, so a caller
// can submit the reads it will need next, do other work, and then wait. On an
// inline engine the requests are submitted from the caller's thread and Wait
// drives the ring itself (another inline call may reap them first); no
// goroutine or thread waits in between. On the syscall backend Start runs the
// requests before it returns. Close finishes calls begun and not yet waited for.
//
// # Memory and lifetimes
//
// A request's Buf belongs to the engine until the call returns: the kernel
// may write it until its completion is seen. Buffers on the Go heap are
// pinned (runtime.Pinner) for that time; off-heap buffers (package
// directio) need nothing. Completions are matched by user_data carrying a
// slot index and generation, so a completion is never delivered to another
// caller. Engine methods are safe for concurrent use; Close waits for the
// calls in progress.
//
// # Registered memory
//
// RegisterMemory registers off-heap memory with the ring (in chunks of at
// most 1 GiB, the kernel's limit per buffer). A read or write whose buffer
// lies wholly inside one chunk is then issued as READ_FIXED or WRITE_FIXED,
// so the kernel does not pin and unpin the pages for every request
// (Stats.FixedTransfers counts them); any other buffer goes as before. The
// registration is made on the thread that issues to the ring, and a change
// waits until no fixed request is in flight, so no request names a buffer
// table that has been replaced. Where the kernel refuses it (RLIMIT_MEMLOCK
// without CAP_IPC_LOCK, file-backed memory before Linux 6.5) or the backend
// is the syscall one, RegisterMemory returns the reason and requests run as
// plain reads and writes. The memory must stay mapped until
// Region.Unregister (or Close) returns.
package ioengine
