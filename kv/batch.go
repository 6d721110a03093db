package kv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/ringstore/ringstore/kv/sstable"
)

// batchHeaderLen is the size of an encoded batch's header: seq u64, count u32.
const batchHeaderLen = 12

// Batch is a set of writes applied atomically by DB.Write: after a crash
// either all of them are visible or none. A Batch is owned by one goroutine;
// keys and values are copied when added, so the caller may reuse them.
//
// Encoded (the payload of one wal entry), little-endian:
//
//	seq u64 | count u32 | count × { kind u8 | keyLen uvarint | key |
//	                                 valueLen uvarint | value (KindSet only) }
//
// The i-th operation gets sequence number seq+i; seq is filled in when the
// batch is committed.
type Batch struct {
	data  []byte
	count uint32
	// bad is the first operation over the store's limits (key or value
	// too long), found when it was added; Write refuses the batch with it.
	// With bad nil, data is a valid encoding by construction: Write checks
	// nothing else and the batch is decoded once, when it is applied.
	bad error
}

func (b *Batch) init() {
	if len(b.data) < batchHeaderLen {
		b.data = append(b.data[:0], make([]byte, batchHeaderLen)...)
	}
}

// Put adds a write of value under key.
func (b *Batch) Put(key, value []byte) {
	b.init()
	if b.bad == nil && (len(key) > sstable.MaxKeyLen || len(value) > sstable.MaxValueLen) {
		b.bad = fmt.Errorf("operation %d (a put): key of %d bytes, value of %d bytes: over the limits of %d and %d",
			b.count, len(key), len(value), sstable.MaxKeyLen, sstable.MaxValueLen)
	}
	b.data = append(b.data, byte(sstable.KindSet))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	b.data = binary.AppendUvarint(b.data, uint64(len(value)))
	b.data = append(b.data, value...)
	b.count++
}

// Delete adds a deletion of key.
func (b *Batch) Delete(key []byte) {
	b.init()
	if b.bad == nil && len(key) > sstable.MaxKeyLen {
		b.bad = fmt.Errorf("operation %d (a delete): key of %d bytes over the limit of %d", b.count, len(key), sstable.MaxKeyLen)
	}
	b.data = append(b.data, byte(sstable.KindDelete))
	b.data = binary.AppendUvarint(b.data, uint64(len(key)))
	b.data = append(b.data, key...)
	b.count++
}

// Len returns the number of operations in the batch.
func (b *Batch) Len() int { return int(b.count) }

// Size returns the encoded size of the batch in bytes.
func (b *Batch) Size() int { return len(b.data) }

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() {
	b.data = b.data[:0]
	b.count = 0
	b.bad = nil
}

// encode stamps the batch with its first sequence number and returns its
// encoding (aliasing the batch's memory).
func (b *Batch) encode(seq uint64) []byte {
	b.init()
	binary.LittleEndian.PutUint64(b.data[0:], seq)
	binary.LittleEndian.PutUint32(b.data[8:], b.count)
	return b.data
}

// check returns the first operation of the batch over the store's limits
// (recorded as it was added: no decoding).
func (b *Batch) check() error { return b.bad }

// errBadBatch is wrapped by the errors decodeBatch returns.
var errBadBatch = errors.New("bad batch encoding")

// decodeBatch checks an encoded batch and calls fn for each operation with
// its sequence number. key and value alias b. It returns the batch's first
// seq. Every length is checked before it is used; no input panics.
func decodeBatch(b []byte, fn func(seq uint64, kind sstable.Kind, key, value []byte) error) (uint64, error) {
	if len(b) < batchHeaderLen {
		return 0, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", errBadBatch, len(b), batchHeaderLen)
	}
	seq := binary.LittleEndian.Uint64(b)
	count := binary.LittleEndian.Uint32(b[8:])
	if count == 0 {
		return 0, fmt.Errorf("%w: no operations", errBadBatch)
	}
	if seq == 0 || seq > sstable.MaxSeq || uint64(count) > sstable.MaxSeq-seq+1 {
		return 0, fmt.Errorf("%w: seq %d with %d operations is out of range", errBadBatch, seq, count)
	}
	off := batchHeaderLen
	for i := uint32(0); i < count; i++ {
		at := off
		if off >= len(b) {
			return 0, fmt.Errorf("%w: operation %d of %d missing at offset %d", errBadBatch, i, count, at)
		}
		kind := sstable.Kind(b[off])
		off++
		if kind != sstable.KindSet && kind != sstable.KindDelete {
			return 0, fmt.Errorf("%w: operation %d at offset %d has kind %d", errBadBatch, i, at, uint8(kind))
		}
		key, n, err := lengthPrefixed(b[off:], sstable.MaxKeyLen)
		if err != nil {
			return 0, fmt.Errorf("%w: operation %d at offset %d: key: %v", errBadBatch, i, at, err)
		}
		off += n
		var value []byte
		if kind == sstable.KindSet {
			value, n, err = lengthPrefixed(b[off:], sstable.MaxValueLen)
			if err != nil {
				return 0, fmt.Errorf("%w: operation %d at offset %d: value: %v", errBadBatch, i, at, err)
			}
			off += n
		}
		if err := fn(seq+uint64(i), kind, key, value); err != nil {
			return 0, err
		}
	}
	if off != len(b) {
		return 0, fmt.Errorf("%w: %d bytes after the last of %d operations", errBadBatch, len(b)-off, count)
	}
	return seq, nil
}

// lengthPrefixed reads a uvarint length no larger than max and that many
// bytes after it.
func lengthPrefixed(b []byte, max int) ([]byte, int, error) {
	n, w := binary.Uvarint(b)
	if w <= 0 {
		return nil, 0, errors.New("bad length varint")
	}
	if w != uvarintLen(n) {
		return nil, 0, fmt.Errorf("length %d written in %d bytes, not its shortest form", n, w)
	}
	if n > uint64(max) {
		return nil, 0, fmt.Errorf("length %d over the limit %d", n, max)
	}
	if n > uint64(len(b)-w) {
		return nil, 0, fmt.Errorf("length %d but only %d bytes left", n, len(b)-w)
	}
	return b[w : w+int(n)], w + int(n), nil
}

// uvarintLen is the length of n's shortest uvarint encoding (the only one a
// Batch writes, so an encoded batch is canonical).
func uvarintLen(n uint64) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}
