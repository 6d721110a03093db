package ioengine

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Faults are injected at the submission boundary of every backend; these
// tests check that the engine recovers from the recoverable ones with the
// right data and reports the others on the right request only.

// withFaults runs fn on every backend, each engine with a fresh plan made
// by plan (a plan counts, so backends must not share one).
func withFaults(t *testing.T, opts Options, plan func() *FaultPlan, fn func(t *testing.T, e *Engine, p *FaultPlan)) {
	t.Helper()
	for _, bc := range backendCases {
		t.Run("backend="+bc.name, func(t *testing.T) {
			p := plan()
			o := opts
			o.Faults = p
			fn(t, newEngine(t, bc.mode, bc.with(o)), p)
		})
	}
}

func plan(faults ...Fault) func() *FaultPlan {
	return func() *FaultPlan { return NewFaultPlan(faults...) }
}

func TestFaultShortRead(t *testing.T) {
	data := block(64*blockSize, 5)
	withFaults(t, Options{}, plan(Fault{Kind: FaultShort, Op: OpRead, Times: -1}), func(t *testing.T, e *Engine, p *FaultPlan) {
		_, fd := openFile(t, t.TempDir(), "f", data)
		reqs := make([]Request, 16)
		for i := range reqs {
			off := int64((i * 7919) % (len(data) - 3*blockSize))
			reqs[i] = Request{Fd: fd, Off: off, Buf: make([]byte, 2*blockSize+i)}
		}
		if err := e.ReadBatch(reqs); err != nil {
			t.Fatalf("ReadBatch: %v", err)
		}
		for i := range reqs {
			r := &reqs[i]
			checkReq(t, i, r)
			if !bytes.Equal(r.Buf, data[r.Off:r.Off+int64(len(r.Buf))]) {
				t.Errorf("request %d: wrong bytes after short reads", i)
			}
		}
		// Every attempt is halved until one byte is left.
		if st := e.Stats(); st.Resubmits == 0 || p.Injected() < len(reqs) {
			t.Errorf("Resubmits %d, Injected %d; want > 0 and >= %d", st.Resubmits, p.Injected(), len(reqs))
		}

		// A short read that meets end of file: N counts what was there.
		buf := make([]byte, 4*blockSize)
		n, err := e.ReadAt(fd, buf, int64(len(data)-blockSize-10))
		if n != blockSize+10 || err != io.EOF || !bytes.Equal(buf[:n], data[len(data)-n:]) {
			t.Errorf("short reads to end of file: %d, %v; want %d, io.EOF and the file's bytes", n, err, blockSize+10)
		}
	})
}

func TestFaultShortWrite(t *testing.T) {
	withFaults(t, Options{}, plan(Fault{Kind: FaultShort, Op: OpWrite, Times: 5, Bytes: 1000}), func(t *testing.T, e *Engine, p *FaultPlan) {
		f, fd := openFile(t, t.TempDir(), "f", nil)
		reqs := make([]Request, 8)
		for i := range reqs {
			reqs[i] = Request{Fd: fd, Off: int64(i) * 3 * blockSize, Buf: block(3*blockSize, uint64(i))}
		}
		if err := e.WriteBatch(reqs); err != nil {
			t.Fatalf("WriteBatch: %v", err)
		}
		data := readFile(t, f)
		for i := range reqs {
			checkReq(t, i, &reqs[i])
			if err := checkBlock(data[reqs[i].Off:reqs[i].Off+3*blockSize], uint64(i)); err != nil {
				t.Errorf("block %d after short writes: %v", i, err)
			}
		}
		if st := e.Stats(); st.Resubmits < 5 || p.Injected() != 5 {
			t.Errorf("Resubmits %d, Injected %d; want >= 5 and 5", st.Resubmits, p.Injected())
		}
	})
}

