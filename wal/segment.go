package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ringstore/ringstore/internal/crc32c"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// pageSize is the unit the recycled-segment rules pad to: a group write
// ends with zeros to the end of its page, and so does a new header.
const pageSize = 4096

var zeroPage [pageSize]byte

const (
	segmentSuffix = ".seg"
	tmpSuffix     = ".tmp"
	seqDigits     = 20
)

// segmentName is the file name of the segment whose first entry is base:
// the base in 20 decimal digits, so that names sort as numbers.
func segmentName(base uint64) string { return fmt.Sprintf("%0*d%s", seqDigits, base, segmentSuffix) }

// parseSegmentName returns the base of a segment file name.
func parseSegmentName(name string) (uint64, bool) {
	digits, ok := strings.CutSuffix(name, segmentSuffix)
	if !ok || len(digits) != seqDigits {
		return 0, false
	}
	base, err := strconv.ParseUint(digits, 10, 64)
	return base, err == nil && base > 0
}

// segment is one segment file. base, path and size are immutable. The
// rest is guarded by Log.segMu, except where a field says otherwise.
type segment struct {
	base     uint64
	path     string
	size     int64
	reusable bool // format version 2: entries end before its stale table

	// recyclable: sealed full by this Log, so every seq the file holds,
	// live or left from its earlier uses, is below the log's next one.
	// stale is the segment's stale table (nil: the file was new), next the
	// table its file will carry into its next use, built as groups are
	// written (nil unless this Log made the segment reusable). Owned by the
	// committer.
	recyclable bool
	stale      format.StaleTable
	next       *format.StaleTableBuilder
	// state is where the file is in its life (lifecycle.go); guarded by
	// Log.files.mu.
	state   segFileState
	sealed  bool
	last    uint64   // last durable entry (base-1 when none)
	dataEnd int64    // offset just past the last durable entry
	index   []uint32 // offset of entry base+i, for every durable entry

	// f is the open file of the active segment (nil once sealed); its
	// requests hold it, so closing it at the seal cannot race a flush.
	f *ioengine.File

	// mu guards data and loadErr of a sealed segment, which are filled on
	// first read (readers hold segMu for reading, so they need their own
	// lock to load).
	mu      sync.Mutex
	data    []byte // read-only mmap of the sealed segment
	loaded  bool   // index and data are set (or loadErr)
	loadErr error
}

// header is the segment's header.
func (s *segment) header() format.SegmentHeader {
	return format.SegmentHeader{BaseSeq: s.base, Size: uint64(s.size), Reusable: s.reusable}
}

// capacity is the largest payload one entry of a segment can hold.
func (s *segment) capacity() int {
	return int(s.header().DataLimit()) - SegmentHeaderSize - EntryHeaderSize
}

// entryBounds returns the offset and encoded length of entry seq, which
// must be durable and in s. Caller holds segMu.
func (s *segment) entryBounds(seq uint64) (off, n int64) {
	i := seq - s.base
	off = int64(s.index[i])
	end := s.dataEnd
	if i+1 < uint64(len(s.index)) {
		end = int64(s.index[i+1])
	}
	return off, end - off
}

// scanResult is what scanning the entries of a segment found.
type scanResult struct {
	index   []uint32
	last    uint64
	dataEnd int64
	crc     uint32 // CRC32C of bytes SegmentHeaderSize..dataEnd
	stop    error  // why the scan stopped: ErrEndOfEntries, or damage
}

// scanEntries reads the entries of a segment image (the whole file) from
// the header on, each with the sequence number that follows the last,
// until limit or the first entry that is not valid.
func scanEntries(img []byte, base uint64, limit int64) scanResult {
	r := scanResult{last: base - 1, dataEnd: SegmentHeaderSize}
	maxBody := len(img) - SegmentHeaderSize - TrailerSize - EntryHeaderSize
	for r.dataEnd < limit {
		seq, _, n, err := format.DecodeEntry(img[r.dataEnd:limit], maxBody)
		if err == nil && seq != r.last+1 {
			err = fmt.Errorf("%w: entry seq %d where %d was expected", ErrCorrupt, seq, r.last+1)
		}
		if err != nil {
			r.stop = err
			break
		}
		r.index = append(r.index, uint32(r.dataEnd))
		r.crc = crc32c.Update(r.crc, img[r.dataEnd:r.dataEnd+int64(n)])
		r.dataEnd += int64(n)
		r.last = seq
	}
	if r.stop == nil {
		r.stop = ErrEndOfEntries
	}
	return r
}

