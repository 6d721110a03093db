package ioengine

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// withChunk makes RegisterMemory split memory into chunks of n bytes for
// the test.
func withChunk(t *testing.T, n int) {
	old := registeredChunk
	registeredChunk = n
	t.Cleanup(func() { registeredChunk = old })
}

// fixedDelta runs fn and returns how many fixed transfers it issued.
func fixedDelta(e *Engine, fn func()) uint64 {
	before := e.Stats().FixedTransfers
	fn()
	return e.Stats().FixedTransfers - before
}

// TestRegisteredMemory reads and writes through registered memory on the
// real ring: the bytes are those plain reads return, the requests whose
// buffer lies in one registered chunk go as READ_FIXED/WRITE_FIXED
// (Stats.FixedTransfers), one that crosses a chunk boundary goes plain, a
// short read's remainder goes fixed again, and after Unregister nothing of
// that region does.
func TestRegisteredMemory(t *testing.T) {
	withChunk(t, regionTestChunk)
	for _, bc := range backendCases {
		t.Run("backend="+bc.name, func(t *testing.T) {
			faults := NewFaultPlan(Fault{Kind: FaultShort, Op: OpRead, After: 3, Bytes: blockSize})
			testRegisteredMemory(t, newEngine(t, bc.mode, bc.with(Options{Faults: faults})), faults)
		})
	}
}

const regionTestChunk = 16 * blockSize

