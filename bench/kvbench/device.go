package kvbench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

const deviceBlock = 4096

// deviceMeasurement says how the device's limit is measured.
const deviceMeasurement = "4 KiB O_DIRECT reads at random 4 KiB-aligned offsets of ringstore's SST files (the data the modes read, on the same file system), in batches of 64 on io_uring (submit 64, wait for all 64), one caller: readbench's uring-b64, the device's QD64 IOPS"

// sstFiles returns the .sst files under dir, largest first.
func sstFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".sst") {
			files = append(files, p)
		}
		return nil
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("no .sst files under %s", dir)
	}
	slices.Sort(files)
	return files, err
}

// deviceRead measures the device: batches of 64 random 4 KiB O_DIRECT
// reads over the SST files under c.Dir, on io_uring.
func deviceRead(c ChildConfig) (bench.Trial, error) {
	paths, err := sstFiles(c.Dir)
	if err != nil {
		return bench.Trial{}, err
	}
	type span struct {
		fd     int
		blocks uint64
	}
	var spans []span
	var total uint64
	for _, p := range paths {
		f, err := directio.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			return bench.Trial{}, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return bench.Trial{}, err
		}
		if b := uint64(st.Size() / deviceBlock); b > 0 {
			spans = append(spans, span{fd: int(f.Fd()), blocks: b})
			total += b
		}
	}
	if total < 64 {
		return bench.Trial{}, fmt.Errorf("the SST files under %s hold %d blocks: too few", c.Dir, total)
	}
	// pick maps a block number of the concatenation to a file and offset.
	starts := make([]uint64, len(spans))
	var acc uint64
	for i, s := range spans {
		starts[i] = acc
		acc += s.blocks
	}
	pick := func(b uint64) (int, int64) {
		i, found := slices.BinarySearch(starts, b)
		if !found {
			i--
		}
		return spans[i].fd, int64(b-starts[i]) * deviceBlock
	}
	mode := ioengine.URing
	if c.IOMode == "syscall" {
		mode = ioengine.Syscall
	}
	e, err := ioengine.New(ioengine.Options{Mode: mode, Entries: 256})
	if err != nil {
		return bench.Trial{}, err
	}
	defer e.Close()
	if mode == ioengine.URing && e.Backend() != ioengine.BackendURing {
		return bench.Trial{}, fmt.Errorf("wanted io_uring, got %s: %s", e.Backend(), e.FallbackReason())
	}
	batch := max(1, c.Batch)
	callers := max(1, c.Callers)
	mem, err := directio.Alloc(batch * callers * deviceBlock)
	if err != nil {
		return bench.Trial{}, err
	}
	defer directio.Free(mem)
	run := func(d time.Duration) (bench.Trial, error) {
		var stop atomic.Bool
		var wg sync.WaitGroup
		ops := make([]int64, callers)
		lats := make([]*bench.Latencies, callers)
		errs := make([]error, callers)
		io0, _ := readProcIO()
		cpu0, t0 := bench.CPUTime(), time.Now()
		for g := range callers {
			lats[g] = bench.NewLatencies(1 << 20)
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(c.Seed, uint64(g)))
				reqs := make([]ioengine.Request, batch)
				for i := range reqs {
					at := (g*batch + i) * deviceBlock
					reqs[i] = ioengine.Request{Op: ioengine.OpRead, Buf: mem[at : at+deviceBlock]}
				}
				for !stop.Load() {
					for i := range reqs {
						reqs[i].Fd, reqs[i].Off = pick(rng.Uint64N(total))
					}
					t := time.Now()
					if err := e.ReadBatch(reqs); err != nil {
						errs[g] = err
						return
					}
					lats[g].Add(time.Since(t))
					ops[g] += int64(batch)
				}
			}()
		}
		time.Sleep(d)
		stop.Store(true)
		wg.Wait()
		tr := bench.Trial{Seconds: time.Since(t0).Seconds(), CPUSeconds: bench.CPUTime() - cpu0, Extra: map[string]float64{}}
		for _, err := range errs {
			if err != nil {
				return tr, err
			}
		}
		all := bench.NewLatencies(0)
		for g := range callers {
			tr.Ops += ops[g]
			all.Merge(lats[g])
		}
		tr.P50us, tr.P99us = all.Percentile(50), all.Percentile(99)
		if io1, err := readProcIO(); err == nil {
			tr.Extra[XReadBytes] = float64(io1 - io0)
		}
		return tr, nil
	}
	if warm := time.Duration(float64(c.Duration) * c.WarmupFrac); warm > 0 {
		if _, err := run(warm); err != nil {
			return bench.Trial{}, err
		}
	}
	return run(c.Duration)
}
