package ioengine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/uring"
)

// Every test of the engine runs on every backend, as a subtest named
// backend=uring, backend=sqpoll or backend=syscall.

type backendCase struct {
	name   string
	mode   IOMode
	want   Backend
	inline bool // Options.Inline
	park   bool // Options.ParkWaits
}

var backendCases = []backendCase{
	{"uring", URing, BackendURing, false, false},
	{"sqpoll", SQPoll, BackendSQPoll, false, false},
	{"syscall", Syscall, BackendSyscall, false, false},
	{"uring-inline", URing, BackendURing, true, false},
	{"uring-inline-park", URing, BackendURing, true, true},
}

// with returns opts for this case's engine.
func (bc backendCase) with(opts Options) Options {
	opts.Inline, opts.ParkWaits = bc.inline, bc.park
	return opts
}

// forEachBackend runs fn once per backend, each with an engine made from
// opts (Mode set to the backend's) and closed at cleanup.
func forEachBackend(t *testing.T, opts Options, fn func(t *testing.T, e *Engine)) {
	t.Helper()
	for _, bc := range backendCases {
		t.Run("backend="+bc.name, func(t *testing.T) {
			fn(t, newEngine(t, bc.mode, bc.with(opts)))
		})
	}
}

// newEngine returns an engine on the backend mode asks for, closed (with a
// guard against a hang) at cleanup. It skips the test only when the kernel
// refused the ring with EPERM or ENOSYS, or io_uring is not compiled in;
// any other fallback fails it.
func newEngine(t testing.TB, mode IOMode, opts Options) *Engine {
	t.Helper()
	opts.Mode = mode
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	e, err := New(opts)
	if err != nil {
		t.Fatalf("New(%v): %v", opts.String(), err)
	}
	want := BackendSyscall
	switch mode {
	case URing:
		want = BackendURing
	case SQPoll:
		want = BackendSQPoll
	}
	if got := e.Backend(); got != want {
		reason := e.FallbackReason()
		e.Close()
		if refusedHere(reason) {
			t.Skipf("io_uring refused here: %s", reason)
		}
		t.Fatalf("New(Mode: %s) runs on %s, want %s; reason %q", mode, got, want, reason)
	}
	if mode == Syscall && (e.FellBack() || e.FallbackReason() != "") {
		t.Errorf("New(Mode: syscall): FellBack %v, reason %q; want false and empty", e.FellBack(), e.FallbackReason())
	}
	t.Cleanup(func() { closeWithin(t, e, 20*time.Second) })
	return e
}

// refusedHere reports whether a fallback reason says that the kernel
// refused io_uring outright (EPERM, ENOSYS) or that it is not compiled in:
// the only reasons a test may skip for.
func refusedHere(reason string) bool {
	for _, s := range []string{unix.EPERM.Error(), unix.ENOSYS.Error(), errors.ErrUnsupported.Error()} {
		if strings.Contains(reason, s) {
			return true
		}
	}
	return false
}

// closeWithin closes e and fails the test if Close does not return in d.
func closeWithin(t testing.TB, e *Engine, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- e.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(d):
		t.Errorf("Close did not return within %s\n%s", d, allStacks())
	}
}

// within runs fn on its own goroutine and fails the test (without waiting
// for fn any longer) if it does not return in d: a hang becomes a failure
// with every goroutine's stack instead of a stuck test binary.
func within(t testing.TB, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %s: hung\n%s", what, d, allStacks())
	}
}

func allStacks() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// hangLimit bounds calls that must not hang; generous for -race on a
// loaded two-CPU machine, tiny against a real hang.
const hangLimit = 20 * time.Second

// fillBlock fills b with bytes that tell where they belong: every 8-byte
// word holds a hash of tag and the word's position, so a block read from
// the wrong offset or delivered to the wrong caller shows.
func fillBlock(b []byte, tag uint64) {
	for i := 0; i+8 <= len(b); i += 8 {
		x := (tag+uint64(i))*0x9e3779b97f4a7c15 + 0x2545f4914f6cdd1d
		x ^= x >> 31
		binary.LittleEndian.PutUint64(b[i:], x)
	}
	for i := len(b) &^ 7; i < len(b); i++ {
		b[i] = byte(tag) ^ byte(i)
	}
}

func block(n int, tag uint64) []byte {
	b := make([]byte, n)
	fillBlock(b, tag)
	return b
}

// checkBlock reports where b differs from what fillBlock(tag) writes.
func checkBlock(b []byte, tag uint64) error {
	want := block(len(b), tag)
	if i := diffAt(b, want); i >= 0 {
		return fmt.Errorf("byte %d of %d is %#02x, want %#02x (tag %d)", i, len(b), b[i], want[i], tag)
	}
	return nil
}

