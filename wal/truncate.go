package wal

import (
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/internal/crc32c"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// TruncateFront removes the entries before seq: seq becomes the first
// entry. A seq past LastSeq()+1 empties the log, and the next append gets
// seq. Whole segments before seq are deleted; the first seq is recorded in
// wal.meta first, so a crash part way leaves the log as before or as after.
// Reads stop finding the entries before seq at once; it returns when the
// truncation is durable. Appends made meanwhile are not held up by it
// unless it empties the log.
func (l *Log) TruncateFront(seq uint64) error {
	if seq == 0 {
		return fmt.Errorf("wal: TruncateFront(0): sequence numbers start at 1")
	}
	return l.structural(reqTruncateFront, seq)
}

// TruncateBack removes the entries after seq: seq becomes the last entry
// and the next append gets seq+1. seq must be at least FirstSeq()-1 (which
// empties the log). Later segments are deleted newest first, and the
// segment holding seq is sealed at seq's end, so a crash part way leaves a
// log that ends at seq or later, never one with a hole.
func (l *Log) TruncateBack(seq uint64) error {
	return l.structural(reqTruncateBack, seq)
}

func (l *Log) structural(kind reqKind, seq uint64) error {
	r := requestPool.Get().(*request)
	defer requestPool.Put(r)
	r.kind, r.seq, r.payloads, r.size, r.err = kind, seq, nil, 0, nil
	if err := l.enqueue(r); err != nil {
		return err
	}
	<-r.done
	return r.err
}

// truncateFront runs on the committer with nothing in flight. It drops the
// segments wholly before seq from the log at once (reads no longer find
// them) and finishes r once seq is durable in wal.meta and their files are
// removed. While at least one entry stays, that durable part runs on the
// lifecycle's job goroutine, beside the appends that follow: a crash before wal.meta is
// written leaves the log as before, with those appends after its last
// entry. When the log is emptied it runs here, before any append: the next
// entry gets seq, which a crash must not find after the old last entry
// with a gap between them, nor after the old active segment unsealed.
func (l *Log) truncateFront(r *request) {
	seq := r.seq
	if err := l.Err(); err != nil {
		r.finish(err)
		return
	}
	l.segMu.RLock()
	first, last := l.first, l.last
	l.segMu.RUnlock()
	if seq <= first {
		r.finish(nil)
		return
	}
	if seq <= last {
		l.queueTruncation(seq, l.dropBefore(seq), r)
		return
	}
	l.truncsIdle()
	if err := l.recordFirst(seq); err != nil {
		r.finish(l.fail(err))
		return
	}
	drop := l.dropBefore(seq)
	l.next = max(l.next, seq)
	r.finish(l.removeDropped(drop))
}

// droppedSegment is the file of a segment a front truncation took out of
// the log.
type droppedSegment struct {
	seg        *segment
	recyclable bool
}

// dropBefore makes seq the first entry in memory and takes the segments
// wholly before it out of the log, returning their files. Runs on the
// committer.
func (l *Log) dropBefore(seq uint64) []droppedSegment {
	l.segMu.Lock()
	l.first = seq
	if seq > l.last+1 {
		l.last = seq - 1
	}
	var drop []droppedSegment
	for len(l.segs) > 0 && l.segs[0].last < seq {
		s := l.segs[0]
		l.segs = l.segs[1:]
		s.release()
		if s == l.active {
			l.active = nil
		}
		drop = append(drop, droppedSegment{seg: s, recyclable: s.recyclable})
	}
	l.segMu.Unlock()
	return drop
}

// removeDropped removes the files of dropped segments once wal.meta holds
// the first seq after them, or (RecycleSegments) keeps them for reuse. The
// removals and renames are not flushed: a segment whose removal a crash
// undoes lies before the first seq, and Open skips and removes it.
func (l *Log) removeDropped(drop []droppedSegment) error {
	for _, d := range drop {
		if err := l.removeSegment(d.seg, d.recyclable && l.opts.RecycleSegments, false); err != nil {
			return l.fail(err)
		}
	}
	return nil
}

// truncateBack runs on the committer with nothing in flight.
func (l *Log) truncateBack(seq uint64) error {
	if err := l.Err(); err != nil {
		return err
	}
	l.truncsIdle()
	l.segMu.RLock()
	first, last := l.first, l.last
	l.segMu.RUnlock()
	if seq+1 < first {
		return fmt.Errorf("wal: TruncateBack(%d): the first entry is %d; the lowest allowed is %d", seq, first, first-1)
	}
	if seq >= last {
		return nil
	}
	// Later segments go first, newest first, each removal made durable
	// before the next: a crash leaves a log without holes.
	for {
		l.segMu.Lock()
		n := len(l.segs)
		if n == 0 || l.segs[n-1].base <= seq {
			l.segMu.Unlock()
			break
		}
		s := l.segs[n-1]
		l.segs = l.segs[:n-1]
		s.release()
		l.last = min(l.last, s.base-1)
		l.segMu.Unlock()
		if s == l.active {
			l.active = nil
		}
		if err := l.removeSegment(s, false, true); err != nil {
			return l.fail(err)
		}
	}
	l.segMu.Lock()
	var cut *segment
	if n := len(l.segs); n > 0 && l.segs[n-1].last > seq {
		cut = l.segs[n-1]
	}
	l.segMu.Unlock()
	if cut != nil {
		// Seal the segment that holds seq at seq's end; the entries after
		// it stay in the file but past the trailer's data end, where no
		// read goes. New appends go to a new segment.
		off, n := cut.entryBounds(seq)
		end := off + n
		crc, err := l.dataCRC(cut, end)
		if err != nil {
			return l.fail(err)
		}
		l.segMu.Lock()
		cut.last, cut.dataEnd = seq, end
		cut.index = cut.index[:seq-cut.base+1]
		l.segMu.Unlock()
		// The entries after seq stay in the file, and their seqs will be
		// given again: never reuse it.
		cut.recyclable = false
		if err := l.seal(cut, end, crc); err != nil {
			return l.fail(err)
		}
		if cut == l.active {
			l.active = nil
		}
	}
	l.segMu.Lock()
	l.last = seq
	l.segMu.Unlock()
	l.next = seq + 1
	return nil
}

// dataCRC computes the CRC32C of a segment's bytes from the header to end.
func (l *Log) dataCRC(s *segment, end int64) (uint32, error) {
	f, err := os.Open(s.path)
	if err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	h := crc32.New(crc32c.Table)
	if _, err := io.Copy(h, io.NewSectionReader(f, SegmentHeaderSize, end-SegmentHeaderSize)); err != nil {
		return 0, fmt.Errorf("wal: read %s: %w", s.path, err)
	}
	return h.Sum32(), nil
}

// recordFirst makes first the log's first seq in wal.meta, durably: in
// place, in the slot that does not hold the current one (one write and its
// fdatasync), once the file has the two-slot layout; otherwise by
// replacing the file whole.
func (l *Log) recordFirst(first uint64) error {
	path := filepath.Join(l.dir, format.MetaName)
	if l.meta == nil {
		if l.metaSlot < 0 {
			if err := l.writeMeta(first); err != nil {
				return err
			}
		}
		f, err := ioengine.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			return fmt.Errorf("wal: %w", err)
		}
		l.meta = f
		if l.metaSlot < 0 {
			l.metaSlot = 0 // both slots hold first
			return nil
		}
	}
	slot := 1 - l.metaSlot
	if err := l.writeFile(l.meta, path, int64(slot*format.MetaSlotSize), format.EncodeMeta(first), true); err != nil {
		return err
	}
	l.metaSlot = slot
	return nil
}

// writeMeta replaces wal.meta atomically with a file whose two slots hold
// first: a temporary file written and flushed, renamed over the old one,
// and the directory flushed.
func (l *Log) writeMeta(first uint64) error {
	path := filepath.Join(l.dir, format.MetaName)
	tmp := path + tmpSuffix
	f, err := ioengine.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer f.Close()
	l.traceCreate(tmp, 0)
	if err := l.writeFile(f, tmp, 0, format.EncodeMetaFile(first), false); err != nil {
		return err
	}
	if err := l.syncFile(f, tmp); err != nil {
		return err
	}
	if err := l.rename(tmp, path); err != nil {
		return err
	}
	return l.syncDir()
}
