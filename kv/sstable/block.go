package sstable

import (
	"bytes"
	"encoding/binary"

	"github.com/ringstore/ringstore/internal/crc32c"
)

const (
	// Alignment is the offset and length granularity of data blocks: every
	// block starts at a multiple of it and is padded to a multiple of it, so
	// an O_DIRECT read of a block handle is exact.
	Alignment = 4096
	// restartInterval is the number of entries between restart points.
	restartInterval = 16
	// blockTrailerLen is the used length and CRC at the end of a padded
	// data block.
	blockTrailerLen = 8
)

// zeros is what a data block's padding (shorter than Alignment) must equal.
var zeros [Alignment]byte

func alignUp(n int) int { return (n + Alignment - 1) &^ (Alignment - 1) }

// blockCRC is the checksum of a data block: CRC32C over its used bytes and
// then the used length as a little-endian uint32.
func blockCRC(used []byte) uint32 {
	var l [4]byte
	binary.LittleEndian.PutUint32(l[:], uint32(len(used)))
	return crc32c.Update(crc32c.Checksum(used), l[:])
}

// blockBuilder encodes the entries of one data block.
type blockBuilder struct {
	buf      []byte   // entries so far
	restarts []uint32 // offsets of restart entries
	lastKey  []byte   // encoded key of the last entry
	count    int
}

func (b *blockBuilder) reset() {
	b.buf = b.buf[:0]
	b.restarts = b.restarts[:0]
	b.lastKey = b.lastKey[:0]
	b.count = 0
}

func (b *blockBuilder) empty() bool { return b.count == 0 }

// usedLen is the used length the block would have if finished now.
func (b *blockBuilder) usedLen() int { return len(b.buf) + 4*len(b.restarts) + 4 }

// entryLen is an upper bound of what adding key and value would grow the
// used length by.
func entryLen(key []byte, valueLen int) int {
	return 3*binary.MaxVarintLen32 + len(key) + valueLen + 4
}

func (b *blockBuilder) add(key, value []byte) {
	shared := 0
	if b.count%restartInterval == 0 {
		b.restarts = append(b.restarts, uint32(len(b.buf)))
	} else {
		n := min(len(key), len(b.lastKey))
		for shared < n && key[shared] == b.lastKey[shared] {
			shared++
		}
	}
	b.buf = binary.AppendUvarint(b.buf, uint64(shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(key)-shared))
	b.buf = binary.AppendUvarint(b.buf, uint64(len(value)))
	b.buf = append(b.buf, key[shared:]...)
	b.buf = append(b.buf, value...)
	b.lastKey = append(b.lastKey[:0], key...)
	b.count++
}

// finish appends the padded block to dst and returns it with the used
// length.
func (b *blockBuilder) finish(dst []byte) ([]byte, int) {
	start := len(dst)
	dst = append(dst, b.buf...)
	for _, r := range b.restarts {
		dst = binary.LittleEndian.AppendUint32(dst, r)
	}
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(b.restarts)))
	used := len(dst) - start
	padded := alignUp(used + blockTrailerLen)
	dst = append(dst, make([]byte, padded-used-blockTrailerLen)...)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(used))
	dst = binary.LittleEndian.AppendUint32(dst, blockCRC(dst[start:start+used]))
	return dst, used
}

// Block is one decoded data block. It aliases the buffer it was decoded
// from: keys and values it returns are valid only while that buffer is
// unchanged. A Block is immutable and safe for concurrent use.
type Block struct {
	data       []byte   // the entries region
	restarts   []uint32 // offsets of restart entries, validated
	numEntries int
	used       int         // used length from the trailer
	first      InternalKey // first and last keys; own their memory
	last       InternalKey
}

