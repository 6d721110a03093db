package ioengine

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
)

// Many goroutines share one engine; every request must get its own data,
// whoever else's requests share its io_uring_enter calls.

const goroutines = 32

// runGoroutines runs fn(g) for g in [0, n) concurrently and waits for all,
// failing the test if they do not all return within hangLimit.
func runGoroutines(t *testing.T, n int, fn func(g int)) {
	t.Helper()
	within(t, hangLimit, fmt.Sprintf("%d goroutines", n), func() {
		var wg sync.WaitGroup
		for g := range n {
			wg.Go(func() { fn(g) })
		}
		wg.Wait()
	})
}

func TestConcurrentReadsOwnData(t *testing.T) {
	const (
		fileBlocks = 512
		iterations = 20
		batchSize  = 16
	)
	data := make([]byte, fileBlocks*blockSize)
	for b := range fileBlocks {
		fillBlock(data[b*blockSize:(b+1)*blockSize], uint64(b))
	}
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		_, fd := openFile(t, t.TempDir(), "f", data)
		runGoroutines(t, goroutines, func(g int) {
			rng := rand.New(rand.NewPCG(uint64(g), 99))
			reqs := make([]Request, batchSize)
			for it := range iterations {
				for i := range reqs {
					// Unaligned offsets and odd lengths too: a block
					// fragment is still identified by its offset.
					off := rng.IntN(len(data) - 2*blockSize)
					n := blockSize - rng.IntN(64)
					buf := bytes.Repeat([]byte{byte(g)}, n) // this caller's garbage
					reqs[i] = Request{Fd: fd, Off: int64(off), Buf: buf}
				}
				if err := e.ReadBatch(reqs); err != nil {
					t.Errorf("goroutine %d iteration %d: %v", g, it, err)
					return
				}
				for i := range reqs {
					r := &reqs[i]
					if r.N != len(r.Buf) || !bytes.Equal(r.Buf, data[r.Off:r.Off+int64(len(r.Buf))]) {
						t.Errorf("goroutine %d iteration %d request %d (off %d len %d): N %d and the bytes are not the file's", g, it, i, r.Off, len(r.Buf), r.N)
						return
					}
				}
			}
		})
		st := e.Stats()
		if want := uint64(goroutines * iterations); st.Calls != want || st.Requests != want*batchSize {
			t.Errorf("Stats: %d calls, %d requests; want %d and %d", st.Calls, st.Requests, want, want*batchSize)
		}
		t.Logf("%+v", st)
	})
}

func TestConcurrentReadsDirect(t *testing.T) {
	const (
		fileBlocks = 256
		iterations = 10
		batchSize  = 8
	)
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openDirect(t, "f", 0)
		src := alloc(t, fileBlocks*blockSize)
		for b := range fileBlocks {
			fillBlock(src[b*blockSize:(b+1)*blockSize], uint64(b))
		}
		if _, err := f.WriteAt(src, 0); err != nil {
			t.Fatal(err)
		}
		mem := alloc(t, goroutines*batchSize*blockSize)
		runGoroutines(t, goroutines, func(g int) {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			own := mem[g*batchSize*blockSize : (g+1)*batchSize*blockSize]
			reqs := make([]Request, batchSize)
			for it := range iterations {
				clear(own)
				for i := range reqs {
					b := rng.IntN(fileBlocks)
					reqs[i] = Request{Fd: fd, Off: int64(b) * blockSize, Buf: own[i*blockSize : (i+1)*blockSize]}
				}
				if err := e.ReadBatch(reqs); err != nil {
					t.Errorf("goroutine %d: %v", g, err)
					return
				}
				for i := range reqs {
					if err := checkBlock(reqs[i].Buf, uint64(reqs[i].Off/blockSize)); err != nil {
						t.Errorf("goroutine %d iteration %d request %d: %v", g, it, i, err)
						return
					}
				}
			}
		})
	})
}

