package wal

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
)

// The meta file, wal.meta, records the first sequence number the log keeps
// after TruncateFront, little-endian:
//
//	0  magic    "RSWALMET"
//	8  firstSeq uint64
//	16 reserved uint32 (0)
//	20 crc      uint32   CRC32C of bytes 0..20
//
// It is replaced atomically: written to wal.meta.tmp, fsynced, renamed over
// wal.meta, and the directory fsynced.
const (
	metaName = "wal.meta"
	lockName = "wal.lock"
	MetaSize = 24
)

var metaMagic = [8]byte{'R', 'S', 'W', 'A', 'L', 'M', 'E', 'T'}

// EncodeMeta returns the meta file for firstSeq.
func EncodeMeta(firstSeq uint64) []byte {
	b := make([]byte, MetaSize)
	copy(b[0:8], metaMagic[:])
	binary.LittleEndian.PutUint64(b[8:16], firstSeq)
	binary.LittleEndian.PutUint32(b[20:24], crc32.Checksum(b[0:20], castagnoli))
	return b
}

// DecodeMeta checks and decodes a meta file.
func DecodeMeta(b []byte) (firstSeq uint64, err error) {
	if len(b) != MetaSize {
		return 0, fmt.Errorf("%w: meta file is %d bytes, want %d", ErrTruncated, len(b), MetaSize)
	}
	if [8]byte(b[0:8]) != metaMagic {
		return 0, fmt.Errorf("%w: meta magic %q", ErrCorrupt, b[0:8])
	}
	if got, want := binary.LittleEndian.Uint32(b[20:24]), crc32.Checksum(b[0:20], castagnoli); got != want {
		return 0, fmt.Errorf("%w: meta checksum %#08x, computed %#08x", ErrCorrupt, got, want)
	}
	if !allZero(b[16:20]) {
		return 0, fmt.Errorf("%w: meta reserved bytes are not zero", ErrCorrupt)
	}
	firstSeq = binary.LittleEndian.Uint64(b[8:16])
	if firstSeq == 0 {
		return 0, fmt.Errorf("%w: meta first sequence number 0", ErrCorrupt)
	}
	return firstSeq, nil
}

// readMeta returns the first seq recorded in dir, or 0 when there is no
// meta file.
func readMeta(dir string) (uint64, error) {
	path := filepath.Join(dir, metaName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("wal: %w", err)
	}
	first, err := DecodeMeta(b)
	if err != nil {
		return 0, &CorruptError{Path: path, Offset: 0, Err: err}
	}
	return first, nil
}