// TestFaultShortDirect shortens O_DIRECT transfers by whole blocks (a
// shorter piece would be refused by the kernel as unaligned): the engine
// finishes the rest at aligned offsets.
func TestFaultShortDirect(t *testing.T) {
	const reqSize = 4 * blockSize
	withFaults(t, Options{}, plan(Fault{Kind: FaultShort, Times: 4, Bytes: blockSize}), func(t *testing.T, e *Engine, p *FaultPlan) {
		_, fd := openDirect(t, "f", 16*reqSize)
		w, r := alloc(t, 4*reqSize), alloc(t, 4*reqSize)
		reqs := make([]Request, 4)
		for i := range reqs {
			buf := w[i*reqSize : (i+1)*reqSize]
			fillBlock(buf, uint64(i))
			reqs[i] = Request{Fd: fd, Off: int64(3*i) * reqSize, Buf: buf}
		}
		if err := e.WriteBatch(reqs); err != nil {
			t.Fatalf("O_DIRECT WriteBatch with short writes: %v", err)
		}
		p.Add(Fault{Kind: FaultShort, Op: OpRead, Times: 4, Bytes: 2 * blockSize})
		for i := range reqs {
			reqs[i].Buf = r[i*reqSize : (i+1)*reqSize]
		}
		if err := e.ReadBatch(reqs); err != nil {
			t.Fatalf("O_DIRECT ReadBatch with short reads: %v", err)
		}
		for i := range reqs {
			checkReq(t, i, &reqs[i])
			if err := checkBlock(reqs[i].Buf, uint64(i)); err != nil {
				t.Errorf("request %d: %v", i, err)
			}
		}
		if p.Injected() != 8 || e.Stats().Resubmits < 8 {
			t.Errorf("Injected %d, Resubmits %d; want 8 and >= 8", p.Injected(), e.Stats().Resubmits)
		}
	})
}

func TestFaultEAGAIN(t *testing.T) {
	data := block(16*blockSize, 8)
	withFaults(t, Options{}, plan(Fault{Kind: FaultEAGAIN, Times: 10}), func(t *testing.T, e *Engine, p *FaultPlan) {
		f, fd := openFile(t, t.TempDir(), "f", data)
		reqs := make([]Request, 8)
		for i := range reqs {
			reqs[i] = Request{Op: OpRead, Fd: fd, Off: int64(i) * blockSize, Buf: make([]byte, blockSize)}
		}
		reqs = append(reqs,
			Request{Op: OpWrite, Fd: fd, Off: 20 * blockSize, Buf: block(blockSize, 20), Link: true},
			Request{Op: OpFdatasync, Fd: fd})
		if err := e.Do(reqs); err != nil {
			t.Fatalf("Do: %v", err)
		}
		for i := range reqs {
			checkReq(t, i, &reqs[i])
		}
		for i := range reqs[:8] {
			if !bytes.Equal(reqs[i].Buf, data[i*blockSize:(i+1)*blockSize]) {
				t.Errorf("request %d: wrong bytes after EAGAIN", i)
			}
		}
		if err := checkBlock(readFile(t, f)[20*blockSize:], 20); err != nil {
			t.Errorf("write after EAGAIN: %v", err)
		}
		if st := e.Stats(); p.Injected() != 10 || st.Resubmits < 10 {
			t.Errorf("Injected %d, Resubmits %d; want 10 and >= 10", p.Injected(), st.Resubmits)
		}
	})
}

// TestFaultEAGAINForever must end, after maxRetries resubmissions, with
// the EAGAIN reported: never an endless loop.
func TestFaultEAGAINForever(t *testing.T) {
	withFaults(t, Options{}, plan(Fault{Kind: FaultEAGAIN, Times: -1}), func(t *testing.T, e *Engine, p *FaultPlan) {
		_, fd := openFile(t, t.TempDir(), "f", block(blockSize, 1))
		for _, r := range []Request{
			{Op: OpRead, Fd: fd, Buf: make([]byte, 100)},
			{Op: OpFdatasync, Fd: fd},
		} {
			before := p.Injected()
			reqs := []Request{r}
			var err error
			within(t, hangLimit, "a request failing with EAGAIN forever", func() { err = e.Do(reqs) })
			var oe *OpError
			if !errors.Is(err, unix.EAGAIN) || !errors.As(err, &oe) || oe.Op != r.Op {
				t.Fatalf("%s with EAGAIN forever: %v; want an *OpError wrapping EAGAIN", r.Op, err)
			}
			if got := p.Injected() - before; got != maxRetries+1 {
				t.Errorf("%s: %d attempts, want maxRetries+1 = %d", r.Op, got, maxRetries+1)
			}
		}
	})
}