func diffAt(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

// openFile creates name in dir, read-write, with data as its contents,
// closed at cleanup. The *os.File is returned so that it stays alive while
// its descriptor is in use.
func openFile(t testing.TB, dir, name string, data []byte) (*os.File, int) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, int(f.Fd())
}

// openDirect creates name in an O_DIRECT-capable directory with size zero
// bytes and opens it with O_DIRECT, closed at cleanup.
func openDirect(t testing.TB, name string, size int64) (*os.File, int) {
	t.Helper()
	path := filepath.Join(testdir.Direct(t), name)
	f, err := directio.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	return f, int(f.Fd())
}

// alloc returns n bytes of aligned off-heap memory, freed at cleanup.
func alloc(t testing.TB, n int) []byte {
	t.Helper()
	b, err := directio.Alloc(n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := directio.Free(b); err != nil {
			t.Error(err)
		}
	})
	return b
}

func readFile(t testing.TB, f *os.File) []byte {
	t.Helper()
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// checkReq fails the test unless r finished in full without error.
func checkReq(t testing.TB, i int, r *Request) {
	t.Helper()
	if r.Err != nil || r.N != len(r.Buf) {
		t.Errorf("request %d (%s fd %d off %d len %d): N %d, Err %v; want N %d, no error", i, r.Op, r.Fd, r.Off, len(r.Buf), r.N, r.Err, len(r.Buf))
	}
}

const blockSize = 4096

func TestRoundTripBatch(t *testing.T) {
	const (
		fileBlocks = 512
		reqs       = 200
	)
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "data", nil)
		rng := rand.New(rand.NewPCG(1, 2))
		offs := rng.Perm(fileBlocks)[:reqs] // distinct blocks, random order

		w := make([]Request, reqs)
		for i, b := range offs {
			w[i] = Request{Fd: fd, Off: int64(b) * blockSize, Buf: block(blockSize, uint64(b))}
		}
		if err := e.WriteBatch(w); err != nil {
			t.Fatalf("WriteBatch: %v", err)
		}
		for i := range w {
			if w[i].Op != OpWrite {
				t.Fatalf("WriteBatch left Op %s", w[i].Op)
			}
			checkReq(t, i, &w[i])
		}

		// What the kernel has, read around the engine.
		data := readFile(t, f)
		for _, b := range offs {
			if err := checkBlock(data[b*blockSize:(b+1)*blockSize], uint64(b)); err != nil {
				t.Fatalf("file block %d after WriteBatch: %v", b, err)
			}
		}

		rng.Shuffle(len(offs), func(i, j int) { offs[i], offs[j] = offs[j], offs[i] })
		r := make([]Request, reqs)
		for i, b := range offs {
			r[i] = Request{Op: OpWrite /* overwritten by ReadBatch */, Fd: fd, Off: int64(b) * blockSize, Buf: make([]byte, blockSize)}
		}
		if err := e.ReadBatch(r); err != nil {
			t.Fatalf("ReadBatch: %v", err)
		}
		for i := range r {
			checkReq(t, i, &r[i])
			if err := checkBlock(r[i].Buf, uint64(offs[i])); err != nil {
				t.Fatalf("ReadBatch block %d: %v", offs[i], err)
			}
		}

		st := e.Stats()
		if st.Backend != e.Backend() || st.Calls != 2 || st.Requests != 2*reqs || st.Bytes != 2*reqs*blockSize {
			t.Errorf("Stats = %+v; want backend %s, 2 calls, %d requests, %d bytes", st, e.Backend(), 2*reqs, 2*reqs*blockSize)
		}
		if e.Backend() == BackendSyscall {
			if st.Syscalls != 2*reqs || st.Enters != 0 {
				t.Errorf("syscall Stats = %+v; want %d syscalls, no enters", st, 2*reqs)
			}
		} else if st.Enters == 0 || st.SQEs < 2*reqs || st.Completions < 2*reqs || st.Syscalls != 0 {
			t.Errorf("ring Stats = %+v; want enters > 0, SQEs and completions >= %d, no syscalls", st, 2*reqs)
		}
	})
}

