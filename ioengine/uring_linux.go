//go:build linux && !ringstore_nouring

package ioengine

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/uring"
)

// uringBackend owns one io_uring and the goroutine that drives it.
//
// Callers put their batch on queue and, if the ring goroutine may be
// blocked in io_uring_enter, wake it through an eventfd. The ring goroutine
// blocks only while a request is in flight, or while its read of the
// eventfd is and no chain waits for room (mayBlock). Locked to its OS
// thread (the ring's single issuer), it takes every queued batch at once,
// turns them into SQEs, submits them with one io_uring_enter that also
// waits for the next completion, and hands results back; so the requests
// of many concurrent callers share enter calls.
//
// In inline mode (Options.Inline) there is no ring goroutine and no
// eventfd: a call takes issueMu, locks its goroutine to its thread, and
// places, submits, waits and reaps itself until its batch is done. The
// fields "owned by the ring goroutine" are then owned by the holder of
// issueMu.
type uringBackend struct {
	kind   Backend    // immutable
	faults *FaultPlan // immutable
	efd    int        // eventfd the callers write to wake the ring; immutable; -1 inline
	inline bool       // immutable
	// Inline with Options.ParkWaits: a duplicate of the ring's fd, on Go's
	// poller, that a wait parks on; immutable, nil otherwise.
	pollFile *os.File
	pollConn syscall.RawConn

	issueMu sync.Mutex // inline: held by the call that drives the ring
	broken  error      // inline, guarded by issueMu: the ring failed; every later call fails

	mu       sync.Mutex
	queue    []*batch     // guarded by mu
	spare    []*batch     // guarded by mu: the previous queue's array, reused
	sleeping bool         // guarded by mu: the ring goroutine may be blocked in enter
	closing  bool         // guarded by mu (inline: by issueMu)
	ctl      []*regionCtl // guarded by mu: registration changes for the ring goroutine, oldest first

	exited chan struct{} // closed when the ring goroutine has returned

	// Owned by the ring goroutine.
	ring      *uring.Ring
	cqLimit   int      // most SQEs in flight (the CQ size), so the CQ never overflows
	maxChain  int      // longest chain the ring can take whole; immutable after setup
	inflight  int      // SQEs in flight, the wake read included
	ready     []*chain // chains waiting for SQ room, oldest first
	slots     []slot   // in-flight table indexed by user_data's low half
	freeSlots []uint32
	cqes      []uring.CQE
	wakeBuf   []byte // 8 bytes the eventfd read lands in; pinned for the ring's life
	wakePin   runtime.Pinner
	wakeArmed bool
	overrides map[uint64]int32 // user_data → result replacing the kernel's (fault injection)

	// Registered buffers, owned by the ring goroutine (inline: by the
	// holder of issueMu). fixed is what the kernel holds registered. A
	// change waits in pendingCtl until no fixed SQE is in flight
	// (fixedInflight 0), and no SQE is placed as fixed meanwhile, so an
	// SQE never names a buffer index of a table that has been replaced.
	fixed         fixedTable
	fixedInflight int
	pendingCtl    *regionCtl

	// Counters, written by the ring goroutine, read by stats.
	enters, sqes, completions, resubmits, overflow, lost, fixedTransfers, parks atomic.Uint64
}

// regionCtl asks the ring goroutine to register chunks as the ring's
// buffers (replacing any registered before); done receives the result.
type regionCtl struct {
	chunks [][]byte
	done   chan error
}

// maxFixedBuffers is the most buffers a ring registers
// (IORING_MAX_REG_BUFFERS).
const maxFixedBuffers = 1 << 14

// sqFullPoll is how long the ring goroutine waits for a completion while
// work waits for room in an SQPOLL ring's SQ.
const sqFullPoll = 50 * time.Microsecond

// wakeUserData marks the completion of the eventfd read.
const wakeUserData = ^uint64(0)

// batch is one caller's requests.
type batch struct {
	reqs     []Request
	chains   int           // chains not yet finished; owned by the ring goroutine
	chainBuf []chain       // the batch's chains; owned by the ring goroutine
	done     chan struct{} // receives once when every chain has finished
	pin      runtime.Pinner
}

var batchPool = sync.Pool{New: func() any { return &batch{done: make(chan struct{}, 1)} }}

// chain is reqs[first:end] of a batch, submitted as linked SQEs.
type chain struct {
	b           *batch
	first, end  int
	outstanding int // SQEs of the chain in flight
}

// slot is one in-flight SQE. user_data = gen<<32 | index, so a completion
// for a recycled slot is recognised and never delivered to another caller.
type slot struct {
	c     *chain
	idx   int
	gen   uint32
	used  bool
	fixed bool // the SQE names a registered buffer
}

