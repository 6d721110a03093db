package bench

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// RandomReads is the device's measurement the benchmarks read their floors
// from: 4 KiB O_DIRECT reads at random 4 KiB-aligned offsets of Paths (all
// their blocks together), by Callers goroutines each submitting Batch reads
// and waiting for all of them, on Mode's backend. Start and Stop, if set,
// run as Timed's do.
type RandomReads struct {
	Paths          []string
	Batch, Callers int
	Seed           uint64
	Mode           ioengine.IOMode // URing: the run fails if the engine is not on io_uring
	Start, Stop    func()
}

// Run measures for d after a warm-up of warm × d.
func (r RandomReads) Run(d time.Duration, warm float64) (Trial, error) {
	type span struct {
		fd     int
		blocks uint64
	}
	var spans []span
	var total uint64
	for _, p := range r.Paths {
		f, err := directio.OpenFile(p, os.O_RDONLY, 0)
		if err != nil {
			return Trial{}, err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return Trial{}, err
		}
		if b := uint64(st.Size() / directio.BlockSize); b > 0 {
			spans = append(spans, span{fd: int(f.Fd()), blocks: b})
			total += b
		}
	}
	batch, callers := max(1, r.Batch), max(1, r.Callers)
	if total < uint64(batch) {
		return Trial{}, fmt.Errorf("random reads: %v hold %d blocks, fewer than a batch of %d", r.Paths, total, batch)
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
		return spans[i].fd, int64(b-starts[i]) * directio.BlockSize
	}
	e, err := ioengine.New(ioengine.Options{Mode: r.Mode, Entries: 256})
	if err != nil {
		return Trial{}, err
	}
	defer e.Close()
	if r.Mode == ioengine.URing && e.Backend() != ioengine.BackendURing {
		return Trial{}, fmt.Errorf("wanted io_uring, got %s: %s", e.Backend(), e.FallbackReason())
	}
	mem, err := directio.Alloc(batch * callers * directio.BlockSize)
	if err != nil {
		return Trial{}, err
	}
	defer directio.Free(mem)
	reqs := make([][]ioengine.Request, callers)
	rngs := make([]*rand.Rand, callers)
	for g := range reqs {
		reqs[g] = make([]ioengine.Request, batch)
		for i := range reqs[g] {
			at := (g*batch + i) * directio.BlockSize
			reqs[g][i] = ioengine.Request{Op: ioengine.OpRead, Buf: mem[at : at+directio.BlockSize]}
		}
		rngs[g] = rand.New(rand.NewPCG(r.Seed, uint64(g)))
	}
	// The device's own count of the reads in flight, over the span Timed
	// measures (its last Start and Stop: the warm-up's come first).
	var dev DeviceSpan
	dir := filepath.Dir(r.Paths[0])
	start := func() {
		if r.Start != nil {
			r.Start()
		}
		dev.Start(dir)
	}
	stop := func() {
		dev.End()
		if r.Stop != nil {
			r.Stop()
		}
	}
	t := Timed{Workers: callers, Start: start, Stop: stop, Step: func(g int) (int64, time.Duration, error) {
		for i := range reqs[g] {
			reqs[g][i].Fd, reqs[g][i].Off = pick(rngs[g].Uint64N(total))
		}
		t0 := time.Now()
		err := e.ReadBatch(reqs[g])
		return int64(batch), time.Since(t0), err
	}}
	tr, err := t.RunWarm(d, warm)
	if d := dev.Depth(tr.Seconds); err == nil && d > 0 {
		if tr.Extra == nil {
			tr.Extra = map[string]float64{}
		}
		tr.Extra[ExtraDeviceReadsInFlight] = d
		if b := dev.Busy(tr.Seconds); b > 0 {
			tr.Extra[ExtraDeviceBusy] = b
		}
	}
	return tr, err
}

// Trial.Extra keys of what the device counted during the measured part
// (DeviceCounts), where it was measured: the mean number of reads it had
// in flight; the share of the part it had any request in flight; the
// bytes it wrote.
const (
	ExtraDeviceReadsInFlight = "device_reads_in_flight"
	ExtraDeviceBusy          = "device_busy"
	ExtraDeviceWrittenBytes  = "device_written_bytes"
)

// DeviceCounts is what the block layer counted of one device
// (/sys/dev/block/MAJ:MIN/stat): its completed reads and their time from
// issue to completion summed over them; its completed writes and the
// bytes they wrote; and the time it had any request in flight. Over a
// span, ΔInFlight ÷ the span is the mean number of reads the device had
// in flight (Little's law), as the device saw them: a read's time between
// its completion and its reaping by the program is not in it. ΔBusy ÷ the
// span is the share of it the device was doing anything.
type DeviceCounts struct {
	IOs      uint64
	InFlight time.Duration
	// Writes, WrittenBytes and Busy: Full says they were read (a stat
	// file of 10 fields or more).
	Writes       uint64
	WrittenBytes uint64
	Busy         time.Duration
	Full         bool
}

// DeviceSpan is the device's own counts over a span: Start at its
// beginning, End at its end, then Depth, Busy and WrittenBytes.
type DeviceSpan struct {
	dir      string
	from, to DeviceCounts
	ok       bool
}

// Start reads the counts of the block device holding dir.
func (s *DeviceSpan) Start(dir string) { s.dir = dir; s.from, s.ok = ReadDeviceCounts(dir) }

// End reads them again.
func (s *DeviceSpan) End() {
	to, ok := ReadDeviceCounts(s.dir)
	s.to, s.ok = to, s.ok && ok && to.InFlight >= s.from.InFlight
}

// Depth is the mean number of reads the device had in flight over the
// span, seconds long (DeviceCounts); 0 where the counts could not be read.
func (s *DeviceSpan) Depth(seconds float64) float64 {
	if !s.ok || seconds <= 0 {
		return 0
	}
	return (s.to.InFlight - s.from.InFlight).Seconds() / seconds
}

// Busy is the share of the span, seconds long, the device had any request
// in flight, at most 1 (its io_ticks count whole milliseconds); 0 where
// the counts could not be read.
func (s *DeviceSpan) Busy(seconds float64) float64 {
	if !s.full() || seconds <= 0 || s.to.Busy < s.from.Busy {
		return 0
	}
	return min(1, (s.to.Busy-s.from.Busy).Seconds()/seconds)
}

// WrittenBytes is what the device wrote over the span; 0 where the counts
// could not be read.
func (s *DeviceSpan) WrittenBytes() float64 {
	if !s.full() || s.to.WrittenBytes < s.from.WrittenBytes {
		return 0
	}
	return float64(s.to.WrittenBytes - s.from.WrittenBytes)
}

func (s *DeviceSpan) full() bool { return s.ok && s.from.Full && s.to.Full }