func TestRoundTripDirect(t *testing.T) {
	const (
		fileBlocks = 256
		reqs       = 96
	)
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openDirect(t, "direct", fileBlocks*blockSize)
		wmem, rmem := alloc(t, reqs*blockSize), alloc(t, reqs*blockSize)
		rng := rand.New(rand.NewPCG(3, 4))
		offs := rng.Perm(fileBlocks)[:reqs]

		w := make([]Request, reqs)
		for i, b := range offs {
			buf := wmem[i*blockSize : (i+1)*blockSize]
			fillBlock(buf, uint64(b))
			w[i] = Request{Fd: fd, Off: int64(b) * blockSize, Buf: buf}
		}
		// One durable write, then the rest with a linked fdatasync at the
		// end of the batch.
		if n, err := e.WriteAt(fd, w[0].Buf, w[0].Off); err != nil || n != blockSize {
			t.Fatalf("WriteAt O_DIRECT: %d, %v", n, err)
		}
		batch := append(w[1:len(w):len(w)], Request{Op: OpFdatasync, Fd: fd})
		batch[len(batch)-2].Link = true
		for i := range batch[:len(batch)-1] {
			batch[i].Op = OpWrite
		}
		if err := e.Do(batch); err != nil {
			t.Fatalf("O_DIRECT write batch: %v", err)
		}
		for i := range batch {
			checkReq(t, i, &batch[i])
		}
		if err := e.Fsync(fd); err != nil {
			t.Fatalf("Fsync: %v", err)
		}

		data := readFile(t, f)
		for _, b := range offs {
			if err := checkBlock(data[b*blockSize:(b+1)*blockSize], uint64(b)); err != nil {
				t.Fatalf("file block %d: %v", b, err)
			}
		}

		r := make([]Request, reqs)
		for i := range r {
			b := offs[len(offs)-1-i]
			r[i] = Request{Fd: fd, Off: int64(b) * blockSize, Buf: rmem[i*blockSize : (i+1)*blockSize]}
		}
		if err := e.ReadBatch(r); err != nil {
			t.Fatalf("O_DIRECT ReadBatch: %v", err)
		}
		for i := range r {
			checkReq(t, i, &r[i])
			if err := checkBlock(r[i].Buf, uint64(r[i].Off/blockSize)); err != nil {
				t.Fatalf("O_DIRECT read at %d: %v", r[i].Off, err)
			}
		}

		// A larger request spanning several blocks.
		big := rmem[:16*blockSize]
		if n, err := e.ReadAt(fd, big, 0); err != nil || n != len(big) {
			t.Fatalf("ReadAt 64 KiB O_DIRECT: %d, %v", n, err)
		}
		if !bytes.Equal(big, data[:len(big)]) {
			t.Fatal("ReadAt 64 KiB O_DIRECT differs from the file")
		}
	})
}

func TestReadAtWriteAtSync(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "f", nil)
		a, b := block(10000, 1), block(3000, 2)
		if n, err := e.WriteAt(fd, a, 0); n != len(a) || err != nil {
			t.Fatalf("WriteAt: %d, %v", n, err)
		}
		if n, err := e.WriteAt(fd, b, 5000); n != len(b) || err != nil {
			t.Fatalf("WriteAt: %d, %v", n, err)
		}
		if err := e.Fsync(fd); err != nil {
			t.Fatalf("Fsync: %v", err)
		}
		if err := e.Fdatasync(fd); err != nil {
			t.Fatalf("Fdatasync: %v", err)
		}
		want := append([]byte(nil), a...)
		copy(want[5000:], b)
		if got := readFile(t, f); !bytes.Equal(got, want) {
			t.Fatalf("file differs from what was written at byte %d", diffAt(got, want))
		}
		got := make([]byte, 4000)
		if n, err := e.ReadAt(fd, got, 4500); n != len(got) || err != nil {
			t.Fatalf("ReadAt: %d, %v", n, err)
		}
		if !bytes.Equal(got, want[4500:8500]) {
			t.Fatal("ReadAt returned the wrong bytes")
		}
	})
}

// TestReadEOF checks that ReadAt and batched reads end at end of file the
// way os.File.ReadAt does: io.EOF itself (not wrapped) with N the bytes
// that were there.
func TestReadEOF(t *testing.T) {
	const size = 10000
	data := block(size, 9)
	cases := []struct {
		name  string
		off   int64
		n     int
		wantN int
	}{
		{"inside", 1000, 4096, 4096},
		{"ending_at_eof", size - 4096, 4096, 4096},
		{"straddling_eof", 8192, 4096, size - 8192},
		{"at_eof", size, 4096, 0},
		{"past_eof", 3 * size, 4096, 0},
		{"one_byte_at_last", size - 1, 2, 1},
	}
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "f", data)
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				buf := make([]byte, tc.n)
				n, err := e.ReadAt(fd, buf, tc.off)
				osBuf := make([]byte, tc.n)
				osN, osErr := f.ReadAt(osBuf, tc.off)
				if n != tc.wantN || n != osN {
					t.Errorf("ReadAt(%d bytes at %d) = %d; want %d (os.File.ReadAt: %d)", tc.n, tc.off, n, tc.wantN, osN)
				}
				if err != osErr {
					t.Errorf("ReadAt(%d bytes at %d) error %v; os.File.ReadAt says %v", tc.n, tc.off, err, osErr)
				}
				if n > 0 && !bytes.Equal(buf[:n], data[tc.off:tc.off+int64(n)]) {
					t.Error("bytes before end of file differ")
				}
			})
		}
		// The same in one batch: each request ends on its own.
		reqs := make([]Request, len(cases))
		for i, tc := range cases {
			reqs[i] = Request{Fd: fd, Off: tc.off, Buf: make([]byte, tc.n)}
		}
		err := e.ReadBatch(reqs)
		if err != io.EOF {
			t.Errorf("ReadBatch error %v, want io.EOF (the first request's error in slice order)", err)
		}
		for i, tc := range cases {
			r := &reqs[i]
			wantErr := error(nil)
			if tc.wantN < tc.n {
				wantErr = io.EOF
			}
			if r.N != tc.wantN || r.Err != wantErr {
				t.Errorf("batch %s: N %d, Err %v; want %d, %v", tc.name, r.N, r.Err, tc.wantN, wantErr)
			}
		}
	})
}

