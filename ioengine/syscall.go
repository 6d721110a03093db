package ioengine

import (
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// syscallBackend runs each request as one pread, pwrite, fsync or
// fdatasync, serially, on the calling goroutine. It is the backend used when
// io_uring is off or refused, and the honest baseline of the benchmarks.
type syscallBackend struct {
	faults    *FaultPlan // immutable
	syscalls  atomic.Uint64
	resubmits atomic.Uint64
}

func newSyscall(opts Options) *syscallBackend { return &syscallBackend{faults: opts.Faults} }

func (s *syscallBackend) do(reqs []Request) error {
	for i := 0; i < len(reqs); {
		end := chainEnd(reqs, i)
		s.runChain(reqs[i:end])
		i = end
	}
	return nil
}

// start runs reqs now: the syscall backend has no way to start a read
// without a thread that waits for it.
func (s *syscallBackend) start(reqs []Request) func() error {
	err := s.do(reqs)
	return func() error { return err }
}

// runChain runs linked requests in order; the first that fails cancels the rest.
func (s *syscallBackend) runChain(chain []Request) {
	for j := range chain {
		r := &chain[j]
		for r.state == statePending || r.state == stateRetry {
			n, err := s.issue(r)
			if finish(r, n, err, BackendSyscall) == stateRetry {
				s.resubmits.Add(1)
			}
		}
		if r.state != stateDone {
			cancelRest(chain[j+1:], BackendSyscall)
			return
		}
	}
}

// issue makes one system call for the untransferred part of r.
func (s *syscallBackend) issue(r *Request) (int, error) {
	buf, off := r.Buf[r.N:], r.Off+int64(r.N)
	inj := s.faults.pick(r.Op, r.Fd, len(buf))
	if inj.n >= 0 {
		if inj.n == 0 {
			return 0, inj.errno
		}
		buf = buf[:inj.n]
	}
	s.syscalls.Add(1)
	var n int
	var err error
	switch r.Op {
	case OpRead:
		n, err = unix.Pread(r.Fd, buf, off)
	case OpWrite:
		if r.DSync {
			n, err = pwriteDSync(r.Fd, buf, off)
		} else {
			n, err = unix.Pwrite(r.Fd, buf, off)
		}
	case OpFsync:
		err = unix.Fsync(r.Fd)
	case OpFdatasync:
		err = fdatasync(r.Fd)
	}
	if err == nil && inj.errno != 0 {
		return 0, inj.errno // torn: some bytes landed, the call failed
	}
	if n < 0 {
		n = 0
	}
	return n, err
}

func (s *syscallBackend) stats(st *Stats) {
	st.Syscalls = s.syscalls.Load()
	st.Resubmits = s.resubmits.Load()
}

func (s *syscallBackend) close() error { return nil }

// setRegions: pread and pwrite take any buffer; there is nothing to
// register.
func (s *syscallBackend) setRegions(chunks [][]byte) error {
	if len(chunks) == 0 {
		return nil
	}
	return ErrNoRegisteredMemory
}