// checkSealed verifies a sealed segment image fully against its trailer:
// every entry in sequence, the data CRC, and nothing but entries before
// dataEnd.
func checkSealed(path string, img []byte, h format.SegmentHeader, t format.Trailer) (scanResult, error) {
	bad := func(off int64, last uint64, format string, args ...any) (scanResult, error) {
		return scanResult{}, &CorruptError{Path: path, Offset: off, LastSeq: last, Err: fmt.Errorf(format, args...)}
	}
	if err := checkTrailer(path, h, t); err != nil {
		return scanResult{}, err
	}
	if t.Closed {
		return bad(int64(h.Size)-TrailerSize, 0, "%w: a clean-close mark where the segment's seal should be", ErrCorrupt)
	}
	r := scanEntries(img, h.BaseSeq, int64(t.DataEnd))
	if r.dataEnd != int64(t.DataEnd) {
		// The seal says the entries go on to DataEnd: wherever they stop
		// before it, acknowledged entries are damaged, never a torn tail.
		stop := r.stop
		if errors.Is(stop, ErrEndOfEntries) {
			stop = fmt.Errorf("%w: the entries end at offset %d, the trailer says at %d", ErrCorrupt, r.dataEnd, t.DataEnd)
		}
		err := &CorruptError{Path: path, Offset: r.dataEnd, LastSeq: r.last, Err: fmt.Errorf("sealed segment: %w", stop)}
		if t.LastSeq > r.last {
			err.FirstLost, err.LastLost, err.Lost = r.last+1, t.LastSeq, t.LastSeq-r.last
		}
		return scanResult{}, err
	}
	if r.last != t.LastSeq {
		return bad(r.dataEnd, r.last, "%w: sealed segment ends at seq %d, trailer says %d", ErrCorrupt, r.last, t.LastSeq)
	}
	if r.crc != t.DataCRC {
		return bad(SegmentHeaderSize, 0, "%w: sealed segment data checksum %#08x, trailer says %#08x", ErrCorrupt, r.crc, t.DataCRC)
	}
	return r, nil
}

// closedDamage returns a *CorruptError when the entries of the last
// segment, read as unsealed (r), are not those its clean-close mark t
// records, or nil. The log was closed with every entry durable and nothing
// in flight, so an entry the mark covers that is not valid is damage to
// acknowledged data, never a torn tail.
func closedDamage(path string, size int64, r scanResult, t format.Trailer) error {
	switch {
	case r.last < t.LastSeq:
		return &CorruptError{Path: path, Offset: r.dataEnd, LastSeq: r.last, FirstLost: r.last + 1, LastLost: t.LastSeq, Lost: t.LastSeq - r.last,
			Err: fmt.Errorf("%w: entry %d is not valid (%v), but the log was closed cleanly with its entries ending at seq %d, offset %d (%d bytes from here): damage, not a torn tail",
				ErrCorrupt, r.last+1, r.stop, t.LastSeq, t.DataEnd, int64(t.DataEnd)-r.dataEnd)}
	case r.last > t.LastSeq || r.dataEnd != int64(t.DataEnd):
		return &CorruptError{Path: path, Offset: size - TrailerSize, LastSeq: r.last,
			Err: fmt.Errorf("%w: the clean-close mark says the entries end at seq %d, offset %d, but they end at seq %d, offset %d", ErrCorrupt, t.LastSeq, t.DataEnd, r.last, r.dataEnd)}
	case r.crc != t.DataCRC:
		return &CorruptError{Path: path, Offset: SegmentHeaderSize,
			Err: fmt.Errorf("%w: data checksum %#08x, the clean-close mark says %#08x", ErrCorrupt, r.crc, t.DataCRC)}
	}
	return nil
}

// checkTrailer checks that a trailer fits its segment's header.
func checkTrailer(path string, h format.SegmentHeader, t format.Trailer) error {
	if t.DataEnd < SegmentHeaderSize || int64(t.DataEnd) > h.DataLimit() || t.LastSeq+1 < h.BaseSeq {
		return &CorruptError{Path: path, Offset: int64(h.Size) - TrailerSize, Err: fmt.Errorf("%w: trailer data end %d, last seq %d do not fit a segment of %d bytes starting at seq %d", ErrCorrupt, t.DataEnd, t.LastSeq, h.Size, h.BaseSeq)}
	}
	return nil
}

// gapError reports a segment that does not start where the one before it
// ended.
func gapError(path string, base uint64, prevPath string, prevLast uint64) error {
	return &CorruptError{Path: path, Offset: 16, LastSeq: prevLast, Err: fmt.Errorf("%w: %w: segment starts at seq %d but %s ends at seq %d", ErrCorrupt, errGap, base, filepath.Base(prevPath), prevLast)}
}

// startError reports a first segment that starts after the log's first
// seq (as wal.meta records it), at the offset of that first seq in the
// slot holding it.
func startError(dir string, first uint64, segPath string, base uint64) error {
	_, slot, _ := readMetaSlot(dir)
	return &CorruptError{Path: filepath.Join(dir, format.MetaName), Offset: int64(max(slot, 0)*format.MetaSlotSize) + 8, Err: fmt.Errorf("%w: the log should start at seq %d but its first segment %s starts at %d", ErrCorrupt, first, filepath.Base(segPath), base)}
}

