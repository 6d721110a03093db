package bufpool

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// Most tests run on the real kernel ring and on the syscall backend, as
// subtests named backend=uring and backend=syscall.
var backends = []struct {
	name string
	mode ioengine.IOMode
	want ioengine.Backend
}{
	{"uring", ioengine.URing, ioengine.BackendURing},
	{"syscall", ioengine.Syscall, ioengine.BackendSyscall},
}

func forEachBackend(t *testing.T, fn func(t *testing.T, mode ioengine.IOMode)) {
	t.Helper()
	for _, b := range backends {
		t.Run("backend="+b.name, func(t *testing.T) { fn(t, b.mode) })
	}
}

// newEngine returns an engine on mode (with faults, if any), closed at
// cleanup (testengine.New: skips only where io_uring is refused outright).
func newEngine(t testing.TB, mode ioengine.IOMode, faults *ioengine.FaultPlan) *ioengine.Engine {
	t.Helper()
	return testengine.New(t, mode, ioengine.Options{Faults: faults})
}

// newPool makes a pool on eng (opts.Engine is set to it) and, at cleanup,
// checks that it is quiescent and closes it.
func newPool(t testing.TB, eng *ioengine.Engine, opts Options) *Pool {
	t.Helper()
	opts.Engine = eng
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	p, err := New(opts)
	if err != nil {
		t.Fatalf("New(%s): %v", opts.String(), err)
	}
	t.Cleanup(func() {
		if err := p.checkQuiescent(); err != nil {
			t.Errorf("at cleanup: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

// setBeforeDo installs the test hook run before each engine call.
func (p *Pool) setBeforeDo(fn func(loads int)) {
	p.mu.Lock()
	p.testBeforeDo = fn
	p.mu.Unlock()
}

// testFile is a file of random bytes opened with O_DIRECT.
type testFile struct {
	path string
	data []byte
	f    *os.File
	ef   *ioengine.File // f, as the pool reads it
	id   FileID
}

func (tf *testFile) fd() int { return int(tf.f.Fd()) }

// writeFile writes size random bytes (from seed) to dir/name and opens it
// with O_DIRECT for reading; the file is closed at cleanup.
func writeFile(t testing.TB, dir, name string, size int, seed uint64) *testFile {
	t.Helper()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(seed, 0x5eed))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := directio.OpenFile(path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ef := ioengine.NewFile(f)
	t.Cleanup(func() { ef.Close() })
	return &testFile{path: path, data: data, f: f, ef: ef}
}

// register writes a file and registers it with p.
func register(t testing.TB, p *Pool, dir, name string, size int, seed uint64) *testFile {
	t.Helper()
	tf := writeFile(t, dir, name, size, seed)
	id, err := p.Register(tf.ef, int64(size), name)
	if err != nil {
		t.Fatalf("Register(%s): %v", name, err)
	}
	tf.id = id
	return tf
}

// checkFrames checks that frames are the frames covering s, in order, each
// holding the file's bytes, and that CopyOut of s matches the file.
func checkFrames(t testing.TB, p *Pool, tf *testFile, s Span, frames []*Frame) {
	t.Helper()
	if s.Len == 0 {
		if len(frames) != 0 {
			t.Fatalf("span %v: %d frames for an empty span", s, len(frames))
		}
		return
	}
	fs := int64(p.FrameSize())
	first, last := s.Off/fs, (s.Off+s.Len-1)/fs
	if int64(len(frames)) != last-first+1 {
		t.Fatalf("span %v: %d frames, want %d", s, len(frames), last-first+1)
	}
	for i, f := range frames {
		off := (first + int64(i)) * fs
		end := min(off+fs, int64(len(tf.data)))
		if f.File() != tf.id || f.Offset() != off || len(f.Bytes()) != int(end-off) {
			t.Fatalf("span %v frame %d: file %d offset %d len %d; want file %d offset %d len %d",
				s, i, f.File(), f.Offset(), len(f.Bytes()), tf.id, off, end-off)
		}
		if string(f.Bytes()) != string(tf.data[off:end]) {
			t.Fatalf("span %v frame %d (offset %d): bytes differ from the file", s, i, off)
		}
	}
	got := make([]byte, s.Len)
	if err := CopyOut(got, frames, s.Off); err != nil {
		t.Fatalf("CopyOut(%v): %v", s, err)
	}
	if string(got) != string(tf.data[s.Off:s.Off+s.Len]) {
		t.Fatalf("CopyOut(%v): bytes differ from the file", s)
	}
}

func unpinAll(frames []*Frame) {
	for _, f := range frames {
		f.Unpin()
	}
}

// within runs fn and fails the test if it does not return in d.
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
		buf := make([]byte, 1<<20)
		t.Fatalf("%s did not return within %s\n%s", what, d, buf[:runtime.Stack(buf, true)])
	}
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached within %s", what, d)
		}
		time.Sleep(time.Millisecond)
	}
}

func mustContain(t testing.TB, err error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want one containing %q", parts)
	}
	for _, s := range parts {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not contain %q", err, s)
		}
	}
}

func fmtSpans(spans []Span) string { return fmt.Sprint(spans) }
