package wal

import (
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// Options configure a Log. The zero value is safe: 64 MiB segments, every
// acknowledged append durable, io_uring unless RINGSTORE_IO_URING says
// otherwise.
type Options struct {
	// SegmentSize is the fixed size of every new segment file, a multiple
	// of 4096 and at least 64 KiB. Default 64 MiB. Existing segments keep
	// the size their header records.
	SegmentSize int64
	// MaxEntrySize bounds one payload. Default 16 MiB, and never more than
	// fits in a segment.
	MaxEntrySize int
	// MaxGroupBytes bounds the bytes one group commit writes; appends that
	// arrive while a group is flushing wait for the next. A single append
	// larger than this goes in a group of its own. Default 4 MiB.
	MaxGroupBytes int
	// PipelineDepth is how many groups may be in flight at once: the next
	// group is written while the previous one's flush runs. Default 1 (2 on
	// SQPOLL; docs/DECISIONS.md has the measurements). At depth 1 on
	// io_uring the committer flushes through an inline engine of its own
	// (ioengine Engine.NewInline: submitted and waited for on its own
	// thread).
	PipelineDepth int
	// OnGroupWrite, when set, is called on the log's committer goroutine
	// each time a group commit has been formed, just before its write and
	// flush are submitted, with the number of append requests (Append,
	// AppendBatch or StartAppendBatch calls) in it: the requests queued by
	// then are in it or in a group before it, and none of them is durable
	// yet. It must return quickly and must not call the Log. kv uses it to
	// wake its memtable inserter, which then works while the flush runs.
	OnGroupWrite func(requests int)
	// IOMode chooses the backend of the engine the log opens when Engine
	// is nil; Auto follows RINGSTORE_IO_URING.
	IOMode ioengine.IOMode
	// Engine, when set, is used for all I/O and not closed by Close.
	Engine *ioengine.Engine
	// LazyVerify defers the full check of sealed segments (every entry and
	// the data CRC) from Open to the first read of each segment. Headers,
	// trailers and the sequence of segments are always checked at Open.
	LazyVerify bool
	// RecycleSegments reuses the files of segments TruncateFront removes
	// (two at most are kept) for the segments that come next, so that group
	// flushes overwrite written blocks instead of converting the unwritten
	// extents fallocate leaves. Each segment then records, in a table
	// before its trailer page, a checksum of every 512-byte sector its file
	// held before it (the stale table, doc.go), which lets recovery tell a
	// sector the segment never wrote from a torn one as zeros do in a fresh
	// segment; entries hold 0.8% less of each segment for it, and the
	// committer keeps about 1 MiB per 64 MiB segment. New segments have
	// format version 2, which versions before it cannot read. Only a
	// segment this Log made and sealed when it was full is reused. It
	// needs PipelineDepth 1 (the default then, SQPOLL too): every group
	// write ends with zeros to the end of its 4 KiB page, where the next
	// group begins. A Reader or read-only Log beside the writer may find a
	// truncated segment's file rewritten under it (damage, to that reader)
	// where without it the file would have been removed.
	RecycleSegments bool
	// ReadOnly opens the log to read it and changes nothing on disk: the
	// files are opened read-only, no lock is taken (so it works on a
	// read-only file system and beside a writer that has the log open), no
	// file is created, and recovery cuts nothing: a torn tail of the last
	// segment is simply not read, segments an interrupted TruncateFront
	// left are skipped. Damage is the same error as for a writer. Appends
	// and truncations fail with ErrOpenedReadOnly. Beside a running writer it
	// reads what the writer had written when Open scanned the segment (not
	// only what was flushed); entries written later are not seen.
	ReadOnly bool
	// Logf receives what recovery did (a torn tail cut, stray files
	// removed). Default: the standard logger.
	Logf func(format string, args ...any)

	// Unsafe holds knobs that trade durability for speed.
	Unsafe UnsafeOptions

	// The fields below are for tests and measurements only (set in package
	// wal's tests, or through export_test.go); each keeps a path the
	// defaults do not take, so a test can compare it with the default.

	// linkedFdatasync makes every durable write on io_uring a write and an
	// fdatasync linked after it (two requests) instead of one write with
	// RWF_DSYNC (docs/DECISIONS.md). The syscall backend always does both:
	// pwrite, then fdatasync.
	linkedFdatasync bool
	// zeroFillSegments writes each new segment full of zeros (O_DIRECT,
	// ahead of need, the first one too) before entries go in, so that group
	// flushes overwrite written blocks instead of converting the unwritten
	// extents fallocate leaves. It writes every segment twice for no gain
	// measured end to end (docs/DECISIONS.md).
	zeroFillSegments bool
	// noGather turns off the short wait (a quarter of the last flush,
	// extended while writers keep coming back up to one flush, and never
	// more than 1 ms) in which the committer lets the writers it just
	// acknowledged append again before it takes the next group.
	noGather bool
	// noInlineFlush keeps the group flushes of pipeline depth 1 on the
	// log's engine instead of an inline io_uring engine of the committer's
	// own.
	noInlineFlush bool
	// trace, for the crash-state tests, sees every change to the files.
	trace func(traceEvent)
	// queued, for tests, is called (under the log's mutex) each time a
	// request is queued for the committer.
	queued func()
}

// UnsafeOptions can lose acknowledged data.
//
// CAUTION: with any of these set, an acknowledged append may be lost in a
// power failure or kernel crash. Use them for benchmarks and tests only.
type UnsafeOptions struct {
	// NoSync skips the fdatasync of each group commit. THIS IS UNSAFE.
	NoSync bool
}

const (
	defaultSegmentSize   = 64 << 20
	minSegmentSize       = 64 << 10
	defaultMaxEntrySize  = 16 << 20
	defaultMaxGroupBytes = 4 << 20
)

func (o *Options) String() string {
	return fmt.Sprintf("wal.Options{SegmentSize: %d, MaxEntrySize: %d, MaxGroupBytes: %d, PipelineDepth: %d, IOMode: %s, SharedEngine: %v, LazyVerify: %v, RecycleSegments: %v, ReadOnly: %v, Unsafe.NoSync: %v}",
		o.SegmentSize, o.MaxEntrySize, o.MaxGroupBytes, o.PipelineDepth, o.IOMode, o.Engine != nil, o.LazyVerify, o.RecycleSegments, o.ReadOnly, o.Unsafe.NoSync)
}

// segmentLimit is where entries end in every new segment: before the stale
// table when segments may be recycled, so that a request fits a recycled
// segment whenever it fits a fresh one.
func (o *Options) segmentLimit() int64 {
	return format.SegmentHeader{Size: uint64(o.SegmentSize), Reusable: o.RecycleSegments}.DataLimit()
}

// withDefaults fills in defaults and checks the options.
func (o Options) withDefaults() (Options, error) {
	if o.SegmentSize == 0 {
		o.SegmentSize = defaultSegmentSize
	}
	if o.SegmentSize < minSegmentSize || o.SegmentSize%4096 != 0 || o.SegmentSize > 1<<32 {
		return o, fmt.Errorf("wal: segment size %d must be a multiple of 4096 between %d and %d", o.SegmentSize, minSegmentSize, int64(1)<<32)
	}
	capacity := int(o.segmentLimit()) - SegmentHeaderSize - EntryHeaderSize
	if o.MaxEntrySize == 0 {
		o.MaxEntrySize = defaultMaxEntrySize
	}
	if o.MaxEntrySize < 0 {
		return o, fmt.Errorf("wal: negative MaxEntrySize %d", o.MaxEntrySize)
	}
	o.MaxEntrySize = min(o.MaxEntrySize, capacity)
	if o.MaxGroupBytes == 0 {
		o.MaxGroupBytes = defaultMaxGroupBytes
	}
	if o.MaxGroupBytes < 0 {
		return o, fmt.Errorf("wal: negative MaxGroupBytes %d", o.MaxGroupBytes)
	}
	if o.PipelineDepth < 0 || o.PipelineDepth > 64 {
		return o, fmt.Errorf("wal: PipelineDepth %d must be between 1 and 64", o.PipelineDepth)
	}
	if o.RecycleSegments && o.PipelineDepth > 1 {
		// A group's zeros to the end of its page would race the next
		// group's write into the same page.
		return o, fmt.Errorf("wal: RecycleSegments needs PipelineDepth 1, not %d: each group write ends with zeros to the end of its page, where the next group's entries go", o.PipelineDepth)
	}
	if o.IOMode < ioengine.Auto || o.IOMode > ioengine.Syscall {
		return o, fmt.Errorf("wal: invalid IOMode %d", int(o.IOMode))
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o, nil
}

// Errors of the log. Each is wrapped with what was asked and where.
var (
	ErrClosed        = errors.New("wal: closed")
	ErrReadOnly      = errors.New("wal: read-only after a failed write or sync")
	ErrNotFound      = errors.New("wal: entry not found")
	ErrEntryTooLarge = errors.New("wal: entry too large")
	ErrLocked        = errors.New("wal: directory in use by another log")
	// ErrOpenedReadOnly: an append or truncation of a log opened with
	// Options.ReadOnly.
	ErrOpenedReadOnly = errors.New("wal: opened read-only")
)

// CorruptError reports damage found in a segment or in the meta file: the
// file, the byte offset and what was wrong. It unwraps to ErrCorrupt (or
// ErrTruncated), so errors.Is(err, ErrCorrupt) holds, and errors.As gives
// it as a *ringstore.CorruptError too (its What is the message after the
// offset). Repair cuts the log at such a place.
type CorruptError struct {
	Path    string
	Offset  int64
	LastSeq uint64 // last good entry before Offset (0 when none is known)
	// FirstLost and LastLost are the entries a cut at Offset would lose
	// as far as recovery could see (LastLost 0: the rest of the file could
	// not be read as entries), and Lost how many.
	FirstLost, LastLost, Lost uint64
	Err                       error
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("wal: %s at offset %d: %s", e.Path, e.Offset, e.what())
}

// what is the message without the path and offset.
func (e *CorruptError) what() string {
	// e.Err is often made of wal sentinels ("wal: corrupt: wal: gap"):
	// their prefix is said once, in Error.
	s := strings.ReplaceAll(e.Err.Error(), "wal: ", "")
	switch {
	case e.LastLost >= e.FirstLost && e.FirstLost > 0:
		s += fmt.Sprintf("; a cut here would lose entries %d to %d (%d entries)", e.FirstLost, e.LastLost, e.Lost)
	case e.FirstLost > 0:
		s += fmt.Sprintf("; a cut here would lose every entry from %d on", e.FirstLost)
	}
	return s
}

func (e *CorruptError) Unwrap() error { return e.Err }

// As sets a **ringstore.CorruptError target to the file, offset and
// message of e.
func (e *CorruptError) As(target any) bool {
	t, ok := target.(**ringstore.CorruptError)
	if ok {
		*t = &ringstore.CorruptError{Path: e.Path, Offset: e.Offset, What: e.what()}
	}
	return ok
}

// Is makes every *CorruptError corruption (ringstore.ErrCorrupt), also one
// that unwraps to ErrTruncated: an entry cut short where the log cannot
// have been torn is damage.
func (e *CorruptError) Is(target error) bool { return target == ringstore.ErrCorrupt }