// decodeBlock checks a padded data block (trailer, CRC, padding, every
// entry and restart point) and returns it. s names the block's file and
// offset for errors.
func decodeBlock(buf []byte, s site) (Block, error) {
	used, nr, dataEnd, err := checkBlockFrame(buf, s, 0)
	if err != nil {
		return Block{}, err
	}
	b := Block{data: buf[:dataEnd], restarts: make([]uint32, nr), used: used}
	for i := range b.restarts {
		b.restarts[i] = binary.LittleEndian.Uint32(buf[dataEnd+4*i:])
	}
	// Walk every entry once so that Get and Iter can trust the block. A key
	// that shares a prefix is rebuilt in one of two scratch buffers, the
	// one not holding the previous key, so that prev (parsed once) stays
	// valid for the order check.
	var key []byte
	var scratch [2][]byte
	var prev InternalKey
	off := 0
	for off < dataEnd {
		cur := b.numEntries & 1
		e, err := readEntry(b.data, off, key, scratch[cur])
		if err != "" {
			return Block{}, s.corrupt(off, "data block entry %d: %s", b.numEntries, err)
		}
		if b.numEntries%restartInterval == 0 {
			r := b.numEntries / restartInterval
			if r >= nr || int(b.restarts[r]) != off {
				return Block{}, s.corrupt(dataEnd+4*min(r, nr-1), "data block restart %d does not point at entry %d (offset %d)", r, b.numEntries, off)
			}
			if e.shared != 0 {
				return Block{}, s.corrupt(off, "data block restart entry %d shares %d key bytes", b.numEntries, e.shared)
			}
		}
		ik, ok := parseKey(e.key)
		if !ok {
			return Block{}, s.corrupt(off, "data block entry %d: bad internal key %x", b.numEntries, e.key)
		}
		if ik.Kind == KindDelete && len(e.value) != 0 {
			return Block{}, s.corrupt(off, "data block entry %d: delete %s carries a %d-byte value", b.numEntries, ik, len(e.value))
		}
		if b.numEntries > 0 && Compare(prev, ik) >= 0 {
			return Block{}, s.corrupt(off, "data block entry %d: key %s does not sort after %s", b.numEntries, ik, prev)
		}
		if b.numEntries == 0 {
			b.first = cloneKey(ik)
		}
		prev = ik
		key, scratch[cur] = e.key, e.scratch
		off = e.next
		b.numEntries++
	}
	if want := (b.numEntries + restartInterval - 1) / restartInterval; want != nr || b.numEntries == 0 {
		return Block{}, s.corrupt(used-4, "data block has %d restarts for %d entries", nr, b.numEntries)
	}
	b.last = cloneKey(prev)
	return b, nil
}

// checkBlockFrame checks what surrounds a padded data block's entries: its
// length, trailer, checksum, zero padding and restart count. It returns the
// used length, the number of restarts and where the entries end.
// verifiedUsed > 0 says the checksum, the padding and the trailer's used
// length (verifiedUsed) were checked before on the same bytes: the trailer
// is not read again.
func checkBlockFrame(buf []byte, s site, verifiedUsed int) (used, nr, dataEnd int, err error) {
	if len(buf) < Alignment || len(buf)%Alignment != 0 {
		return 0, 0, 0, s.corrupt(0, "data block length %d is not a positive multiple of %d", len(buf), Alignment)
	}
	t := len(buf) - blockTrailerLen
	used = verifiedUsed
	if used == 0 {
		used = int(binary.LittleEndian.Uint32(buf[t:]))
	}
	if used < 4 || used > t || alignUp(used+blockTrailerLen) != len(buf) {
		return 0, 0, 0, s.corrupt(t, "data block used length %d does not fit its %d-byte block", used, len(buf))
	}
	if verifiedUsed == 0 {
		sum := binary.LittleEndian.Uint32(buf[t+4:])
		if got := blockCRC(buf[:used]); got != sum {
			return 0, 0, 0, s.corrupt(0, "data block checksum mismatch: stored %#08x, computed %#08x over %d bytes", sum, got, used)
		}
		if pad := buf[used:t]; !bytes.Equal(pad, zeros[:len(pad)]) {
			i := used
			for buf[i] == 0 {
				i++
			}
			return 0, 0, 0, s.corrupt(i, "data block padding byte is %#02x, not zero", buf[i])
		}
	}
	nr = int(binary.LittleEndian.Uint32(buf[used-4:]))
	if nr == 0 || nr > (used-4)/4 {
		return 0, 0, 0, s.corrupt(used-4, "data block restart count %d does not fit %d used bytes", nr, used)
	}
	return used, nr, used - 4 - 4*nr, nil
}

type entry struct {
	shared  int
	key     []byte // the whole encoded key (see readEntry for its memory)
	scratch []byte // the caller's scratch buffer, maybe grown
	value   []byte // aliases the block
	next    int    // offset of the next entry
}

// readEntry decodes the entry at off. prevKey is the previous entry's
// key. A key that shares nothing aliases data; one that shares a prefix is
// rebuilt in scratch (which may hold prevKey: the copy is overlap-safe),
// returned grown as entry.scratch. data is never written. It returns a
// reason on damage.
func readEntry(data []byte, off int, prevKey, scratch []byte) (entry, string) {
	shared, unshared, vlen, p, bad := readEntryHeader(data, off)
	switch {
	case bad != "":
		return entry{}, bad
	case shared > len(prevKey):
		return entry{}, sharesTooMuch
	}
	key, scratch := entryKey(data[p:p+unshared:p+unshared], prevKey[:shared], scratch)
	p += unshared
	return entry{shared: shared, key: key, scratch: scratch, value: data[p : p+vlen : p+vlen], next: p + vlen}, ""
}

