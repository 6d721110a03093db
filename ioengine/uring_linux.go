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

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/uring"
)

// uringBackend owns one io_uring and the goroutine that drives it.
//
// Callers put their batch on queue and, if the ring goroutine may be
// blocked in io_uring_enter, wake it through an eventfd that the ring always
// has a read outstanding on. The ring goroutine, locked to its OS thread
// (the ring's single issuer), takes every queued batch at once, turns them
// into SQEs, submits them with one io_uring_enter that also waits for the
// next completion, and hands results back; so the requests of many
// concurrent callers share enter calls.
type uringBackend struct {
	kind   Backend    // immutable
	faults *FaultPlan // immutable
	efd    int        // eventfd the callers write to wake the ring; immutable

	mu       sync.Mutex
	queue    []*batch // guarded by mu
	sleeping bool     // guarded by mu: the ring goroutine may be blocked in enter
	closing  bool     // guarded by mu

	exited chan struct{} // closed when the ring goroutine has returned

	// Owned by the ring goroutine.
	ring      *uring.Ring
	cqLimit   int      // most SQEs in flight (the CQ size), so the CQ never overflows
	inflight  int      // SQEs in flight, the wake read included
	ready     []*chain // chains waiting for SQ room, oldest first
	slots     []slot   // in-flight table indexed by user_data's low half
	freeSlots []uint32
	cqes      []uring.CQE
	wakeBuf   []byte // 8 bytes the eventfd read lands in; pinned for the ring's life
	wakePin   runtime.Pinner
	wakeArmed bool
	overrides map[uint64]int32 // user_data → result replacing the kernel's (fault injection)

	// Counters, written by the ring goroutine, read by stats.
	enters, sqes, completions, resubmits, overflow, lost atomic.Uint64
}

// wakeUserData marks the completion of the eventfd read.
const wakeUserData = ^uint64(0)

// batch is one caller's requests.
type batch struct {
	reqs   []Request
	chains int           // chains not yet finished; owned by the ring goroutine
	done   chan struct{} // receives once when every chain has finished
	pin    runtime.Pinner
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
	c    *chain
	idx  int
	gen  uint32
	used bool
}

func newURing(opts Options, sqpoll bool) (backend, Backend, error) {
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

	r, err := uring.New(cfg)
	if err != nil {
		started <- explainSetup(err)
		return
	}
	if err := selfTest(r); err != nil {
		r.Close()
		started <- fmt.Errorf("io_uring self-test failed: %w", err)
		return
	}
	u.ring = r
	u.cqLimit = int(r.CQEntries())
	u.slots = make([]slot, u.cqLimit)
	u.freeSlots = make([]uint32, 0, u.cqLimit)
	for i := u.cqLimit - 1; i >= 0; i-- {
		u.freeSlots = append(u.freeSlots, uint32(i))
	}
	u.cqes = make([]uring.CQE, u.cqLimit)
	u.wakeBuf = make([]byte, 8)
	u.wakePin.Pin(&u.wakeBuf[0])
	defer u.wakePin.Unpin()
	started <- nil

	u.loop()

	r.Close()
	unix.Close(u.efd)
}

func (u *uringBackend) loop() {
	for {
		u.mu.Lock()
		taken := u.queue
		u.queue = nil
		closing := u.closing
		// From here until the next turn the ring goroutine may sleep in
		// enter: callers that queue work must wake it.
		u.sleeping = true
		u.mu.Unlock()

		for _, b := range taken {
			u.addBatch(b)
		}
		if closing && len(u.ready) == 0 && u.inflight == u.wakeInflight() {
			if !u.wakeArmed {
				return
			}
			// Wait for the wake read to complete (Close wrote the eventfd).
		}
		if !u.wakeArmed {
			u.armWake()
		}
		u.place()

		before := u.ring.Stats()
		_, err := u.ring.SubmitAndWait(1)
		after := u.ring.Stats()
		u.enters.Add(after.Enters - before.Enters)
		u.sqes.Add(after.SQEs - before.SQEs)
		u.overflow.Store(uint64(after.CQOverflow))
		if err != nil {
			switch {
			case errors.Is(err, uring.ErrBusy):
				// Reap below, then the next turn retries.
			case errors.Is(err, uring.ErrLostCompletion):
				u.lost.Add(1)
			default:
				// The ring itself failed (not a request): fail everything in
				// flight rather than hang the callers.
				u.failAll(err)
				return
			}
		}
		u.reap()
	}
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
	for i := 0; i < len(b.reqs); {
		end := chainEnd(b.reqs, i)
		b.chains++
		u.ready = append(u.ready, &chain{b: b, first: i, end: end})
		i = end
	}
}

