package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ringstore/ringstore/wal/internal/format"
)

// SegmentFile is one segment file read through the rules Open applies,
// changing nothing: its header and trailer, every entry in sequence, the
// data CRC of a sealed segment, and (last segment only) the torn tail
// after the entries, told from damage as tail.go says, or, when the
// segment carries a clean-close mark, the entries checked against the
// mark: then a bad entry the mark covers is damage, not a torn tail. Recovery, Verify,
// Reader and the ringstore CLI all read segments through it. Its entries
// alias a read-only map of the file, valid until Close.
type SegmentFile struct {
	Info SegmentInfo

	img    []byte     // the mapped file; nil when only the frame was read
	r      scanResult // the entries
	tail   tailScan   // what follows them when Info.TornTail > 0
	closed bool
}

// OpenSegment reads the segment file at path (its name gives its first
// seq). isLast says it is the log's last segment: the only one that may be
// unsealed, and the only one whose torn tail is not damage. Damage is a
// *CorruptError naming the file and offset.
func OpenSegment(path string, isLast bool) (*SegmentFile, error) {
	base, ok := parseSegmentName(filepath.Base(path))
	if !ok {
		return nil, fmt.Errorf("wal: %s: not a segment file name (want %d digits and %s)", path, seqDigits, segmentSuffix)
	}
	return checkSegment(path, base, isLast, nil, false)
}

// checkSegment reads and checks a segment file. opts sets the limits of
// the torn-tail rule (nil: the defaults for a segment of the file's size);
// frameOnly reads only the header and trailer of a sealed segment (Open
// with LazyVerify checks its entries on first read).
func checkSegment(path string, base uint64, isLast bool, opts *Options, frameOnly bool) (*SegmentFile, error) {
	s := &SegmentFile{Info: SegmentInfo{Path: path, BaseSeq: base, LastSeq: base - 1}}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	h, t, sealed, err := readHeaderTrailer(f, path, base)
	f.Close()
	var ce *CorruptError
	if isLast && errors.As(err, &ce) && ce.Offset == int64(h.Size)-TrailerSize {
		// A torn trailer on the last segment is a seal that never
		// completed: its entries are read as if unsealed, and the garbage
		// trailer makes the tail unclean.
		if opts != nil {
			opts.Logf("wal: %s: trailer not valid (%v); reading the segment as unsealed", path, ce.Err)
		}
		sealed, err = false, nil
	}
	if err != nil {
		return nil, err
	}
	s.Info.Size, s.Info.Sealed, s.Info.Reusable = int64(h.Size), sealed, h.Reusable
	if !sealed && !isLast {
		what := "segment is not sealed but is not the last one"
		if t.Closed {
			what = "segment has a clean-close mark but is not the last one"
		}
		return nil, &CorruptError{Path: path, Offset: s.Info.Size - TrailerSize, Err: fmt.Errorf("%w: %s", ErrCorrupt, what)}
	}
	if sealed && frameOnly {
		s.Info.LastSeq, s.Info.DataEnd = t.LastSeq, int64(t.DataEnd)
		return s, nil
	}
	if s.img, err = mapFile(path, s.Info.Size); err != nil {
		return nil, err
	}
	if sealed {
		if s.r, err = checkSealed(path, s.img, h, t); err != nil {
			s.Close()
			return nil, err
		}
		s.Info.LastSeq, s.Info.DataEnd = s.r.last, s.r.dataEnd
		return s, nil
	}
	limit := h.DataLimit()
	s.r = scanEntries(s.img, base, limit)
	s.Info.LastSeq, s.Info.DataEnd = s.r.last, s.r.dataEnd
	if t.Closed {
		if err := closedDamage(path, s.Info.Size, s.r, t); err != nil {
			s.Close()
			return nil, err
		}
		s.Info.Closed = true
	}
	var stale format.StaleTable
	if h.Reusable {
		off := format.StaleTableOffset(s.Info.Size)
		if stale, err = format.DecodeStaleTable(s.img[off:off+format.StaleTableSize(s.Info.Size)], s.Info.Size); err != nil {
			s.Close()
			return nil, &CorruptError{Path: path, Offset: off, LastSeq: s.r.last, FirstLost: s.r.last + 1,
				Err: fmt.Errorf("recycled segment: %w: the bytes after seq %d cannot be told from its earlier use", err, s.r.last)}
		}
	}
	s.tail = scanTail(s.img, s.r.dataEnd, limit, s.r.last, stale)
	torn := s.tail.nonZero
	for i := len(s.img) - 1; i >= len(s.img)-TrailerSize && !t.Closed; i-- { // a torn seal
		if s.img[i] != 0 {
			torn = int64(i + 1)
			break
		}
	}
	if torn == s.r.dataEnd {
		return s, nil
	}
	if opts == nil {
		o, _ := Options{SegmentSize: s.Info.Size}.withDefaults()
		opts = &o
	}
	if err := tailDamage(path, *opts, s.r, s.tail); err != nil {
		s.Close()
		return nil, err
	}
	s.Info.TornEntries = s.tail.entries
	s.Info.TornTail = torn - s.r.dataEnd
	return s, nil
}

