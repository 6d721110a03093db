package kvbench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	type callerState struct {
		rng  *rand.Rand
		reqs []ioengine.Request
	}
	states := make([]callerState, callers)
	for g := range states {
		reqs := make([]ioengine.Request, batch)
		for i := range reqs {
			at := (g*batch + i) * deviceBlock
			reqs[i] = ioengine.Request{Op: ioengine.OpRead, Buf: mem[at : at+deviceBlock]}
		}
		states[g] = callerState{rng: rand.New(rand.NewPCG(c.Seed, uint64(g))), reqs: reqs}
	}
	var io0, io1 int64
	var ioErr error
	t := bench.Timed{
		Workers: callers,
		Step: func(g int) (int64, time.Duration, error) {
			s := &states[g]
			for i := range s.reqs {
				s.reqs[i].Fd, s.reqs[i].Off = pick(s.rng.Uint64N(total))
			}
			t0 := time.Now()
			err := e.ReadBatch(s.reqs)
			return int64(batch), time.Since(t0), err
		},
		Start: func() { io0, _ = readProcIO() },
		Stop:  func() { io1, ioErr = readProcIO() },
	}
	tr, err := t.RunWarm(c.Duration, c.WarmupFrac)
	if err != nil {
		return tr, err
	}
	tr.Extra = map[string]float64{}
	if ioErr == nil {
		tr.Extra[XReadBytes] = float64(io1 - io0)
	}
	return tr, nil
}