func TestReadEOFDirect(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openDirect(t, "eof", 0)
		// 2 blocks and 100 bytes: the file's end is not aligned.
		want := block(2*blockSize+100, 7)
		if _, err := f.WriteAt(want, 0); err != nil {
			// O_DIRECT refuses the unaligned write; write it around.
			if err := os.WriteFile(f.Name(), want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		buf := alloc(t, 4*blockSize)
		n, err := e.ReadAt(fd, buf, 0)
		if n != len(want) || err != io.EOF {
			t.Fatalf("O_DIRECT ReadAt over end of file = %d, %v; want %d, io.EOF", n, err, len(want))
		}
		if !bytes.Equal(buf[:n], want) {
			t.Fatal("O_DIRECT ReadAt over end of file returned the wrong bytes")
		}
		n, err = e.ReadAt(fd, buf[:blockSize], 4*blockSize)
		if n != 0 || err != io.EOF {
			t.Fatalf("O_DIRECT ReadAt past end of file = %d, %v; want 0, io.EOF", n, err)
		}
	})
}

func TestZeroLength(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "f", block(100, 1))
		reqs := []Request{
			{Op: OpRead, Fd: fd, Off: 0, Buf: nil},
			{Op: OpRead, Fd: fd, Off: 50, Buf: []byte{}},
			{Op: OpRead, Fd: fd, Off: 1000, Buf: []byte{}}, // past end of file: still nothing to read
			{Op: OpWrite, Fd: fd, Off: 10, Buf: nil},
			{Op: OpWrite, Fd: fd, Off: 5000, Buf: []byte{}},
			{Op: OpRead, Fd: fd, Off: 0, Buf: make([]byte, 100)},
		}
		if err := e.Do(reqs); err != nil {
			t.Fatalf("Do: %v", err)
		}
		for i := range reqs {
			checkReq(t, i, &reqs[i])
		}
		if n, err := e.ReadAt(fd, nil, 0); n != 0 || err != nil {
			t.Errorf("ReadAt(nil) = %d, %v; want 0, nil", n, err)
		}
		if n, err := e.WriteAt(fd, nil, 0); n != 0 || err != nil {
			t.Errorf("WriteAt(nil) = %d, %v; want 0, nil", n, err)
		}
		if err := e.Do(nil); err != nil {
			t.Errorf("Do(nil) = %v", err)
		}
		if st, err := f.Stat(); err != nil || st.Size() != 100 {
			t.Errorf("file size after empty writes: %v, %v; want 100", st.Size(), err)
		}
	})
}