// readHeaderTrailer reads and checks the header of a segment file (and its
// size), and decodes and checks its trailer. A trailer of zeros is reported as
// (Trailer{}, false, nil); a clean-close mark as (mark, false, nil).
func readHeaderTrailer(f *os.File, path string, base uint64) (format.SegmentHeader, format.Trailer, bool, error) {
	st, err := f.Stat()
	if err != nil {
		return format.SegmentHeader{}, format.Trailer{}, false, fmt.Errorf("wal: %w", err)
	}
	var hb [SegmentHeaderSize]byte
	if _, err := f.ReadAt(hb[:], 0); err != nil {
		return format.SegmentHeader{}, format.Trailer{}, false, &CorruptError{Path: path, Offset: 0, Err: fmt.Errorf("%w: segment header: %v", ErrTruncated, err)}
	}
	h, err := format.DecodeSegmentHeader(hb[:])
	if err != nil {
		return h, format.Trailer{}, false, &CorruptError{Path: path, Offset: 0, Err: err}
	}
	if h.BaseSeq != base {
		return h, format.Trailer{}, false, &CorruptError{Path: path, Offset: 16, Err: fmt.Errorf("%w: segment header base seq %d, file name says %d", ErrCorrupt, h.BaseSeq, base)}
	}
	if uint64(st.Size()) != h.Size {
		return h, format.Trailer{}, false, &CorruptError{Path: path, Offset: min(st.Size(), int64(h.Size)), Err: fmt.Errorf("%w: segment file is %d bytes, header says %d", ErrTruncated, st.Size(), h.Size)}
	}
	if h.Size > 1<<32 || h.Size%4096 != 0 {
		return h, format.Trailer{}, false, &CorruptError{Path: path, Offset: 24, Err: fmt.Errorf("%w: segment size %d in header", ErrCorrupt, h.Size)}
	}
	var tb [TrailerSize]byte
	if _, err := f.ReadAt(tb[:], int64(h.Size)-TrailerSize); err != nil {
		return h, format.Trailer{}, false, fmt.Errorf("wal: read trailer of %s: %w", path, err)
	}
	t, err := format.DecodeTrailer(tb[:])
	if errors.Is(err, ErrEndOfEntries) {
		return h, format.Trailer{}, false, nil
	}
	if err != nil {
		return h, format.Trailer{}, false, &CorruptError{Path: path, Offset: int64(h.Size) - TrailerSize, Err: err}
	}
	if err := checkTrailer(path, h, t); err != nil {
		return h, format.Trailer{}, false, err
	}
	return h, t, !t.Closed, nil
}

// load maps a sealed segment and builds its index on first use (with
// LazyVerify, or after a rotation that dropped the map). Caller holds
// segMu for reading at least.
func (s *segment) load() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.loaded {
		return s.loadErr
	}
	s.loaded = true
	img, err := mapFile(s.path, s.size)
	if err != nil {
		s.loadErr = err
		return err
	}
	if s.index == nil {
		h := s.header()
		t, terr := format.DecodeTrailer(img[s.size-TrailerSize:])
		if terr != nil {
			unmapFile(img)
			s.loadErr = &CorruptError{Path: s.path, Offset: s.size - TrailerSize, Err: terr}
			return s.loadErr
		}
		r, err := checkSealed(s.path, img, h, t)
		if err != nil {
			unmapFile(img)
			s.loadErr = err
			return err
		}
		s.index = r.index
	}
	s.data = img
	return nil
}

// release unmaps a sealed segment's data. Caller holds segMu for writing.
func (s *segment) release() {
	s.mu.Lock()
	if s.data != nil {
		unmapFile(s.data)
		s.data = nil
	}
	s.mu.Unlock()
	if s.f != nil {
		s.f.Close()
		s.f = nil
	}
}

// listSegments returns the bases of the segment files in dir, sorted.
// With removeTmp it also removes leftover temporary files (half-made
// segments and spares, a meta file being replaced).
func listSegments(dir string, removeTmp bool) ([]uint64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("wal: %w", err)
	}
	var bases []uint64
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			if !removeTmp {
				continue
			}
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return nil, fmt.Errorf("wal: removing leftover %w", err)
			}
		case strings.HasSuffix(name, segmentSuffix):
			base, ok := parseSegmentName(name)
			if !ok {
				return nil, fmt.Errorf("wal: %s: not a segment file name (want %d digits and %s)", filepath.Join(dir, name), seqDigits, segmentSuffix)
			}
			bases = append(bases, base)
		}
	}
	return bases, nil // ReadDir sorts by name, and names sort as numbers
}

// segmentCRC is the CRC32C of a segment's data bytes.
func segmentCRC(img []byte, dataEnd int64) uint32 {
	return crc32c.Checksum(img[SegmentHeaderSize:dataEnd])
}
