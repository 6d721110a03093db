package wal

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/ioengine"
)

// recover rebuilds the log's state from dir at Open.
//
//   - Every segment but the last must be sealed: header, trailer, the
//     sequence numbers following from one segment to the next, and (unless
//     LazyVerify) every entry and the data CRC are checked. Damage is a
//     *CorruptError and nothing is changed.
//   - The last segment, if not sealed, is read to its first entry that is
//     not valid (a zero header, a torn or bad entry, or a sequence number out
//     of order). If everything after that point reads as unwritten (zeros,
//     or sectors a reusable segment's stale table matches; tail.go), appends
//     continue there. If not, the rest is a torn tail of writes that were never
//     acknowledged: the segment is sealed at that point (or removed when it
//     holds no entry) so the torn bytes can never be read, and appends go
//     to a new segment.
//   - A last segment with a clean-close mark (Close wrote it) must hold
//     exactly the entries the mark records: an entry it covers that is not
//     valid is a *CorruptError, not a torn tail. The mark is erased, and
//     the erasure flushed, before Open returns (not in ReadOnly), so no
//     append after it can be read as covered by it.
//   - Segments wholly before the first seq of wal.meta (an interrupted
//     TruncateFront) are removed.
func (l *Log) recover() error {
	first, slot, err := readMetaSlot(l.dir)
	if err != nil {
		return err
	}
	l.metaSlot = slot
	bases, err := listSegments(l.dir, true)
	if err != nil {
		return err
	}
	for i, base := range bases {
		seg, err := l.openSegment(base, i == len(bases)-1)
		if err != nil {
			return err
		}
		if seg == nil {
			continue
		}
		if n := len(l.segs); n > 0 {
			prev := l.segs[n-1]
			if seg.base != prev.last+1 {
				seg.release()
				return gapError(seg.path, seg.base, prev.path, prev.last)
			}
		}
		l.segs = append(l.segs, seg)
	}

	if first == 0 {
		first = 1
		if len(l.segs) > 0 {
			first = l.segs[0].base
		}
	}
	// An interrupted TruncateFront: the meta file was replaced, some of
	// the segments before the new first entry were not yet removed.
	for len(l.segs) > 0 && l.segs[0].last < first {
		s := l.segs[0]
		s.release()
		if !l.opts.ReadOnly {
			if err := l.removeDurably(s.path); err != nil {
				return err
			}
		}
		if s == l.active {
			l.active = nil
		}
		l.segs = l.segs[1:]
	}
	if len(l.segs) > 0 && l.segs[0].base > first {
		return startError(l.dir, first, l.segs[0].path, l.segs[0].base)
	}
	l.first, l.last = first, first-1
	if n := len(l.segs); n > 0 {
		l.last = l.segs[n-1].last
	}
	l.next = l.last + 1
	return nil
}

// openSegment opens and checks one segment at Open (through
// checkSegment, as Verify and Reader do). For the last segment it may cut a
// torn tail; it returns nil when it removed the segment.
func (l *Log) openSegment(base uint64, isLast bool) (*segment, error) {
	path := filepath.Join(l.dir, segmentName(base))
	sf, err := checkSegment(path, base, isLast, &l.opts, l.opts.LazyVerify)
	if err != nil {
		return nil, err
	}
	seg := &segment{base: base, path: path, size: sf.Info.Size, reusable: sf.Info.Reusable, last: sf.Info.LastSeq, dataEnd: sf.Info.DataEnd}
	if sf.Info.Sealed {
		seg.sealed, seg.state = true, segSealed
		if sf.img != nil { // checked in full: keep the map for reads
			seg.data, seg.index, seg.loaded = sf.img, sf.r.index, true
		}
		return seg, nil
	}
	r, tail, clean := sf.r, sf.tail, sf.Info.TornTail == 0
	sf.Close()
	flag := os.O_RDWR
	if l.opts.ReadOnly {
		flag = os.O_RDONLY
	}
	f, err := ioengine.OpenFile(path, flag, 0)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	seg.index, seg.f, seg.loaded = r.index, f, true
	if seg.index == nil {
		seg.index = []uint32{}
	}
	if clean {
		if !l.opts.ReadOnly {
			if sf.Info.Closed {
				// The mark is erased, durably, before anything is appended:
				// a crash after an append must not find it, or a torn
				// group would read as damage.
				if err := l.writeFile(f, path, seg.size-TrailerSize, zeroPage[:TrailerSize], true); err != nil {
					f.Close()
					return nil, fmt.Errorf("wal: erasing the clean-close mark: %w", err)
				}
			}
			l.active, l.activeOff, l.activeCRC = seg, r.dataEnd, r.crc
		}
		return seg, nil
	}
	if l.opts.ReadOnly {
		// Not cut: the torn bytes are simply not read.
		if len(r.index) == 0 {
			f.Close()
			return nil, nil
		}
		return seg, nil
	}
	l.tailCuts.Add(1)
	cut := TailCut{Path: path, Offset: r.dataEnd, LastSeq: r.last, Bytes: tail.nonZero - r.dataEnd, Entries: tail.entries, Reason: r.stop.Error()}
	l.recovery.Cuts = append(l.recovery.Cuts, cut)
	l.opts.Logf("wal: %s", cut)
	if len(r.index) == 0 {
		f.Close()
		return nil, l.removeDurably(path)
	}
	if err := l.seal(seg, r.dataEnd, r.crc); err != nil {
		seg.release()
		return nil, err
	}
	return seg, nil
}