func TestInvalidRequests(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		_, fd := openFile(t, t.TempDir(), "f", block(8192, 1))
		ok := func() Request { return Request{Op: OpRead, Fd: fd, Buf: make([]byte, 10)} }

		for _, tc := range []struct {
			name string
			bad  Request
			msg  string
		}{
			{"negative_offset", Request{Op: OpRead, Fd: fd, Off: -1, Buf: make([]byte, 10)}, "negative offset -1"},
			{"negative_offset_write", Request{Op: OpWrite, Fd: fd, Off: -4096, Buf: make([]byte, 10)}, "negative offset -4096"},
			{"op_zero", Request{Fd: fd, Buf: make([]byte, 10)}, "unknown op 0"},
			{"op_unknown", Request{Op: 42, Fd: fd}, "unknown op 42"},
			{"dsync_read", Request{Op: OpRead, Fd: fd, Buf: make([]byte, 10), DSync: true}, "DSync is only for writes, not read"},
			{"dsync_fdatasync", Request{Op: OpFdatasync, Fd: fd, DSync: true}, "DSync is only for writes, not fdatasync"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				reqs := []Request{ok(), tc.bad, ok()}
				err := e.Do(reqs)
				if err == nil || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), "request 1") {
					t.Fatalf("Do = %v; want an error naming request 1 and %q", err, tc.msg)
				}
				for i := range reqs {
					if reqs[i].N != 0 {
						t.Errorf("request %d ran (N %d) though the call was refused", i, reqs[i].N)
					}
				}
			})
		}

		t.Run("bad_fd", func(t *testing.T) {
			reqs := []Request{
				{Op: OpWrite, Fd: -1, Off: 4096, Buf: make([]byte, 512)},
				{Op: OpFsync, Fd: -1},
				{Op: OpRead, Fd: fd, Off: 0, Buf: make([]byte, 100)},
			}
			err := e.Do(reqs)
			var oe *OpError
			if !errors.As(err, &oe) || !errors.Is(err, unix.EBADF) {
				t.Fatalf("Do = %v (%T); want an *OpError wrapping EBADF", err, err)
			}
			if oe != reqs[0].Err.(*OpError) {
				t.Errorf("Do returned %v, want the first request's error %v", err, reqs[0].Err)
			}
			if oe.Op != OpWrite || oe.Fd != -1 || oe.Off != 4096 || oe.Len != 512 || oe.Backend != e.Backend() || oe.Err != unix.EBADF {
				t.Errorf("OpError = %+v", *oe)
			}
			for _, s := range []string{"write", "fd -1", "offset 4096", "length 512", e.Backend().String(), unix.EBADF.Error()} {
				if !strings.Contains(oe.Error(), s) {
					t.Errorf("message %q does not mention %q", oe.Error(), s)
				}
			}
			if !errors.As(reqs[1].Err, &oe) || !errors.Is(reqs[1].Err, unix.EBADF) || oe.Op != OpFsync {
				t.Errorf("fsync on a bad fd: %v; want an *OpError wrapping EBADF", reqs[1].Err)
			}
			for _, s := range []string{"fsync", "fd -1", e.Backend().String()} {
				if !strings.Contains(reqs[1].Err.Error(), s) {
					t.Errorf("message %q does not mention %q", reqs[1].Err.Error(), s)
				}
			}
			if reqs[0].N != 0 {
				t.Errorf("failed write N = %d", reqs[0].N)
			}
			checkReq(t, 2, &reqs[2])
			if errors.Is(reqs[0].Err, ErrCanceled) || errors.Is(reqs[1].Err, ErrCanceled) {
				t.Error("unlinked requests reported as canceled")
			}
		})

		t.Run("write_to_read_only", func(t *testing.T) {
			ro, err := os.Open(filepath.Join(t.TempDir(), "..", "f"))
			if err != nil {
				// The file lives in the parent test's TempDir; make one.
				ro, err = os.Open(os.DevNull)
				if err != nil {
					t.Fatal(err)
				}
			}
			defer ro.Close()
			_, err = e.WriteAt(int(ro.Fd()), []byte("x"), 0)
			if !errors.Is(err, unix.EBADF) {
				t.Errorf("WriteAt on a read-only descriptor = %v; want EBADF", err)
			}
		})
	})
}

func TestClosed(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		_, fd := openFile(t, t.TempDir(), "f", block(100, 1))
		if _, err := e.ReadAt(fd, make([]byte, 10), 0); err != nil {
			t.Fatal(err)
		}
		closeWithin(t, e, hangLimit)
		if err := e.Close(); err != nil {
			t.Errorf("second Close = %v", err)
		}
		if _, err := e.ReadAt(fd, make([]byte, 10), 0); err != ErrClosed {
			t.Errorf("ReadAt after Close = %v, want ErrClosed", err)
		}
		if err := e.Do([]Request{{Op: OpFsync, Fd: fd}}); err != ErrClosed {
			t.Errorf("Do after Close = %v, want ErrClosed", err)
		}
		_ = e.Stats() // still answers
	})
}

// Linked chains.

func TestLinkedWriteFdatasync(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "f", nil)
		var want []byte
		for i := range 20 {
			// Three writes to the same bytes, linked: the last must win,
			// every time; then the durable fdatasync.
			chain := []Request{
				{Op: OpWrite, Fd: fd, Off: int64(i) * 100, Buf: block(300, uint64(3*i)), Link: true},
				{Op: OpWrite, Fd: fd, Off: int64(i) * 100, Buf: block(300, uint64(3*i+1)), Link: true},
				{Op: OpWrite, Fd: fd, Off: int64(i) * 100, Buf: block(300, uint64(3*i+2)), Link: true},
				{Op: OpFdatasync, Fd: fd},
			}
			if err := e.Do(chain); err != nil {
				t.Fatalf("chain %d: %v", i, err)
			}
			for j := range chain {
				checkReq(t, j, &chain[j])
			}
			want = append(want[:i*100], chain[2].Buf...)
		}
		if got := readFile(t, f); !bytes.Equal(got, want) {
			t.Fatalf("linked writes landed out of order: first difference at byte %d", diffAt(got, want))
		}
	})
}

