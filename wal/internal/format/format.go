package format

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ringstore/ringstore"

	"github.com/ringstore/ringstore/internal/crc32c"
)

// Sizes of the fixed parts of the format.
const (
	// SectorSize is the unit a crash keeps or loses whole, and the unit
	// of a stale table.
	SectorSize = 512
	// PageSize is the unit the recycled-segment rules pad to: a group
	// write ends with zeros to the end of its page, and so does a new
	// header; the trailer's page ends the file.
	PageSize = 4096

	SegmentHeaderSize = 40
	TrailerSize       = 40
	EntryHeaderSize   = 16
	formatVersion     = 1
	reusableVersion   = 2 // the layout of 1 with a stale table before the trailer page
)

var (
	segmentMagic = [8]byte{'R', 'S', 'W', 'A', 'L', 'S', 'E', 'G'}
	trailerMagic = [8]byte{'R', 'S', 'W', 'A', 'L', 'E', 'N', 'D'}
	closeMagic   = [8]byte{'R', 'S', 'W', 'A', 'L', 'C', 'L', 'S'}
)

// Decoding errors. ErrEndOfEntries and ErrTruncated are what a torn tail
// looks like; ErrCorrupt is damage. Each is wrapped with where it was found.
var (
	ErrEndOfEntries = errors.New("wal: end of entries")
	ErrTruncated    = errors.New("wal: truncated")
	ErrCorrupt      = ringstore.NewCorruptSentinel("wal: corrupt")
)

// SegmentHeader is the first 40 bytes of a segment.
type SegmentHeader struct {
	BaseSeq uint64
	Size    uint64
	// Reusable marks format version 2 (Options.RecycleSegments): entries
	// end at StaleTableOffset(Size), where a table of the checksums of the
	// bytes the file held before the segment began lies (zeros when the
	// file was new), so that the file can be made into a later segment.
	Reusable bool
}

// DataLimit is the offset entries end before: the stale table of a
// reusable segment, the trailer otherwise.
func (h SegmentHeader) DataLimit() int64 {
	if h.Reusable {
		return StaleTableOffset(int64(h.Size))
	}
	return int64(h.Size) - TrailerSize
}

// Encode writes the header into b, which must hold SegmentHeaderSize bytes.
func (h SegmentHeader) Encode(b []byte) {
	_ = b[SegmentHeaderSize-1]
	clear(b[:SegmentHeaderSize])
	copy(b[0:8], segmentMagic[:])
	version := uint32(formatVersion)
	if h.Reusable {
		version = reusableVersion
	}
	binary.LittleEndian.PutUint32(b[8:12], version)
	binary.LittleEndian.PutUint64(b[16:24], h.BaseSeq)
	binary.LittleEndian.PutUint64(b[24:32], h.Size)
	binary.LittleEndian.PutUint32(b[36:40], crc32c.Checksum(b[0:36]))
}

// DecodeSegmentHeader checks and decodes a segment header.
func DecodeSegmentHeader(b []byte) (SegmentHeader, error) {
	if len(b) < SegmentHeaderSize {
		return SegmentHeader{}, fmt.Errorf("%w: segment header needs %d bytes, have %d", ErrTruncated, SegmentHeaderSize, len(b))
	}
	if err := checkFrame(b, segmentMagic, "segment header"); err != nil {
		return SegmentHeader{}, err
	}
	if !AllZero(b[12:16]) || !AllZero(b[32:36]) {
		return SegmentHeader{}, fmt.Errorf("%w: segment header reserved bytes are not zero", ErrCorrupt)
	}
	v := binary.LittleEndian.Uint32(b[8:12])
	if v != formatVersion && v != reusableVersion {
		return SegmentHeader{}, fmt.Errorf("%w: segment format version %d, this build reads %d and %d", ErrCorrupt, v, formatVersion, reusableVersion)
	}
	h := SegmentHeader{BaseSeq: binary.LittleEndian.Uint64(b[16:24]), Size: binary.LittleEndian.Uint64(b[24:32]), Reusable: v == reusableVersion}
	if h.BaseSeq == 0 || h.Size < SegmentHeaderSize+TrailerSize {
		return SegmentHeader{}, fmt.Errorf("%w: segment header base sequence %d, size %d", ErrCorrupt, h.BaseSeq, h.Size)
	}
	if h.Reusable && (h.Size%4096 != 0 || StaleTableOffset(int64(h.Size)) < 2*4096) {
		return SegmentHeader{}, fmt.Errorf("%w: reusable segment of %d bytes: too small for its stale table, or not a multiple of 4096", ErrCorrupt, h.Size)
	}
	return h, nil
}

