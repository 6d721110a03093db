package wal

import (
	"encoding/binary"
	"fmt"

	"github.com/ringstore/ringstore/wal/internal/format"
)

// What recovery finds after the last valid entry of the last segment when
// the rest is not zeros, and how it tells a torn tail (writes of the group
// in flight at a crash, never acknowledged: cut) from damage (acknowledged
// entries a read must not drop: an error).
//
//	 ... entry k │ bad bytes ............│ entry k+j ... (valid, later seq) │ 0 0 0 ...
//	             dataEnd                 next                                end of data
//
// A crash can leave, after the last flushed entry, only what the in-flight
// groups wrote: each 512-byte sector of them either written or not, and a
// sector not written reads as it was: zeros in a fresh segment, which is
// preallocated. In a recycled one it reads as the file's earlier use left
// it, which the segment's stale table records sector by sector, except
// from the end of the last flushed entry to the end of its 4 KiB page,
// which every group write (and the new header) fills with zeros. "Unwritten"
// below means zeros, or a whole sector the stale table matches. So a torn
// tail
//
//   - lies within one in-flight window from dataEnd: PipelineDepth groups
//     (at least 2) of at most max(MaxGroupBytes, one largest entry) bytes,
//     plus a sector on each side;
//   - and, when valid entries follow the bad one (a later sector of the
//     group written, an earlier one not, or a later group's write kept and
//     an earlier one's lost), has a sector between them that was not
//     written: unwritten from dataEnd (or from the sector's start) to the
//     sector's end or to the valid entries, whichever comes first.
//
// Anything else is damage: a flipped or overwritten byte among written
// entries with valid entries after it, or bytes beyond what could have been
// in flight. Recovery then fails with a *CorruptError naming the file, the
// offset and the entries that a cut would lose, and changes nothing; only
// Repair cuts.

// sectorSize is the unit a crash keeps or loses whole (the model of the
// crash-state tests; the package doc states it).
const sectorSize = format.SectorSize

// tailScan is what recovery found after dataEnd.
type tailScan struct {
	next      int64  // offset of the first valid entry with a later seq after dataEnd, or -1
	nextSeq   uint64 // its seq
	lastSeq   uint64 // the last of the consecutive valid entries from next on
	entries   int    // valid entries found from next on
	dataEnd   int64  // end of the last of them (next == -1: dataEnd)
	nonZero   int64  // end of the last non-zero byte before limit
	explained bool   // a sector between dataEnd and next was never written (all zeros)
}

// scanTail looks at img[dataEnd:limit] after the scan of a segment stopped
// at dataEnd, after seq last. stale is a recycled segment's table (nil for
// a fresh one): there a sector the table matches reads as unwritten, as a
// zero one does, and nonZero is the end of the last sector neither zero
// nor matching.
func scanTail(img []byte, dataEnd, limit int64, last uint64, stale format.StaleTable) tailScan {
	t := tailScan{next: -1, dataEnd: dataEnd, nonZero: dataEnd}
	// unwritten reports whether img[from:to], within one sector, reads as
	// never written since the segment was made.
	unwritten := func(from, to int64) bool {
		return format.AllZero(img[from:to]) || (stale != nil && from%sectorSize == 0 && to == from+sectorSize && stale.Unchanged(img, from))
	}
	if stale == nil {
		for i := limit - 1; i >= dataEnd; i-- {
			if img[i] != 0 {
				t.nonZero = i + 1
				break
			}
		}
	} else {
		for s := (limit - 1) / sectorSize * sectorSize; s+sectorSize > dataEnd; s -= sectorSize {
			if from, to := max(s, dataEnd), min(s+sectorSize, limit); !unwritten(from, to) {
				t.nonZero = to
				break
			}
		}
	}
	maxBody := len(img) - SegmentHeaderSize - TrailerSize - EntryHeaderSize
	for off := dataEnd + 1; off+EntryHeaderSize <= t.nonZero; off++ {
		// A cheap filter before the checksum: a later seq, and a length
		// that fits; random bytes rarely pass both.
		seq := binary.LittleEndian.Uint64(img[off+4 : off+12])
		if seq <= last || seq > last+uint64(limit-dataEnd) {
			continue
		}
		if bodyLen := int64(binary.LittleEndian.Uint32(img[off : off+4])); off+EntryHeaderSize+bodyLen > limit {
			continue
		}
		s, _, n, err := format.DecodeEntry(img[off:limit], maxBody)
		if err != nil || s != seq {
			continue
		}
		t.next, t.nextSeq, t.lastSeq, t.entries = off, seq, seq, 1
		end := off + int64(n)
		for end < limit {
			s, _, n, err := format.DecodeEntry(img[end:limit], maxBody)
			if err != nil || s != t.lastSeq+1 {
				break
			}
			t.lastSeq, t.entries, end = s, t.entries+1, end+int64(n)
		}
		t.dataEnd = end
		break
	}
	if t.next >= 0 {
		// A sector that was never written, between the bad entry and the
		// valid ones: zeros from dataEnd, or from the sector's start, to
		// the sector's end or to the valid entries (written by another
		// group's write into the same sector).
		for s := dataEnd / sectorSize * sectorSize; s < t.next; s += sectorSize {
			from, to := max(s, dataEnd), min(s+sectorSize, t.next)
			if from < to && unwritten(from, to) {
				t.explained = true
				break
			}
		}
	}
	return t
}

