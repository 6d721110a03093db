package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/ringstore/ringstore/internal/crc32c"
)

// Stable file format, version 1, little-endian. The whole key/value map is
// rewritten on every Set.
//
//	0   magic    "RSRAFTKV"
//	8   version  uint32 (1)
//	12  count    uint32   number of entries
//	16  entries  count × { keyLen uint32, key, valLen uint32, val }, keys sorted and unique
//	..  crc      uint32   CRC32C (Castagnoli) of every byte before it
const (
	stableName    = "stable.db"
	stableTmpName = stableName + ".tmp"
	stableVersion = 1
	stableHeader  = 16
	stableMinSize = stableHeader + 4
)

var (
	stableMagic = [8]byte{'R', 'S', 'R', 'A', 'F', 'T', 'K', 'V'}
	// errBadStable is wrapped by every decode error of the stable file.
	errBadStable = errors.New("raftstore: bad stable file")
)

// encodeStable encodes m with its keys in sorted order.
func encodeStable(m map[string][]byte) []byte {
	keys := make([]string, 0, len(m))
	size := stableMinSize
	for k, v := range m {
		keys = append(keys, k)
		size += 8 + len(k) + len(v)
	}
	slices.Sort(keys)
	b := make([]byte, 0, size)
	b = append(b, stableMagic[:]...)
	b = binary.LittleEndian.AppendUint32(b, stableVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(keys)))
	for _, k := range keys {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(k)))
		b = append(b, k...)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m[k])))
		b = append(b, m[k]...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32c.Checksum(b))
}

// decodeStable decodes a stable file image. Errors wrap errBadStable and
// say what was wrong and at which offset; the caller adds the path.
func decodeStable(b []byte) (map[string][]byte, error) {
	bad := func(off int, format string, args ...any) error {
		return fmt.Errorf("%w: at offset %d: %s", errBadStable, off, fmt.Sprintf(format, args...))
	}
	if len(b) < stableMinSize {
		return nil, bad(0, "%d bytes, shorter than the smallest file (%d): truncated", len(b), stableMinSize)
	}
	if !bytes.Equal(b[:8], stableMagic[:]) {
		return nil, bad(0, "magic %q, want %q", b[:8], stableMagic[:])
	}
	end := len(b) - 4
	if want, got := binary.LittleEndian.Uint32(b[end:]), crc32c.Checksum(b[:end]); want != got {
		return nil, bad(end, "CRC32C %#08x, computed %#08x: truncated or corrupt", want, got)
	}
	if v := binary.LittleEndian.Uint32(b[8:]); v != stableVersion {
		return nil, bad(8, "unknown version %d", v)
	}
	count := binary.LittleEndian.Uint32(b[12:])
	if uint64(count)*8 > uint64(end-stableHeader) {
		return nil, bad(12, "%d entries cannot fit in %d bytes", count, end-stableHeader)
	}
	m := make(map[string][]byte, count)
	off := stableHeader
	var prev string
	for i := range count {
		k, next, err := stableField(b[:end], off)
		if err != nil {
			return nil, bad(off, "entry %d key: %v", i, err)
		}
		v, next2, err := stableField(b[:end], next)
		if err != nil {
			return nil, bad(next, "entry %d value: %v", i, err)
		}
		key := string(k)
		if i > 0 && key <= prev {
			return nil, bad(off, "entry %d key %q not after %q (keys must be sorted and unique)", i, key, prev)
		}
		m[key] = bytes.Clone(v)
		if m[key] == nil {
			m[key] = []byte{}
		}
		prev, off = key, next2
	}
	if off != end {
		return nil, bad(off, "%d bytes after the last entry", end-off)
	}
	return m, nil
}

// stableField reads a length-prefixed field at off.
func stableField(b []byte, off int) (val []byte, next int, err error) {
	if len(b)-off < 4 {
		return nil, 0, fmt.Errorf("truncated length (%d bytes left)", len(b)-off)
	}
	n := binary.LittleEndian.Uint32(b[off:])
	off += 4
	if uint64(n) > uint64(len(b)-off) {
		return nil, 0, fmt.Errorf("length %d but %d bytes left", n, len(b)-off)
	}
	return b[off : off+int(n)], off + int(n), nil
}

// readStable loads the stable file of dir; a missing file is an empty map.
// A leftover temporary file from an interrupted write is removed: the
// rename never happened, so the old file is the current one.
func readStable(dir string) (map[string][]byte, error) {
	if err := os.Remove(filepath.Join(dir, stableTmpName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("raftstore: removing leftover %w", err)
	}
	path := filepath.Join(dir, stableName)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string][]byte{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	m, err := decodeStable(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// writeStable replaces dir's stable file with the encoding of m: a
// temporary file written and flushed, renamed over the old one, and the
// directory flushed. A crash at any point leaves the old file or the new
// one, whole.
func writeStable(dir string, m map[string][]byte) error {
	tmp := filepath.Join(dir, stableTmpName)
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("raftstore: %w", err)
	}
	if _, err := f.Write(encodeStable(m)); err != nil {
		f.Close()
		return fmt.Errorf("raftstore: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("raftstore: fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("raftstore: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, stableName)); err != nil {
		return fmt.Errorf("raftstore: %w", err)
	}
	return syncDir(dir)
}

// syncDir flushes dir so that a rename in it is durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("raftstore: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("raftstore: fsync directory %s: %w", dir, err)
	}
	return nil
}
