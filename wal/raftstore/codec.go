package raftstore

import (
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/raft"
)

// Log entry encoding, version 1, little-endian. It is the payload of one
// wal entry, whose sequence number is the entry's raft index.
//
//	0   version     uint8    (1)
//	1   type        uint8    raft.LogType
//	2   flags       uint8    bit 0: AppendedAt is set; the other bits are 0
//	3   reserved    uint8    (0)
//	4   index       uint64   raft index (must equal the wal seq)
//	12  term        uint64
//	20  [sec int64, nsec uint32]   AppendedAt as Unix time, only with flag bit 0
//	..  dataLen     uint32
//	..  data        [dataLen]byte
//	..  extLen      uint32
//	..  extensions  [extLen]byte
//
// The payload ends exactly after the extensions.
const (
	codecVersion     = 1
	flagAppendedAt   = 1 << 0
	fixedHeaderSize  = 20
	appendedAtSize   = 12
	minEncodedLength = fixedHeaderSize + 4 + 4
)

// errBadLog is wrapped by every decode error.
var errBadLog = errors.New("raftstore: bad log entry")

// encodedLen is the length encodeLog gives l.
func encodedLen(l *raft.Log) int {
	n := minEncodedLength + len(l.Data) + len(l.Extensions)
	if !l.AppendedAt.IsZero() {
		n += appendedAtSize
	}
	return n
}

// encodeLog appends the encoding of l to dst.
func encodeLog(dst []byte, l *raft.Log) []byte {
	var flags uint8
	if !l.AppendedAt.IsZero() {
		flags |= flagAppendedAt
	}
	dst = append(dst, codecVersion, byte(l.Type), flags, 0)
	dst = binary.LittleEndian.AppendUint64(dst, l.Index)
	dst = binary.LittleEndian.AppendUint64(dst, l.Term)
	if flags&flagAppendedAt != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, uint64(l.AppendedAt.Unix()))
		dst = binary.LittleEndian.AppendUint32(dst, uint32(l.AppendedAt.Nanosecond()))
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(l.Data)))
	dst = append(dst, l.Data...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(l.Extensions)))
	dst = append(dst, l.Extensions...)
	return dst
}

// decodeLog decodes the payload of wal entry index into l. Data and
// Extensions alias b (nil when empty). Every error names the index and
// wraps errBadLog.
func decodeLog(b []byte, index uint64, l *raft.Log) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: index %d: %s", errBadLog, index, fmt.Sprintf(format, args...))
	}
	if len(b) < minEncodedLength {
		return bad("%d bytes, shorter than the smallest entry (%d)", len(b), minEncodedLength)
	}
	if b[0] != codecVersion {
		return bad("unknown encoding version %d", b[0])
	}
	flags := b[2]
	if flags&^flagAppendedAt != 0 {
		return bad("unknown flags %#x", flags)
	}
	if b[3] != 0 {
		return bad("reserved byte is %#x, not 0", b[3])
	}
	got := binary.LittleEndian.Uint64(b[4:])
	if got != index {
		return bad("the entry holds index %d", got)
	}
	var out raft.Log
	out.Type = raft.LogType(b[1])
	out.Index = got
	out.Term = binary.LittleEndian.Uint64(b[12:])
	rest := b[fixedHeaderSize:]
	if flags&flagAppendedAt != 0 {
		if len(rest) < appendedAtSize {
			return bad("truncated AppendedAt")
		}
		sec := int64(binary.LittleEndian.Uint64(rest))
		nsec := binary.LittleEndian.Uint32(rest[8:])
		if nsec >= 1e9 {
			return bad("AppendedAt nanoseconds %d out of range", nsec)
		}
		out.AppendedAt = time.Unix(sec, int64(nsec))
		if out.AppendedAt.IsZero() {
			return bad("AppendedAt flagged but zero")
		}
		rest = rest[appendedAtSize:]
	}
	var err error
	if out.Data, rest, err = field(rest); err != nil {
		return bad("data: %v", err)
	}
	if out.Extensions, rest, err = field(rest); err != nil {
		return bad("extensions: %v", err)
	}
	if len(rest) != 0 {
		return bad("%d bytes after the extensions", len(rest))
	}
	*l = out
	return nil
}

// field splits a length-prefixed field off b.
func field(b []byte) (val, rest []byte, err error) {
	if len(b) < 4 {
		return nil, nil, fmt.Errorf("truncated length (%d bytes left)", len(b))
	}
	n := binary.LittleEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return nil, nil, fmt.Errorf("length %d but %d bytes left", n, len(b))
	}
	if n == 0 {
		return nil, b, nil
	}
	return b[:n:n], b[n:], nil
}
