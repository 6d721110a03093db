package wal

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// Segments are made ahead of need. The lifecycle's job goroutine keeps the next
// segment file ready, preallocated with fallocate, so a rotation only
// writes a header, flushes it, renames the file and flushes the directory.
//
// With the zeroFillSegments test hook the spare is also written full of
// zeros (O_DIRECT, through the engine) and flushed: on ext4 (and xfs) a write
// into space fallocate reserved converts an unwritten extent, and the fdatasync
// after it must commit the journal too. Why it is off by default is in
// docs/DECISIONS.md.
// The spare is asked for when the active segment passes half full. At
// rotation the committer takes it, writes its header, flushes it, renames
// it to its segment name and flushes the directory. If no spare is ready it
// waits for one to be made; if making it failed, it creates the segment
// itself (fallocate only).
// Spare files are named spare-N.seg.tmp, N counting up, so a new spare
// never meets the file of the last one before it has been renamed.
//
// With Options.RecycleSegments the job goroutine also writes, after each
// seal, the stale table the sealed segment's file will carry into its next
// use (built by the committer as it wrote the segment; segment.go) into the
// file's table region, and flushes it: the seal is durable by then, and a
// sealed segment's own table is never read again. A front truncation keeps
// (up to maxReuse) files of the segments it drops whose table is written,
// renamed recycle-N.seg.tmp, and the next spare is made from one of them:
// the rename made durable first (a crash must not bring the file back
// under its segment name once it changes), its table read back, its
// trailer page zeroed (unsealed), and flushed. Open removes every *.tmp
// file a crash leaves.
const (
	sparePrefix   = "spare-"
	recyclePrefix = "recycle-"
	maxReuse      = 2
)

// makeSpare creates the next spare file, reserves its space and, unless
// SparseSegments, writes it full of zeros (with O_DIRECT where the file
// system allows, so the page cache is left alone) and flushes it.
func (l *Log) makeSpare() (*ioengine.File, error) {
	l.files.n++
	path := filepath.Join(l.dir, fmt.Sprintf("%s%d%s%s", sparePrefix, l.files.n, segmentSuffix, tmpSuffix))
	size := l.opts.SegmentSize
	f, err := ioengine.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	fail := func(err error) (*ioengine.File, error) {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	l.traceCreate(path, size)
	if err := preallocate(f.OS(), size); err != nil {
		return fail(err)
	}
	if !l.opts.zeroFillSegments {
		// Nothing to flush: the fdatasync after the header at rotation
		// makes the allocation durable with the header.
		return f, nil
	}
	// The zeros need not be durable (unwritten space reads as zeros too);
	// flushing them here takes the metadata commit off the rotation.
	if err := l.zeroFill(f, path, size); err != nil {
		return fail(err)
	}
	if err := l.syncFile(f, path); err != nil {
		return fail(err)
	}
	return f, nil
}

const zeroChunk = 1 << 20

// makeRecycledSpare makes the next spare from the file of a truncated
// segment, whose table region holds the stale table written after its seal:
// that table read back, the trailer page zeroed, the file flushed.
func (l *Log) makeRecycledSpare(path string) (*ioengine.File, format.StaleTable, error) {
	// The rename that took the file out of the log becomes durable before
	// the file changes: a crash undoing it would bring the file back under
	// its segment name, below the first seq, where Open reads it before it
	// removes it.
	if err := l.syncDir(); err != nil {
		return nil, nil, err
	}
	size := l.opts.SegmentSize
	f, err := ioengine.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("wal: %w", err)
	}
	fail := func(err error) (*ioengine.File, format.StaleTable, error) {
		f.Close()
		return nil, nil, err
	}
	if st, err := f.OS().Stat(); err != nil {
		return fail(fmt.Errorf("wal: %w", err))
	} else if st.Size() != size {
		return fail(fmt.Errorf("wal: %s is %d bytes, new segments are %d", path, st.Size(), size))
	}
	b := make([]byte, format.StaleTableSize(size))
	if _, err := f.OS().ReadAt(b, format.StaleTableOffset(size)); err != nil {
		return fail(fmt.Errorf("wal: read the stale table of %s: %w", path, err))
	}
	stale, err := format.DecodeStaleTable(b, size)
	if err == nil && stale == nil {
		err = fmt.Errorf("%w: no table was written", ErrCorrupt)
	}
	if err != nil {
		return fail(fmt.Errorf("wal: the stale table of %s: %w", path, err))
	}
	if err := l.writeFile(f, path, size-pageSize, zeroPage[:], false); err != nil {
		return fail(err)
	}
	if err := l.syncFile(f, path); err != nil {
		return fail(err)
	}
	return f, stale, nil
}

func (l *Log) zeroFill(f *ioengine.File, path string, size int64) error {
	w := f
	if d, err := directio.OpenFile(path, os.O_WRONLY, 0); err == nil {
		w = ioengine.NewFile(d)
		defer w.Close()
	}
	buf, err := directio.Alloc(zeroChunk)
	if err != nil {
		return fmt.Errorf("wal: zero-fill %s: %w", path, err)
	}
	defer directio.Free(buf)
	for off := int64(0); off < size; off += zeroChunk {
		n := min(zeroChunk, size-off)
		req := [1]ioengine.Request{{Op: ioengine.OpWrite, File: w, Buf: buf[:n], Off: off}}
		if err := l.eng.Do(req[:]); err != nil {
			return fmt.Errorf("wal: zero-fill %s: %w", path, err)
		}
	}
	return nil
}
