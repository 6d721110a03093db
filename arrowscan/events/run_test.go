package events

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// scanSetup is one way of opening files: an arrowscan mode on a backend.
type scanSetup struct {
	name   string
	mode   arrowscan.Mode
	ioMode ioengine.IOMode
}

func scanSetups() []scanSetup {
	return []scanSetup{
		{"mmap", arrowscan.ModeMmap, ioengine.Auto},
		{"pread", arrowscan.ModePread, ioengine.Auto},
		{"direct-uring", arrowscan.ModeDirect, ioengine.URing},
		{"direct-syscall", arrowscan.ModeDirect, ioengine.Syscall},
		{"pool-uring", arrowscan.ModePool, ioengine.URing},
		{"pool-syscall", arrowscan.ModePool, ioengine.Syscall},
	}
}

const poolBudget = 2 << 20

// openAll opens paths in setup s; pool modes share one small pool (64 KiB
// frames, 2 MiB: far smaller than the data, so frames are evicted).
func openAll(t *testing.T, s scanSetup, paths []string) ([]*arrowscan.File, *bufpool.Pool) {
	t.Helper()
	opts := arrowscan.Options{Mode: s.mode, IOMode: s.ioMode}
	var pool *bufpool.Pool
	if s.mode == arrowscan.ModeDirect || s.mode == arrowscan.ModePool {
		eng, err := ioengine.New(ioengine.Options{Mode: s.ioMode, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { eng.Close() }) // after the files' and pool's cleanups
		want := ioengine.BackendSyscall
		if s.ioMode == ioengine.URing && ioengine.ProbeKernel().Available {
			want = ioengine.BackendURing
		}
		if eng.Backend() != want {
			t.Fatalf("engine for %s runs on %s, want %s (%s)", s.name, eng.Backend(), want, eng.FallbackReason())
		}
		opts.Engine = eng
	}
	if s.mode == arrowscan.ModePool {
		var err error
		pool, err = bufpool.New(bufpool.Options{FrameSize: 64 << 10, Budget: poolBudget, Engine: opts.Engine, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := pool.Close(); err != nil {
				t.Errorf("pool close: %v", err)
			}
		})
		opts.Pool = pool
	}
	var files []*arrowscan.File
	for _, p := range paths {
		f, err := arrowscan.Open(p, opts)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	t.Cleanup(func() { // before the pool's cleanup: cleanups run last first
		for _, f := range files {
			if err := f.Close(); err != nil {
				t.Errorf("close %s: %v", f.Path(), err)
			}
		}
	})
	return files, pool
}

// TestRunEveryModeEqualsReference runs every query in every mode on the
// real io_uring ring and the syscall backend, all queries of a mode at once
// over shared files, and checks each result against the reference.
func TestRunEveryModeEqualsReference(t *testing.T) {
	dir := testdir.Direct(t)
	for _, c := range []string{"none", "zstd"} {
		paths, err := Generate(dir+"/"+c, GenOptions{Rows: 60_000, RowsPerBatch: 7_000, Files: 2, Seed: 21, Compression: c})
		if err != nil {
			t.Fatal(err)
		}
		var size int64
		for _, p := range paths {
			st, _ := os.Stat(p)
			size += st.Size()
		}
		want := map[string]*Result{}
		for _, q := range Queries() {
			if want[q.Name], err = Reference(paths, q.Name); err != nil {
				t.Fatal(err)
			}
		}
		for _, s := range scanSetups() {
			t.Run(c+"/"+s.name, func(t *testing.T) {
				files, pool := openAll(t, s, paths)
				var wg sync.WaitGroup
				errs := make([]error, len(Queries()))
				for i, q := range Queries() {
					wg.Add(1)
					go func() {
						defer wg.Done()
						got, err := Run(files, q.Name)
						if err == nil {
							err = got.Equal(want[q.Name])
						}
						errs[i] = err
					}()
				}
				wg.Wait()
				for i, err := range errs {
					if err != nil {
						t.Errorf("%s: %v", Queries()[i].Name, err)
					}
				}
				if pool != nil {
					st := pool.Stats()
					if st.Misses == 0 || (size > 2*poolBudget && st.Evictions == 0) {
						t.Errorf("%d bytes of files through a pool of %d: no misses or no evictions: %s", size, poolBudget, st)
					}
				}
			})
		}
	}
}

func TestRunErrors(t *testing.T) {
	dir := testdir.Direct(t)
	paths, err := Generate(dir, GenOptions{Rows: 5000, Files: 1})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := openAll(t, scanSetup{"pread", arrowscan.ModePread, ioengine.Auto}, paths)
	if _, err := Run(files, "nope"); !errors.Is(err, ErrUnknownQuery) {
		t.Errorf("unknown query: %v", err)
	}
	if _, err := Run(nil, "bytes_total"); !errors.Is(err, ErrBadOptions) {
		t.Errorf("no files: %v", err)
	}

	// A file that is Arrow but not events: no time-range metadata.
	other := dir + "/other.arrow"
	writePlainArrow(t, other)
	f, err := arrowscan.Open(other, arrowscan.Options{Mode: arrowscan.ModePread})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = Run(append(files[:1:1], f), "bytes_total")
	if !errors.Is(err, ErrSchema) || !strings.Contains(err.Error(), other) || !strings.Contains(err.Error(), MetaTSStart) {
		t.Errorf("file without metadata: %v", err)
	}
}

// writePlainArrow writes an Arrow file whose one column is called bytes
// but is a string, without the generator's metadata.
func writePlainArrow(t *testing.T, path string) {
	t.Helper()
	b := openBatches(t, generated(t, GenOptions{Rows: 10})[0], []string{ColUserAgent})
	if !b.Next() {
		t.Fatal(b.Err())
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	if err := writeRenamed(out, b.Record(), ColBytes); err != nil {
		t.Fatal(fmt.Errorf("write %s: %w", path, err))
	}
}
