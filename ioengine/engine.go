package ioengine

import (
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Op is the kind of a request.
type Op uint8

const (
	OpRead      Op = iota + 1 // positional read into Buf
	OpWrite                   // positional write of Buf
	OpFsync                   // fsync(Fd)
	OpFdatasync               // fdatasync(Fd)
)

func (o Op) String() string {
	switch o {
	case OpRead:
		return "read"
	case OpWrite:
		return "write"
	case OpFsync:
		return "fsync"
	case OpFdatasync:
		return "fdatasync"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Request is one read, write or sync. The caller fills Op, Fd, Off, Buf and
// Link; the engine fills N and Err. A Request belongs to the engine from the
// call that submits it until that call returns.
type Request struct {
	Op Op
	// File is the file the request is on: Do holds a reference to it for
	// the request's flight, so closing it cannot race the request. Fd is
	// the descriptor of a request without a File, which the caller keeps
	// open until Do returns (tests, tools); with a File, Do sets it.
	File *File
	Fd   int
	Off  int64  // file offset (reads and writes)
	Buf  []byte // memory read into or written from; for O_DIRECT, aligned (package directio)

	// Link makes the next request of the same call start only after this
	// one has completed in full. If it fails, the rest of the chain is not
	// run and fails with ErrCanceled. A write linked to an fdatasync is the
	// durable append.
	Link bool

	// DSync makes a write durable before it completes, as if an
	// fdatasync of the file followed it (RWF_DSYNC): on io_uring one SQE
	// instead of a write and a linked fdatasync. A short write's remainder
	// is written with DSync too. Only for OpWrite.
	DSync bool

	N   int   // bytes transferred
	Err error // nil, io.EOF (a read reached end of file after N bytes), or an *OpError

	state   reqState // owned by the backend while in flight
	retries uint16
}

type reqState uint8

const (
	statePending reqState = iota
	stateDone
	stateRetry
	stateFailed
	stateCanceled
)

// maxRetries bounds resubmissions of one request after -EAGAIN/-EINTR
// completions that made no progress.
const maxRetries = 1000

// Errors.
var (
	ErrClosed   = errors.New("ioengine: engine closed")
	ErrCanceled = errors.New("ioengine: canceled because an earlier linked request failed")
)

// OpError describes a failed request. It unwraps to the errno (or
// ErrCanceled, io.ErrShortWrite), so errors.Is(err, unix.EIO) works.
type OpError struct {
	Op      Op
	Fd      int
	Off     int64
	Len     int
	Backend Backend
	Err     error
}

func (e *OpError) Error() string {
	if e.Op == OpFsync || e.Op == OpFdatasync {
		return fmt.Sprintf("ioengine: %s fd %d (%s): %v", e.Op, e.Fd, e.Backend, e.Err)
	}
	return fmt.Sprintf("ioengine: %s fd %d offset %d length %d (%s): %v", e.Op, e.Fd, e.Off, e.Len, e.Backend, e.Err)
}

func (e *OpError) Unwrap() error { return e.Err }

func opError(r *Request, b Backend, err error) error {
	return &OpError{Op: r.Op, Fd: r.Fd, Off: r.Off, Len: len(r.Buf), Backend: b, Err: err}
}

// Options configure an Engine. The zero value follows the environment
// switch with a 256-entry ring.
type Options struct {
	// Mode chooses the backend; Auto follows RINGSTORE_IO_URING.
	Mode IOMode
	// Entries is the io_uring SQ size (CQ is twice that). Default 256.
	Entries uint32
	// SQThreadIdle is how long an SQPOLL thread spins before sleeping.
	// Default 50ms.
	SQThreadIdle time.Duration
	// Logf receives the fallback reason, once per process and reason.
	// Default: the standard logger.
	Logf func(format string, args ...any)
	// Inline, on the uring backend, has each call submit its requests and
	// wait for their completions on the calling goroutine's own thread,
	// instead of handing them to a ring goroutine and waiting to be woken:
	// no hand-offs, but one call at a time (calls are serialized). For an
	// engine with one hot caller that waits for every call, such as a
	// log's committer. Ignored by the sqpoll and syscall backends.
	Inline bool
	// ParkWaits, with Inline on the uring backend, has a call that must
	// wait for a completion park its goroutine on Go's poller (the ring's
	// fd, readable when a completion is posted) instead of blocking its
	// thread in io_uring_enter. A thread blocked in the kernel keeps its P
	// until Go's system monitor takes it back, tens of microseconds or
	// more later; a parked goroutine frees it at once, so other goroutines
	// run on it while the reads are in flight. The ring is then set up
	// without COOP_TASKRUN (uring.Config.PromptTaskrun), so completions
	// are posted while the submitting thread runs other goroutines. A
	// parked call resumes when a P next looks for work, on a busy machine
	// after other goroutines' turns: it suits callers that want throughput
	// from more goroutines than Ps, not one whose latency is the product (a
	// log's commits).
	ParkWaits bool
	// Faults, for tests only, injects failures into requests (short
	// transfers, -EAGAIN, EIO, ENOSPC, torn writes) on every backend.
	Faults *FaultPlan
}

func (o *Options) String() string {
	return fmt.Sprintf("ioengine.Options{Mode: %s, Entries: %d, SQThreadIdle: %s, Inline: %v, ParkWaits: %v, Faults: %v}", o.Mode, o.Entries, o.SQThreadIdle, o.Inline, o.ParkWaits, o.Faults != nil)
}

func (o Options) withDefaults() Options {
	if o.Entries == 0 {
		o.Entries = 256
	}
	if o.SQThreadIdle == 0 {
		o.SQThreadIdle = 50 * time.Millisecond
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o
}

// Stats are an engine's counters.
type Stats struct {
	Backend         Backend
	Calls           uint64 // Do/ReadBatch/WriteBatch/... calls
	Requests        uint64 // requests finished (successfully or not)
	Bytes           uint64 // bytes read and written
	Enters          uint64 // io_uring_enter calls
	SQEs            uint64 // SQEs handed to the kernel, the ring goroutine's eventfd wake reads included
	Completions     uint64 // CQEs consumed
	Resubmits       uint64 // requests submitted again after a short transfer or -EAGAIN
	Syscalls        uint64 // pread/pwrite/fsync calls (syscall backend)
	CQOverflow      uint64 // completions the kernel could not post
	LostCompletions uint64 // EBADR seen
	Parks           uint64 // waits parked on Go's poller (Options.ParkWaits)
	FixedTransfers  uint64 // reads and writes issued as READ_FIXED/WRITE_FIXED (buffers in registered memory, RegisterMemory)
	Fallbacks       uint64 // 1 if this engine fell back to syscalls
}

// backend is what an Engine delegates to.
type backend interface {
	// do runs reqs (validated, results reset) and returns when all have
	// finished.
	do(reqs []Request) error
	// start begins reqs (validated, results reset) and returns a function
	// that waits until all have finished; it must be called exactly once.
	start(reqs []Request) (wait func() error)
	// setRegions replaces the registered buffers with chunks (none:
	// unregister all). On an error the backend has none registered.
	setRegions(chunks [][]byte) error
	stats(*Stats)
	close() error
}

// Engine runs batched reads, writes and syncs on one backend. It is safe
// for concurrent use by many goroutines; concurrent calls are gathered into
// as few io_uring_enter calls as the backend can manage.
type Engine struct {
	backend  backend
	opts     Options // immutable: as given to New, with defaults
	kind     Backend // immutable
	reason   string  // immutable: why the engine is not on io_uring
	requests atomic.Uint64
	calls    atomic.Uint64
	bytes    atomic.Uint64
	closed   atomic.Bool
	fellBack bool // immutable
	regionState
}

var (
	fallbackCount atomic.Uint64
	loggedMu      sync.Mutex
	logged        = map[string]bool{}
)

// Fallbacks returns how many engines of this process fell back to the
// syscall backend because io_uring was refused or failed its self-test.
func Fallbacks() uint64 { return fallbackCount.Load() }

func logOnce(logf func(string, ...any), reason string) {
	loggedMu.Lock()
	seen := logged[reason]
	logged[reason] = true
	loggedMu.Unlock()
	if !seen {
		logf("ioengine: %s", reason)
	}
}

// New returns an engine on the backend the options ask for. When io_uring
// is wanted but refused (EPERM, ENOSYS, ENOMEM, EINVAL after stepping down)
// or fails its start-up self-test, New falls back to the syscall backend,
// logs the reason once and reports it in FallbackReason; it does not fail.
func New(opts Options) (*Engine, error) {
	opts = opts.withDefaults()
	mode := opts.Mode
	if mode < Auto || mode > Syscall {
		return nil, fmt.Errorf("ioengine: invalid I/O mode %d", int(mode))
	}
	e := &Engine{opts: opts}
	if mode == Auto {
		if sw := EnvSwitch(); sw.Enabled {
			mode = URing
		} else {
			mode = Syscall
			e.reason = sw.String()
		}
	}
	if mode == URing || mode == SQPoll {
		b, kind, err := newURing(opts, mode == SQPoll)
		if err == nil {
			e.backend, e.kind = b, kind
			return e, nil
		}
		e.reason = fmt.Sprintf("falling back to pread/pwrite: %v", err)
		e.fellBack = true
		fallbackCount.Add(1)
		logOnce(opts.Logf, e.reason)
	}
	e.backend, e.kind = newSyscall(opts), BackendSyscall
	return e, nil
}

// NewInline returns an engine for one hot caller of e's I/O: on io_uring,
// an inline engine (Options.Inline: each call submits and waits on its own
// thread, no ring goroutine) with e's ring size and fault plan, which the
// caller closes. It makes inline submission a property of how an engine is
// used rather than of who created it. On any other backend, or when the
// ring cannot be made, it returns nil and the reason: the caller stays on
// e.
func (e *Engine) NewInline() (*Engine, error) {
	if e.kind != BackendURing {
		return nil, fmt.Errorf("ioengine: no inline engine on the %s backend", e.kind)
	}
	o := e.opts
	o.Mode, o.Inline = URing, true
	ie, err := New(o)
	if err != nil {
		return nil, err
	}
	if ie.kind != BackendURing {
		ie.Close()
		return nil, fmt.Errorf("ioengine: inline engine: %s", ie.reason)
	}
	return ie, nil
}

// Backend returns the backend the engine runs on.
func (e *Engine) Backend() Backend { return e.kind }

// FallbackReason says why the engine is not on io_uring: the environment
// switch, the build, a refused ring setup or a failed self-test. It is empty
// when the engine runs on io_uring or was asked for the syscall backend.
func (e *Engine) FallbackReason() string { return e.reason }

// FellBack reports whether io_uring was wanted but could not be used.
func (e *Engine) FellBack() bool { return e.fellBack }

// Do runs the requests and returns when every one has finished. Requests
// without Link may run in any order and concurrently. It returns the first
// request's error (in slice order), or nil; each request's own N and Err
// tell the rest.
func (e *Engine) Do(reqs []Request) error {
	if err := e.prepare(reqs); err != nil || len(reqs) == 0 {
		return err
	}
	err := e.backend.do(reqs)
	return e.finishCall(reqs, err)
}

// Pending is a call Start began: its requests are in flight until Wait
// returns.
type Pending struct {
	e    *Engine
	reqs []Request
	wait func() error
	err  error
}

// Start begins the requests as Do would and returns without waiting for
// them (on the syscall backend it runs them first: there is nothing to
// start without a thread). The requests and their buffers belong to the
// engine until Wait returns, which must be called exactly once. On an
// inline engine the requests are submitted from the calling thread and
// Wait drives the ring until they are done (another call's wait may reap
// them meanwhile): a caller submits the reads it needs next, does other
// work, and waits, with no goroutine or thread of its own in between.
func (e *Engine) Start(reqs []Request) (*Pending, error) {
	if err := e.prepare(reqs); err != nil {
		return nil, err
	}
	p := &Pending{e: e, reqs: reqs}
	if len(reqs) > 0 {
		p.wait = e.backend.start(reqs)
	}
	return p, nil
}

// Wait waits for the requests Start began and returns as Do does: the first
// request's error in slice order, or nil.
func (p *Pending) Wait() error {
	if p.wait == nil {
		return p.err
	}
	err := p.wait()
	p.wait = nil
	p.err = p.e.finishCall(p.reqs, err)
	return p.err
}

// prepare checks the requests, resets their results and takes their
// files; on an error nothing is taken.
func (e *Engine) prepare(reqs []Request) error {
	if e.closed.Load() {
		return ErrClosed
	}
	if len(reqs) == 0 {
		return nil
	}
	for i := range reqs {
		r := &reqs[i]
		switch r.Op {
		case OpRead, OpWrite:
			if len(r.Buf) > math.MaxInt32 {
				return fmt.Errorf("ioengine: request %d: buffer of %d bytes exceeds %d", i, len(r.Buf), math.MaxInt32)
			}
			if r.Off < 0 {
				return fmt.Errorf("ioengine: request %d: negative offset %d", i, r.Off)
			}
			if r.DSync && r.Op != OpWrite {
				return fmt.Errorf("ioengine: request %d: DSync is only for writes, not %s", i, r.Op)
			}
		case OpFsync, OpFdatasync:
			if r.DSync {
				return fmt.Errorf("ioengine: request %d: DSync is only for writes, not %s", i, r.Op)
			}
		default:
			return fmt.Errorf("ioengine: request %d: unknown op %d", i, uint8(r.Op))
		}
		r.N, r.Err, r.state, r.retries = 0, nil, statePending, 0
	}
	for i := range reqs {
		r := &reqs[i]
		if r.File == nil {
			continue
		}
		if !r.File.acquire() {
			releaseFiles(reqs[:i])
			return fmt.Errorf("ioengine: request %d: %s: %w", i, r.File.Name(), ErrFileClosed)
		}
		r.Fd = r.File.fd
	}
	e.calls.Add(1)
	return nil
}

// finishCall releases the call's files, counts it and returns its error.
func (e *Engine) finishCall(reqs []Request, err error) error {
	releaseFiles(reqs)
	var n uint64
	for i := range reqs {
		n += uint64(reqs[i].N)
		if err == nil && reqs[i].Err != nil {
			err = reqs[i].Err
		}
	}
	e.requests.Add(uint64(len(reqs)))
	e.bytes.Add(n)
	return err
}

// releaseFiles drops the references Do took for reqs.
func releaseFiles(reqs []Request) {
	for i := range reqs {
		if reqs[i].File != nil {
			reqs[i].File.release()
		}
	}
}

// ReadBatch reads each request's Buf at its Off of its Fd (Op is set to
// OpRead). See Do.
func (e *Engine) ReadBatch(reqs []Request) error { return e.doAs(reqs, OpRead) }

// WriteBatch writes each request's Buf at its Off of its Fd (Op is set to
// OpWrite). See Do.
func (e *Engine) WriteBatch(reqs []Request) error { return e.doAs(reqs, OpWrite) }

func (e *Engine) doAs(reqs []Request, op Op) error {
	for i := range reqs {
		reqs[i].Op = op
	}
	return e.Do(reqs)
}

// ReadAt reads len(buf) bytes at off; like os.File.ReadAt it returns io.EOF
// with n < len(buf) at end of file.
func (e *Engine) ReadAt(fd int, buf []byte, off int64) (int, error) {
	r := [1]Request{{Op: OpRead, Fd: fd, Buf: buf, Off: off}}
	err := e.Do(r[:])
	return r[0].N, err
}

// WriteAt writes buf at off in full or returns an error.
func (e *Engine) WriteAt(fd int, buf []byte, off int64) (int, error) {
	r := [1]Request{{Op: OpWrite, Fd: fd, Buf: buf, Off: off}}
	err := e.Do(r[:])
	return r[0].N, err
}

// Fsync flushes fd's data and metadata to stable storage.
func (e *Engine) Fsync(fd int) error {
	r := [1]Request{{Op: OpFsync, Fd: fd}}
	return e.Do(r[:])
}

// Fdatasync flushes fd's data (and the metadata needed to read it).
func (e *Engine) Fdatasync(fd int) error {
	r := [1]Request{{Op: OpFdatasync, Fd: fd}}
	return e.Do(r[:])
}

// Stats returns the engine's counters.
func (e *Engine) Stats() Stats {
	s := Stats{Backend: e.kind, Calls: e.calls.Load(), Requests: e.requests.Load(), Bytes: e.bytes.Load()}
	if e.fellBack {
		s.Fallbacks = 1
	}
	e.backend.stats(&s)
	return s
}

// Close waits for calls in progress, then releases the ring. Later calls
// return ErrClosed.
func (e *Engine) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	return e.backend.close()
}

// finish records a completion result on r. It returns the state reached.
// Shared by every backend so that they agree on what a result means.
func finish(r *Request, res int, errno error, kind Backend) reqState {
	if errno == nil {
		r.N += res
		switch {
		case r.Op == OpFsync || r.Op == OpFdatasync || r.N == len(r.Buf):
			r.state = stateDone
		case r.Op == OpRead && res == 0:
			r.Err, r.state = io.EOF, stateFailed
		case r.Op == OpWrite && res == 0:
			r.Err, r.state = opError(r, kind, io.ErrShortWrite), stateFailed
		case r.Op == OpRead && atEOF(r.Fd, r.Off+int64(r.N)):
			// A short read that ends at end of file is not resubmitted: the
			// rest would start at an unaligned offset, which O_DIRECT may
			// refuse with EINVAL instead of returning 0.
			r.Err, r.state = io.EOF, stateFailed
		default:
			r.state = stateRetry // short transfer: the rest goes again
		}
		return r.state
	}
	if isRetryable(errno) {
		r.retries++
		if r.retries <= maxRetries {
			r.state = stateRetry
			return r.state
		}
	}
	if isCanceled(errno) {
		r.Err, r.state = opError(r, kind, ErrCanceled), stateCanceled
		return r.state
	}
	r.Err, r.state = opError(r, kind, errno), stateFailed
	return r.state
}

// cancelRest marks the requests after a failed chain member as canceled.
func cancelRest(rest []Request, kind Backend) {
	for i := range rest {
		if rest[i].Err == nil || rest[i].state == stateCanceled {
			rest[i].Err, rest[i].state = opError(&rest[i], kind, ErrCanceled), stateCanceled
		}
	}
}

// chainEnd returns the end (exclusive) of the chain starting at i.
func chainEnd(reqs []Request, i int) int {
	for i < len(reqs)-1 && reqs[i].Link {
		i++
	}
	return i + 1
}

// pinBuffers pins the buffers of reqs that live on the Go heap so that
// they stay put while the kernel holds their addresses (Pin is a no-op for
// off-heap memory).
func pinBuffers(p *runtime.Pinner, reqs []Request) {
	for i := range reqs {
		if len(reqs[i].Buf) > 0 {
			p.Pin(&reqs[i].Buf[0])
		}
	}
}
