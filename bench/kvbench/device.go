package kvbench

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
)

// engineMaxInFlight is the most reads one ioengine engine keeps in flight
// on io_uring when opened with 256 SQ entries, as kv's and
// bench.RandomReads' engines both are: its CQ of 512 less the eventfd read
// the ring goroutine keeps armed. More requests wait in the engine.
const engineMaxInFlight = 2*256 - 1

// maxInFlight returns the most 4 KiB device reads a mode keeps in flight at
// once, with callers callers each reading batches of batch keys; 0 for a
// mode that reads nothing from the device.
//
//   - MultiGet on io_uring: a round reads at most one block per key still
//     pending (a data block is one 4 KiB frame), all in one engine call from
//     the caller's goroutine: callers × batch, up to the engine's limit.
//   - MultiGet on the syscall backend: kv's block cache reads its misses on
//     Options.ReadWorkers goroutines (1, the default the benchmark keeps),
//     one pread at a time: 1.
//   - Get on callers × batch goroutines: one block read each at a time.
//   - the device: bench.RandomReads with callers callers submitting batch
//     reads each and waiting for all, on an engine like kv's.
//   - Pebble: one pread per goroutine at a time (callers goroutines for the
//     serial loop, callers × batch for the parallel one).
func maxInFlight(system, access, backend string, batch, callers int) int {
	switch {
	case access == ModeMultiGetHot:
		return 0
	case system == SystemRingstore && access == ModeMultiGet && backend == "syscall":
		return 1
	case system == SystemRingstore || system == SystemDevice:
		return min(callers*batch, engineMaxInFlight)
	case access == ModeGetSerial:
		return callers
	default:
		return callers * batch
	}
}

// deviceMeasurement says how the device's limit is measured, at the shape
// of MultiGet on io_uring: callers × batches of batch reads.
func deviceMeasurement(batch, callers int) string {
	return fmt.Sprintf("4 KiB O_DIRECT reads at random 4 KiB-aligned offsets of ringstore's SST files (the data the modes read, on the same file system), on io_uring by %d callers, each submitting %d and waiting for all %d: at most %d in flight, the most MultiGet on io_uring keeps (%d callers × at most one block per key of a batch of %d, on an engine of the same size)",
		callers, batch, batch, maxInFlight(SystemDevice, ModeDevice, "uring", batch, callers), callers, batch)
}

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

// deviceRead measures the device: batches of c.Batch random 4 KiB
// O_DIRECT reads over the SST files under c.Dir by c.Callers callers.
func deviceRead(c ChildConfig) (bench.Trial, error) {
	paths, err := sstFiles(c.Dir)
	if err != nil {
		return bench.Trial{}, err
	}
	mode := ioengine.URing
	if c.IOMode == "syscall" {
		mode = ioengine.Syscall
	}
	var io0, io1 int64
	var ioErr error
	tr, err := bench.RandomReads{Paths: paths, Batch: c.Batch, Callers: c.Callers, Seed: c.Seed, Mode: mode,
		Start: func() { io0, _ = readProcIO() },
		Stop:  func() { io1, ioErr = readProcIO() },
	}.Run(c.Duration, c.WarmupFrac)
	if err != nil {
		return tr, err
	}
	tr.Extra = map[string]float64{}
	if ioErr == nil {
		tr.Extra[XReadBytes] = float64(io1 - io0)
	}
	return tr, nil
}