// place turns ready chains into SQEs while the SQ and the in-flight limit
// allow, oldest first. A chain is placed whole or not at all: linked SQEs
// must be consecutive.
func (u *uringBackend) place() {
	n := 0
	for _, c := range u.ready {
		size := c.end - c.first
		if size > u.cqLimit-1 {
			u.failChain(c, fmt.Errorf("ioengine: a linked chain of %d requests exceeds the ring's %d slots", size, u.cqLimit-1))
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

func (u *uringBackend) placeChain(c *chain) {
	reqs := c.b.reqs
	for i := c.first; i < c.end; i++ {
		r := &reqs[i]
		if i > c.first {
			r.N, r.Err, r.retries = 0, nil, 0 // redone from the start after a restart
		}
		r.state = statePending
		ud := u.allocSlot(c, i)
		sqe := u.ring.GetSQE()
		buf, off := r.Buf[r.N:], uint64(r.Off)+uint64(r.N)
		inj := u.faults.pick(r.Op, r.Fd, len(buf))
		if inj.n >= 0 {
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
			sqe.PrepRead(r.Fd, buf, off)
		case r.Op == OpWrite:
			sqe.PrepWrite(r.Fd, buf, off)
		case r.Op == OpFsync:
			sqe.PrepFsync(r.Fd, 0)
		case r.Op == OpFdatasync:
			sqe.PrepFsync(r.Fd, uring.FsyncDatasync)
		}
		sqe.UserData = ud
		if i < c.end-1 {
			sqe.Link()
		}
	}
	c.outstanding = c.end - c.first
	u.inflight += c.outstanding
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

// finishChain runs when every SQE of a chain has completed: the chain is
// done, or it restarts from its first unfinished member (a short transfer or
// -EAGAIN breaks a link chain in the kernel), or a member failed and the
// rest is canceled.
func (u *uringBackend) finishChain(c *chain) {
	reqs := c.b.reqs
	for i := c.first; i < c.end; i++ {
		switch reqs[i].state {
		case stateDone:
			continue
		case stateRetry:
			u.resubmits.Add(1)
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

func (u *uringBackend) failChain(c *chain, err error) {
	for i := c.first; i < c.end; i++ {
		c.b.reqs[i].Err, c.b.reqs[i].state = err, stateFailed
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
			s.c.b.reqs[s.idx].Err, s.c.b.reqs[s.idx].state = err, stateFailed
			if s.c.outstanding--; s.c.outstanding == 0 {
				u.chainDone(s.c)
			}
			s.used = false
		}
	}
	for _, c := range u.ready {
		u.failChain(c, err)
	}
	u.ready = nil
}

func (u *uringBackend) do(reqs []Request) error {
	b := batchPool.Get().(*batch)
	b.reqs = reqs
	pinBuffers(&b.pin, reqs)

	u.mu.Lock()
	if u.closing {
		u.mu.Unlock()
		b.pin.Unpin()
		b.reqs = nil
		batchPool.Put(b)
		return ErrClosed
	}
	u.queue = append(u.queue, b)
	wake := u.sleeping
	u.sleeping = false
	u.mu.Unlock()
	if wake {
		u.wake()
	}

	<-b.done
	b.pin.Unpin()
	b.reqs = nil
	batchPool.Put(b)
	return nil
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
}

func (u *uringBackend) close() error {
	u.mu.Lock()
	u.closing = true
	u.mu.Unlock()
	u.wake()
	<-u.exited
	return nil
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