// TestConcurrentMixed has each goroutine own a few blocks of one file,
// write new versions of them (some as durable appends, write linked to
// fdatasync), fsync, and read its blocks back: each must see its own last
// write.
func TestConcurrentMixed(t *testing.T) {
	const (
		perG       = 4
		iterations = 25
	)
	forEachBackend(t, Options{Entries: 64}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "f", make([]byte, goroutines*perG*blockSize))
		final := make([][perG]uint64, goroutines)
		runGoroutines(t, goroutines, func(g int) {
			rng := rand.New(rand.NewPCG(uint64(g), 5))
			var tags [perG]uint64
			for it := range iterations {
				k := rng.IntN(perG)
				off := int64(g*perG+k) * blockSize
				tags[k] = uint64(g)<<40 | uint64(k)<<32 | uint64(it+1)
				var reqs []Request
				switch it % 3 {
				case 0:
					reqs = []Request{{Op: OpWrite, Fd: fd, Off: off, Buf: block(blockSize, tags[k]), Link: true}, {Op: OpFdatasync, Fd: fd}}
				case 1:
					reqs = []Request{{Op: OpWrite, Fd: fd, Off: off, Buf: block(blockSize, tags[k])}, {Op: OpFsync, Fd: fd}}
				default:
					reqs = []Request{{Op: OpWrite, Fd: fd, Off: off, Buf: block(blockSize, tags[k])}}
				}
				if err := e.Do(reqs); err != nil {
					t.Errorf("goroutine %d: write: %v", g, err)
					return
				}
				if reqs[0].N != blockSize {
					t.Errorf("goroutine %d: write N %d", g, reqs[0].N)
					return
				}
				reads := make([]Request, perG)
				for j := range reads {
					reads[j] = Request{Fd: fd, Off: int64(g*perG+j) * blockSize, Buf: make([]byte, blockSize)}
				}
				if err := e.ReadBatch(reads); err != nil {
					t.Errorf("goroutine %d: read: %v", g, err)
					return
				}
				for j := range reads {
					want := block(blockSize, tags[j])
					if tags[j] == 0 {
						want = make([]byte, blockSize)
					}
					if !bytes.Equal(reads[j].Buf, want) {
						t.Errorf("goroutine %d iteration %d: block %d is not the last version written", g, it, j)
						return
					}
				}
			}
			final[g] = tags
		})
		data := readFile(t, f)
		for g := range goroutines {
			for k, tag := range final[g] {
				if tag == 0 {
					continue
				}
				off := (g*perG + k) * blockSize
				if err := checkBlock(data[off:off+blockSize], tag); err != nil {
					t.Errorf("file block of goroutine %d, %d: %v", g, k, err)
				}
			}
		}
	})
}

// TestBatchLargerThanRing hands a 16-entry ring batches of 1000 requests,
// unlinked and in chains of four, from several goroutines at once.
func TestBatchLargerThanRing(t *testing.T) {
	const (
		n       = 1000
		callers = 4
	)
	data := make([]byte, 64*blockSize)
	for b := range 64 {
		fillBlock(data[b*blockSize:(b+1)*blockSize], uint64(b))
	}
	forEachBackend(t, Options{Entries: 16}, func(t *testing.T, e *Engine) {
		dir := t.TempDir()
		_, rfd := openFile(t, dir, "r", data)
		w, wfd := openFile(t, dir, "w", nil)
		runGoroutines(t, callers, func(g int) {
			reqs := make([]Request, n)
			for i := range reqs {
				switch k := i % 10; {
				case k < 4: // a chain of four writes, the last to an fdatasync-free end
					off := int64(g*n+i) * 512
					reqs[i] = Request{Op: OpWrite, Fd: wfd, Off: off, Buf: block(512, uint64(g*n+i)), Link: k < 3}
				default:
					off := int64((i*31+g*7)%(len(data)-1000)) + 1
					reqs[i] = Request{Op: OpRead, Fd: rfd, Off: off, Buf: make([]byte, 1000)}
				}
			}
			if err := e.Do(reqs); err != nil {
				t.Errorf("caller %d: %v", g, err)
				return
			}
			for i := range reqs {
				r := &reqs[i]
				if r.Err != nil || r.N != len(r.Buf) {
					t.Errorf("caller %d request %d: N %d, Err %v", g, i, r.N, r.Err)
					return
				}
				if r.Op == OpRead && !bytes.Equal(r.Buf, data[r.Off:r.Off+int64(len(r.Buf))]) {
					t.Errorf("caller %d request %d: wrong bytes", g, i)
					return
				}
			}
		})
		got := readFile(t, w)
		for g := range callers {
			for i := range n {
				if i%10 < 4 {
					off := (g*n + i) * 512
					if err := checkBlock(got[off:off+512], uint64(g*n+i)); err != nil {
						t.Fatalf("caller %d write %d: %v", g, i, err)
					}
				}
			}
		}
		if st := e.Stats(); e.Backend() != BackendSyscall && (st.SQEs < callers*n || st.Completions < callers*n) {
			t.Errorf("Stats %+v: want SQEs and completions >= %d", st, callers*n)
		}
	})
}