func TestFaultEIO(t *testing.T) {
	data := block(16*blockSize, 3)
	withFaults(t, Options{}, plan(Fault{Kind: FaultEIO, Op: OpRead, After: 3}), func(t *testing.T, e *Engine, p *FaultPlan) {
		_, fd := openFile(t, t.TempDir(), "f", data)
		reqs := make([]Request, 8)
		for i := range reqs {
			reqs[i] = Request{Fd: fd, Off: int64(i) * blockSize, Buf: make([]byte, blockSize)}
		}
		err := e.ReadBatch(reqs)
		var oe *OpError
		if !errors.Is(err, unix.EIO) || !errors.As(err, &oe) || oe.Off != 3*blockSize {
			t.Fatalf("ReadBatch = %v; want EIO on the fourth read", err)
		}
		for i := range reqs {
			if i == 3 {
				if reqs[i].N != 0 || !errors.Is(reqs[i].Err, unix.EIO) || errors.Is(reqs[i].Err, ErrCanceled) {
					t.Errorf("request 3: N %d, Err %v; want 0, EIO", reqs[i].N, reqs[i].Err)
				}
				continue
			}
			checkReq(t, i, &reqs[i])
			if !bytes.Equal(reqs[i].Buf, data[i*blockSize:(i+1)*blockSize]) {
				t.Errorf("request %d: wrong bytes", i)
			}
		}
		if p.Injected() != 1 {
			t.Errorf("Injected = %d, want 1", p.Injected())
		}
		// Once only: the next read is fine.
		if n, err := e.ReadAt(fd, reqs[3].Buf, 3*blockSize); n != blockSize || err != nil {
			t.Errorf("ReadAt after the fault: %d, %v", n, err)
		}
	})
}

func TestFaultENOSPC(t *testing.T) {
	withFaults(t, Options{}, plan(Fault{Kind: FaultENOSPC, Op: OpWrite, After: 1}), func(t *testing.T, e *Engine, p *FaultPlan) {
		f, fd := openFile(t, t.TempDir(), "f", make([]byte, 3*blockSize))
		reqs := []Request{
			{Fd: fd, Off: 0, Buf: block(blockSize, 0)},
			{Fd: fd, Off: blockSize, Buf: block(blockSize, 1)},
			{Fd: fd, Off: 2 * blockSize, Buf: block(blockSize, 2)},
		}
		err := e.WriteBatch(reqs)
		if !errors.Is(err, unix.ENOSPC) || !errors.Is(reqs[1].Err, unix.ENOSPC) || reqs[1].N != 0 {
			t.Fatalf("WriteBatch = %v, request 1: N %d, Err %v; want ENOSPC on request 1", err, reqs[1].N, reqs[1].Err)
		}
		checkReq(t, 0, &reqs[0])
		checkReq(t, 2, &reqs[2])
		data := readFile(t, f)
		if !bytes.Equal(data[blockSize:2*blockSize], make([]byte, blockSize)) {
			t.Error("the write that failed with ENOSPC landed")
		}
		if checkBlock(data[:blockSize], 0) != nil || checkBlock(data[2*blockSize:], 2) != nil {
			t.Error("the neighbouring writes did not land")
		}
	})
}

// TestFaultTorn: the first Bytes bytes of the write land, the rest does
// not, and the request fails with EIO acknowledging nothing.
func TestFaultTorn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bytes  int
		landed int
	}{
		{"bytes=1000", 1000, 1000},
		{"bytes=default_half", 0, blockSize},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withFaults(t, Options{}, plan(Fault{Kind: FaultTorn, Bytes: tc.bytes}), func(t *testing.T, e *Engine, p *FaultPlan) {
				f, fd := openFile(t, t.TempDir(), "f", make([]byte, 4*blockSize))
				buf := block(2*blockSize, 77)
				n, err := e.WriteAt(fd, buf, blockSize)
				var oe *OpError
				if !errors.Is(err, unix.EIO) || !errors.As(err, &oe) || oe.Op != OpWrite || n != 0 {
					t.Fatalf("torn WriteAt = %d, %v; want 0, an *OpError wrapping EIO", n, err)
				}
				data := readFile(t, f)
				want := make([]byte, 4*blockSize)
				copy(want[blockSize:], buf[:tc.landed])
				if i := diffAt(data, want); i >= 0 {
					t.Fatalf("file after a torn write of %d bytes differs at byte %d: %#x, want %#x", tc.landed, i, data[i], want[i])
				}
				if p.Injected() != 1 {
					t.Errorf("Injected = %d, want 1", p.Injected())
				}
			})
		})
	}
}