// entryKey is the key of an entry whose own bytes are rest and which
// shares prefix with the previous key: rest itself where it shares
// nothing, else the two rebuilt in scratch (which may hold prefix: the
// copy is overlap-safe), returned grown.
func entryKey(rest, prefix, scratch []byte) (key, grown []byte) {
	if len(prefix) == 0 {
		return rest, scratch
	}
	scratch = append(append(scratch[:0], prefix...), rest...)
	return scratch, scratch
}

// sharesTooMuch is readEntry's reason for an entry sharing more key bytes
// than the previous key has.
const sharesTooMuch = "shares more key bytes than the previous key has"

// readEntryHeader decodes the header of the entry at off: the key bytes it
// shares with the previous entry's key (not checked against that key's
// length), its own key bytes and its value bytes, which start at p and
// follow each other within data. It returns a reason on damage. It is
// readEntry without building the entry, for a walk that keeps the parts in
// registers.
func readEntryHeader(data []byte, off int) (shared, unshared, vlen, p int, bad string) {
	var v [3]uint64
	p = off
	for i := range v {
		// Most header fields are under 128: one byte, no loop.
		if p < len(data) && data[p] < 0x80 {
			v[i] = uint64(data[p])
			p++
			continue
		}
		x, n := binary.Uvarint(data[p:])
		if n <= 0 {
			return 0, 0, 0, 0, "bad varint in entry header"
		}
		v[i] = x
		p += n
	}
	rest := uint64(len(data) - p)
	switch {
	case v[0] > uint64(len(data)): // no previous key is longer
		return 0, 0, 0, 0, sharesTooMuch
	case v[1] > rest || v[2] > rest-v[1]:
		return 0, 0, 0, 0, "key or value runs past the end of the entries"
	}
	return int(v[0]), int(v[1]), int(v[2]), p, ""
}

// Len returns the number of entries in the block.
func (b Block) Len() int { return b.numEntries }

// Get returns the newest version of userKey in the block: its value
// (aliasing the block's buffer; empty for a delete), kind and seq. A
// tombstone is found too, with kind KindDelete: the key is deleted as of
// seq, and older files must not be consulted. found is false when the
// block holds no version of userKey.
func (b Block) Get(userKey []byte) (value []byte, kind Kind, seq uint64, found bool) {
	if len(b.restarts) == 0 { // the zero Block
		return nil, 0, 0, false
	}
	// Find the last restart whose user key sorts before userKey; the
	// newest version of userKey, if any, is at or after it.
	lo, hi := 0, len(b.restarts) // answer in [lo, hi)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		e, _ := readEntry(b.data, int(b.restarts[mid]), nil, nil)
		ik, _ := parseKey(e.key)
		if bytes.Compare(ik.UserKey, userKey) < 0 {
			lo = mid
		} else {
			hi = mid
		}
	}
	it := b.iterAt(lo)
	for it.Next() {
		switch c := bytes.Compare(it.key.UserKey, userKey); {
		case c == 0:
			return it.Value(), it.key.Kind, it.key.Seq, true
		case c > 0:
			return nil, 0, 0, false
		}
	}
	return nil, 0, 0, false
}

// Iter returns an iterator over the block's entries in order.
func (b Block) Iter() *BlockIter {
	it := b.iterAt(0)
	return &it
}

func (b Block) iterAt(restart int) BlockIter {
	if len(b.restarts) == 0 { // the zero Block
		return BlockIter{b: b}
	}
	return BlockIter{b: b, off: int(b.restarts[restart])}
}

// BlockIter walks a Block's entries in order. Keys and values alias the
// block's buffer and the iterator's key buffer: they are valid until the
// next call to Next. A BlockIter is owned by one goroutine.
type BlockIter struct {
	b       Block
	off     int
	raw     []byte // the current encoded key
	scratch []byte // where keys that share a prefix are rebuilt
	key     InternalKey
	value   []byte
}

// Next moves to the next entry and reports whether there is one.
func (it *BlockIter) Next() bool {
	if it.off >= len(it.b.data) {
		return false
	}
	// decodeBlock walked every entry, so none of this can fail.
	e, _ := readEntry(it.b.data, it.off, it.raw, it.scratch)
	it.raw, it.scratch = e.key, e.scratch
	it.key, _ = parseKey(e.key)
	it.value = e.value
	it.off = e.next
	return true
}

// Key returns the current entry's key (the zero key before the first
// Next).
func (it *BlockIter) Key() InternalKey { return it.key }

// Value returns the current entry's value.
func (it *BlockIter) Value() []byte { return it.value }