// TestDSyncWrite writes with RWF_DSYNC on every backend, whole and (with a
// fault plan) in short pieces whose remainders must be written too.
func TestDSyncWrite(t *testing.T) {
	for _, faulty := range []bool{false, true} {
		t.Run(fmt.Sprintf("short=%v", faulty), func(t *testing.T) {
			opts := Options{}
			if faulty {
				opts.Faults = &FaultPlan{}
				opts.Faults.Add(Fault{Kind: FaultShort, Op: OpWrite, Times: -1, Bytes: 100})
			}
			forEachBackend(t, opts, func(t *testing.T, e *Engine) {
				f, fd := openFile(t, t.TempDir(), "f", nil)
				var want []byte
				for i := range 10 {
					r := []Request{{Op: OpWrite, Fd: fd, Off: int64(len(want)), Buf: block(1000+i, uint64(i)), DSync: true}}
					if err := e.Do(r); err != nil {
						t.Fatalf("write %d: %v", i, err)
					}
					checkReq(t, 0, &r[0])
					want = append(want, r[0].Buf...)
				}
				if got := readFile(t, f); !bytes.Equal(got, want) {
					t.Fatalf("DSync writes: first difference at byte %d", diffAt(got, want))
				}
			})
		})
	}
}

func TestLinkedFirstFails(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "f", make([]byte, 3*blockSize))
		reqs := []Request{
			{Op: OpRead, Fd: fd, Off: 0, Buf: make([]byte, blockSize)}, // unlinked neighbour
			{Op: OpWrite, Fd: -1, Off: 0, Buf: block(blockSize, 1), Link: true},
			{Op: OpWrite, Fd: fd, Off: blockSize, Buf: block(blockSize, 2), Link: true},
			{Op: OpFdatasync, Fd: fd},
			{Op: OpWrite, Fd: fd, Off: 2 * blockSize, Buf: block(blockSize, 3)}, // unlinked neighbour
		}
		err := e.Do(reqs)
		if !errors.Is(err, unix.EBADF) {
			t.Fatalf("Do = %v; want the chain head's EBADF", err)
		}
		checkReq(t, 0, &reqs[0])
		checkReq(t, 4, &reqs[4])
		if !errors.Is(reqs[1].Err, unix.EBADF) || errors.Is(reqs[1].Err, ErrCanceled) {
			t.Errorf("chain head: %v; want EBADF", reqs[1].Err)
		}
		for _, i := range []int{2, 3} {
			var oe *OpError
			if !errors.Is(reqs[i].Err, ErrCanceled) || !errors.As(reqs[i].Err, &oe) || oe.Op != reqs[i].Op || reqs[i].N != 0 {
				t.Errorf("request %d after the failed head: N %d, Err %v; want an *OpError wrapping ErrCanceled", i, reqs[i].N, reqs[i].Err)
			}
		}
		data := readFile(t, f)
		if !bytes.Equal(data[blockSize:2*blockSize], make([]byte, blockSize)) {
			t.Error("the canceled write landed in the file")
		}
		if err := checkBlock(data[2*blockSize:], 3); err != nil {
			t.Errorf("unlinked neighbour write: %v", err)
		}
	})
}

func TestLinkedMidChainFails(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "f", make([]byte, 4*blockSize))
		ro, err := os.Open(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		for round := range 5 {
			reqs := []Request{
				{Op: OpWrite, Fd: fd, Off: 0, Buf: block(blockSize, uint64(round)), Link: true},
				{Op: OpWrite, Fd: int(ro.Fd()), Off: blockSize, Buf: block(blockSize, 100), Link: true}, // EBADF: not open for writing
				{Op: OpWrite, Fd: fd, Off: 2 * blockSize, Buf: block(blockSize, 200), Link: true},
				{Op: OpFsync, Fd: fd},
				{Op: OpRead, Fd: fd, Off: 3 * blockSize, Buf: make([]byte, blockSize)},
			}
			err := e.Do(reqs)
			if !errors.Is(err, unix.EBADF) {
				t.Fatalf("Do = %v; want EBADF", err)
			}
			checkReq(t, 0, &reqs[0])
			checkReq(t, 4, &reqs[4])
			if !errors.Is(reqs[1].Err, unix.EBADF) {
				t.Errorf("failing member: %v, want EBADF", reqs[1].Err)
			}
			for _, i := range []int{2, 3} {
				if !errors.Is(reqs[i].Err, ErrCanceled) || reqs[i].N != 0 {
					t.Errorf("request %d after the failure: N %d, Err %v; want ErrCanceled", i, reqs[i].N, reqs[i].Err)
				}
			}
			data := readFile(t, f)
			if err := checkBlock(data[:blockSize], uint64(round)); err != nil {
				t.Errorf("the write before the failure: %v", err)
			}
			if !bytes.Equal(data[blockSize:3*blockSize], make([]byte, 2*blockSize)) {
				t.Fatal("a write at or after the failure landed in the file")
			}
		}
	})
}

