package wal

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// Segments are made ahead of need. A spare goroutine keeps the next
// segment file ready, preallocated with fallocate, so a rotation only
// writes a header, flushes it, renames the file and flushes the directory.
//
// With Options.ZeroFillSegments the spare is also written full of zeros
// (O_DIRECT, through the engine) and flushed: on ext4 (and xfs) a write into
// space fallocate reserved converts an unwritten extent, and the fdatasync
// after it must commit the journal too. Why it is off by default is in
// docs/DECISIONS.md.
// The spare is asked for when the active segment passes half full. At
// rotation the committer takes it, writes its header, flushes it, renames
// it to its segment name and flushes the directory. If no spare is ready it
// waits for one to be made; if making it failed, it creates the segment
// itself (fallocate only).
// Spare files are named spare-N.seg.tmp, N counting up, so a new spare
// never meets the file of the last one before it has been renamed.
const sparePrefix = "spare-"

type spareMaker struct {
	mu    sync.Mutex
	cond  *sync.Cond
	want  bool           // a spare is wanted and not yet made
	ready *ioengine.File // a finished spare (its Name is its path)
	err   error          // why making the last one failed; cleared by take
	stop  bool
	n     int // spares made; owned by the spare goroutine
	done  chan struct{}
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
		for !(s.want && s.ready == nil && s.err == nil) && !s.stop {
			s.cond.Wait()
		}
		if s.stop {
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		f, err := l.makeSpare()
		if err != nil {
			l.opts.Logf("wal: preparing the next segment: %v (the next rotation creates it without zero-filling)", err)
		}
		s.mu.Lock()
		s.want, s.ready, s.err = false, f, err
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
// runs, during recovery).
func (l *Log) takeSpare() *ioengine.File {
	s := &l.spares
	if s.cond == nil {
		return nil
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
	f := s.ready
	s.ready, s.err = nil, nil
	return f
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
	if !l.opts.ZeroFillSegments {
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
