package bufpool

import (
	"errors"
	"fmt"
	"log"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// Errors. Every error the pool returns wraps one of these (or, for a failed
// load, a *ReadError that unwraps to the engine's error and its errno).
var (
	ErrBadOptions    = errors.New("bufpool: bad options")
	ErrClosed        = errors.New("bufpool: pool closed")
	ErrUnknownFile   = errors.New("bufpool: file not registered")
	ErrBadFile       = errors.New("bufpool: bad file")
	ErrBadSpan       = errors.New("bufpool: bad span")
	ErrTooManyFrames = errors.New("bufpool: pin needs more frames than the pool has")
	ErrPinned        = errors.New("bufpool: frames still pinned")
	ErrShortRead     = errors.New("bufpool: file shorter than its registered size")
	ErrNotCovered    = errors.New("bufpool: range not covered by the frames")
	ErrNotWindowed   = errors.New("bufpool: range not mapped in a window")
)

// Limits of the options.
const (
	// MinFrames is the fewest frames a pool may have: Budget / FrameSize
	// below it is an error.
	MinFrames = 8
	// MaxFrames bounds the frame table (each frame costs about 200 bytes of
	// Go heap besides its FrameSize bytes of arena).
	MaxFrames = 1 << 24
	// MaxFrameSize is the largest frame; one frame is one engine request.
	MaxFrameSize = 1 << 30
	// MaxIOWorkers bounds Options.IOWorkers.
	MaxIOWorkers = 256
)

// Defaults filled in by New for zero fields.
const (
	DefaultFrameSize        = 256 << 10
	DefaultBudget           = 256 << 20
	DefaultIOWorkers        = 2
	DefaultMaxBatch         = 64
	DefaultProbationPercent = 10
)

// Options configure a Pool. The zero value is a 256 MiB pool of 256 KiB
// frames with two I/O goroutines on an engine of its own that follows
// RINGSTORE_IO_URING.
type Options struct {
	// FrameSize is the bytes per frame, a multiple of 4096 (directio's
	// BlockSize). Frame k of a file covers [k*FrameSize, (k+1)*FrameSize).
	// Default 256 KiB.
	FrameSize int
	// Budget is the hard memory budget of all frames in bytes: the pool
	// has Budget / FrameSize frames (at least MinFrames) in one arena and
	// never allocates data memory beyond it. Default 256 MiB.
	Budget int64
	// IOWorkers is the number of I/O goroutines that issue loads. With the
	// syscall backend each runs one read at a time, so this is also the
	// read parallelism there. Default 2.
	IOWorkers int
	// Engine runs the loads. nil: the pool creates its own with IOMode and
	// closes it on Close. A caller's engine is not closed by the pool.
	Engine *ioengine.Engine
	// IOMode is the backend of the pool's own engine (when Engine is nil);
	// Auto follows RINGSTORE_IO_URING.
	IOMode ioengine.IOMode
	// MaxBatch is the most loads an I/O goroutine hands to the engine in
	// one call. Default 64. (A Pin that issues its own loads hands all of
	// them over in one call.)
	MaxBatch int
	// ProbationPercent is the share of frames the probation FIFO aims for
	// (S3-FIFO's small queue), 1 to 90. Default 10.
	ProbationPercent int
	// Windows maps each registered file's resident frames, in file order,
	// into a range of addresses of its own, so that Window can show a run
	// of consecutive pinned frames as one slice without copying them. Each
	// load then costs a memory mapping (about what copying the frame once
	// costs), paid once however many readers use the frame. The arena is
	// a memfd mapped shared instead of anonymous memory. Linux only; at
	// most MaxWindowFrames frames. Where the kernel or a sandbox refuses
	// the memfd, New makes the pool without windows and says why through
	// Logf; Pool.Options then reports Windows false.
	Windows bool
	// Prefault allocates every page of the arena in New, so that loads
	// never stop to fault memory in (and zero it) on their first use of a
	// frame. New then costs about what touching Budget bytes costs; a pool
	// that lives as long as the process pays it once instead of in its
	// first pass over the arena.
	Prefault bool
	// FixedBuffers registers the arena with the engine's ring
	// (ioengine.Engine.RegisterMemory), so that loads are issued as
	// READ_FIXED: the kernel pins the arena's pages once instead of pinning
	// and unpinning a frame's pages for every read. Registered pages stay in
	// memory until Close and count against RLIMIT_MEMLOCK unless the process
	// has CAP_IPC_LOCK. With Prefault the whole arena is registered in New;
	// without it, its first 4 MiB, and then more as the pool first uses its
	// frames (each time as much again as is registered), so that the memory
	// a pool holds grows with its use, at most twice over; a frame not yet
	// registered is read plain.
	// Where the registration is refused (that limit, a kernel that cannot
	// register the memory, the syscall backend), New makes the pool without
	// it, says why through Logf, and Stats reports FixedBuffers false with
	// the reason in FixedBuffersOff.
	FixedBuffers bool
	// Logf receives the engine's fallback reason and the pool's rare
	// notices (the first failed prefetch). Default: the standard logger.
	Logf func(format string, args ...any)

	// demandViaWorkers, a test hook, sends a Pin's own misses to the I/O
	// goroutines, as prefetches go, instead of issuing them from the Pin's
	// goroutine (the default on io_uring: the caller waits anyway, and the
	// hop to a worker and back is two goroutine hand-offs). The syscall
	// backend always uses the workers, whose parallel preads are its only
	// read parallelism.
	demandViaWorkers bool
}

// String returns the options as New uses them (zero fields shown as 0;
// see withDefaults).
func (o *Options) String() string {
	engine := "own, mode " + o.IOMode.String()
	if o.Engine != nil {
		engine = "caller's, " + o.Engine.Backend().String()
	}
	frames := int64(0)
	if o.FrameSize > 0 {
		frames = o.Budget / int64(o.FrameSize)
	}
	return fmt.Sprintf("bufpool.Options{FrameSize: %d, Budget: %d (%d frames), IOWorkers: %d, Engine: %s, MaxBatch: %d, ProbationPercent: %d, Windows: %v, Prefault: %v, FixedBuffers: %v}",
		o.FrameSize, o.Budget, frames, o.IOWorkers, engine, o.MaxBatch, o.ProbationPercent, o.Windows, o.Prefault, o.FixedBuffers)
}

// withDefaults returns o with every zero field set to its default. It is
// the only place defaults are filled in.
func (o Options) withDefaults() Options {
	if o.FrameSize == 0 {
		o.FrameSize = DefaultFrameSize
	}
	if o.Budget == 0 {
		o.Budget = DefaultBudget
	}
	if o.IOWorkers == 0 {
		o.IOWorkers = DefaultIOWorkers
	}
	if o.MaxBatch == 0 {
		o.MaxBatch = DefaultMaxBatch
	}
	if o.ProbationPercent == 0 {
		o.ProbationPercent = DefaultProbationPercent
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o
}

// validate checks options that withDefaults has filled in and returns the
// number of frames.
func (o *Options) validate() (int, error) {
	bad := func(field string, format string, args ...any) (int, error) {
		return 0, fmt.Errorf("%w: %s: %s", ErrBadOptions, field, fmt.Sprintf(format, args...))
	}
	switch {
	case o.FrameSize < 0 || o.FrameSize%directio.BlockSize != 0:
		return bad("FrameSize", "%d is not a positive multiple of %d", o.FrameSize, directio.BlockSize)
	case o.FrameSize > MaxFrameSize:
		return bad("FrameSize", "%d exceeds %d", o.FrameSize, MaxFrameSize)
	case o.Budget < 0:
		return bad("Budget", "%d is negative", o.Budget)
	case o.IOWorkers < 0 || o.IOWorkers > MaxIOWorkers:
		return bad("IOWorkers", "%d is not in 1..%d", o.IOWorkers, MaxIOWorkers)
	case o.MaxBatch < 0:
		return bad("MaxBatch", "%d is negative", o.MaxBatch)
	case o.ProbationPercent < 0 || o.ProbationPercent > 90:
		return bad("ProbationPercent", "%d is not in 1..90", o.ProbationPercent)
	case o.IOMode < ioengine.Auto || o.IOMode > ioengine.Syscall:
		return bad("IOMode", "%s is not a known mode", o.IOMode)
	}
	frames := o.Budget / int64(o.FrameSize)
	switch {
	case frames < MinFrames:
		return bad("Budget", "%d bytes holds %d frames of %d bytes; the pool needs at least %d (Budget >= %d)",
			o.Budget, frames, o.FrameSize, MinFrames, int64(MinFrames)*int64(o.FrameSize))
	case frames > MaxFrames:
		return bad("Budget", "%d bytes makes %d frames of %d bytes; at most %d (use larger frames)",
			o.Budget, frames, o.FrameSize, MaxFrames)
	case o.Windows && !WindowsSupported:
		return bad("Windows", "needs Linux")
	case o.Windows && frames > MaxWindowFrames:
		return bad("Windows", "%d bytes makes %d frames of %d bytes; windows allow at most %d (use larger frames)",
			o.Budget, frames, o.FrameSize, MaxWindowFrames)
	}
	return int(frames), nil
}
