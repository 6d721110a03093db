package directio_test

import (
	"bytes"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/testdir"
)

// alloc returns memory from directio.Alloc, freed at cleanup.
func alloc(t *testing.T, size int) []byte {
	t.Helper()
	b, err := directio.Alloc(size)
	if err != nil {
		t.Fatalf("Alloc(%d): %v", size, err)
	}
	t.Cleanup(func() {
		if err := directio.Free(b); err != nil {
			t.Errorf("Free: %v", err)
		}
	})
	return b
}

// fill fills b with bytes that depend on seed and on the position.
func fill(b []byte, seed byte) {
	for i := range b {
		b[i] = byte(i*13+i>>9) ^ seed
	}
}

func TestAlloc(t *testing.T) {
	for _, tc := range []struct {
		size, wantLen int
	}{
		{1, 4096},
		{4095, 4096},
		{4096, 4096},
		{4097, 8192},
		{1 << 20, 1 << 20},
		{1<<20 + 1, 1<<20 + 4096},
	} {
		b, err := directio.Alloc(tc.size)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", tc.size, err)
		}
		if len(b) != tc.wantLen || cap(b) != tc.wantLen {
			t.Errorf("Alloc(%d): len %d cap %d, want %d", tc.size, len(b), cap(b), tc.wantLen)
		}
		if !directio.IsAligned(b, directio.BlockSize) || !directio.IsAligned(b, os.Getpagesize()) {
			t.Errorf("Alloc(%d) is not aligned to BlockSize and the page size", tc.size)
		}
		if i := bytes.IndexFunc(b, func(r rune) bool { return r != 0 }); i >= 0 {
			t.Errorf("Alloc(%d): byte %d is not zero", tc.size, i)
		}
		fill(b, 0x5a)
		want := make([]byte, len(b))
		fill(want, 0x5a)
		if !bytes.Equal(b, want) {
			t.Errorf("Alloc(%d): memory does not hold what was written", tc.size)
		}
		if err := directio.Free(b); err != nil {
			t.Errorf("Free(Alloc(%d)): %v", tc.size, err)
		}
	}
}

func TestAllocBadSize(t *testing.T) {
	// Zero is an error, not an empty slice: there is no mapping to return.
	for _, size := range []int{0, -1, math.MinInt, math.MaxInt} {
		b, err := directio.Alloc(size)
		if err == nil {
			directio.Free(b)
			t.Errorf("Alloc(%d) succeeded with %d bytes, want an error", size, len(b))
			continue
		}
		if b != nil || !strings.HasPrefix(err.Error(), "directio: ") {
			t.Errorf("Alloc(%d) = %d bytes, %q; want nil and a directio error", size, len(b), err)
		}
	}
}

func TestFreeRejects(t *testing.T) {
	b := alloc(t, 2*directio.BlockSize)
	heap := make([]byte, directio.BlockSize)
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"empty", b[:0]},
		{"heap", heap},
		{"prefix", b[:directio.BlockSize]},
		{"suffix", b[directio.BlockSize:]},
		{"interior", b[1 : len(b)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := directio.Free(tc.b); !errors.Is(err, directio.ErrNotAllocated) {
				t.Errorf("Free = %v, want ErrNotAllocated", err)
			}
		})
	}
	// All of that left b mapped and usable.
	fill(b, 1)
}

func TestFreeTwice(t *testing.T) {
	b, err := directio.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	if err := directio.Free(b); err != nil {
		t.Fatalf("first Free: %v", err)
	}
	if err := directio.Free(b); !errors.Is(err, directio.ErrNotAllocated) {
		t.Fatalf("second Free = %v, want ErrNotAllocated", err)
	}
}

func TestAllocFreeConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				b, err := directio.Alloc(1 + i*g*100)
				if err != nil {
					t.Error(err)
					return
				}
				b[len(b)-1] = byte(i)
				if err := directio.Free(b); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	// Racing Frees of one buffer: exactly one unmaps it.
	b, err := directio.Alloc(1)
	if err != nil {
		t.Fatal(err)
	}
	var freed atomic.Int32
	for range 8 {
		wg.Go(func() {
			if directio.Free(b) == nil {
				freed.Add(1)
			}
		})
	}
	wg.Wait()
	if n := freed.Load(); n != 1 {
		t.Errorf("%d of 8 concurrent Frees of one buffer succeeded, want 1", n)
	}
}

