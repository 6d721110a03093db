package arrowscan

import (
	"errors"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"golang.org/x/sys/unix"
)

// faultEngine is an engine on mode with an empty fault plan, to which the
// test adds faults once the file is open.
func faultEngine(t *testing.T, mode ioengine.IOMode) (*ioengine.Engine, *ioengine.FaultPlan) {
	t.Helper()
	plan := ioengine.NewFaultPlan()
	e, err := ioengine.New(ioengine.Options{Mode: mode, Faults: plan, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	if mode == ioengine.URing && e.Backend() != ioengine.BackendURing {
		t.Skipf("io_uring not available here: %s", e.FallbackReason())
	}
	return e, plan
}

// TestReadFaults injects faults into the reads of direct and pool scans on
// the real io_uring ring and on the syscall backend: short reads and
// EAGAIN are finished by the engine (records equal arrow-go's), EIO ends
// the scan with an error naming the file, the batch and the errno.
func TestReadFaults(t *testing.T) {
	dir := testdir.Direct(t)
	path := writeTestFile(t, dir, "f.arrow", genOptions{batches: 6, rows: 3000, compression: "lz4", seed: 71})
	ref := referenceRecords(t, path)
	for _, backend := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		for _, mode := range []Mode{ModeDirect, ModePool} {
			t.Run(mode.String()+"-"+backend.String(), func(t *testing.T) {
				open := func() (*File, *ioengine.FaultPlan, *bufpool.Pool) {
					eng, plan := faultEngine(t, backend)
					opts := Options{Mode: mode, Engine: eng}
					var pool *bufpool.Pool
					if mode == ModePool {
						var err error
						pool, err = bufpool.New(bufpool.Options{FrameSize: 16 << 10, Budget: 160 << 10, Engine: eng}) // 10 frames: every scan reads
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { pool.Close() })
						opts.Pool = pool
					}
					f, err := Open(path, opts)
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { f.Close() })
					return f, plan, pool
				}
				for _, k := range []ioengine.FaultKind{ioengine.FaultShort, ioengine.FaultEAGAIN} {
					f, plan, _ := open()
					// O_DIRECT short reads come in whole blocks (the engine
					// resubmits the rest at the offset reached), but the plan
					// halves requests of up to Bytes: a 4 KiB dictionary read
					// would be cut to an unaligned 2 KiB. A first scan loads
					// the dictionaries (kept by the File) without faults.
					if err := scanEqual(f, nil, ref); err != nil {
						t.Fatal(err)
					}
					plan.Add(ioengine.Fault{Kind: k, Op: ioengine.OpRead, Times: 5, Bytes: 4096})
					if err := scanEqual(f, nil, ref); err != nil {
						t.Errorf("%s: %v", k, err)
					}
					if n := plan.Injected(); n != 5 {
						t.Errorf("%s: %d faults injected, want 5", k, n)
					}
				}
				f, plan, pool := open()
				plan.Add(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead, After: 3, Times: -1})
				err := scanEqual(f, []string{"name", "id"}, ref)
				if err == nil || !errors.Is(err, unix.EIO) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "record batch") {
					t.Errorf("EIO: %v, want an error wrapping EIO naming %s and the record batch", err, path)
				}
				var re *ReadError
				if !errors.As(err, &re) {
					t.Errorf("EIO: %T is not a *ReadError", err)
				}
				if pool != nil {
					if st := pool.Stats(); st.Pinned != 0 {
						t.Errorf("%d frames pinned after the failed scan", st.Pinned)
					}
				}
			})
		}
	}
}

var _ arrow.RecordBatch