// Faults on linked chains: a write linked to an fdatasync is the durable
// append, so these are the cases a log depends on.

// TestFaultChainShortWrite: the short write is finished before the
// fdatasync runs. The plan lets one fdatasync pass and fails any second
// one, so an fdatasync issued early (and again after the write's rest)
// shows as an EIO.
func TestFaultChainShortWrite(t *testing.T) {
	withFaults(t, Options{}, plan(
		Fault{Kind: FaultShort, Op: OpWrite, Bytes: 1000},
		Fault{Kind: FaultEIO, Op: OpFdatasync, After: 1},
	), func(t *testing.T, e *Engine, p *FaultPlan) {
		f, fd := openFile(t, t.TempDir(), "f", nil)
		reqs := []Request{
			{Op: OpWrite, Fd: fd, Off: 0, Buf: block(3*blockSize, 1), Link: true},
			{Op: OpFdatasync, Fd: fd},
		}
		if err := e.Do(reqs); err != nil {
			t.Fatalf("short write + fdatasync: %v (the fdatasync ran more than once, so once before the write was complete)", err)
		}
		checkReq(t, 0, &reqs[0])
		checkReq(t, 1, &reqs[1])
		if err := checkBlock(readFile(t, f), 1); err != nil {
			t.Errorf("file: %v", err)
		}
		if st := e.Stats(); st.Resubmits == 0 || p.Injected() != 1 {
			t.Errorf("Resubmits %d, Injected %d; want > 0 and 1 (the short write only)", st.Resubmits, p.Injected())
		}
	})
}

// TestFaultChainWriteFails: an EIO (or a torn write) on the first write of
// a chain cancels the rest, which must not run: the next write's bytes
// stay off the disk and the fdatasync is not issued (a fault waiting for
// it never fires).
func TestFaultChainWriteFails(t *testing.T) {
	for _, kind := range []FaultKind{FaultEIO, FaultTorn, FaultENOSPC} {
		t.Run("fault="+kind.String(), func(t *testing.T) {
			withFaults(t, Options{}, plan(
				Fault{Kind: kind, Op: OpWrite, Bytes: 100},
				Fault{Kind: FaultEAGAIN, Op: OpFdatasync},
			), func(t *testing.T, e *Engine, p *FaultPlan) {
				f, fd := openFile(t, t.TempDir(), "f", make([]byte, 2*blockSize))
				reqs := []Request{
					{Op: OpWrite, Fd: fd, Off: 0, Buf: block(blockSize, 1), Link: true},
					{Op: OpWrite, Fd: fd, Off: blockSize, Buf: block(blockSize, 2), Link: true},
					{Op: OpFdatasync, Fd: fd},
				}
				want := unix.EIO
				if kind == FaultENOSPC {
					want = unix.ENOSPC
				}
				if err := e.Do(reqs); !errors.Is(err, want) {
					t.Fatalf("Do = %v, want %v", err, want)
				}
				if !errors.Is(reqs[0].Err, want) || reqs[0].N != 0 {
					t.Errorf("write: N %d, Err %v; want 0, %v", reqs[0].N, reqs[0].Err, want)
				}
				for _, i := range []int{1, 2} {
					if !errors.Is(reqs[i].Err, ErrCanceled) || reqs[i].N != 0 {
						t.Errorf("request %d: N %d, Err %v; want ErrCanceled", i, reqs[i].N, reqs[i].Err)
					}
				}
				data := readFile(t, f)
				if !bytes.Equal(data[blockSize:], make([]byte, blockSize)) {
					t.Error("the write linked after the failed one landed on disk")
				}
				if kind == FaultTorn {
					if !bytes.Equal(data[:100], reqs[0].Buf[:100]) || !bytes.Equal(data[100:blockSize], make([]byte, blockSize-100)) {
						t.Error("the torn write did not leave exactly its first 100 bytes")
					}
				} else if !bytes.Equal(data[:blockSize], make([]byte, blockSize)) {
					t.Error("the failed write landed")
				}
				if p.Injected() != 1 {
					t.Errorf("Injected = %d, want 1: the canceled fdatasync was issued", p.Injected())
				}
			})
		})
	}
}

