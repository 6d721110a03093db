package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// Segments are made ahead of need. A spare goroutine keeps the next
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
// With Options.RecycleSegments the spare goroutine also writes, after each
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

type spareMaker struct {
	mu         sync.Mutex
	cond       *sync.Cond
	want       bool              // a spare is wanted and not yet made
	ready      *ioengine.File    // a finished spare (its Name is its path)
	readyStale format.StaleTable // ready's stale table: non-nil for a truncated segment's file
	tables     []tableJob        // next tables to write, oldest first
	err        error             // why making the last one failed; cleared by take
	stop       bool
	reuse      []string // files kept for reuse, oldest first
	reused     int      // files kept for reuse so far (their names' N)
	n          int      // spares made; owned by the spare goroutine
	done       chan struct{}
}

func (l *Log) startSpares() {
	s := &l.spares
	s.cond = sync.NewCond(&s.mu)
	s.done = make(chan struct{})
	go l.spareLoop()
}

// spareLoop makes a spare each time one is asked for: when the active
// segment passes half full, or when a rotation finds none. Making it
// later than that would stall the rotation; making it at once after the
// last rotation would compete for the device with the appends at the
// start of every segment (and of every benchmark).
func (l *Log) spareLoop() {
	s := &l.spares
	defer close(s.done)
	for {
		s.mu.Lock()
		for !(s.want && s.ready == nil && s.err == nil) && len(s.tables) == 0 && !s.stop {
			s.cond.Wait()
		}
		if s.stop {
			for _, j := range s.tables {
				j.f.Close()
			}
			s.tables = nil
			s.mu.Unlock()
			return
		}
		if !(s.want && s.ready == nil && s.err == nil) {
			j := s.tables[0]
			s.tables = s.tables[1:]
			s.mu.Unlock()
			l.writeNextTable(j)
			continue
		}
		var reuse string
		if len(s.reuse) > 0 {
			reuse = s.reuse[0]
			s.reuse = s.reuse[1:]
		}
		s.mu.Unlock()
		var f *ioengine.File
		var stale format.StaleTable
		var err error
		if reuse != "" {
			if f, stale, err = l.makeRecycledSpare(reuse); err != nil {
				l.opts.Logf("wal: reusing %s: %v (making a new segment file instead)", reuse, err)
				os.Remove(reuse)
			}
		}
		if f == nil {
			f, err = l.makeSpare()
			if err != nil {
				l.opts.Logf("wal: preparing the next segment: %v (the next rotation creates it without zero-filling)", err)
			}
		}
		s.mu.Lock()
		s.want, s.ready, s.readyStale, s.err = false, f, stale, err
		s.cond.Broadcast()
		s.mu.Unlock()
	}
}

// requestSpare asks for the next segment to be made ahead of need.
func (l *Log) requestSpare() {
	s := &l.spares
	s.mu.Lock()
	s.want = true
	s.cond.Broadcast()
	s.mu.Unlock()
}

// takeSpare returns the spare segment file, waiting for it to be made if
// needed, or nil when making it failed (or before the spare goroutine
// runs, during recovery), and its stale table: nil for a new file,
// non-nil for a truncated segment's.
func (l *Log) takeSpare() (*ioengine.File, format.StaleTable) {
	s := &l.spares
	if s.cond == nil {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ready == nil && s.err == nil && !s.stop {
		s.want = true
		s.cond.Broadcast()
	}
	for s.ready == nil && s.err == nil && !s.stop {
		s.cond.Wait()
	}
	f, stale := s.ready, s.readyStale
	s.ready, s.readyStale, s.err = nil, nil, nil
	return f, stale
}

// tableJob is the next stale table of a sealed segment, to be written in
// its file (held open: the name may be another file's by then).
type tableJob struct {
	seg   *segment
	f     *ioengine.File
	table []byte
}

// queueNextTable hands the spare goroutine the next stale table of seg,
// just sealed, and reports whether it took it.
func (l *Log) queueNextTable(seg *segment, table []byte) bool {
	s := &l.spares
	if s.cond == nil {
		return false
	}
	f, err := ioengine.OpenFile(seg.path, os.O_RDWR, 0)
	if err != nil {
		l.opts.Logf("wal: %s will not be reused: %v", seg.path, err)
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stop {
		f.Close()
		return false
	}
	s.tables = append(s.tables, tableJob{seg: seg, f: f, table: table})
	s.cond.Broadcast()
	return true
}

// writeNextTable writes and flushes a sealed segment's next stale table.
// A failure only keeps the file from being reused.
func (l *Log) writeNextTable(j tableJob) {
	defer j.f.Close()
	j.seg.tableMu.Lock()
	defer j.seg.tableMu.Unlock()
	if j.seg.removed {
		return
	}
	if err := l.writeFile(j.f, j.seg.path, format.StaleTableOffset(j.seg.size), j.table, false); err != nil {
		l.opts.Logf("wal: %s will not be reused: %v", j.seg.path, err)
		return
	}
	if err := l.syncFile(j.f, j.seg.path); err != nil {
		l.opts.Logf("wal: %s will not be reused: %v", j.seg.path, err)
		return
	}
	j.seg.tableWritten.Store(true)
}

// keepForReuse takes the file of a dropped segment out of the log for
// reuse, unless maxReuse files are kept already. Runs where wal.meta
// already holds a first seq past the segment's entries.
func (l *Log) keepForReuse(path string) (bool, error) {
	s := &l.spares
	if s.cond == nil {
		return false, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reuse) >= maxReuse || s.stop {
		return false, nil
	}
	s.reused++
	to := filepath.Join(l.dir, fmt.Sprintf("%s%d%s%s", recyclePrefix, s.reused, segmentSuffix, tmpSuffix))
	if err := l.rename(path, to); err != nil {
		return false, err
	}
	s.reuse = append(s.reuse, to)
	return true, nil
}

// stopSpares stops the spare goroutine and removes an unused spare.
func (l *Log) stopSpares() {
	s := &l.spares
	if s.cond == nil {
		return
	}
	s.mu.Lock()
	s.stop = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
	if s.ready != nil {
		s.ready.Close()
		os.Remove(s.ready.Name())
		s.ready = nil
	}
	for _, p := range s.reuse {
		os.Remove(p)
	}
	s.reuse = nil
}

// makeSpare creates the next spare file, reserves its space and, unless
// SparseSegments, writes it full of zeros (with O_DIRECT where the file
// system allows, so the page cache is left alone) and flushes it.
func (l *Log) makeSpare() (*ioengine.File, error) {
	l.spares.n++
	path := filepath.Join(l.dir, fmt.Sprintf("%s%d%s%s", sparePrefix, l.spares.n, segmentSuffix, tmpSuffix))
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