// Entry returns entry seq's payload (aliasing the file's map: valid until
// Close) and its offset in the file.
func (s *SegmentFile) Entry(seq uint64) (payload []byte, off int64, err error) {
	if s.img == nil || s.closed {
		return nil, 0, fmt.Errorf("wal: %s: entry %d: the segment's entries were not read", s.Info.Path, seq)
	}
	if seq < s.Info.BaseSeq || seq > s.Info.LastSeq {
		return nil, 0, fmt.Errorf("wal: %s holds seq %d to %d, not %d: %w", s.Info.Path, s.Info.BaseSeq, s.Info.LastSeq, seq, ErrNotFound)
	}
	i := seq - s.Info.BaseSeq
	off = int64(s.r.index[i])
	end := s.r.dataEnd
	if i+1 < uint64(len(s.r.index)) {
		end = int64(s.r.index[i+1])
	}
	payload, err = decodeAt(s.Info.Path, s.img[off:end], off, seq, nil, true)
	return payload, off, err
}

// Close unmaps the file. Close of a closed SegmentFile does nothing.
func (s *SegmentFile) Close() error {
	if s.img != nil && !s.closed {
		s.closed = true
		unmapFile(s.img)
	}
	return nil
}

// Entry is one entry a Reader found.
type Entry struct {
	Seq     uint64
	Segment string // the file's path
	Offset  int64  // where the entry starts in it
	Payload []byte // valid during the call only
}

// Reader reads a log's entries from its directory without opening the
// log: it takes no lock and writes nothing, so it may run beside the
// process that appends. It checks what it reads as Open does: damage is a
// *CorruptError; a torn tail of the last segment (which Open would cut)
// ends the entries.
type Reader struct {
	dir   string
	first uint64
	bases []uint64
}

// NewReader reads the log's wal.meta and lists its segments.
func NewReader(dir string) (*Reader, error) {
	first, err := readMeta(dir)
	if err != nil {
		return nil, err
	}
	bases, err := listSegments(dir, false)
	if err != nil {
		return nil, err
	}
	if first == 0 {
		first = 1
		if len(bases) > 0 {
			first = bases[0]
		}
	}
	return &Reader{dir: dir, first: first, bases: bases}, nil
}

// FirstSeq is the log's first entry (wal.meta's, or its first segment's).
func (r *Reader) FirstSeq() uint64 { return r.first }

// Scan calls fn for the entries from seq from to seq to, in order, until fn
// returns false. It reads only the segments that hold them. In a damaged
// segment it reads the entries before the damage (each checked on its
// own), then returns the damage unless they reached to. torn describes the
// last segment when its entries end at a torn tail (which Open would cut)
// and the scan got there.
func (r *Reader) Scan(from, to uint64, fn func(Entry) bool) (torn *SegmentInfo, err error) {
	from = max(from, r.first)
	var prev *SegmentInfo
	for i, base := range r.bases {
		isLast := i == len(r.bases)-1
		if base > to {
			return nil, nil
		}
		if !isLast && r.bases[i+1] <= from {
			prev = nil // every entry is before from
			continue
		}
		path := filepath.Join(r.dir, segmentName(base))
		s, err := checkSegment(path, base, isLast, nil, false)
		if err != nil {
			return nil, r.scanDamaged(path, base, from, to, fn, err)
		}
		if prev != nil && base != prev.LastSeq+1 {
			s.Close()
			return nil, gapError(s.Info.Path, base, prev.Path, prev.LastSeq)
		}
		if i == 0 && base > r.first {
			s.Close()
			return nil, startError(r.dir, r.first, s.Info.Path, base)
		}
		for seq := max(from, base); seq <= min(to, s.Info.LastSeq); seq++ {
			p, off, err := s.Entry(seq)
			if err != nil {
				s.Close()
				return nil, err
			}
			if !fn(Entry{Seq: seq, Segment: s.Info.Path, Offset: off, Payload: p}) {
				return nil, s.Close()
			}
		}
		s.Close()
		info := s.Info
		if to <= info.LastSeq {
			return nil, nil
		}
		if info.TornTail > 0 {
			return &info, nil
		}
		prev = &info
	}
	return nil, nil
}

// scanDamaged reads the entries of a segment that failed its check (with
// damage) up to its first entry that is not valid. It returns damage
// unless the entries asked for were all before it.
func (r *Reader) scanDamaged(path string, base, from, to uint64, fn func(Entry) bool, damage error) error {
	var ce *CorruptError
	if !errors.As(damage, &ce) || ce.Path != path {
		return damage
	}
	s, err := salvageSegment(path, base)
	if err != nil || s == nil {
		return damage
	}
	defer s.Close()
	for seq := max(from, base); seq <= min(to, s.Info.LastSeq); seq++ {
		p, off, err := s.Entry(seq)
		if err != nil {
			return err
		}
		if !fn(Entry{Seq: seq, Segment: path, Offset: off, Payload: p}) {
			return nil
		}
	}
	if to <= s.Info.LastSeq {
		return nil
	}
	return damage
}

// Segments returns the first seqs of the segment files in dir, oldest
// first (SegmentPath names each); it reads only the directory.
func Segments(dir string) ([]uint64, error) { return listSegments(dir, false) }

// SegmentPath is the path of the segment file in dir whose first seq is
// base.
func SegmentPath(dir string, base uint64) string { return filepath.Join(dir, segmentName(base)) }