func newURing(opts Options, sqpoll bool) (backend, Backend, error) {
	if opts.Inline && !sqpoll {
		return newInlineURing(opts)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC)
	if err != nil {
		return nil, BackendSyscall, fmt.Errorf("eventfd: %w", err)
	}
	u := &uringBackend{kind: BackendURing, faults: opts.Faults, efd: efd, exited: make(chan struct{})}
	if sqpoll {
		u.kind = BackendSQPoll
	}
	started := make(chan error, 1)
	go u.run(uring.Config{
		Entries:      opts.Entries,
		SQPoll:       sqpoll,
		SQThreadIdle: opts.SQThreadIdle,
		SingleIssuer: true,
	}, started)
	if err := <-started; err != nil {
		unix.Close(efd)
		return nil, BackendSyscall, err
	}
	return u, u.kind, nil
}

// run is the ring goroutine.
func (u *uringBackend) run(cfg uring.Config, started chan<- error) {
	defer close(u.exited)
	// The ring's single issuer is this thread, from setup to close.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	if err := u.setup(cfg); err != nil {
		started <- err
		return
	}
	u.wakeBuf = make([]byte, 8)
	u.wakePin.Pin(&u.wakeBuf[0])
	defer u.wakePin.Unpin()
	started <- nil

	u.loop()

	u.ring.Close()
	// The eventfd is closed by close, once no caller can write to it.
}

// newInlineURing makes the ring of an inline engine on the calling
// goroutine. Without SINGLE_ISSUER, since successive calls may come from
// different threads; each call locks its goroutine to its thread from
// submission to the last completion, so the task that submitted is the one
// that waits (and runs the completions' task work).
func newInlineURing(opts Options) (backend, Backend, error) {
	u := &uringBackend{kind: BackendURing, faults: opts.Faults, efd: -1, inline: true}
	if err := u.setup(uring.Config{Entries: opts.Entries, PromptTaskrun: opts.ParkWaits}); err != nil {
		return nil, BackendSyscall, err
	}
	if opts.ParkWaits {
		if err := u.openPoll(); err != nil {
			// The ring works; only its waits keep their P.
			opts.Logf("ioengine: waits block in io_uring_enter, the ring's fd is not on Go's poller: %v", err)
		}
	}
	return u, u.kind, nil
}

// openPoll puts a duplicate of the ring's fd on Go's poller, which reports
// it readable when the CQ holds a completion. The duplicate shares the
// ring's open file, so O_NONBLOCK is set on both; io_uring_enter does not
// read it.
func (u *uringBackend) openPoll() error {
	fd, err := unix.Dup(u.ring.Fd())
	if err != nil {
		return os.NewSyscallError("dup", err)
	}
	unix.CloseOnExec(fd)
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return os.NewSyscallError("fcntl(O_NONBLOCK)", err)
	}
	f := os.NewFile(uintptr(fd), "io_uring")
	c, err := f.SyscallConn()
	if err == nil {
		// A file os.NewFile could not add to the poller reports
		// ErrNoDeadline here rather than block a thread at each wait.
		err = f.SetReadDeadline(time.Time{})
	}
	if err != nil {
		f.Close()
		return err
	}
	u.pollFile, u.pollConn = f, c
	return nil
}

// parkTimeout bounds one park: a completion posted after park's check
// wakes the poller (the kernel wakes the ring's poll waiters at each
// post), so the timeout is a backstop, after which park returns and its
// caller looks at the CQ again. A variable for tests.
var parkTimeout = 20 * time.Millisecond

// park submits what is placed and, while the CQ is empty, parks the
// goroutine on Go's poller until the ring's fd is readable (a completion
// was posted) or parkTimeout has passed, its thread and P free meanwhile.
// It returns only an error of the ring itself.
func (u *uringBackend) park() error {
	if err := u.poll(); err != nil {
		return err
	}
	if u.ring.CQReady() > 0 {
		return nil
	}
	u.parks.Add(1)
	runtime.UnlockOSThread()
	defer runtime.LockOSThread()
	if err := u.pollFile.SetReadDeadline(time.Now().Add(parkTimeout)); err != nil {
		return err
	}
	err := u.pollConn.Read(func(uintptr) bool { return u.ring.CQReady() > 0 })
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil
	}
	return err
}

// wait submits what is placed and waits for a completion: parked on Go's
// poller with Options.ParkWaits, else blocked in io_uring_enter.
func (u *uringBackend) wait() error {
	if u.pollConn != nil {
		return u.park()
	}
	return u.enter()
}