// The stale table of a reusable segment: the CRC32C of every 512-byte
// sector of the file as it was before the segment began (before its
// header), little-endian, one per sector of the whole file, then the
// CRC32C of those, zero-padded to whole 4 KiB pages, ending where the last
// 4 KiB page of the file (the trailer's) begins. Recovery reads a sector
// whose checksum is the table's as one the segment never wrote: what a zero
// sector proves in a fresh segment. A table region of zeros says the file
// was new (its earlier bytes are zeros): no table is needed then. The
// entries for sectors from the table on are not read.

// StaleTableSize is the size of the stale table of a segment of size bytes.
func StaleTableSize(size int64) int64 {
	return (4*(size/SectorSize) + 4 + 4095) / 4096 * 4096
}

// StaleTableOffset is where the stale table of a reusable segment of size
// bytes starts: its entries end before it.
func StaleTableOffset(size int64) int64 {
	return size - 4096 - StaleTableSize(size)
}

// EncodeStaleTable returns the stale table of img, the whole file of a
// segment about to be reused.
func EncodeStaleTable(img []byte) []byte {
	b := make([]byte, StaleTableSize(int64(len(img))))
	PutSectorCRCs(b, 0, img)
	SealStaleTable(b, int64(len(img)))
	return b
}

// PutSectorCRCs records in table the checksums of the sectors of chunk,
// which starts at off of the file (both multiples of 512).
func PutSectorCRCs(table []byte, off int64, chunk []byte) {
	for i := int64(0); i+SectorSize <= int64(len(chunk)); i += SectorSize {
		binary.LittleEndian.PutUint32(table[4*((off+i)/SectorSize):], crc32c.Checksum(chunk[i:i+SectorSize]))
	}
}

// SealStaleTable writes the checksum of the table of a segment of size
// bytes after its sector checksums.
func SealStaleTable(table []byte, size int64) {
	n := size / SectorSize
	binary.LittleEndian.PutUint32(table[4*n:], crc32c.Checksum(table[:4*n]))
}

// StaleTable is a decoded stale table.
type StaleTable []byte

// DecodeStaleTable checks the stale table b of a segment of size bytes.
// A table of zeros (the file was new) is (nil, nil).
func DecodeStaleTable(b []byte, size int64) (StaleTable, error) {
	if size <= 0 || size%SectorSize != 0 {
		return nil, fmt.Errorf("%w: stale table for a segment of %d bytes", ErrCorrupt, size)
	}
	n := size / SectorSize
	if int64(len(b)) < 4*n+4 {
		return nil, fmt.Errorf("%w: stale table needs %d bytes, have %d", ErrTruncated, 4*n+4, len(b))
	}
	if AllZero(b[:4*n+4]) {
		return nil, nil
	}
	if got, want := binary.LittleEndian.Uint32(b[4*n:]), crc32c.Checksum(b[:4*n]); got != want {
		return nil, fmt.Errorf("%w: stale table checksum %#08x, computed %#08x", ErrCorrupt, got, want)
	}
	return StaleTable(b[:4*n]), nil
}

// Unchanged reports whether the sector at off (a multiple of 512) holds
// what it held before the segment began.
func (t StaleTable) Unchanged(img []byte, off int64) bool {
	i := off / SectorSize
	if 4*i+4 > int64(len(t)) || off+SectorSize > int64(len(img)) {
		return false
	}
	return binary.LittleEndian.Uint32(t[4*i:]) == crc32c.Checksum(img[off:off+SectorSize])
}

// Trailer is the last 40 bytes of a sealed segment, or, with Closed, the
// clean-close mark of the last segment of a log that was closed cleanly:
// the same fields under the magic "RSWALCLS", saying that the segment's
// entries end at DataEnd with LastSeq, every one of them durable, and
// that nothing was being written when the log closed. A segment with a
// mark is not sealed: appends continue after DataEnd once the mark is
// erased.
type Trailer struct {
	LastSeq uint64
	DataEnd uint64
	DataCRC uint32
	Closed  bool
}

// Encode writes the trailer into b, which must hold TrailerSize bytes.
func (t Trailer) Encode(b []byte) {
	_ = b[TrailerSize-1]
	clear(b[:TrailerSize])
	if t.Closed {
		copy(b[0:8], closeMagic[:])
	} else {
		copy(b[0:8], trailerMagic[:])
	}
	binary.LittleEndian.PutUint64(b[8:16], t.LastSeq)
	binary.LittleEndian.PutUint64(b[16:24], t.DataEnd)
	binary.LittleEndian.PutUint32(b[24:28], t.DataCRC)
	binary.LittleEndian.PutUint32(b[36:40], crc32c.Checksum(b[0:36]))
}