// TestLinkedNeighbours runs failing chains among unlinked requests and
// healthy chains in one call: only the failing chain's members fail.
func TestLinkedNeighbours(t *testing.T) {
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		const n = 64
		f, fd := openFile(t, t.TempDir(), "f", make([]byte, n*blockSize))
		reqs := make([]Request, 0, 2*n)
		var bad []int
		for i := range n {
			off := int64(i) * blockSize
			switch i % 4 {
			case 0: // a failing chain of two
				bad = append(bad, len(reqs))
				reqs = append(reqs,
					Request{Op: OpWrite, Fd: -1, Off: off, Buf: block(blockSize, 0), Link: true},
					Request{Op: OpWrite, Fd: fd, Off: off, Buf: block(blockSize, uint64(i))})
			case 1: // a healthy chain
				reqs = append(reqs,
					Request{Op: OpWrite, Fd: fd, Off: off, Buf: block(blockSize, uint64(i)), Link: true},
					Request{Op: OpFdatasync, Fd: fd})
			default:
				reqs = append(reqs, Request{Op: OpWrite, Fd: fd, Off: off, Buf: block(blockSize, uint64(i))})
			}
		}
		if err := e.Do(reqs); !errors.Is(err, unix.EBADF) {
			t.Fatalf("Do = %v, want EBADF", err)
		}
		for i := range reqs {
			switch {
			case len(bad) > 0 && i == bad[0]:
				if !errors.Is(reqs[i].Err, unix.EBADF) {
					t.Errorf("request %d: %v, want EBADF", i, reqs[i].Err)
				}
			case len(bad) > 0 && i == bad[0]+1:
				if !errors.Is(reqs[i].Err, ErrCanceled) {
					t.Errorf("request %d: %v, want ErrCanceled", i, reqs[i].Err)
				}
				bad = bad[1:]
			default:
				checkReq(t, i, &reqs[i])
			}
		}
		data := readFile(t, f)
		for i := range n {
			b := data[i*blockSize : (i+1)*blockSize]
			if i%4 == 0 {
				if !bytes.Equal(b, make([]byte, blockSize)) {
					t.Errorf("block %d: the canceled write landed", i)
				}
			} else if err := checkBlock(b, uint64(i)); err != nil {
				t.Errorf("block %d: %v", i, err)
			}
		}
	})
}

// TestLinkedChainVersusRingSize runs chains as long as, and longer than,
// the ring's submission queue: a chain the ring can hold completes; one it
// cannot gets a clear error. Neither hangs.
func TestLinkedChainVersusRingSize(t *testing.T) {
	forEachBackend(t, Options{Entries: 8}, func(t *testing.T, e *Engine) {
		f, fd := openFile(t, t.TempDir(), "f", nil)
		chain := func(n int, tag uint64) []Request {
			reqs := make([]Request, n)
			for i := range reqs {
				reqs[i] = Request{Op: OpWrite, Fd: fd, Off: int64(i) * 64, Buf: block(64, tag+uint64(i)), Link: i < n-1}
			}
			return reqs
		}

		// The first call of a fresh engine with a chain as long as the SQ,
		// then others.
		for _, n := range []int{8, 1, 7, 8, 3} {
			reqs := chain(n, 100)
			var err error
			within(t, hangLimit, fmt.Sprintf("a chain of %d with Entries 8", n), func() { err = e.Do(reqs) })
			if err != nil {
				t.Fatalf("chain of %d with Entries 8: %v", n, err)
			}
			for i := range reqs {
				checkReq(t, i, &reqs[i])
			}
		}

		reqs := append(chain(12, 1000), Request{Op: OpWrite, Fd: fd, Off: 4096, Buf: block(64, 7)})
		var err error
		within(t, hangLimit, "a chain of 12 with Entries 8", func() { err = e.Do(reqs) })
		checkReq(t, 12, &reqs[12]) // the unlinked request after it runs
		if e.Backend() == BackendSyscall {
			// No ring, no limit.
			if err != nil {
				t.Fatalf("chain of 12 on syscall: %v", err)
			}
			return
		}
		if err == nil || !strings.Contains(err.Error(), "chain of 12") {
			t.Fatalf("chain of 12 with Entries 8: %v; want an error naming the chain's length", err)
		}
		var oe *OpError
		for i := range reqs[:12] {
			if reqs[i].Err == nil || !errors.As(reqs[i].Err, &oe) {
				t.Errorf("request %d of the long chain: %v (%T); want an *OpError", i, reqs[i].Err, reqs[i].Err)
			}
		}
		// Nothing of it ran.
		if data := readFile(t, f); len(data) > 8*64 && !bytes.Equal(data[8*64:12*64], make([]byte, 4*64)) {
			t.Error("members of the refused chain were written")
		}
		// And the engine still works.
		if n, err := e.WriteAt(fd, []byte("after"), 0); n != 5 || err != nil {
			t.Fatalf("WriteAt after the refused chain: %d, %v", n, err)
		}
	})
}