// setup creates the ring, runs the self-test and sizes the in-flight
// table.
func (u *uringBackend) setup(cfg uring.Config) error {
	r, err := uring.New(cfg)
	if err != nil {
		return explainSetup(err)
	}
	if err := selfTest(r); err != nil {
		r.Close()
		return fmt.Errorf("io_uring self-test failed: %w", err)
	}
	u.ring = r
	u.cqLimit = int(r.CQEntries())
	// A chain is placed whole: it must fit the SQ and, with the wake
	// read, the CQ.
	u.maxChain = min(int(r.SQEntries()), u.cqLimit-1)
	u.slots = make([]slot, u.cqLimit)
	u.freeSlots = make([]uint32, 0, u.cqLimit)
	for i := u.cqLimit - 1; i >= 0; i-- {
		u.freeSlots = append(u.freeSlots, uint32(i))
	}
	u.cqes = make([]uring.CQE, u.cqLimit)
	return nil
}

func (u *uringBackend) loop() {
	for {
		u.mu.Lock()
		taken := u.queue
		u.queue = u.spare[:0]
		u.spare = taken
		u.sleeping = false
		closing := u.closing
		if u.pendingCtl == nil && len(u.ctl) > 0 {
			u.pendingCtl = u.ctl[0]
			u.ctl = u.ctl[:copy(u.ctl, u.ctl[1:])]
		}
		u.mu.Unlock()

		if c := u.pendingCtl; c != nil && u.fixedInflight == 0 {
			u.pendingCtl = nil
			c.done <- u.applyRegions(c.chunks)
			// The next change, if any, is taken on the next turn, which
			// readyToSleep does not skip while one is queued.
		}
		for _, b := range taken {
			u.addBatch(b)
		}
		// Chains first, so that one as long as the SQ finds it empty; the
		// wake read takes a slot if one is left, else it is armed on a
		// later turn.
		u.place()
		// Once closing, no caller can queue work, so the wake read is not
		// armed again: a read armed now would never complete. One armed
		// before is completed by Close's write to the eventfd.
		if !u.wakeArmed && !closing {
			u.armWake()
		}
		if closing && len(u.ready) == 0 && u.inflight == 0 {
			u.refuseCtl(ErrClosed)
			return
		}
		if !u.mayBlock() || u.pollSQ() {
			// Nothing in flight would end a wait, or chains wait for
			// room in an SQPOLL ring's SQ: submit what is placed (on
			// SQPOLL, wait at most sqFullPoll), then place again.
			if err := u.poll(); err != nil {
				u.failAll(err)
				return
			}
			u.reap()
			continue
		}
		if !u.readyToSleep() {
			continue
		}

		if err := u.enter(); err != nil {
			// The ring itself failed (not a request): fail everything in
			// flight rather than hang the callers.
			u.failAll(err)
			return
		}
		u.reap()
	}
}

// mayBlock reports whether the ring goroutine may wait for a completion
// without a timeout: only while a completion is sure to come without its
// help. That is so when a request is placed (its SQE is submitted by the
// same enter), or when the wake read is armed and no chain waits for room
// (new work then comes through queue and the eventfd). It is not so when
// only the wake read is placed and a chain is ready: the chain may be
// kept out only by the wake read's SQE, which takes the whole SQ of a ring
// of one entry and is submitted by that very enter; nor when nothing is in
// flight because the SQ looked full: an SQPOLL ring publishes its SQ head
// after posting the completions, so the SQ may hold only SQEs already done
// (the self-test's, at start), and armWake could not arm the wake read.
func (u *uringBackend) mayBlock() bool {
	return u.inflight > u.wakeInflight() || (u.wakeArmed && len(u.ready) == 0)
}

// pollSQ reports whether an SQPOLL ring's chains wait for SQ room: the
// kernel thread frees it when it consumes the SQEs, before their
// completions, so the ring goroutine polls rather than waits for one.
func (u *uringBackend) pollSQ() bool {
	return u.kind == BackendSQPoll && len(u.ready) > 0 && u.ring.Features()&uring.FeatExtArg != 0
}

// poll submits what is placed without waiting for a completion, so that
// the SQ holds no SQE the kernel has not taken: on a plain ring that frees
// the SQ at once. An SQPOLL ring's thread takes the SQEs and publishes the
// SQ head by itself, so poll waits for a completion, at most sqFullPoll
// (sleeps that long where the kernel has no timed wait).
func (u *uringBackend) poll() error {
	before := u.ring.Stats()
	var err error
	switch {
	case u.kind != BackendSQPoll:
		_, err = u.ring.Submit()
	case u.ring.Features()&uring.FeatExtArg != 0:
		if _, err = u.ring.WaitTimeout(1, sqFullPoll); errors.Is(err, uring.ErrTimeout) {
			err = nil
		}
	default:
		if _, err = u.ring.Submit(); err == nil {
			time.Sleep(sqFullPoll)
		}
	}
	return u.count(before, err)
}