// DecodeTrailer checks and decodes a trailer or a clean-close mark
// (Closed set). A trailer of zeros (a segment that was never sealed, nor
// closed cleanly) is ErrEndOfEntries.
func DecodeTrailer(b []byte) (Trailer, error) {
	if len(b) < TrailerSize {
		return Trailer{}, fmt.Errorf("%w: trailer needs %d bytes, have %d", ErrTruncated, TrailerSize, len(b))
	}
	if AllZero(b[:TrailerSize]) {
		return Trailer{}, fmt.Errorf("%w: segment not sealed", ErrEndOfEntries)
	}
	magic, what := trailerMagic, "trailer"
	if [8]byte(b[0:8]) == closeMagic {
		magic, what = closeMagic, "clean-close mark"
	}
	if err := checkFrame(b, magic, what); err != nil {
		return Trailer{}, err
	}
	if !AllZero(b[28:36]) {
		return Trailer{}, fmt.Errorf("%w: %s reserved bytes are not zero", ErrCorrupt, what)
	}
	return Trailer{LastSeq: binary.LittleEndian.Uint64(b[8:16]), DataEnd: binary.LittleEndian.Uint64(b[16:24]), DataCRC: binary.LittleEndian.Uint32(b[24:28]), Closed: magic == closeMagic}, nil
}

// EncodedLen is the size of an entry with a payload of n bytes.
func EncodedLen(n int) int { return EntryHeaderSize + n }

// AppendEntry appends the encoding of (seq, payload) to dst.
func AppendEntry(dst []byte, seq uint64, payload []byte) []byte {
	var h [EntryHeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:4], uint32(len(payload)))
	binary.LittleEndian.PutUint64(h[4:12], seq)
	crc := crc32c.Update(crc32c.Checksum(h[0:12]), payload)
	binary.LittleEndian.PutUint32(h[12:16], crc)
	return append(append(dst, h[:]...), payload...)
}

// DecodeEntry decodes the entry at the start of b. It returns the payload
// (aliasing b) and the entry's encoded length. maxBody bounds bodyLen before
// anything past the header is looked at. Errors: ErrEndOfEntries for a zero
// header, ErrTruncated when b ends inside the entry, ErrCorrupt otherwise.
func DecodeEntry(b []byte, maxBody int) (seq uint64, payload []byte, n int, err error) {
	if len(b) < EntryHeaderSize {
		if AllZero(b) {
			return 0, nil, 0, ErrEndOfEntries
		}
		return 0, nil, 0, fmt.Errorf("%w: entry header needs %d bytes, have %d", ErrTruncated, EntryHeaderSize, len(b))
	}
	if AllZero(b[:EntryHeaderSize]) {
		return 0, nil, 0, ErrEndOfEntries
	}
	bodyLen := binary.LittleEndian.Uint32(b[0:4])
	seq = binary.LittleEndian.Uint64(b[4:12])
	if uint64(bodyLen) > uint64(maxBody) {
		return 0, nil, 0, fmt.Errorf("%w: entry length %d exceeds the limit %d", ErrCorrupt, bodyLen, maxBody)
	}
	if uint64(bodyLen) > uint64(len(b)-EntryHeaderSize) {
		return 0, nil, 0, fmt.Errorf("%w: entry of %d bytes, %d left", ErrTruncated, bodyLen, len(b)-EntryHeaderSize)
	}
	payload = b[EntryHeaderSize : EntryHeaderSize+int(bodyLen)]
	crc := crc32c.Update(crc32c.Checksum(b[0:12]), payload)
	if got := binary.LittleEndian.Uint32(b[12:16]); got != crc {
		return 0, nil, 0, fmt.Errorf("%w: entry seq %d checksum %#08x, computed %#08x", ErrCorrupt, seq, got, crc)
	}
	if seq == 0 {
		return 0, nil, 0, fmt.Errorf("%w: entry with sequence number 0", ErrCorrupt)
	}
	return seq, payload, EntryHeaderSize + int(bodyLen), nil
}

// checkFrame checks the magic and the CRC32C of a 40-byte header or trailer.
func checkFrame(b []byte, magic [8]byte, what string) error {
	if [8]byte(b[0:8]) != magic {
		return fmt.Errorf("%w: %s magic %q", ErrCorrupt, what, b[0:8])
	}
	if got, want := binary.LittleEndian.Uint32(b[36:40]), crc32c.Checksum(b[0:36]); got != want {
		return fmt.Errorf("%w: %s checksum %#08x, computed %#08x", ErrCorrupt, what, got, want)
	}
	return nil
}

// AllZero reports whether b holds only zeros.
func AllZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
