package nexmark

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/crc32c"
	"github.com/ringstore/ringstore/ioengine"
)

// BesideReads are reads a run makes beside its state's, as a measuring
// instrument: for each event a stateful worker processes (Result's
// WorkerEvents, not the stream's events it filters out), PerEvent reads of
// Size bytes at random Size-aligned offsets of File, O_DIRECT, on the
// worker's own engine (inline on io_uring, into memory registered with it,
// as the state's reads past its cache are). A worker submits a
// mini-batch's share when it starts the batch's Load and, when it starts
// the next batch, waits for them and checksums what they read, as the
// state's reads are checked. A fraction of a read carries to the next
// batch.
//
// They price a read on the CPUs the query runs on: a run whose state is
// all cached, with the reads a smaller cache adds beside it, does the
// cached run's work and those reads' and nothing else (no cache to fill,
// no read-ahead to keep). The nexmark benchmark's large regime reads its
// reads ceiling from such a run.
type BesideReads struct {
	File     string
	PerEvent float64 // at most MaxBesidePerEvent
	// Size is each read's bytes: a multiple of 4 KiB, at most
	// MaxBesideSize; 0: 4 KiB. The state's reads past its cache coalesce
	// adjacent blocks into one read, so a read of its is often larger than
	// a block.
	Size int
}

// MaxBesidePerEvent bounds BesideReads.PerEvent: more reads an event than
// any query's state makes. MaxBesideSize bounds BesideReads.Size: the
// state's largest coalesced read.
const (
	MaxBesidePerEvent = 16
	MaxBesideSize     = 256 << 10
)

// size is b's read size.
func (b BesideReads) size() int {
	if b.Size == 0 {
		return directio.BlockSize
	}
	return b.Size
}

func (b BesideReads) check() error {
	switch {
	case b.PerEvent == 0:
		return nil
	case b.PerEvent < 0 || b.PerEvent > MaxBesidePerEvent || math.IsNaN(b.PerEvent):
		return fmt.Errorf("nexmark: %v reads beside each event: at least 0 and at most %d", b.PerEvent, MaxBesidePerEvent)
	case b.File == "":
		return fmt.Errorf("nexmark: %v reads beside each event, and no file to read them from", b.PerEvent)
	case b.Size < 0 || b.Size%directio.BlockSize != 0 || b.Size > MaxBesideSize:
		return fmt.Errorf("nexmark: reads beside of %d bytes: a multiple of %d, at most %d", b.Size, directio.BlockSize, MaxBesideSize)
	}
	return nil
}

// besideReader is one worker's BesideReads: reqs are its requests, as
// many as a batch can need, into mem; pend the ones in flight.
type besideReader struct {
	f        *os.File
	size     int    // each read's bytes
	slots    uint64 // the file's size-aligned reads
	perEvent float64
	mem      []byte
	region   *ioengine.Region // nil: the engine could not register mem
	reqs     []ioengine.Request
	pend     *ioengine.Pending  // nil: none in flight
	inFlight []ioengine.Request // pend's
	rng      *rand.Rand
	carry    float64 // the fraction of a read owed to the next batch
	reads    int64
}

// openBesideReader opens worker i's reader of b for batches of up to batch
// events, on eng.
func openBesideReader(b BesideReads, i, batch int, eng *ioengine.Engine) (*besideReader, error) {
	f, err := directio.OpenFile(b.File, os.O_RDONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("nexmark: reads beside: %w", err)
	}
	size := b.size()
	st, err := f.Stat()
	if err == nil && st.Size() < int64(size) {
		err = fmt.Errorf("%s holds %d bytes, less than a read of %d", b.File, st.Size(), size)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("nexmark: reads beside: %w", err)
	}
	n := int(math.Ceil(b.PerEvent*float64(batch))) + 1
	mem, err := directio.Alloc(n * size)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("nexmark: reads beside: %w", err)
	}
	r := &besideReader{f: f, size: size, slots: uint64(st.Size() / int64(size)), perEvent: b.PerEvent, mem: mem,
		rng: rand.New(rand.NewPCG(uint64(i), 0x6265736964))}
	// Registered where the engine can, as the state's direct memory is:
	// the reads go as READ_FIXED, paying no page pinning each.
	r.region, _ = eng.RegisterMemory(mem)
	r.reqs = make([]ioengine.Request, n)
	for j := range r.reqs {
		r.reqs[j] = ioengine.Request{Op: ioengine.OpRead, Fd: int(f.Fd()), Buf: mem[j*size : (j+1)*size]}
	}
	return r, nil
}

// batch finishes the reads of the batch before and starts those of a
// batch of events.
func (r *besideReader) batch(eng *ioengine.Engine, events int) error {
	if err := r.finish(); err != nil {
		return err
	}
	r.carry += r.perEvent * float64(events)
	n := min(int(r.carry), len(r.reqs))
	r.carry -= float64(n)
	if n == 0 {
		return nil
	}
	reqs := r.reqs[:n]
	for j := range reqs {
		reqs[j].Off = int64(r.rng.Uint64N(r.slots)) * int64(r.size)
	}
	p, err := eng.Start(reqs)
	if err != nil {
		return fmt.Errorf("nexmark: reads beside: %w", err)
	}
	r.pend, r.inFlight, r.reads = p, reqs, r.reads+int64(n)
	return nil
}

// finish waits for the reads in flight and checksums their blocks.
func (r *besideReader) finish() error {
	if r.pend == nil {
		return nil
	}
	p := r.pend
	r.pend = nil
	if err := p.Wait(); err != nil {
		return fmt.Errorf("nexmark: reads beside: %w", err)
	}
	for _, q := range r.inFlight {
		crc32c.Checksum(q.Buf)
	}
	return nil
}

// close waits for the reads in flight and lets go of the file and memory.
func (r *besideReader) close() error {
	err := r.finish()
	if r.region != nil {
		if uerr := r.region.Unregister(); err == nil {
			err = uerr
		}
	}
	if ferr := directio.Free(r.mem); err == nil {
		err = ferr
	}
	if cerr := r.f.Close(); err == nil {
		err = cerr
	}
	return err
}