// TestFaultChainFdatasyncFails: an EIO on the fdatasync is the
// fdatasync's own error, not a cancellation, and the write before it is
// complete.
func TestFaultChainFdatasyncFails(t *testing.T) {
	withFaults(t, Options{}, plan(Fault{Kind: FaultEIO, Op: OpFdatasync}), func(t *testing.T, e *Engine, p *FaultPlan) {
		f, fd := openFile(t, t.TempDir(), "f", nil)
		reqs := []Request{
			{Op: OpWrite, Fd: fd, Off: 0, Buf: block(blockSize, 1), Link: true},
			{Op: OpFdatasync, Fd: fd, Link: true},
			{Op: OpWrite, Fd: fd, Off: blockSize, Buf: block(blockSize, 2)},
		}
		err := e.Do(reqs)
		var oe *OpError
		if !errors.As(err, &oe) || oe.Op != OpFdatasync || !errors.Is(err, unix.EIO) || errors.Is(err, ErrCanceled) {
			t.Fatalf("Do = %v; want the fdatasync's EIO", err)
		}
		if !bytes.Contains([]byte(err.Error()), []byte("fdatasync")) {
			t.Errorf("message %q does not name the fdatasync", err)
		}
		checkReq(t, 0, &reqs[0])
		if !errors.Is(reqs[2].Err, ErrCanceled) {
			t.Errorf("the write after the failed fdatasync: %v, want ErrCanceled", reqs[2].Err)
		}
		data := readFile(t, f)
		if len(data) != blockSize || checkBlock(data, 1) != nil {
			t.Errorf("file has %d bytes; want exactly the first write's", len(data))
		}
	})
}

// TestFaultMatching checks Op, Fd, After and Times, and Injected.
func TestFaultMatching(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		dir := t.TempDir()
		_, fd1 := openFile(t, dir, "a", block(blockSize, 1))
		_, fd2 := openFile(t, dir, "b", block(blockSize, 2))
		// Each case gets its own engine on the same backend, since the
		// plan is fixed at New.
		mode := Syscall
		switch e.Backend() {
		case BackendURing:
			mode = URing
		case BackendSQPoll:
			mode = SQPoll
		}
		run := func(t *testing.T, f Fault, ops []Request) (errs []error, injected int) {
			p := NewFaultPlan(f)
			e := newEngine(t, mode, Options{Faults: p})
			for _, r := range ops {
				if r.Op == OpRead {
					r.Buf = make([]byte, 100)
				}
				if r.Op == OpWrite {
					r.Buf = block(100, 3)
				}
				reqs := []Request{r}
				e.Do(reqs)
				errs = append(errs, reqs[0].Err)
			}
			return errs, p.Injected()
		}
		rd := func(fd int) Request { return Request{Op: OpRead, Fd: fd} }
		wr := func(fd int) Request { return Request{Op: OpWrite, Fd: fd} }
		sync := func(fd int) Request { return Request{Op: OpFdatasync, Fd: fd} }
		for _, tc := range []struct {
			name     string
			fault    Fault
			ops      []Request
			fail     []bool
			injected int
		}{
			{"op", Fault{Kind: FaultEIO, Op: OpWrite, Times: -1},
				[]Request{rd(fd1), wr(fd1), sync(fd1), wr(fd2)}, []bool{false, true, false, true}, 2},
			{"fd", Fault{Kind: FaultEIO, Fd: fd2, Times: -1},
				[]Request{rd(fd1), rd(fd2), wr(fd1), sync(fd2)}, []bool{false, true, false, true}, 2},
			{"after", Fault{Kind: FaultEIO, Op: OpRead, After: 2},
				[]Request{rd(fd1), wr(fd1), rd(fd2), rd(fd1), rd(fd1)}, []bool{false, false, false, true, false}, 1},
			{"times", Fault{Kind: FaultEIO, Op: OpRead, Times: 3},
				[]Request{rd(fd1), rd(fd1), sync(fd1), rd(fd2), rd(fd1)}, []bool{true, true, false, true, false}, 3},
			{"times_once_by_default", Fault{Kind: FaultENOSPC},
				[]Request{wr(fd1), wr(fd1), sync(fd1)}, []bool{true, false, false}, 1},
			{"always", Fault{Kind: FaultEIO, Times: -1},
				[]Request{rd(fd1), wr(fd2), sync(fd1), rd(fd2)}, []bool{true, true, true, true}, 4},
			{"after_and_times", Fault{Kind: FaultEIO, Fd: fd1, After: 1, Times: 2},
				[]Request{rd(fd1), rd(fd2), rd(fd1), wr(fd1), rd(fd1)}, []bool{false, false, true, true, false}, 2},
			// After counts only requests the fault could apply to: a torn
			// fault applies to writes, so the read and the fdatasync do not
			// use up After.
			{"after_counts_applicable_only", Fault{Kind: FaultTorn, After: 1},
				[]Request{rd(fd1), sync(fd1), wr(fd1), rd(fd1), wr(fd1), wr(fd1)}, []bool{false, false, false, false, true, false}, 1},
		} {
			t.Run(tc.name, func(t *testing.T) {
				errs, injected := run(t, tc.fault, tc.ops)
				for i, err := range errs {
					if (err != nil) != tc.fail[i] {
						t.Errorf("request %d (%s fd %d): err %v, want failure %v", i, tc.ops[i].Op, tc.ops[i].Fd, err, tc.fail[i])
					}
				}
				if injected != tc.injected {
					t.Errorf("Injected = %d, want %d", injected, tc.injected)
				}
			})
		}
	})
}

