package format

import (
	"encoding/binary"
	"fmt"

	"github.com/ringstore/ringstore/internal/crc32c"
)

// The meta file, wal.meta, records the first sequence number the log keeps
// after TruncateFront. It holds two slots, each in a 4 KiB block of its
// own, each a record, little-endian:
//
//	0  magic    "RSWALMET"
//	8  firstSeq uint64
//	16 reserved uint32 (0)
//	20 crc      uint32   CRC32C of bytes 0..20
//
//	wal.meta: │ slot 0: record, zeros to 4 KiB │ slot 1: record, zeros to 4 KiB │  (MetaFileSize)
//
// The first seq only grows, so the slot with the larger valid firstSeq is
// the current one. A TruncateFront overwrites the other slot in place and
// flushes it (one write, one fdatasync): a crash tears at most that slot
// and the other still holds the previous first seq. The file is created
// (and replaced by Repair) whole: both slots written to wal.meta.tmp,
// flushed, renamed over wal.meta, the directory flushed. A file of one
// record (MetaSize bytes, the layout before the two slots) is read as that
// record; versions that wrote it cannot read the two-slot file.
const (
	// MetaName is the meta file's name in a log's directory.
	MetaName = "wal.meta"
	// MetaSize is the size of one record; MetaSlotSize of a slot, whose
	// record starts it; MetaFileSize of the file: two slots.
	MetaSize     = 24
	MetaSlotSize = 4096
	MetaFileSize = 2 * MetaSlotSize
)

var metaMagic = [8]byte{'R', 'S', 'W', 'A', 'L', 'M', 'E', 'T'}

// EncodeMeta returns the record of firstSeq (one slot's first MetaSize
// bytes).
func EncodeMeta(firstSeq uint64) []byte {
	b := make([]byte, MetaSize)
	copy(b[0:8], metaMagic[:])
	binary.LittleEndian.PutUint64(b[8:16], firstSeq)
	binary.LittleEndian.PutUint32(b[20:24], crc32c.Checksum(b[0:20]))
	return b
}

// EncodeMetaFile returns a whole meta file: both slots holding firstSeq.
func EncodeMetaFile(firstSeq uint64) []byte {
	b := make([]byte, MetaFileSize)
	rec := EncodeMeta(firstSeq)
	copy(b, rec)
	copy(b[MetaSlotSize:], rec)
	return b
}

// DecodeMetaFile checks and decodes a meta file: the larger first seq of
// its valid slots, and the slot holding it (0 for a file of one record).
// A slot that does not decode is what a crash leaves in the slot being
// overwritten; only a file without a valid slot is an error, naming the
// offset of the first slot's damage.
func DecodeMetaFile(b []byte) (firstSeq uint64, slot int, off int64, err error) {
	if len(b) == MetaSize {
		firstSeq, err = DecodeMeta(b)
		return firstSeq, 0, 0, err
	}
	if len(b) != MetaFileSize {
		return 0, 0, 0, fmt.Errorf("%w: meta file is %d bytes, want %d (or %d)", ErrTruncated, len(b), MetaFileSize, MetaSize)
	}
	var firstErr error
	found := false
	for i := range 2 {
		f, err := DecodeMeta(b[i*MetaSlotSize : i*MetaSlotSize+MetaSize])
		if err != nil {
			if firstErr == nil {
				firstErr, off = fmt.Errorf("slot %d: %w", i, err), int64(i*MetaSlotSize)
			}
			continue
		}
		if !found || f > firstSeq {
			firstSeq, slot, found = f, i, true
		}
	}
	if !found {
		return 0, 0, off, firstErr
	}
	return firstSeq, slot, 0, nil
}

// DecodeMeta checks and decodes one record.
func DecodeMeta(b []byte) (firstSeq uint64, err error) {
	if len(b) != MetaSize {
		return 0, fmt.Errorf("%w: meta record is %d bytes, want %d", ErrTruncated, len(b), MetaSize)
	}
	if [8]byte(b[0:8]) != metaMagic {
		return 0, fmt.Errorf("%w: meta magic %q", ErrCorrupt, b[0:8])
	}
	if got, want := binary.LittleEndian.Uint32(b[20:24]), crc32c.Checksum(b[0:20]); got != want {
		return 0, fmt.Errorf("%w: meta checksum %#08x, computed %#08x", ErrCorrupt, got, want)
	}
	if !AllZero(b[16:20]) {
		return 0, fmt.Errorf("%w: meta reserved bytes are not zero", ErrCorrupt)
	}
	firstSeq = binary.LittleEndian.Uint64(b[8:16])
	if firstSeq == 0 {
		return 0, fmt.Errorf("%w: meta first sequence number 0", ErrCorrupt)
	}
	return firstSeq, nil
}