// enter submits what is placed and waits for a completion. It returns
// only an error of the ring itself: EBUSY (reap, then retry) and a lost
// completion (counted) are not.
func (u *uringBackend) enter() error {
	before := u.ring.Stats()
	_, err := u.ring.SubmitAndWait(1)
	return u.count(before, err)
}

// count adds the enters and SQEs since before to the counters, records
// the overflow count, and returns err unless it is one the loop recovers
// from (EBUSY, a lost completion).
func (u *uringBackend) count(before uring.Stats, err error) error {
	after := u.ring.Stats()
	u.enters.Add(after.Enters - before.Enters)
	u.sqes.Add(after.SQEs - before.SQEs)
	u.overflow.Store(uint64(after.CQOverflow))
	switch {
	case err == nil, errors.Is(err, uring.ErrBusy):
		return nil
	case errors.Is(err, uring.ErrLostCompletion):
		u.lost.Add(1)
		return nil
	}
	return err
}

func (u *uringBackend) wakeInflight() int {
	if u.wakeArmed {
		return 1
	}
	return 0
}

func (u *uringBackend) armWake() {
	sqe := u.ring.GetSQE()
	if sqe == nil {
		return // the SQ is full; arm on a later turn
	}
	sqe.PrepRead(u.efd, u.wakeBuf, 0)
	sqe.UserData = wakeUserData
	u.wakeArmed = true
	u.inflight++
}

// addBatch splits a batch into chains, ready for placement.
func (u *uringBackend) addBatch(b *batch) {
	n := 0
	for i := 0; i < len(b.reqs); i = chainEnd(b.reqs, i) {
		n++
	}
	// The chain structs live in the batch and are reused with it: no
	// allocation per request on the hot path.
	if cap(b.chainBuf) < n {
		b.chainBuf = make([]chain, n)
	}
	b.chainBuf = b.chainBuf[:n]
	b.chains = n
	for i, k := 0, 0; i < len(b.reqs); k++ {
		end := chainEnd(b.reqs, i)
		b.chainBuf[k] = chain{b: b, first: i, end: end}
		u.ready = append(u.ready, &b.chainBuf[k])
		i = end
	}
}

