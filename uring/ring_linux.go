//go:build linux && !ringstore_nouring

package uring

import (
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Errors returned by Ring methods. Each wraps the errno it stands for, so
// errors.Is(err, unix.EBUSY) keeps working.
var (
	// ErrBusy: io_uring_enter returned EAGAIN or EBUSY (the kernel is short
	// of resources or the CQ overflow list is full). Reap completions, then
	// retry.
	ErrBusy = errors.New("uring: ring busy, reap completions and retry")
	// ErrLostCompletion: io_uring_enter returned EBADR, a completion was
	// dropped by the kernel. The request it belonged to will never complete.
	ErrLostCompletion = errors.New("uring: kernel lost a completion (EBADR)")
	// ErrTimeout: a wait with a timeout expired before enough completions.
	ErrTimeout = errors.New("uring: wait timed out")
	// ErrClosed: the ring was used after Close.
	ErrClosed = errors.New("uring: ring closed")
)

// Config chooses how a ring is set up. The zero value asks for a 256-entry
// ring with a 512-entry CQ and the best flags the kernel accepts.
type Config struct {
	// Entries is the SQ size, rounded up by the kernel to a power of two.
	// Default 256.
	Entries uint32
	// CQEntries is the CQ size. Default 2*Entries.
	CQEntries uint32
	// SQPoll asks for a kernel submission thread (IORING_SETUP_SQPOLL).
	SQPoll bool
	// SQThreadIdle is how long the SQPOLL thread spins before it sleeps.
	// Default 50ms.
	SQThreadIdle time.Duration
	// SingleIssuer promises that one thread, the creating one, does every
	// submission; it enables SINGLE_ISSUER|DEFER_TASKRUN where the kernel
	// has them. The caller must hold runtime.LockOSThread. With SQPoll it
	// enables SINGLE_ISSUER only, and Register*/Probe calls must then come
	// from the creating thread.
	SingleIssuer bool
	// PromptTaskrun sets the ring up without COOP_TASKRUN or DEFER_TASKRUN
	// (SingleIssuer is then ignored, unless with SQPoll), so the kernel
	// interrupts the submitting thread to post a completion at once,
	// wherever that thread is. A caller that waits on the ring's fd from
	// another thread (Go's poller) needs it: with COOP_TASKRUN a completion
	// waits until the submitting thread next enters the kernel.
	PromptTaskrun bool
	// Flags, when non-zero, are passed to io_uring_setup exactly, with no
	// stepping down (and Config.SQPoll/SingleIssuer ignored). For tests and
	// experts.
	Flags uint32
}

// SetupError is returned by New when io_uring_setup refuses every flag set
// tried. Err is the errno of the last attempt.
type SetupError struct {
	Entries uint32
	Tried   []uint32 // flag sets, in the order tried
	Err     unix.Errno
}

func (e *SetupError) Error() string {
	last := e.Tried[len(e.Tried)-1]
	steps := ""
	if len(e.Tried) > 1 {
		steps = fmt.Sprintf(" (after stepping down through %d flag sets)", len(e.Tried))
	}
	return fmt.Sprintf("uring: io_uring_setup(entries=%d, flags=%s): %v%s", e.Entries, SetupFlagString(last), e.Err, steps)
}

func (e *SetupError) Unwrap() error { return e.Err }

// Stats are counters of one ring. Read them with Ring.Stats.
type Stats struct {
	Enters          uint64 // io_uring_enter calls that returned (including errors)
	SQEs            uint64 // SQEs published to the kernel
	Completions     uint64 // CQEs consumed
	EINTRRetries    uint64 // io_uring_enter calls retried after EINTR
	Busy            uint64 // EAGAIN/EBUSY returned to the caller
	LostCompletions uint64 // EBADR seen
	CQOverflow      uint32 // kernel's count of CQEs it could not post
	SQDropped       uint32 // kernel's count of invalid SQ indexes
}

// Ring is one io_uring instance. It is not safe for concurrent use; see the
// package documentation. A Ring must not be copied.
type Ring struct {
	_ noCopy

	fd       int    // immutable until Close
	flags    uint32 // setup flags the kernel accepted; immutable
	features uint32 // immutable

	sqMap, cqMap, sqeMap []byte // mappings; unmapped by Close

	sq struct {
		khead, ktail, kflags, kdropped *uint32
		mask, entries                  uint32
		sqes                           []SQE
		tail                           uint32 // next SQE to hand out (local)
		flushed                        uint32 // tail last published to the kernel
	}
	cq struct {
		khead, ktail, koverflow *uint32
		mask, entries           uint32
		cqes                    []CQE
	}

	waitArg getEventsArg // for WaitTimeout; lives as long as the ring
	waitTS  Timespec

	stats  Stats
	closed bool
}

type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}