func TestFaultPlanConcurrentAdd(t *testing.T) {
	p := NewFaultPlan()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 100 {
			p.Add(Fault{Kind: FaultEAGAIN, Op: OpFsync})
		}
	}()
	for range 100 {
		p.pick(OpFsync, 3, 0)
		p.Injected()
	}
	<-done
	// Each fault fires once: 100 more picks fire whatever is left.
	for range 100 {
		p.pick(OpFsync, 3, 0)
	}
	if got := p.Injected(); got != 100 {
		t.Errorf("Injected = %d, want 100", got)
	}
	if inj := p.pick(OpFsync, 3, 0); inj != noInjection {
		t.Errorf("a spent plan injected %+v", inj)
	}
	var nilPlan *FaultPlan
	if inj := nilPlan.pick(OpRead, 1, 10); inj != noInjection {
		t.Errorf("a nil plan injected %+v", inj)
	}
}

// TestFaultHold: a request a fault with Hold fires on is not issued until
// Hold is closed; the fault is counted before the wait; the call then ends
// with the fault's effect applied and the data whole.
func TestFaultHold(t *testing.T) {
	for _, bc := range backendCases {
		t.Run("backend="+bc.name, func(t *testing.T) {
			hold := make(chan struct{})
			p := NewFaultPlan(Fault{Kind: FaultShort, Op: OpWrite, Bytes: 100, Hold: hold})
			e := newEngine(t, bc.mode, bc.with(Options{Faults: p}))
			f, fd := openFile(t, t.TempDir(), "f", nil)
			data := block(2*blockSize, 9)
			done := make(chan error, 1)
			go func() {
				_, err := e.WriteAt(fd, data, 0)
				done <- err
			}()
			for deadline := time.Now().Add(30 * time.Second); p.Injected() == 0; time.Sleep(100 * time.Microsecond) {
				if time.Now().After(deadline) {
					close(hold)
					t.Fatal("the fault never fired")
				}
			}
			select {
			case err := <-done:
				t.Fatalf("the held write returned before its release: %v", err)
			case <-time.After(50 * time.Millisecond):
			}
			if got := readFile(t, f); len(got) != 0 {
				t.Errorf("%d bytes written while the request was held", len(got))
			}
			close(hold)
			if err := <-done; err != nil {
				t.Fatalf("WriteAt after the release: %v", err)
			}
			if got := readFile(t, f); !bytes.Equal(got, data) {
				t.Errorf("the file holds %d bytes, not the %d written", len(got), len(data))
			}
			if st := e.Stats(); st.Resubmits == 0 {
				t.Errorf("Resubmits %d: the held write was short (100 bytes) and must have been finished", st.Resubmits)
			}
		})
	}
}