func TestIsAligned(t *testing.T) {
	b := alloc(t, 2*directio.BlockSize)
	for _, tc := range []struct {
		name  string
		b     []byte
		align int
		want  bool
	}{
		{"whole", b, directio.BlockSize, true},
		{"whole by 512", b, 512, true},
		{"address off by one", b[1 : 1+directio.BlockSize], directio.BlockSize, false},
		{"short length", b[:100], directio.BlockSize, false},
		{"sector inside block", b[512:1024], 512, true},
		{"sector inside block by 4096", b[512:1024], directio.BlockSize, false},
		{"align 1", b[3:10], 1, true},
		{"empty at aligned address", b[:0], directio.BlockSize, true},
		{"empty at odd address", b[1:1], 2, false},
		{"nil", nil, directio.BlockSize, true},
		{"align 0", b, 0, false},
		{"align negative", b, -4096, false},
	} {
		if got := directio.IsAligned(tc.b, tc.align); got != tc.want {
			t.Errorf("%s: IsAligned(len %d, %d) = %v, want %v", tc.name, len(tc.b), tc.align, got, tc.want)
		}
	}
}

// openDirect creates a file in a directory that accepts O_DIRECT and opens
// it with O_DIRECT for reading and writing.
func openDirect(t *testing.T) *os.File {
	t.Helper()
	f, err := directio.OpenFile(filepath.Join(testdir.Direct(t), "data"), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestRoundTrip(t *testing.T) {
	f := openDirect(t)
	cases := []struct {
		off, len int
	}{
		{0, directio.BlockSize},
		{2 * directio.BlockSize, 3 * directio.BlockSize},
		{1 << 20, 1 << 16},
		{directio.BlockSize, directio.BlockSize}, // between the first two
	}
	for i, tc := range cases {
		w := alloc(t, tc.len)
		fill(w, byte(i+1))
		if n, err := f.WriteAt(w, int64(tc.off)); err != nil || n != tc.len {
			t.Fatalf("WriteAt(%d bytes, %d) = %d, %v", tc.len, tc.off, n, err)
		}
	}
	if err := unix.Fdatasync(int(f.Fd())); err != nil {
		t.Fatal(err)
	}
	for i, tc := range cases {
		r := alloc(t, tc.len)
		if n, err := f.ReadAt(r, int64(tc.off)); err != nil || n != tc.len {
			t.Fatalf("ReadAt(%d bytes, %d) = %d, %v", tc.len, tc.off, n, err)
		}
		want := make([]byte, tc.len)
		fill(want, byte(i+1))
		if !bytes.Equal(r, want) {
			t.Errorf("read at %d returned other bytes than were written", tc.off)
		}
	}
}

func TestMisaligned(t *testing.T) {
	f := openDirect(t)
	w := alloc(t, 4*directio.BlockSize)
	if _, err := f.WriteAt(w, 0); err != nil {
		t.Fatal(err)
	}
	a, err := directio.Discover(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("alignment of %s: %v", f.Name(), a)
	buf := alloc(t, 2*directio.BlockSize)
	for _, tc := range []struct {
		name string
		need uint32 // the alignment the case violates; skipped when 1
		b    []byte
		off  int64
	}{
		{"buffer address", a.Memory, buf[1 : 1+directio.BlockSize], 0},
		{"file offset", a.Offset, buf[:directio.BlockSize], 1},
		{"length", a.Offset, buf[:directio.BlockSize-1], 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.need == 1 {
				t.Skipf("the file system requires no alignment (%v)", a)
			}
			_, err := f.ReadAt(tc.b, tc.off)
			if !errors.Is(err, unix.EINVAL) {
				t.Errorf("ReadAt = %v, want EINVAL", err)
			}
		})
	}
}

func TestOpenFileTmpfs(t *testing.T) {
	const shm = "/dev/shm"
	if fsType, err := directio.FSType(shm); err != nil || fsType != "tmpfs" {
		t.Skipf("%s is not tmpfs: %q, %v", shm, fsType, err)
	}
	f, err := os.CreateTemp(shm, "directio-test-*")
	if err != nil {
		t.Skip(err)
	}
	name := f.Name()
	f.Close()
	t.Cleanup(func() { os.Remove(name) })

	// tmpfs accepts O_DIRECT since Linux 6.6; before that, open fails with
	// EINVAL. Either outcome is fine as long as it is reported exactly.
	df, err := directio.OpenFile(name, os.O_RDWR, 0)
	if err != nil {
		var nse *directio.NotSupportedError
		switch {
		case !errors.Is(err, directio.ErrNotSupported), !errors.Is(err, unix.EINVAL):
			t.Fatalf("OpenFile on tmpfs = %v, want ErrNotSupported wrapping EINVAL", err)
		case !strings.Contains(err.Error(), "tmpfs"), !strings.Contains(err.Error(), name):
			t.Fatalf("OpenFile on tmpfs = %q, want it to name tmpfs and %s", err, name)
		case !errors.As(err, &nse) || nse.FSType != "tmpfs" || nse.Path != name:
			t.Fatalf("OpenFile on tmpfs = %#v, want a *NotSupportedError for tmpfs and %s", err, name)
		}
		t.Logf("tmpfs refuses O_DIRECT: %v", err)
		if _, err := directio.Discover(name); !errors.Is(err, directio.ErrNotSupported) {
			t.Errorf("Discover on tmpfs = %v, want ErrNotSupported", err)
		}
		return
	}
	defer df.Close()

	a, err := directio.Discover(name)
	if err != nil {
		t.Fatalf("tmpfs accepts O_DIRECT, but Discover: %v", err)
	}
	t.Logf("tmpfs accepts O_DIRECT: %v", a)
	if a.Memory == 0 || a.Offset == 0 || a.Memory&(a.Memory-1) != 0 || a.Offset&(a.Offset-1) != 0 ||
		directio.BlockSize%a.Offset != 0 || directio.BlockSize%a.Memory != 0 || a.Source == "" {
		t.Errorf("Discover on tmpfs = %+v, want powers of two that divide BlockSize, and a source", a)
	}
	b := alloc(t, directio.BlockSize)
	fill(b, 7)
	if _, err := df.WriteAt(b, 0); err != nil {
		t.Fatal(err)
	}
	r := alloc(t, directio.BlockSize)
	if _, err := df.ReadAt(r, 0); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(r, b) {
		t.Error("tmpfs O_DIRECT read returned other bytes than were written")
	}
}

func TestOpenFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing")
	_, err := directio.OpenFile(missing, os.O_RDONLY, 0)
	if !errors.Is(err, fs.ErrNotExist) || errors.Is(err, directio.ErrNotSupported) ||
		!strings.HasPrefix(err.Error(), "directio: ") || !strings.Contains(err.Error(), missing) {
		t.Errorf("OpenFile(missing) = %v, want a directio error naming the path and wrapping ENOENT", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) || pe.Op != "open" {
		t.Errorf("OpenFile(missing) = %#v, want an *os.PathError inside", err)
	}

	// No file system does O_DIRECT on a directory.
	if f, err := directio.OpenFile(dir, os.O_RDONLY, 0); !errors.Is(err, directio.ErrNotSupported) || !errors.Is(err, unix.EINVAL) {
		if f != nil {
			f.Close()
		}
		t.Errorf("OpenFile(directory) = %v, want ErrNotSupported and EINVAL", err)
	}
}

func TestDiscover(t *testing.T) {
	dir := testdir.Direct(t)
	name := filepath.Join(dir, "f")
	if err := os.WriteFile(name, make([]byte, directio.BlockSize), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := directio.Discover(name)
	if err != nil {
		t.Fatal(err)
	}
	if a.Memory == 0 || a.Offset == 0 || a.Source == "" {
		t.Fatalf("Discover(%s) = %+v, want non-zero alignments and a source", name, a)
	}

	fsType, err := directio.FSType(name)
	if err != nil {
		t.Fatal(err)
	}
	var st unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, name, 0, unix.STATX_DIOALIGN, &st); err != nil {
		t.Fatal(err)
	}
	switch {
	case st.Mask&unix.STATX_DIOALIGN != 0:
		want := directio.Alignment{Memory: st.Dio_mem_align, Offset: st.Dio_offset_align, Source: "statx"}
		if a != want {
			t.Errorf("Discover(%s) = %+v, want %+v", name, a, want)
		}
	case fsType == "ext4" || fsType == "xfs":
		t.Logf("this kernel predates STATX_DIOALIGN on %s (Linux 6.1): %v", fsType, a)
	}
	t.Logf("%s on %s: %v", name, fsType, a)

	// A directory has no STATX_DIOALIGN; the device or the assumption
	// answers.
	if a, err := directio.Discover(dir); err != nil || a.Memory == 0 || a.Offset == 0 || a.Source == "statx" {
		t.Errorf("Discover(directory) = %+v, %v; want non-zero alignments not from statx", a, err)
	} else {
		t.Logf("%s: %v", dir, a)
	}

	missing := filepath.Join(dir, "missing")
	if _, err := directio.Discover(missing); !errors.Is(err, unix.ENOENT) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Discover(missing) = %v, want ENOENT naming the path", err)
	}

	// procfs files refuse O_DIRECT, and statx does not say so.
	if _, err := directio.Discover("/proc/self/status"); !errors.Is(err, directio.ErrNotSupported) || !strings.Contains(err.Error(), "proc") {
		t.Errorf("Discover(/proc/self/status) = %v, want ErrNotSupported on proc", err)
	}
}

func TestCheck(t *testing.T) {
	dir := testdir.Direct(t)
	a, err := directio.Check(dir)
	if err != nil {
		t.Fatal(err)
	}
	if a.Memory == 0 || a.Offset == 0 || directio.BlockSize%a.Memory != 0 || directio.BlockSize%a.Offset != 0 {
		t.Errorf("Check(%s) = %+v, want alignments that divide BlockSize", dir, a)
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("Check left %d entries in %s (%v), want none", len(entries), dir, err)
	}

	missing := filepath.Join(dir, "missing")
	_, err = directio.Check(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.HasPrefix(err.Error(), "directio: check "+missing+": ") {
		t.Errorf("Check(missing) = %v, want ENOENT, naming the directory", err)
	}
}

func TestFSType(t *testing.T) {
	for _, tc := range []struct {
		path, want string
	}{
		{"/proc", "proc"},
		{"/sys", "sysfs"},
	} {
		if got, err := directio.FSType(tc.path); err != nil || got != tc.want {
			t.Errorf("FSType(%s) = %q, %v; want %q", tc.path, got, err, tc.want)
		}
	}
	if got, err := directio.FSType(t.TempDir()); err != nil || got == "" {
		t.Errorf("FSType(TempDir) = %q, %v", got, err)
	}
	if _, err := directio.FSType("/nonexistent/directio"); !errors.Is(err, unix.ENOENT) {
		t.Errorf("FSType(missing) = %v, want ENOENT", err)
	}
}

func TestNotSupportedError(t *testing.T) {
	err := error(&directio.NotSupportedError{Op: "open", Path: "/dev/shm/x", FSType: "tmpfs", Err: unix.EINVAL})
	if got, want := err.Error(), "directio: open /dev/shm/x: O_DIRECT not supported on tmpfs: invalid argument"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(err, directio.ErrNotSupported) || !errors.Is(err, unix.EINVAL) {
		t.Errorf("errors.Is fails for ErrNotSupported or EINVAL")
	}
	err = &directio.NotSupportedError{Op: "check", Path: "/d"}
	if got, want := err.Error(), "directio: check /d: O_DIRECT not supported"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