// TestCloseWhileBusy closes the engine while goroutines are in the middle
// of calls: each call either completes correctly or returns ErrClosed;
// nothing hangs, nothing panics, and calls after Close return ErrClosed.
func TestCloseWhileBusy(t *testing.T) {
	const fileBlocks = 64
	data := make([]byte, fileBlocks*blockSize)
	for b := range fileBlocks {
		fillBlock(data[b*blockSize:(b+1)*blockSize], uint64(b))
	}
	for _, bc := range backendCases {
		t.Run("backend="+bc.name, func(t *testing.T) {
			dir := t.TempDir()
			_, rfd := openFile(t, dir, "r", data)
			_, wfd := openFile(t, dir, "w", nil)
			for round := range 5 {
				e := newEngine(t, bc.mode, bc.with(Options{Entries: 32}))
				var (
					started sync.WaitGroup
					calls   atomic.Int64
					closed  atomic.Int64
				)
				started.Add(goroutines)
				finished := make(chan struct{})
				go func() {
					defer close(finished)
					var wg sync.WaitGroup
					for g := range goroutines {
						wg.Go(func() {
							once := sync.OnceFunc(started.Done)
							defer once()
							for it := 0; ; it++ {
								reqs := make([]Request, 8)
								for i := range reqs {
									b := (g + it + i) % fileBlocks
									reqs[i] = Request{Op: OpRead, Fd: rfd, Off: int64(b) * blockSize, Buf: make([]byte, blockSize)}
								}
								if it%4 == 0 {
									reqs = append(reqs,
										Request{Op: OpWrite, Fd: wfd, Off: int64(g) * 100, Buf: block(100, uint64(g)), Link: true},
										Request{Op: OpFdatasync, Fd: wfd})
								}
								err := e.Do(reqs)
								calls.Add(1)
								if it >= 2 {
									once()
								}
								if err != nil {
									if !errors.Is(err, ErrClosed) || err != ErrClosed {
										t.Errorf("round %d goroutine %d: %v; want nil or ErrClosed", round, g, err)
									}
									for i := range reqs {
										if reqs[i].N != 0 || reqs[i].Err != nil {
											t.Errorf("round %d goroutine %d: refused call ran request %d (N %d, Err %v)", round, g, i, reqs[i].N, reqs[i].Err)
										}
									}
									closed.Add(1)
									return
								}
								for i := range reqs {
									r := &reqs[i]
									if r.Err != nil || r.N != len(r.Buf) {
										t.Errorf("round %d goroutine %d request %d: N %d, Err %v", round, g, i, r.N, r.Err)
										return
									}
									if r.Op == OpRead && !bytes.Equal(r.Buf, data[r.Off:r.Off+blockSize]) {
										t.Errorf("round %d goroutine %d request %d: wrong bytes", round, g, i)
										return
									}
								}
							}
						})
					}
					wg.Wait()
				}()
				within(t, hangLimit, "starting the goroutines", started.Wait)
				closeWithin(t, e, hangLimit)
				within(t, hangLimit, "goroutines calling across Close", func() { <-finished })
				if closed.Load() != goroutines {
					t.Errorf("round %d: %d goroutines saw ErrClosed, want all %d", round, closed.Load(), goroutines)
				}
				if _, err := e.ReadAt(rfd, make([]byte, 10), 0); err != ErrClosed {
					t.Errorf("ReadAt after Close = %v, want ErrClosed", err)
				}
				if t.Failed() {
					return
				}
			}
		})
	}
}

// TestGathering checks the ring's counters when many goroutines submit at
// once: every request went to the kernel as an SQE and came back as a
// completion, and the enter calls were shared (nothing here depends on
// timing: the bound allows two enters per call, what calls one at a time
// would need).
func TestGathering(t *testing.T) {
	const (
		iterations = 50
		batchSize  = 4
	)
	data := block(64*blockSize, 1)
	for _, bc := range backendCases[:2] {
		t.Run("backend="+bc.name, func(t *testing.T) {
			e := newEngine(t, bc.mode, Options{})
			_, fd := openFile(t, t.TempDir(), "f", data)
			runGoroutines(t, goroutines, func(g int) {
				for it := range iterations {
					reqs := make([]Request, batchSize)
					for i := range reqs {
						reqs[i] = Request{Fd: fd, Off: int64((g*iterations+it+i)%60) * blockSize, Buf: make([]byte, blockSize)}
					}
					if err := e.ReadBatch(reqs); err != nil {
						t.Error(err)
						return
					}
				}
			})
			st := e.Stats()
			t.Logf("%+v; %.2f enters per call", st, float64(st.Enters)/float64(st.Calls))
			if st.Calls != goroutines*iterations || st.Requests != st.Calls*batchSize {
				t.Errorf("%d calls, %d requests; want %d, %d", st.Calls, st.Requests, goroutines*iterations, goroutines*iterations*batchSize)
			}
			if st.Enters == 0 || st.SQEs < st.Requests || st.Completions < st.Requests || st.Syscalls != 0 {
				t.Errorf("Stats %+v: want enters > 0, SQEs and completions >= requests, no syscalls", st)
			}
			if st.Enters > 2*st.Calls+100 {
				t.Errorf("%d enters for %d calls: more than two per call", st.Enters, st.Calls)
			}
			if st.Resubmits != 0 || st.LostCompletions != 0 || st.CQOverflow != 0 {
				t.Errorf("Stats %+v: want no resubmits, lost completions or overflow", st)
			}
		})
	}
}