func testRegisteredMemory(t *testing.T, e *Engine, faults *FaultPlan) {
	const (
		chunk      = regionTestChunk
		fileBlocks = 64
	)
	f, fd := openDirect(t, "fixed", fileBlocks*blockSize)
	// The file's contents, written through plain (unregistered) memory.
	plain := alloc(t, fileBlocks*blockSize)
	for b := range fileBlocks {
		fillBlock(plain[b*blockSize:(b+1)*blockSize], uint64(b))
	}
	if n, err := e.WriteAt(fd, plain, 0); err != nil || n != len(plain) {
		t.Fatalf("plain WriteAt: %d, %v", n, err)
	}
	mem := alloc(t, 4*chunk)
	other := alloc(t, chunk)
	r, err := e.RegisterMemory(mem)
	if e.Backend() == BackendSyscall {
		if !errors.Is(err, ErrNoRegisteredMemory) || r != nil {
			t.Fatalf("RegisterMemory on syscalls: %v, %v; want ErrNoRegisteredMemory", r, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("RegisterMemory(%d bytes): %v", len(mem), err)
	}
	r2, err := e.RegisterMemory(other)
	if err != nil {
		t.Fatalf("RegisterMemory(second region): %v", err)
	}
	if _, err := e.RegisterMemory(mem[chunk : 2*chunk]); err == nil {
		t.Fatal("RegisterMemory of memory already registered succeeded")
	}

	// Reads into the region: 2 blocks 4 blocks into each chunk, 8
	// KiB across the boundary of chunks 1 and 2, and into the second
	// region. The short-read fault hits the 4th read.
	var reqs []Request
	for c := range 4 {
		reqs = append(reqs, Request{Off: int64(c*4) * blockSize, Buf: mem[c*chunk+4*blockSize : c*chunk+6*blockSize]})
	}
	reqs = append(reqs,
		Request{Off: 20 * blockSize, Buf: mem[2*chunk-blockSize : 2*chunk+blockSize]},
		Request{Off: 40 * blockSize, Buf: other[:chunk]})
	for i := range reqs {
		reqs[i].Op, reqs[i].Fd = OpRead, fd
	}
	n := fixedDelta(e, func() {
		if err := e.Do(reqs); err != nil {
			t.Fatalf("Do: %v", err)
		}
	})
	for i := range reqs {
		checkReq(t, i, &reqs[i])
		if !bytes.Equal(reqs[i].Buf, plain[reqs[i].Off:reqs[i].Off+int64(len(reqs[i].Buf))]) {
			t.Errorf("read %d (offset %d, %d bytes) differs from the file at byte %d", i, reqs[i].Off, len(reqs[i].Buf),
				diffAt(reqs[i].Buf, plain[reqs[i].Off:]))
		}
	}
	if got := faults.Injected(); got != 1 {
		t.Fatalf("short-read faults injected: %d, want 1", got)
	}
	// 5 requests inside one chunk, one of them issued twice (short);
	// the one across chunks went plain.
	if n != 6 {
		t.Errorf("fixed transfers %d, want 6 (5 in a chunk, one short read's remainder)", n)
	}

	// A fixed write, read back plain.
	w := mem[3*chunk : 3*chunk+4*blockSize]
	for b := range 4 {
		fillBlock(w[b*blockSize:(b+1)*blockSize], uint64(1000+b))
	}
	n = fixedDelta(e, func() {
		if k, err := e.WriteAt(fd, w, 8*blockSize); err != nil || k != len(w) {
			t.Fatalf("fixed WriteAt: %d, %v", k, err)
		}
	})
	if n != 1 {
		t.Errorf("fixed write: %d fixed transfers, want 1", n)
	}
	data := readFile(t, f)
	if !bytes.Equal(data[8*blockSize:12*blockSize], w) {
		t.Errorf("the file after a fixed write differs at byte %d", diffAt(data[8*blockSize:12*blockSize], w))
	}
	copy(plain[8*blockSize:], w)

	// Unregistered, the region is read plain; the other stays fixed.
	if err := r.Unregister(); err != nil {
		t.Fatalf("Unregister: %v", err)
	}
	if err := r.Unregister(); err != nil {
		t.Fatalf("second Unregister: %v", err)
	}
	clear(mem)
	n = fixedDelta(e, func() {
		if k, err := e.ReadAt(fd, mem[:chunk], 0); err != nil || k != chunk {
			t.Fatalf("ReadAt after Unregister: %d, %v", k, err)
		}
	})
	if n != 0 || !bytes.Equal(mem[:chunk], plain[:chunk]) {
		t.Errorf("read after Unregister: %d fixed transfers (want 0), differs at byte %d", n, diffAt(mem[:chunk], plain[:chunk]))
	}
	n = fixedDelta(e, func() {
		if k, err := e.ReadAt(fd, other, 0); err != nil || k != chunk {
			t.Fatalf("ReadAt into the second region: %d, %v", k, err)
		}
	})
	if n != 1 || !bytes.Equal(other, plain[:chunk]) {
		t.Errorf("read into the region still registered: %d fixed transfers (want 1), differs at byte %d", n, diffAt(other, plain[:chunk]))
	}
	if err := r2.Unregister(); err != nil {
		t.Fatalf("Unregister of the second region: %v", err)
	}
}

// TestRegisterWhileReading registers and unregisters a region over and
// over while other goroutines read into another registered region and
// into the changing one: a change waits until no fixed read is in flight,
// so every read returns the file's bytes and none fails (a read naming a
// replaced buffer table would fail with EFAULT or read into the wrong
// place).
func TestRegisterWhileReading(t *testing.T) {
	const (
		readers = 4
		rounds  = 40
	)
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		if e.Backend() == BackendSyscall {
			t.Skip("no registered memory on syscalls")
		}
		_, fd := openDirect(t, "fixedrace", 64*blockSize)
		plain := alloc(t, 64*blockSize)
		for b := range 64 {
			fillBlock(plain[b*blockSize:(b+1)*blockSize], uint64(b))
		}
		if _, err := e.WriteAt(fd, plain, 0); err != nil {
			t.Fatal(err)
		}
		stay := alloc(t, readers*16*blockSize)
		churn := alloc(t, readers*16*blockSize)
		if _, err := e.RegisterMemory(stay); err != nil {
			t.Fatalf("RegisterMemory: %v", err)
		}
		var stop atomic.Bool
		var calls atomic.Int64 // reads done, so that the readers are seen to run
		var wg sync.WaitGroup
		errs := make(chan error, readers)
		for g := range readers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				mine := [2][]byte{stay[g*16*blockSize : (g+1)*16*blockSize], churn[g*16*blockSize : (g+1)*16*blockSize]}
				for i := 0; !stop.Load(); i++ {
					reqs := make([]Request, 8)
					for k := range reqs {
						off := int64((i+k)%60) * blockSize
						reqs[k] = Request{Op: OpRead, Fd: fd, Off: off, Buf: mine[k%2][(k/2)*4*blockSize : (k/2)*4*blockSize+4*blockSize]}
					}
					if err := e.Do(reqs); err != nil {
						errs <- err
						return
					}
					calls.Add(1)
					for k := range reqs {
						if !bytes.Equal(reqs[k].Buf, plain[reqs[k].Off:reqs[k].Off+4*blockSize]) {
							errs <- errors.New("a read returned bytes the file does not hold there")
							return
						}
					}
				}
			}()
		}
		within(t, hangLimit, "registering while reading", func() {
			for range rounds {
				r, err := e.RegisterMemory(churn)
				if err != nil {
					t.Errorf("RegisterMemory: %v", err)
					break
				}
				if err := r.Unregister(); err != nil {
					t.Errorf("Unregister: %v", err)
					break
				}
			}
		})
		// Half of each call's reads land in memory registered throughout:
		// once every reader has run a few calls, some went as READ_FIXED.
		within(t, hangLimit, "readers running", func() {
			for calls.Load() < 4*readers && len(errs) == 0 {
				time.Sleep(time.Millisecond)
			}
		})
		stop.Store(true)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if e.Stats().FixedTransfers == 0 {
			t.Error("no read went as READ_FIXED")
		}
	})
}

// TestRegisterClosed: a closed engine registers nothing, and a region's
// Unregister after Close is a no-op.
func TestRegisterClosed(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		mem := alloc(t, blockSize)
		r, err := e.RegisterMemory(mem)
		if e.Backend() == BackendSyscall {
			if err == nil {
				t.Fatal("RegisterMemory on syscalls succeeded")
			}
		} else if err != nil {
			t.Fatalf("RegisterMemory: %v", err)
		}
		if _, err := e.RegisterMemory(nil); err == nil {
			t.Error("RegisterMemory(nil) succeeded")
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.RegisterMemory(alloc(t, blockSize)); !errors.Is(err, ErrClosed) {
			t.Errorf("RegisterMemory after Close: %v, want ErrClosed", err)
		}
		if r != nil {
			if err := r.Unregister(); err != nil {
				t.Errorf("Unregister after Close: %v", err)
			}
		}
	})
}