// candidates returns the flag sets to try, best first.
func (c *Config) candidates() []uint32 {
	if c.Flags != 0 {
		return []uint32{c.Flags}
	}
	base := SetupCQSize
	switch {
	case c.SQPoll && c.SingleIssuer:
		return []uint32{base | SetupSQPoll | SetupSingleIssuer, base | SetupSQPoll}
	case c.SQPoll:
		// No SINGLE_ISSUER unless asked for: with it the kernel refuses
		// io_uring_register (buffers, files, probe) with EEXIST from every
		// thread but the creating one.
		return []uint32{base | SetupSQPoll}
	case c.PromptTaskrun:
		return []uint32{base, 0}
	case c.SingleIssuer:
		return []uint32{base | SetupSingleIssuer | SetupDeferTaskrun, base | SetupCoopTaskrun, base, 0}
	default:
		return []uint32{base | SetupCoopTaskrun, base, 0}
	}
}

// New sets up a ring, stepping down through flag sets while the kernel says
// EINVAL. Errors other than EINVAL (EPERM from seccomp or
// kernel.io_uring_disabled, ENOSYS, ENOMEM) end the attempt at once. The
// error is a *SetupError wrapping the errno.
func New(cfg Config) (*Ring, error) {
	entries := cfg.Entries
	if entries == 0 {
		entries = 256
	}
	cqEntries := cfg.CQEntries
	if cqEntries == 0 {
		cqEntries = 2 * entries
	}
	idle := cfg.SQThreadIdle
	if idle == 0 {
		idle = 50 * time.Millisecond
	}
	serr := &SetupError{Entries: entries}
	for _, flags := range cfg.candidates() {
		if cfg.CQEntries != 0 && cfg.Flags == 0 && flags&SetupCQSize == 0 {
			// A CQ size was asked for: the EINVAL is about it (smaller than
			// the SQ, or too large), not about a flag to step down from.
			break
		}
		p := Params{Flags: flags}
		if flags&SetupCQSize != 0 {
			p.CQEntries = cqEntries
		}
		if flags&SetupSQPoll != 0 {
			p.SQThreadIdle = uint32(idle / time.Millisecond)
		}
		serr.Tried = append(serr.Tried, flags)
		fd, errno := setup(entries, &p)
		if errno == 0 {
			r, err := mapRing(fd, &p)
			if err != nil {
				unix.Close(fd)
				return nil, err
			}
			return r, nil
		}
		serr.Err = errno
		if errno != unix.EINVAL {
			break
		}
	}
	return nil, serr
}