// readyToSleep decides whether the ring goroutine may block in
// io_uring_enter now. It returns false when new work arrived, which the
// caller then takes on its next turn. (Spinning here before sleeping was
// measured and lost: on a machine with few Ps a busy ring thread keeps the
// callers it completes from running.)
func (u *uringBackend) readyToSleep() bool {
	if u.ring.CQReady() > 0 {
		return true // enter will not block
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if len(u.queue) > 0 || (len(u.ctl) > 0 && u.pendingCtl == nil) || (u.pendingCtl != nil && u.fixedInflight == 0) {
		return false
	}
	u.sleeping = true
	return true
}

// place turns ready chains into SQEs while the SQ and the in-flight limit
// allow, oldest first. A chain is placed whole or not at all: linked SQEs
// must be consecutive.
func (u *uringBackend) place() {
	n := 0
	for _, c := range u.ready {
		size := c.end - c.first
		if size > u.maxChain {
			u.failChain(c, fmt.Errorf("ioengine: a linked chain of %d requests exceeds the %d the ring can take at once (Options.Entries)", size, u.maxChain))
			n++
			continue
		}
		if uint32(size) > u.ring.SQSpace() || u.inflight+size > u.cqLimit {
			break
		}
		u.placeChain(c)
		n++
	}
	u.ready = u.ready[:copy(u.ready, u.ready[n:])]
}

// placeChain submits the chain from c.first. A member that gets an
// injected fault ends what is placed this time: the kernel would break the
// chain after a failed or short member, but it sees a NOP or a shortened
// transfer succeed and would run the members linked after it. The rest is
// placed, or canceled, by finishChain once the faulted member completes.
func (u *uringBackend) placeChain(c *chain) {
	reqs := c.b.reqs
	reqs[c.first].state = statePending
	for i := c.first + 1; i < c.end; i++ {
		// Redone from the start after a restart.
		reqs[i].N, reqs[i].Err, reqs[i].retries, reqs[i].state = 0, nil, 0, statePending
	}
	end := c.end
	for i := c.first; i < end; i++ {
		r := &reqs[i]
		ud := u.allocSlot(c, i)
		sqe := u.ring.GetSQE()
		buf, off := r.Buf[r.N:], uint64(r.Off)+uint64(r.N)
		inj := u.faults.pick(r.Op, r.Fd, len(buf))
		if inj.n >= 0 {
			end = i + 1
			buf = buf[:inj.n]
			if inj.errno != 0 {
				if u.overrides == nil {
					u.overrides = map[uint64]int32{}
				}
				u.overrides[ud] = -int32(inj.errno)
			}
		}
		switch {
		case inj.n == 0:
			sqe.PrepNop() // the fault replaces the request
		case r.Op == OpRead:
			if idx, ok := u.fixedFor(buf); ok {
				sqe.PrepReadFixed(r.Fd, buf, off, idx)
				u.markFixed(ud)
			} else {
				sqe.PrepRead(r.Fd, buf, off)
			}
		case r.Op == OpWrite:
			if idx, ok := u.fixedFor(buf); ok {
				sqe.PrepWriteFixed(r.Fd, buf, off, idx)
				u.markFixed(ud)
			} else {
				sqe.PrepWrite(r.Fd, buf, off)
			}
			if r.DSync {
				sqe.OpFlags = unix.RWF_DSYNC
			}
		case r.Op == OpFsync:
			sqe.PrepFsync(r.Fd, 0)
		case r.Op == OpFdatasync:
			sqe.PrepFsync(r.Fd, uring.FsyncDatasync)
		}
		sqe.UserData = ud
		if i < end-1 {
			sqe.Link()
		}
	}
	c.outstanding = end - c.first
	u.inflight += c.outstanding
}

// fixedFor returns the registered buffer that holds all of buf, unless a
// change of the registered buffers is waiting.
func (u *uringBackend) fixedFor(buf []byte) (uint16, bool) {
	if u.pendingCtl != nil {
		return 0, false
	}
	return u.fixed.lookup(buf)
}

// markFixed records that the SQE of slot ud names a registered buffer.
func (u *uringBackend) markFixed(ud uint64) {
	u.slots[uint32(ud)].fixed = true
	u.fixedInflight++
	u.fixedTransfers.Add(1)
}

// applyRegions registers chunks as the ring's buffers, replacing those
// registered before; no fixed SQE may be in flight. On an error none are
// registered.
func (u *uringBackend) applyRegions(chunks [][]byte) error {
	if len(u.fixed.chunks) > 0 {
		u.fixed = fixedTable{}
		if err := u.ring.UnregisterBuffers(); err != nil {
			return err
		}
	}
	if len(chunks) == 0 {
		return nil
	}
	if len(chunks) > maxFixedBuffers {
		return fmt.Errorf("%d buffers of up to %d bytes exceed the %d a ring registers", len(chunks), MaxRegisteredChunk, maxFixedBuffers)
	}
	if err := u.ring.RegisterBuffers(chunks); err != nil {
		return explainRegister(err)
	}
	u.fixed = newFixedTable(chunks)
	return nil
}

// refuseCtl answers every waiting registration change with err.
func (u *uringBackend) refuseCtl(err error) {
	if c := u.pendingCtl; c != nil {
		u.pendingCtl = nil
		c.done <- err
	}
	u.mu.Lock()
	ctl := u.ctl
	u.ctl = nil
	u.mu.Unlock()
	for _, c := range ctl {
		c.done <- err
	}
}

// setRegions registers chunks as the ring's buffers: on the ring goroutine,
// the ring's single issuer, or inline under issueMu once no fixed SQE is in
// flight.
func (u *uringBackend) setRegions(chunks [][]byte) error {
	if u.inline {
		return u.setRegionsInline(chunks)
	}
	c := &regionCtl{chunks: chunks, done: make(chan error, 1)}
	u.mu.Lock()
	if u.closing {
		u.mu.Unlock()
		return ErrClosed
	}
	u.ctl = append(u.ctl, c)
	if u.sleeping {
		u.sleeping = false
		u.wake()
	}
	u.mu.Unlock()
	return <-c.done
}

func (u *uringBackend) setRegionsInline(chunks [][]byte) error {
	u.issueMu.Lock()
	defer u.issueMu.Unlock()
	if u.broken != nil {
		return u.broken
	}
	if u.closing {
		return ErrClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Calls Start began may still have fixed SQEs in flight: finish them
	// (their Waits then find them done).
	for u.reap(); u.fixedInflight > 0; u.reap() {
		u.place()
		if err := u.enter(); err != nil {
			u.broken = fmt.Errorf("ioengine: io_uring failed: %w", err)
			u.failAll(err)
			return u.broken
		}
	}
	return u.applyRegions(chunks)
}

// explainRegister adds the usual cause of a refused buffer registration.
func explainRegister(err error) error {
	var hint string
	switch {
	case errors.Is(err, unix.ENOMEM):
		hint = "the pinned pages would pass RLIMIT_MEMLOCK (the process lacks CAP_IPC_LOCK)"
	case errors.Is(err, unix.EOPNOTSUPP):
		hint = "the kernel registers no file-backed memory (memfd or shared mappings need Linux 6.5)"
	case errors.Is(err, unix.EFAULT):
		hint = "the memory is not mapped, or cannot be pinned"
	case errors.Is(err, unix.EINVAL):
		hint = "a buffer is too large or the kernel is too old"
	default:
		return err
	}
	return fmt.Errorf("%s: %w", hint, err)
}

func (u *uringBackend) allocSlot(c *chain, idx int) uint64 {
	i := u.freeSlots[len(u.freeSlots)-1]
	u.freeSlots = u.freeSlots[:len(u.freeSlots)-1]
	s := &u.slots[i]
	s.c, s.idx, s.used = c, idx, true
	s.gen++
	return uint64(s.gen)<<32 | uint64(i)
}

// reap consumes every ready completion.
func (u *uringBackend) reap() {
	for {
		n := u.ring.ReapCQEs(u.cqes)
		if n == 0 {
			return
		}
		u.completions.Add(uint64(n))
		for i := range n {
			u.complete(u.cqes[i].UserData, u.cqes[i].Res)
		}
	}
}

func (u *uringBackend) complete(ud uint64, res int32) {
	u.inflight--
	if ud == wakeUserData {
		u.wakeArmed = false
		return
	}
	i := uint32(ud)
	if int(i) >= len(u.slots) || !u.slots[i].used || u.slots[i].gen != uint32(ud>>32) {
		// Not ours (cannot happen unless the kernel or this code is wrong):
		// count it and deliver it to nobody.
		u.lost.Add(1)
		u.inflight++
		return
	}
	s := &u.slots[i]
	c, idx := s.c, s.idx
	if s.fixed {
		s.fixed = false
		u.fixedInflight--
	}
	s.c, s.used = nil, false
	u.freeSlots = append(u.freeSlots, i)
	if v, ok := u.overrides[ud]; ok {
		delete(u.overrides, ud)
		if res >= 0 { // a torn write: the shortened write landed, the device "failed"
			res = v
		}
	}
	r := &c.b.reqs[idx]
	var errno error
	n := int(res)
	if res < 0 {
		errno, n = unix.Errno(-res), 0
	}
	finish(r, n, errno, u.kind)
	c.outstanding--
	if c.outstanding == 0 {
		u.finishChain(c)
	}
}

// finishChain runs when every placed SQE of a chain has completed: the
// chain is done, or it restarts from its first unfinished member (a short
// transfer or -EAGAIN breaks a link chain in the kernel; members after an
// injected fault were not placed), or a member failed and the rest is
// canceled.
func (u *uringBackend) finishChain(c *chain) {
	reqs := c.b.reqs
	for i := c.first; i < c.end; i++ {
		switch reqs[i].state {
		case stateDone:
			continue
		case stateRetry, statePending:
			if reqs[i].state == stateRetry {
				u.resubmits.Add(1)
			}
			c.first = i
			u.ready = append([]*chain{c}, u.ready...)
			return
		default:
			cancelRest(reqs[i+1:c.end], u.kind)
		}
		break
	}
	u.chainDone(c)
}

func (u *uringBackend) chainDone(c *chain) {
	c.b.chains--
	if c.b.chains == 0 {
		c.b.done <- struct{}{}
	}
}

// failChain ends every member of c not already done with err.
func (u *uringBackend) failChain(c *chain, err error) {
	for i := c.first; i < c.end; i++ {
		if r := &c.b.reqs[i]; r.state != stateDone {
			r.Err, r.state = opError(r, u.kind, err), stateFailed
		}
	}
	u.chainDone(c)
}

// failAll ends every queued and in-flight request with err after the ring
// failed. In-flight buffers are released only after the ring is closed,
// which cancels and waits for the kernel's outstanding work.
func (u *uringBackend) failAll(err error) {
	u.mu.Lock()
	u.closing = true
	taken := u.queue
	u.queue = nil
	u.mu.Unlock()
	for _, b := range taken {
		u.addBatch(b)
	}
	u.ring.Close()
	for i := range u.slots {
		if s := &u.slots[i]; s.used {
			if s.c.outstanding--; s.c.outstanding == 0 {
				// Every member fails, those not placed too.
				u.failChain(s.c, err)
			}
			s.used, s.fixed = false, false
		}
	}
	for _, c := range u.ready {
		u.failChain(c, err)
	}
	u.ready = nil
	u.fixedInflight = 0
	u.refuseCtl(fmt.Errorf("ioengine: io_uring failed: %w", err))
}

func (u *uringBackend) do(reqs []Request) error {
	b := newBatch(reqs)
	defer b.release()
	if u.inline {
		return u.doInline(b)
	}
	if err := u.enqueue(b); err != nil {
		return err
	}
	awaitDone(b.done)
	return nil
}

// newBatch takes a batch for reqs from the pool and pins their buffers.
func newBatch(reqs []Request) *batch {
	b := batchPool.Get().(*batch)
	b.reqs = reqs
	pinBuffers(&b.pin, reqs)
	return b
}

// release unpins the batch's buffers and returns it to the pool.
func (b *batch) release() {
	b.pin.Unpin()
	b.reqs = nil
	batchPool.Put(b)
}

// enqueue hands b to the ring goroutine, waking it if it may be asleep.
func (u *uringBackend) enqueue(b *batch) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.closing {
		return ErrClosed
	}
	u.queue = append(u.queue, b)
	if u.sleeping {
		// Under mu, so that the eventfd is still open: the ring goroutine
		// takes this batch, and Close waits for it, only after Unlock.
		u.sleeping = false
		u.wake()
	}
	return nil
}

// start begins reqs. With a ring goroutine it queues them as do does and
// the returned function waits for them; inline it places and submits them
// on the calling thread without waiting, and the returned function drives
// the ring until they are done.
func (u *uringBackend) start(reqs []Request) func() error {
	b := newBatch(reqs)
	if u.inline {
		if err := u.submitInline(b); err != nil {
			b.release()
			return func() error { return err }
		}
		return func() error {
			defer b.release()
			return u.waitInline(b)
		}
	}
	if err := u.enqueue(b); err != nil {
		b.release()
		return func() error { return err }
	}
	return func() error {
		defer b.release()
		awaitDone(b.done)
		return nil
	}
}

// submitInline places b's chains and submits them from the calling thread,
// without waiting for a completion. Chains that do not fit the rings now
// stay ready and are placed by the next call that drives the ring.
func (u *uringBackend) submitInline(b *batch) error {
	u.issueMu.Lock()
	defer u.issueMu.Unlock()
	if u.broken != nil {
		return u.broken
	}
	if u.closing {
		return ErrClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	u.addBatch(b)
	u.place()
	before := u.ring.Stats()
	_, err := u.ring.Submit()
	after := u.ring.Stats()
	u.enters.Add(after.Enters - before.Enters)
	u.sqes.Add(after.SQEs - before.SQEs)
	if err != nil && !errors.Is(err, uring.ErrBusy) {
		u.broken = fmt.Errorf("ioengine: io_uring failed: %w", err)
		u.failAll(err)
	}
	return nil
}

// waitInline drives the ring on the caller's thread until b, which
// submitInline began, is done (another inline call may have reaped some
// or all of it meanwhile).
func (u *uringBackend) waitInline(b *batch) error {
	u.issueMu.Lock()
	defer u.issueMu.Unlock()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for {
		u.reap()
		u.place()
		if b.chains == 0 {
			<-b.done
			return nil
		}
		if u.broken != nil {
			// failAll ended every chain it found, b's among them (b was
			// added before the ring broke), so this is not reached.
			return u.broken
		}
		if err := u.wait(); err != nil {
			u.broken = fmt.Errorf("ioengine: io_uring failed: %w", err)
			u.failAll(err)
			<-b.done
			return nil
		}
	}
}

// doInline drives the ring on the caller's thread until b is done: place
// what fits, submit and wait for a completion in one io_uring_enter, reap,
// and again. Chains restarted after a short transfer or -EAGAIN go back to
// ready and are placed on the next turn, as on the ring goroutine.
func (u *uringBackend) doInline(b *batch) error {
	u.issueMu.Lock()
	defer u.issueMu.Unlock()
	if u.broken != nil {
		return u.broken
	}
	if u.closing { // inline: guarded by issueMu
		return ErrClosed
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	u.addBatch(b)
	for {
		u.place()
		if b.chains == 0 {
			<-b.done // chainDone's token; the batch is reused
			return nil
		}
		if err := u.wait(); err != nil {
			// The ring failed: fail what is in flight (this batch only,
			// calls are serialized) and every later call.
			u.broken = fmt.Errorf("ioengine: io_uring failed: %w", err)
			u.failAll(err)
			<-b.done
			return nil
		}
		u.reap()
	}
}

var one = []byte{1, 0, 0, 0, 0, 0, 0, 0}

func (u *uringBackend) wake() {
	for {
		_, err := unix.Write(u.efd, one)
		if err != unix.EINTR {
			return
		}
	}
}

func (u *uringBackend) stats(s *Stats) {
	s.Enters = u.enters.Load()
	s.SQEs = u.sqes.Load()
	s.Completions = u.completions.Load()
	s.Resubmits = u.resubmits.Load()
	s.CQOverflow = u.overflow.Load()
	s.LostCompletions = u.lost.Load()
	s.FixedTransfers = u.fixedTransfers.Load()
	s.Parks = u.parks.Load()
}

func (u *uringBackend) close() error {
	if u.inline {
		// Waits for the call in progress.
		u.issueMu.Lock()
		defer u.issueMu.Unlock()
		u.closing = true
		if u.pollFile != nil {
			// Nobody is parked on it: a park holds issueMu.
			defer u.pollFile.Close()
		}
		if u.broken != nil {
			return nil // failAll closed the ring
		}
		// Calls Start began and nobody waited for yet finish first, so
		// that their Waits find them done.
		runtime.LockOSThread()
		for u.reap(); u.inflight > 0 || len(u.ready) > 0; u.reap() {
			u.place()
			if err := u.enter(); err != nil {
				u.failAll(err)
				runtime.UnlockOSThread()
				return nil
			}
		}
		runtime.UnlockOSThread()
		return u.ring.Close()
	}
	u.mu.Lock()
	u.closing = true
	u.wake()
	u.mu.Unlock()
	<-u.exited
	// Callers see closing under mu and no longer write to the eventfd.
	return unix.Close(u.efd)
}

// explainSetup adds the usual cause of each refusal.
func explainSetup(err error) error {
	var hint string
	switch {
	case errors.Is(err, unix.EPERM):
		hint = "io_uring is forbidden here (a seccomp filter, as in Docker 25+, or sysctl kernel.io_uring_disabled)"
	case errors.Is(err, unix.ENOSYS):
		hint = "the kernel has no io_uring (too old, disabled at build time, or gVisor)"
	case errors.Is(err, unix.ENOMEM):
		hint = "not enough locked memory for the ring (RLIMIT_MEMLOCK)"
	case errors.Is(err, unix.EINVAL):
		hint = "the kernel accepted none of the setup flag sets"
	default:
		return fmt.Errorf("io_uring setup refused: %w", err)
	}
	return fmt.Errorf("io_uring setup refused: %s: %w", hint, err)
}

// selfTest proves the ring works before it is trusted: a NOP, then a read
// of a temporary file checked byte for byte (gVisor, for one, completes most
// opcodes with -EINVAL).
func selfTest(r *uring.Ring) error {
	sqe := r.GetSQE()
	sqe.PrepNop()
	sqe.UserData = 1
	cqe, err := submitOne(r)
	if err != nil {
		return fmt.Errorf("NOP: %w", err)
	}
	if cqe.Res != 0 || cqe.UserData != 1 {
		return fmt.Errorf("NOP completed with res %d user_data %d", cqe.Res, cqe.UserData)
	}

	f, err := os.CreateTemp("", "ringstore-selftest-*")
	if err != nil {
		return nil // nowhere to write a file: the NOP is all we can check
	}
	defer os.Remove(f.Name())
	defer f.Close()
	want := []byte("ringstore io_uring self-test: the kernel read this file\n")
	if _, err := f.Write(want); err != nil {
		return nil
	}
	got := make([]byte, len(want))
	var pin runtime.Pinner
	pin.Pin(&got[0])
	defer pin.Unpin()
	sqe = r.GetSQE()
	sqe.PrepRead(int(f.Fd()), got, 0)
	sqe.UserData = 2
	cqe, err = submitOne(r)
	if err != nil {
		return fmt.Errorf("READ: %w", err)
	}
	if cqe.Res < 0 {
		return fmt.Errorf("READ of %s: %w", f.Name(), unix.Errno(-cqe.Res))
	}
	if int(cqe.Res) != len(want) || !bytes.Equal(got, want) {
		return fmt.Errorf("READ of %s returned %d bytes that differ from what was written", f.Name(), cqe.Res)
	}
	return nil
}

func submitOne(r *uring.Ring) (uring.CQE, error) {
	if _, err := r.SubmitAndWait(1); err != nil {
		return uring.CQE{}, err
	}
	cqe, err := r.WaitCQE()
	if err != nil {
		return uring.CQE{}, err
	}
	c := *cqe
	r.CQAdvance(1)
	return c, nil
}

// callerSpin is how long a caller polls for its completion before it parks.
// A parked goroutine is woken with a futex call and, on a virtual machine, an
// inter-processor interrupt; polling briefly skips both when the batch is
// about to finish. A caller polls only while at most maxSpinners callers
// wait, over all engines: with more, the polling takes the CPUs that the ring
// goroutine and the callers being completed need.
// docs/DECISIONS.md has the measurements.
var callerSpin = 40 * time.Microsecond

// waiters counts the callers in awaitDone, over all engines.
var waiters atomic.Int32

// maxSpinners is how many callers may wait with polling: half the Ps, at
// least one.
func maxSpinners() int32 { return int32(max(1, runtime.GOMAXPROCS(0)/2)) }

func awaitDone(done chan struct{}) {
	defer waiters.Add(-1)
	if waiters.Add(1) <= maxSpinners() {
		start := time.Now()
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if i&15 == 15 && time.Since(start) > callerSpin {
				break
			}
			runtime.Gosched()
		}
	}
	<-done
}
