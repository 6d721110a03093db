package ioengine

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// FaultKind is a failure a FaultPlan injects.
type FaultKind uint8

const (
	// FaultShort transfers only Fault.Bytes bytes (default half the
	// request) and reports the short count; the engine must finish the rest.
	FaultShort FaultKind = iota + 1
	// FaultEAGAIN completes with -EAGAIN without transferring anything; the
	// engine must submit the request again.
	FaultEAGAIN
	// FaultEIO completes with -EIO without transferring anything.
	FaultEIO
	// FaultENOSPC completes with -ENOSPC without transferring anything.
	FaultENOSPC
	// FaultTorn writes only Fault.Bytes bytes (default half) and then
	// completes with -EIO: what a failing device can leave behind.
	FaultTorn
)

func (k FaultKind) String() string {
	switch k {
	case FaultShort:
		return "short"
	case FaultEAGAIN:
		return "EAGAIN"
	case FaultEIO:
		return "EIO"
	case FaultENOSPC:
		return "ENOSPC"
	case FaultTorn:
		return "torn"
	}
	return fmt.Sprintf("FaultKind(%d)", uint8(k))
}

// Fault says which requests fail and how.
type Fault struct {
	Kind  FaultKind
	Op    Op  // requests of this op only; 0 matches every op
	Fd    int // requests on this descriptor only; 0 matches every descriptor
	After int // let this many matching requests pass first (those the kind applies to: FaultTorn writes, FaultShort reads and writes)
	Times int // inject this many times; 0 means once, -1 means always
	Bytes int // bytes transferred by FaultShort and FaultTorn; 0 means half
	// Hold, if not nil, keeps each request this fault fires on from being
	// issued until Hold is closed (the issuing goroutine waits: the ring
	// goroutine on io_uring, the caller on the syscall backend), so that a
	// test can act while the request is known to be in flight. Injected
	// counts the fault before the wait.
	Hold <-chan struct{}
}

// FaultPlan injects faults into an engine's requests, for tests. It sits at
// the submission boundary: on io_uring a short or torn fault shrinks the SQE
// the real kernel executes and an errno fault turns it into a NOP whose
// result is replaced; on the syscall backend it shrinks or skips the
// system call. A FaultPlan is safe for concurrent use.
type FaultPlan struct {
	mu       sync.Mutex
	faults   []*faultState // guarded by mu
	injected int           // guarded by mu
}

type faultState struct {
	Fault
	seen, fired int
}

// NewFaultPlan returns a plan with the given faults.
func NewFaultPlan(faults ...Fault) *FaultPlan {
	p := &FaultPlan{}
	for _, f := range faults {
		p.Add(f)
	}
	return p
}

// Add appends a fault to the plan.
func (p *FaultPlan) Add(f Fault) {
	p.mu.Lock()
	p.faults = append(p.faults, &faultState{Fault: f})
	p.mu.Unlock()
}

// Injected returns how many faults have fired.
func (p *FaultPlan) Injected() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.injected
}

// injection is what happens to one request.
type injection struct {
	n     int        // bytes to transfer; -1 leaves the request whole
	errno unix.Errno // result to report after transferring n bytes (0: report n)
	kind  FaultKind
}

var noInjection = injection{n: -1}

// pick decides the fate of a request about to be issued with length n,
// after waiting for the fault's Hold, if it has one.
func (p *FaultPlan) pick(op Op, fd, n int) injection {
	if p == nil {
		return noInjection
	}
	inj, hold := p.choose(op, fd, n)
	if hold != nil {
		<-hold
	}
	return inj
}

// choose finds the fault that fires on the request, if any, under p.mu,
// and returns its injection and Hold.
func (p *FaultPlan) choose(op Op, fd, n int) (injection, <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, f := range p.faults {
		if (f.Op != 0 && f.Op != op) || (f.Fd != 0 && f.Fd != fd) {
			continue
		}
		// A request the fault cannot apply to does not match it, and does
		// not count toward After.
		switch f.Kind {
		case FaultShort, FaultTorn:
			if op != OpRead && op != OpWrite || n < 2 || (f.Kind == FaultTorn && op != OpWrite) {
				continue
			}
		case FaultEAGAIN, FaultEIO, FaultENOSPC:
		default:
			continue
		}
		f.seen++
		if f.seen <= f.After {
			continue
		}
		limit := f.Times
		if limit == 0 {
			limit = 1
		}
		if limit > 0 && f.fired >= limit {
			continue
		}
		inj := injection{n: 0, kind: f.Kind}
		switch f.Kind {
		case FaultShort, FaultTorn:
			inj.n = f.Bytes
			if inj.n <= 0 || inj.n >= n {
				inj.n = n / 2
			}
			if f.Kind == FaultTorn {
				inj.errno = unix.EIO
			}
		case FaultEAGAIN:
			inj.errno = unix.EAGAIN
		case FaultEIO:
			inj.errno = unix.EIO
		case FaultENOSPC:
			inj.errno = unix.ENOSPC
		}
		f.fired++
		p.injected++
		return inj, f.Hold
	}
	return noInjection, nil
}
