package scanbench

import (
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

func TestDropPageCacheMakesAFileCold(t *testing.T) {
	const size = 8<<20 + 12345 // a partial last page
	p := writeFile(t, testdir.Direct(t), size)
	if _, err := os.ReadFile(p); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	warm, err := bench.ResidentBytes(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if warm != size {
		t.Errorf("after reading it whole, %d of %d bytes resident", warm, size)
	}
	cold, err := dropPageCache(p)
	if err != nil {
		t.Fatal(err)
	}
	if cold != 0 {
		t.Errorf("after the drop %d bytes are still resident", cold)
	}
	if _, err := dropPageCache(filepath.Join(t.TempDir(), "missing")); err == nil || !os.IsNotExist(err) {
		t.Errorf("dropping a missing file: %v", err)
	}
}

// TestProcIOCountsEveryKindOfRead checks what the benchmark relies on:
// /proc/self/io read_bytes counts what came from the device, whether through
// the page cache, O_DIRECT pread, or O_DIRECT on io_uring, and not what the
// page cache served.
func TestProcIOCountsEveryKindOfRead(t *testing.T) {
	const size = 16 << 20
	p := writeFile(t, testdir.Direct(t), size)
	delta := func(read func()) int64 {
		t.Helper()
		if _, err := dropPageCache(p); err != nil {
			t.Fatal(err)
		}
		a, err := readProcIO()
		if err != nil {
			t.Fatal(err)
		}
		read()
		b, err := readProcIO()
		if err != nil {
			t.Fatal(err)
		}
		return b.ReadBytes - a.ReadBytes
	}
	if n := delta(func() { os.ReadFile(p) }); !within(n, size, 0.05) {
		t.Errorf("buffered cold read: read_bytes %d, want about %d", n, size)
	}
	os.ReadFile(p)
	a, _ := readProcIO()
	os.ReadFile(p)
	b, _ := readProcIO()
	if n := b.ReadBytes - a.ReadBytes; n > size/100 {
		t.Errorf("a read served by the page cache counted %d bytes", n)
	}
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		eng, err := ioengine.New(ioengine.Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if mode == ioengine.URing && eng.Backend() != ioengine.BackendURing {
			t.Logf("io_uring not available (%s): the uring case runs on %s", eng.FallbackReason(), eng.Backend())
		}
		f, err := directio.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		buf, err := directio.Alloc(1 << 20)
		if err != nil {
			t.Fatal(err)
		}
		var got int64
		n := delta(func() {
			reqs := make([]ioengine.Request, 4)
			bufs := [][]byte{buf[:256<<10], buf[256<<10 : 512<<10], buf[512<<10 : 768<<10], buf[768<<10:]}
			for off := int64(0); off < size; off += 1 << 20 {
				for i := range reqs {
					reqs[i] = ioengine.Request{Fd: int(f.Fd()), Off: off + int64(i)<<18, Buf: bufs[i]}
				}
				if err := eng.ReadBatch(reqs); err != nil && err != io.EOF {
					t.Fatal(err)
				}
				for i := range reqs {
					got += int64(reqs[i].N)
				}
			}
		})
		if got != size || !within(n, size, 0.02) {
			t.Errorf("O_DIRECT on %s: read %d bytes, read_bytes %d, want %d", eng.Backend(), got, n, size)
		}
		directio.Free(buf)
		f.Close()
		eng.Close()
	}
}

func TestMeasureDevice(t *testing.T) {
	dir := testdir.Direct(t)
	p := writeFile(t, dir, 8<<20+5000) // a last block that is not whole
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		r, err := measureDevice([]string{p, p}, DeviceOptions{BlockSize: 256 << 10, Depth: 4, Duration: 150 * time.Millisecond, IOMode: mode})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		t.Logf("%s: %+v, %.2f GB/s", mode, r, r.GBps())
		if r.Bytes <= 0 || r.Seconds < 0.15 || r.GBps() <= 0 {
			t.Errorf("%s: implausible %+v", mode, r)
		}
		// O_DIRECT: every byte read comes from the device (whole blocks at
		// the end of the file: up to a block more per pass).
		if !within(r.ReadBytes, r.Bytes, 0.05) {
			t.Errorf("%s: read %d bytes but read_bytes says %d", mode, r.Bytes, r.ReadBytes)
		}
	}
	for _, c := range []struct {
		name  string
		files []string
		o     DeviceOptions
	}{
		{"no files", nil, DeviceOptions{}},
		{"unaligned block", []string{p}, DeviceOptions{BlockSize: 1000}},
		{"missing file", []string{filepath.Join(dir, "nope")}, DeviceOptions{Duration: time.Millisecond}},
		{"empty file", []string{writeEmpty(t, dir)}, DeviceOptions{Duration: time.Millisecond}},
	} {
		if _, err := measureDevice(c.files, c.o); err == nil {
			t.Errorf("%s: no error", c.name)
		} else {
			t.Logf("%s: %v", c.name, err)
		}
	}
}

func writeEmpty(t *testing.T, dir string) string {
	p := filepath.Join(dir, "empty")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