// TestTinyRing runs batches, chains and unlinked, on the smallest rings.
func TestTinyRing(t *testing.T) {
	for _, entries := range []uint32{1, 2, 4} {
		t.Run(fmt.Sprintf("entries=%d", entries), func(t *testing.T) {
			forEachBackend(t, Options{Entries: entries}, func(t *testing.T, e *Engine) {
				f, fd := openFile(t, t.TempDir(), "f", nil)
				reqs := make([]Request, 50)
				for i := range reqs {
					reqs[i] = Request{Op: OpWrite, Fd: fd, Off: int64(i) * 100, Buf: block(100, uint64(i))}
				}
				reqs = append(reqs, Request{Op: OpFdatasync, Fd: fd})
				var err error
				within(t, hangLimit, "a batch of 51 on a tiny ring", func() { err = e.Do(reqs) })
				if err != nil {
					t.Fatalf("Do: %v", err)
				}
				data := readFile(t, f)
				for i := range reqs[:50] {
					checkReq(t, i, &reqs[i])
					if err := checkBlock(data[i*100:(i+1)*100], uint64(i)); err != nil {
						t.Fatalf("block %d: %v", i, err)
					}
				}
				if n, err := e.ReadAt(fd, make([]byte, 100), 0); n != 100 || err != nil {
					t.Fatalf("ReadAt: %d, %v", n, err)
				}
			})
		})
	}
}

// TestOneEntryRingCallers reads from 1, 2 and 4 goroutines at once through
// fresh rings of one SQE. There the wake read's SQE fills the SQ, and an
// SQPOLL ring's SQ head lags behind its completions (the self-test's, right
// after start): the ring goroutine must never wait on the wake read alone
// while a request is ready, nor wait with nothing in flight.
func TestOneEntryRingCallers(t *testing.T) {
	const (
		blocks = 16
		rounds = 10
		reads  = 50 // per goroutine and round
	)
	data := make([]byte, 0, blocks*100)
	for i := range blocks {
		data = append(data, block(100, uint64(i))...)
	}
	_, fd := openFile(t, t.TempDir(), "f", data)
	for _, bc := range backendCases {
		t.Run("backend="+bc.name, func(t *testing.T) {
			for _, n := range []int{1, 2, 4} {
				for round := range rounds {
					e := newEngine(t, bc.mode, bc.with(Options{Entries: 1}))
					runGoroutines(t, n, func(g int) {
						buf := make([]byte, 100)
						for i := range reads {
							k := (g*reads + i) % blocks
							if m, err := e.ReadAt(fd, buf, int64(k)*100); m != 100 || err != nil {
								t.Errorf("goroutines %d, round %d: ReadAt block %d: %d, %v", n, round, k, m, err)
								return
							}
							if err := checkBlock(buf, uint64(k)); err != nil {
								t.Errorf("goroutines %d, round %d: block %d: %v", n, round, k, err)
								return
							}
						}
					})
					closeWithin(t, e, hangLimit)
					if t.Failed() {
						return
					}
				}
			}
		})
	}
}

// TestFallbackNotCompiled runs where io_uring is compiled out (the
// ringstore_nouring tag, systems other than Linux): asking for it falls
// back, says why, and reads and writes the same.
func TestFallbackNotCompiled(t *testing.T) {
	if uring.Compiled {
		t.Skip("io_uring is compiled in; see TestNoFallback and the process tests")
	}
	for _, mode := range []IOMode{URing, SQPoll} {
		before := Fallbacks()
		e, err := New(Options{Mode: mode, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		if e.Backend() != BackendSyscall || !e.FellBack() || e.Stats().Fallbacks != 1 || Fallbacks() != before+1 {
			t.Errorf("New(Mode: %s): backend %s, FellBack %v, Stats.Fallbacks %d; want syscall, true, 1", mode, e.Backend(), e.FellBack(), e.Stats().Fallbacks)
		}
		if r := e.FallbackReason(); !strings.Contains(r, uring.NotCompiledReason) || !strings.Contains(r, errors.ErrUnsupported.Error()) {
			t.Errorf("reason %q; want it to say %q", r, uring.NotCompiledReason)
		}
		_, fd := openFile(t, t.TempDir(), "f", nil)
		if n, err := e.WriteAt(fd, []byte("hello"), 3); n != 5 || err != nil {
			t.Fatalf("WriteAt: %d, %v", n, err)
		}
		buf := make([]byte, 10)
		if n, err := e.ReadAt(fd, buf, 0); n != 8 || err != io.EOF || string(buf[3:8]) != "hello" {
			t.Fatalf("ReadAt: %d, %v, %q", n, err, buf)
		}
	}
}