// inFlightWindow is the most bytes the groups in flight at a crash can
// have written after the last flushed entry: PipelineDepth groups (at
// least 2: the log may have been written at another depth than it is
// opened with, SQPOLL's default is 2) of at most max(MaxGroupBytes, the
// largest entry) bytes, with a sector on each side for the partial sectors
// they begin and end in.
func inFlightWindow(opts Options) int64 {
	group := max(int64(opts.MaxGroupBytes), int64(EncodedLen(opts.MaxEntrySize)))
	return int64(max(2, opts.PipelineDepth))*group + 2*sectorSize
}

// tailDamage returns a *CorruptError when what follows dataEnd in the last
// segment is damage rather than a torn tail, or nil.
func tailDamage(path string, opts Options, r scanResult, t tailScan) error {
	window := inFlightWindow(opts)
	switch {
	case t.next >= 0 && !t.explained:
		return &CorruptError{Path: path, Offset: r.dataEnd, LastSeq: r.last, FirstLost: r.last + 1, LastLost: t.lastSeq, Lost: t.lastSeq - r.last,
			Err: fmt.Errorf("%w: entry %d is damaged (%v) and %d valid entries follow it (seq %d to %d from offset %d): not a torn tail",
				ErrCorrupt, r.last+1, r.stop, t.entries, t.nextSeq, t.lastSeq, t.next)}
	case t.next >= 0 && t.dataEnd-r.dataEnd > window:
		return &CorruptError{Path: path, Offset: r.dataEnd, LastSeq: r.last, FirstLost: r.last + 1, LastLost: t.lastSeq, Lost: t.lastSeq - r.last,
			Err: fmt.Errorf("%w: entry %d is damaged (%v) and valid entries follow it up to seq %d, %d bytes on: more than the %d bytes in flight at a crash",
				ErrCorrupt, r.last+1, r.stop, t.lastSeq, t.dataEnd-r.dataEnd, window)}
	case t.nonZero-r.dataEnd > window:
		return &CorruptError{Path: path, Offset: r.dataEnd, LastSeq: r.last, FirstLost: r.last + 1,
			Err: fmt.Errorf("%w: %d bytes that are not entries follow seq %d (%v): more than the %d bytes in flight at a crash",
				ErrCorrupt, t.nonZero-r.dataEnd, r.last, r.stop, window)}
	}
	return nil
}

// Recovery is what Open's recovery changed: the torn tails it cut (at most
// one, in the last segment). Log.Recovery returns it, kv.DB.Recovery
// passes it on, and the CLI prints it.
type Recovery struct {
	Cuts []TailCut
}

// TailCut is one torn tail recovery cut: the segment, the offset after the
// last valid entry (seq LastSeq), the bytes removed from there, the whole
// entries among them (written by the group in flight, never acknowledged)
// and why the entry at Offset was not valid.
type TailCut struct {
	Path    string
	Offset  int64
	LastSeq uint64
	Bytes   int64
	Entries int
	Reason  string
}

func (c TailCut) String() string {
	return fmt.Sprintf("%s: cut a torn tail at offset %d after seq %d: %d bytes, %d whole entries after the torn one (%s)", c.Path, c.Offset, c.LastSeq, c.Bytes, c.Entries, c.Reason)
}