func mapRing(fd int, p *Params) (*Ring, error) {
	r := &Ring{fd: fd, flags: p.Flags, features: p.Features}
	sqSize := p.SQOff.Array + p.SQEntries*4
	cqSize := p.CQOff.CQEs + p.CQEntries*16
	if p.Features&FeatSingleMmap != 0 {
		sqSize = max(sqSize, cqSize)
		cqSize = sqSize
	}
	var err error
	r.sqMap, err = unix.Mmap(fd, int64(offSQRing), int(sqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return nil, fmt.Errorf("uring: mmap SQ ring: %w", err)
	}
	if p.Features&FeatSingleMmap != 0 {
		r.cqMap = r.sqMap
	} else {
		r.cqMap, err = unix.Mmap(fd, int64(offCQRing), int(cqSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
		if err != nil {
			r.unmap()
			return nil, fmt.Errorf("uring: mmap CQ ring: %w", err)
		}
	}
	r.sqeMap, err = unix.Mmap(fd, int64(offSQEs), int(p.SQEntries)*64, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		r.unmap()
		return nil, fmt.Errorf("uring: mmap SQEs: %w", err)
	}

	sq := &r.sq
	sq.khead = u32At(r.sqMap, p.SQOff.Head)
	sq.ktail = u32At(r.sqMap, p.SQOff.Tail)
	sq.kflags = u32At(r.sqMap, p.SQOff.Flags)
	sq.kdropped = u32At(r.sqMap, p.SQOff.Dropped)
	sq.mask = *u32At(r.sqMap, p.SQOff.RingMask)
	sq.entries = *u32At(r.sqMap, p.SQOff.RingEntries)
	sq.sqes = sqeSlice(r.sqeMap, sq.entries)
	sq.tail = atomic.LoadUint32(sq.ktail)
	sq.flushed = sq.tail
	// The SQ index array maps ring slots to SQEs; ringstore keeps it the
	// identity, set once here, as liburing does.
	if p.Flags&SetupNoSQArray == 0 {
		array := u32Slice(r.sqMap, p.SQOff.Array, sq.entries)
		for i := range array {
			array[i] = uint32(i)
		}
	}

	cq := &r.cq
	cq.khead = u32At(r.cqMap, p.CQOff.Head)
	cq.ktail = u32At(r.cqMap, p.CQOff.Tail)
	cq.koverflow = u32At(r.cqMap, p.CQOff.Overflow)
	cq.mask = *u32At(r.cqMap, p.CQOff.RingMask)
	cq.entries = *u32At(r.cqMap, p.CQOff.RingEntries)
	cq.cqes = cqeSlice(r.cqMap, p.CQOff.CQEs, cq.entries)
	return r, nil
}

func (r *Ring) unmap() {
	if r.sqeMap != nil {
		unix.Munmap(r.sqeMap)
		r.sqeMap = nil
	}
	if r.cqMap != nil && &r.cqMap[0] != &r.sqMap[0] {
		unix.Munmap(r.cqMap)
	}
	r.cqMap = nil
	if r.sqMap != nil {
		unix.Munmap(r.sqMap)
		r.sqMap = nil
	}
}

// Close unmaps the rings and closes the ring descriptor. In-flight requests
// are cancelled by the kernel; their buffers may still be written until the
// kernel finishes tearing the ring down, so callers wait for completions
// before Close. Close is idempotent.
func (r *Ring) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	r.unmap()
	if err := unix.Close(r.fd); err != nil {
		return fmt.Errorf("uring: close ring: %w", err)
	}
	return nil
}

// Fd returns the ring's file descriptor.
func (r *Ring) Fd() int { return r.fd }

// SetupFlags returns the flags the kernel accepted.
func (r *Ring) SetupFlags() uint32 { return r.flags }

// Features returns the kernel's IORING_FEAT_* bits.
func (r *Ring) Features() uint32 { return r.features }

// SQEntries and CQEntries return the queue sizes the kernel chose.
func (r *Ring) SQEntries() uint32 { return r.sq.entries }
func (r *Ring) CQEntries() uint32 { return r.cq.entries }

// SQSpace returns how many SQEs GetSQE can still hand out.
func (r *Ring) SQSpace() uint32 {
	if r.closed {
		return 0
	}
	return r.sq.entries - (r.sq.tail - atomic.LoadUint32(r.sq.khead))
}

// GetSQE returns the next free SQE, zeroed, or nil when the SQ is full
// (submit, then try again). The SQE is published by the next Submit.
func (r *Ring) GetSQE() *SQE {
	if r.closed || r.sq.tail-atomic.LoadUint32(r.sq.khead) >= r.sq.entries {
		return nil
	}
	sqe := &r.sq.sqes[r.sq.tail&r.sq.mask]
	*sqe = SQE{}
	r.sq.tail++
	return sqe
}

// flushSQ publishes the SQEs handed out since the last flush and returns
// how many SQEs the kernel has yet to consume.
func (r *Ring) flushSQ() uint32 {
	if r.sq.tail != r.sq.flushed {
		r.stats.SQEs += uint64(r.sq.tail - r.sq.flushed)
		atomic.StoreUint32(r.sq.ktail, r.sq.tail)
		r.sq.flushed = r.sq.tail
	}
	return r.sq.tail - atomic.LoadUint32(r.sq.khead)
}

// Submit publishes the prepared SQEs and tells the kernel about them. It
// returns the number of SQEs the kernel consumed.
func (r *Ring) Submit() (int, error) { return r.SubmitAndWait(0) }

// SubmitAndWait publishes the prepared SQEs and waits until at least waitNr
// completions are ready in the CQ. It returns the number of SQEs the kernel
// consumed in its calls.
func (r *Ring) SubmitAndWait(waitNr uint32) (int, error) {
	return r.submitAndWait(waitNr, nil, time.Time{})
}

// WaitTimeout submits like SubmitAndWait but gives up after d, returning
// ErrTimeout if fewer than waitNr completions are ready. It needs
// FEAT_EXT_ARG (Linux 5.11) and returns errors.ErrUnsupported without it.
func (r *Ring) WaitTimeout(waitNr uint32, d time.Duration) (int, error) {
	if r.features&FeatExtArg == 0 {
		return 0, fmt.Errorf("uring: wait with timeout needs IORING_FEAT_EXT_ARG: %w", errors.ErrUnsupported)
	}
	return r.submitAndWait(waitNr, &r.waitArg, time.Now().Add(d))
}

func (r *Ring) submitAndWait(waitNr uint32, arg *getEventsArg, deadline time.Time) (int, error) {
	if r.closed {
		return 0, ErrClosed
	}
	sqpoll := r.flags&SetupSQPoll != 0
	submitted := 0
	for {
		pending := r.flushSQ()
		var flags uint32
		kflags := atomic.LoadUint32(r.sq.kflags)
		if sqpoll {
			// The SQ thread consumes the SQEs; enter only to wake it or to wait.
			if kflags&sqNeedWakeup != 0 {
				flags |= enterSQWakeup
			}
			if waitNr > 0 || kflags&(sqCQOverflow|sqTaskrun) != 0 {
				flags |= enterGetEvents
			}
			if flags == 0 {
				return submitted + int(pending), nil
			}
		} else {
			// GETEVENTS with min_complete 0 never blocks; it runs deferred
			// task work (DEFER_TASKRUN) and flushes CQ overflow.
			flags |= enterGetEvents
			if pending == 0 && waitNr == 0 && kflags&(sqCQOverflow|sqTaskrun) == 0 && r.flags&SetupDeferTaskrun == 0 {
				return submitted, nil
			}
		}
		minComplete := uint32(0)
		ready := r.CQReady()
		if waitNr > ready {
			minComplete = waitNr
		}
		if arg != nil {
			left := time.Until(deadline)
			if left <= 0 {
				if ready >= waitNr {
					return submitted, nil
				}
				return submitted, ErrTimeout
			}
			r.waitTS = Timespec{Sec: int64(left / time.Second), Nsec: int64(left % time.Second)}
			arg.ts = timespecAddr(&r.waitTS)
			flags |= enterExtArg
		}
		n, errno := enter(r.fd, pending, minComplete, flags, arg)
		r.stats.Enters++
		switch errno {
		case 0:
			submitted += n
		case unix.EINTR:
			r.stats.EINTRRetries++
			continue
		case unix.ETIME:
			if r.CQReady() >= waitNr {
				return submitted, nil
			}
			return submitted, fmt.Errorf("%w: %w", ErrTimeout, errno)
		case unix.EAGAIN, unix.EBUSY:
			r.stats.Busy++
			return submitted, fmt.Errorf("%w: %w", ErrBusy, errno)
		case unix.EBADR:
			r.stats.LostCompletions++
			return submitted, fmt.Errorf("%w: %w", ErrLostCompletion, errno)
		default:
			return submitted, os.NewSyscallError("io_uring_enter", errno)
		}
		// The kernel returns the submitted count even when its wait was cut
		// short (a signal): loop until the wait is really satisfied. SQEs
		// the kernel left unconsumed (it stops at a failing one) go with
		// the next call.
		if r.CQReady() >= waitNr {
			return submitted, nil
		}
	}
}

// CQReady returns how many completions are ready to be consumed.
func (r *Ring) CQReady() uint32 {
	if r.closed {
		return 0
	}
	return atomic.LoadUint32(r.cq.ktail) - *r.cq.khead
}

// PeekCQE returns the oldest ready completion without consuming it. The CQE
// is valid until CQAdvance moves past it.
func (r *Ring) PeekCQE() (*CQE, bool) {
	if r.CQReady() == 0 {
		return nil, false
	}
	return &r.cq.cqes[*r.cq.khead&r.cq.mask], true
}

// WaitCQE returns the oldest completion, submitting pending SQEs and waiting
// for one if none is ready.
func (r *Ring) WaitCQE() (*CQE, error) {
	if cqe, ok := r.PeekCQE(); ok {
		return cqe, nil
	}
	if _, err := r.SubmitAndWait(1); err != nil {
		return nil, err
	}
	cqe, _ := r.PeekCQE()
	return cqe, nil
}

// CQAdvance marks n completions consumed, handing their slots back.
func (r *Ring) CQAdvance(n uint32) {
	if n == 0 || r.closed {
		return
	}
	r.stats.Completions += uint64(n)
	atomic.StoreUint32(r.cq.khead, *r.cq.khead+n)
}

// ReapCQEs copies up to len(dst) ready completions into dst, consumes them,
// and returns how many it copied. It never blocks.
func (r *Ring) ReapCQEs(dst []CQE) int {
	ready := r.CQReady()
	n := min(uint32(len(dst)), ready)
	if n == 0 {
		return 0 // and, after Close, keep off the unmapped ring
	}
	head := *r.cq.khead
	for i := uint32(0); i < n; i++ {
		dst[i] = r.cq.cqes[(head+i)&r.cq.mask]
	}
	r.CQAdvance(n)
	return int(n)
}

// CQOverflowPending reports whether the kernel holds completions that did
// not fit in the CQ (FEAT_NODROP keeps them; the next enter flushes them).
func (r *Ring) CQOverflowPending() bool {
	return atomic.LoadUint32(r.sq.kflags)&sqCQOverflow != 0
}

// Stats returns the ring's counters.
func (r *Ring) Stats() Stats {
	s := r.stats
	if !r.closed {
		s.CQOverflow = atomic.LoadUint32(r.cq.koverflow)
		s.SQDropped = atomic.LoadUint32(r.sq.kdropped)
	}
	return s
}

// Err returns the completion's error: nil for Res >= 0, else the errno.
func (c *CQE) Err() error {
	if c.Res >= 0 {
		return nil
	}
	return unix.Errno(-c.Res)
}
