package arrowscan

import (
	"fmt"
	"strings"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/ioengine"
)

// Mode is how a File reads its bytes. Every mode returns the same records.
type Mode uint8

const (
	// ModeMmap maps the file read-only and decodes with arrow-go's mapped
	// file reader, projecting columns out of each record batch.
	ModeMmap Mode = iota + 1
	// ModePread reads the byte ranges a scan needs with pread, through the
	// page cache.
	ModePread
	// ModeDirect reads the byte ranges a scan needs with O_DIRECT through
	// ioengine (io_uring or the syscall backend), as 4 KiB-aligned ranges
	// into aligned memory, ahead of the decoder.
	ModeDirect
	// ModePool reads through a shared bufpool.Pool (O_DIRECT frames) and
	// prefetches the next record batches' ranges.
	ModePool
)

var modeNames = [...]string{ModeMmap: "mmap", ModePread: "pread", ModeDirect: "direct", ModePool: "pool"}

func (m Mode) String() string {
	if m >= ModeMmap && m <= ModePool {
		return modeNames[m]
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}

// ParseMode parses "mmap", "pread", "direct" or "pool".
func ParseMode(s string) (Mode, error) {
	for m := ModeMmap; m <= ModePool; m++ {
		if s == modeNames[m] {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: unknown mode %q (want one of %s)", ErrBadOptions, s, strings.Join(modeNames[1:], ", "))
}

// DefaultPrefetch is the number of record batches read ahead of the
// decoder in direct mode when Options.Prefetch is 0 (docs/DECISIONS.md).
const DefaultPrefetch = 4

// DefaultPoolPrefetch is the read-ahead of pool mode when Options.Prefetch
// is 0. A pool scan announces the frames of every batch it will read
// (bufpool.Pool.Announce), so frames read ahead for one query stay until
// the others have been through them, and a prefetch that finds the pool
// full of announced frames is dropped instead of evicting them; that is
// what lets read-ahead go this deep without the drifting queries reading
// data twice (docs/DECISIONS.md).
const DefaultPoolPrefetch = 12

// ScanProbationPercent is the probation share PoolOptions gives a pool
// shared by concurrent scans. bufpool's default (10%) protects a working
// set from one-time scans; concurrent scans of the same files are the
// opposite case: a frame one query loads is wanted by the others a little
// later, and a small probation FIFO evicts it before they come (they then
// load it again). docs/DECISIONS.md has the measurements.
const ScanProbationPercent = 50

// PoolOptions returns o with the settings that suit a pool shared by
// concurrent scans where o leaves them zero: ScanProbationPercent; the
// arena's pages allocated at New (Prefault), since scans go through every
// frame, and registered with the engine's ring (FixedBuffers), so that
// loads do not pin and unpin the frames' pages for every read; and windows (bufpool.Options.Windows) where the platform and the
// number of frames allow them, so that a batch whose projected ranges span
// several frames is decoded from the pool's memory instead of a copy.
func PoolOptions(o bufpool.Options) bufpool.Options {
	o.Prefault = true
	o.FixedBuffers = true
	if o.ProbationPercent == 0 {
		o.ProbationPercent = ScanProbationPercent
	}
	frame, budget := int64(o.FrameSize), o.Budget
	if frame == 0 {
		frame = bufpool.DefaultFrameSize
	}
	if budget == 0 {
		budget = bufpool.DefaultBudget
	}
	if bufpool.WindowsSupported && frame > 0 && budget/frame <= bufpool.MaxWindowFrames {
		o.Windows = true
	}
	return o
}

// Options configure a File. The zero value is not usable only because Mode
// must be chosen; everything else has a default.
type Options struct {
	// Mode is how the file is read. Required.
	Mode Mode
	// Pool is the buffer pool for ModePool, shared by every file and scan
	// of the process. Required for ModePool, ignored otherwise.
	Pool *bufpool.Pool
	// Engine runs the reads of ModeDirect (and the metadata reads at Open in
	// ModePool). nil: the File makes its own engine with IOMode (ModeDirect)
	// or uses plain O_DIRECT preads (ModePool metadata), and closes it on
	// Close.
	Engine *ioengine.Engine
	// IOMode is the backend of the File's own engine when Engine is nil;
	// Auto follows RINGSTORE_IO_URING.
	IOMode ioengine.IOMode
	// Prefetch is how many record batches are read ahead of the decoder in
	// ModeDirect and ModePool. 0 means DefaultPrefetch (ModeDirect) or
	// DefaultPoolPrefetch (ModePool); a negative value turns read-ahead off
	// (each batch is read when the decoder asks).
	Prefetch int
	// TrustData skips the consistency check of every decoded column
	// (buffer sizes, bitmaps, offsets, dictionary indices: see
	// validateColumn). CAUTION: with it, a corrupt file can make code that reads
	// the records panic. For files this process wrote itself.
	TrustData bool
	// SkipSidecarCheck: do not check what is read against the file's
	// checksum sidecar (FILE.crc). Without it, a file that has a sidecar
	// has every byte range a mode reads (footer, metadata, dictionaries,
	// the projected ranges of each batch, widened to whole chunks) checked
	// against the sidecar's chunk checksums before it is decoded, and a
	// mismatch is a *CorruptError naming the file and the chunk's offset.
	// CAUTION: with it, a flipped byte in a batch's body decodes to a
	// different value without an error. A file without a sidecar is read
	// unchecked either way.
	SkipSidecarCheck bool
}

func (o *Options) String() string {
	return fmt.Sprintf("arrowscan.Options{Mode: %s, Pool: %v, Engine: %v, IOMode: %s, Prefetch: %d, TrustData: %v, SkipSidecarCheck: %v}",
		o.Mode, o.Pool != nil, o.Engine != nil, o.IOMode, o.Prefetch, o.TrustData, o.SkipSidecarCheck)
}

// withDefaults checks the options and fills in the defaults, in one place.
func (o Options) withDefaults() (Options, error) {
	if o.Mode < ModeMmap || o.Mode > ModePool {
		return o, fmt.Errorf("%w: Mode %s (want one of %s)", ErrBadOptions, o.Mode, strings.Join(modeNames[1:], ", "))
	}
	if o.Mode == ModePool && o.Pool == nil {
		return o, fmt.Errorf("%w: ModePool needs Options.Pool", ErrBadOptions)
	}
	if o.IOMode < ioengine.Auto || o.IOMode > ioengine.Syscall {
		return o, fmt.Errorf("%w: IOMode %s", ErrBadOptions, o.IOMode)
	}
	switch {
	case o.Prefetch == 0 && o.Mode == ModePool:
		o.Prefetch = DefaultPoolPrefetch
	case o.Prefetch == 0:
		o.Prefetch = DefaultPrefetch
	case o.Prefetch < 0:
		o.Prefetch = 0
	}
	return o, nil
}
