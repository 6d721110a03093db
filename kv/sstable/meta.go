package sstable

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/ringstore/ringstore/internal/crc32c"
)

// BlockHandle locates one data block: Offset and Len are multiples of
// Alignment, so the block can be read with O_DIRECT into an aligned buffer
// of exactly Len bytes.
type BlockHandle struct {
	Offset uint64
	Len    uint64
}

// indexEntry describes one data block in the index.
type indexEntry struct {
	lastKey InternalKey // the block's last key; owns its memory
	handle  BlockHandle
	used    uint32 // used length, as also stored in the block's trailer
}

// appendSectionCRC appends CRC32C of sec[start:] to sec.
func appendSectionCRC(sec []byte, start int) []byte {
	return binary.LittleEndian.AppendUint32(sec, crc32c.Checksum(sec[start:]))
}

// checkSectionCRC verifies the CRC32C that ends a metadata section and
// returns the section body.
func checkSectionCRC(buf []byte, s site, name string) ([]byte, error) {
	if len(buf) < 4 {
		return nil, s.corrupt(0, "%s is %d bytes, shorter than its checksum", name, len(buf))
	}
	body := buf[:len(buf)-4]
	stored := binary.LittleEndian.Uint32(buf[len(body):])
	if got := crc32c.Checksum(body); got != stored {
		return nil, s.corrupt(0, "%s checksum mismatch: stored %#08x, computed %#08x over %d bytes", name, stored, got, len(body))
	}
	return body, nil
}

// cursor reads varints and byte strings from a section body, remembering
// the first failure.
type cursor struct {
	buf []byte
	off int
}

func (c *cursor) uvarint() (uint64, bool) {
	x, n := binary.Uvarint(c.buf[c.off:])
	if n <= 0 {
		return 0, false
	}
	c.off += n
	return x, true
}

func (c *cursor) bytes() ([]byte, bool) {
	n, ok := c.uvarint()
	if !ok || n > uint64(len(c.buf)-c.off) {
		return nil, false
	}
	b := c.buf[c.off : c.off+int(n)]
	c.off += int(n)
	return b, true
}

// Index format:
//
//	count uvarint
//	count × { keyLen uvarint, key (encoded internal key), offset uvarint, used uvarint }
//	crc32c uint32
func encodeIndex(dst []byte, entries []indexEntry) []byte {
	start := len(dst)
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for _, e := range entries {
		k := appendKey(nil, e.lastKey)
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = binary.AppendUvarint(dst, e.handle.Offset)
		dst = binary.AppendUvarint(dst, uint64(e.used))
	}
	return appendSectionCRC(dst, start)
}

// blockIndex is a decoded index, held compactly: per block its last key's
// user key (back to back in keys) and trailer, its offset in units of
// Alignment and its used length (the block's length follows from used):
// 20 bytes per block besides its key, and no object per block.
type blockIndex struct {
	keys    []byte   // every block's last user key, back to back
	keyEnd  []uint32 // block i's key is keys[keyEnd[i-1]:keyEnd[i]]
	trailer []uint64 // block i's last key's seq<<8 | kind
	page    []uint32 // block i starts at page[i]*Alignment
	used    []uint32 // block i's used length, as also stored in its trailer
	// shared is the length of the prefix every block's user key shares
	// (that of the first and the last, the keys being sorted), and
	// word[i] the 8 bytes of block i's user key after it, big-endian,
	// zero-padded: word order is key order where the words differ, so a
	// search compares words, 8 to a cache line, and reads keys only among
	// equal words.
	shared int
	word   []uint64
}

// len returns the number of blocks.
func (x *blockIndex) len() int { return len(x.used) }

// userKey returns block i's last user key, aliasing the index.
func (x *blockIndex) userKey(i int) []byte {
	start := uint32(0)
	if i > 0 {
		start = x.keyEnd[i-1]
	}
	return x.keys[start:x.keyEnd[i]:x.keyEnd[i]]
}

// lastKey returns block i's last key; its user key aliases the index.
func (x *blockIndex) lastKey(i int) InternalKey {
	t := x.trailer[i]
	return InternalKey{UserKey: x.userKey(i), Seq: t >> 8, Kind: Kind(t & 0xff)}
}

// handle returns block i's handle.
func (x *blockIndex) handle(i int) BlockHandle {
	return BlockHandle{Offset: uint64(x.page[i]) * Alignment, Len: uint64(alignUp(int(x.used[i]) + blockTrailerLen))}
}

// entry returns block i's entry in the form the writer encodes.
func (x *blockIndex) entry(i int) indexEntry {
	return indexEntry{lastKey: x.lastKey(i), handle: x.handle(i), used: x.used[i]}
}

// bytes returns the memory the index takes.
func (x *blockIndex) bytes() int64 {
	return int64(cap(x.keys)) + 4*int64(cap(x.keyEnd)) + 8*int64(cap(x.trailer)) + 4*int64(cap(x.page)) + 4*int64(cap(x.used)) + 8*int64(cap(x.word))
}

// keyWord is the search word of userKey after its first shared bytes
// (blockIndex.word).
func keyWord(userKey []byte, shared int) uint64 {
	var w [8]byte
	copy(w[:], userKey[shared:])
	return binary.BigEndian.Uint64(w[:])
}

// setWords fills shared and word from the keys.
func (x *blockIndex) setWords() {
	n := x.len()
	if n == 0 {
		return
	}
	first, last := x.userKey(0), x.userKey(n-1)
	shared := 0
	for shared < len(first) && shared < len(last) && first[shared] == last[shared] {
		shared++
	}
	x.shared = shared
	x.word = make([]uint64, n)
	for i := range n {
		x.word[i] = keyWord(x.userKey(i), shared)
	}
}

// search returns the first block whose last user key is not less than
// userKey (len() if none).
func (x *blockIndex) search(userKey []byte) int {
	n := x.len()
	if n == 0 {
		return 0
	}
	// Every key starts with the shared prefix; a key without it sorts
	// before or after all of them.
	if len(userKey) < x.shared || !bytes.Equal(userKey[:x.shared], x.keys[:x.shared]) {
		if bytes.Compare(userKey, x.keys[:x.shared]) < 0 {
			return 0
		}
		return n
	}
	// Word order is key order where words differ; where they are equal
	// the keys decide.
	w := keyWord(userKey, x.shared)
	lo, hi := 0, n
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		less := x.word[mid] < w
		if x.word[mid] == w {
			less = bytes.Compare(x.userKey(mid), userKey) < 0
		}
		if less {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// decodeIndex checks an index section and returns it decoded, owning its
// memory. Blocks must be contiguous from offset 0 with keys strictly
// increasing; the caller checks where the last block ends.
func decodeIndex(buf []byte, s site) (blockIndex, error) {
	var x blockIndex
	body, err := checkSectionCRC(buf, s, "index")
	if err != nil {
		return x, err
	}
	c := cursor{buf: body}
	n, ok := c.uvarint()
	if !ok || n > uint64(len(body))/(1+trailerLen+2) {
		return x, s.corrupt(0, "index entry count is unreadable or too large for %d bytes", len(body))
	}
	x.keyEnd = make([]uint32, 0, n)
	x.trailer = make([]uint64, 0, n)
	x.page = make([]uint32, 0, n)
	x.used = make([]uint32, 0, n)
	keys := make([]byte, 0, len(body))
	var next uint64
	var prev InternalKey
	for i := range n {
		at := c.off
		k, ok1 := c.bytes()
		off, ok2 := c.uvarint()
		used, ok3 := c.uvarint()
		if !ok1 || !ok2 || !ok3 {
			return x, s.corrupt(at, "index entry %d is truncated", i)
		}
		ik, ok := parseKey(k)
		if !ok {
			return x, s.corrupt(at, "index entry %d: bad internal key %x", i, k)
		}
		if off != next {
			return x, s.corrupt(at, "index entry %d: block offset %d, want %d (blocks are contiguous)", i, off, next)
		}
		if off/Alignment > math.MaxUint32 {
			return x, s.corrupt(at, "index entry %d: block offset %d is past the %d-byte limit of a file", i, off, uint64(math.MaxUint32+1)*Alignment)
		}
		if used < 4 || used > math.MaxUint32-blockTrailerLen-Alignment {
			return x, s.corrupt(at, "index entry %d: block used length %d out of range", i, used)
		}
		if i > 0 && Compare(prev, ik) >= 0 {
			return x, s.corrupt(at, "index entry %d: key %s does not sort after %s", i, ik, prev)
		}
		prev = ik
		keys = append(keys, ik.UserKey...)
		if len(keys) > math.MaxUint32 {
			return x, s.corrupt(at, "index entry %d: the keys take more than %d bytes", i, uint32(math.MaxUint32))
		}
		x.keyEnd = append(x.keyEnd, uint32(len(keys)))
		x.trailer = append(x.trailer, ik.Seq<<8|uint64(ik.Kind))
		x.page = append(x.page, uint32(off/Alignment))
		x.used = append(x.used, uint32(used))
		next = off + uint64(alignUp(int(used)+blockTrailerLen))
	}
	if c.off != len(body) {
		return x, s.corrupt(c.off, "index has %d bytes after its last entry", len(body)-c.off)
	}
	x.keys = append([]byte(nil), keys...) // exact size: the section's other bytes are not kept
	x.setWords()
	return x, nil
}

// bloomFilter is a bloom filter over user keys, in one of two layouts.
// Blocked (format version 2, what Writer builds): the bits are lines of
// 512 (one CPU cache line each) and all k probes of a key fall in one
// line, so a lookup touches one line of the filter whatever k is. Whole
// (version 1, still read): k probes by double hashing over all the bits.
type bloomFilter struct {
	k       uint32
	blocked bool
	bits    []uint64 // len*64 bits; a multiple of lineWords when blocked
}

const (
	maxBloomProbes = 30
	// lineWords is a blocked filter's line: 8 words, 512 bits, 64 bytes.
	lineWords = 8
)

func bloomProbes(bitsPerKey int) uint32 {
	k := uint32(math.Round(float64(bitsPerKey) * math.Ln2))
	return min(max(k, 1), maxBloomProbes)
}

// newBloomFilter returns an empty blocked filter for numKeys keys.
func newBloomFilter(numKeys, bitsPerKey int) *bloomFilter {
	lines := max((numKeys*bitsPerKey+511)/512, 1)
	return &bloomFilter{k: bloomProbes(bitsPerKey), blocked: true, bits: make([]uint64, lines*lineWords)}
}

// bloomHash is 64-bit FNV-1a followed by the murmur3 finalizer (FNV alone
// spreads short keys' high bits poorly).
func bloomHash(key []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range key {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// line returns the words of a blocked filter's line for hash h: the high
// 32 bits of h scaled to the line count (no division).
func (f *bloomFilter) line(h uint64) []uint64 {
	i := (h >> 32) * uint64(len(f.bits)/lineWords) >> 32
	return f.bits[i*lineWords : i*lineWords+lineWords : i*lineWords+lineWords]
}

// lineProbe is the golden-ratio multiplier that moves a blocked filter's
// probe from one bit of its line to the next: probe i tests the top 9
// bits of uint32(h)·lineProbe^i.
const lineProbe = 0x9e3779b9

// addHash sets the bits of a key whose bloomHash is h.
func (f *bloomFilter) addHash(h uint64) {
	if f.blocked {
		ln, p := f.line(h), uint32(h)
		for range f.k {
			b := p >> 23
			ln[b/64] |= 1 << (b % 64)
			p *= lineProbe
		}
		return
	}
	m := uint64(len(f.bits)) * 64
	delta := bits.RotateLeft64(h, 31) | 1
	for range f.k {
		b := h % m
		f.bits[b/64] |= 1 << (b % 64)
		h += delta
	}
}

// FilterHash is the hash every version of the filter takes of a user key
// (MayContainHash).
func FilterHash(userKey []byte) uint64 { return bloomHash(userKey) }

func (f *bloomFilter) mayContain(userKey []byte) bool { return f.mayContainHash(bloomHash(userKey)) }

// mayContainHash is mayContain for a key whose bloomHash is h.
func (f *bloomFilter) mayContainHash(h uint64) bool {
	if f.blocked {
		ln, p := f.line(h), uint32(h)
		for range f.k {
			b := p >> 23
			if ln[b/64]&(1<<(b%64)) == 0 {
				return false
			}
			p *= lineProbe
		}
		return true
	}
	m := uint64(len(f.bits)) * 64
	delta := bits.RotateLeft64(h, 31) | 1
	for range f.k {
		b := h % m
		if f.bits[b/64]&(1<<(b%64)) == 0 {
			return false
		}
		h += delta
	}
	return true
}

// Filter format (the layout, blocked or whole, follows the footer's
// version; a blocked filter's word count is a multiple of 8):
//
//	k uint32, numWords uint32, numWords × uint64 bit words, crc32c uint32
func encodeFilter(dst []byte, f *bloomFilter) []byte {
	start := len(dst)
	dst = binary.LittleEndian.AppendUint32(dst, f.k)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(f.bits)))
	for _, w := range f.bits {
		dst = binary.LittleEndian.AppendUint64(dst, w)
	}
	return appendSectionCRC(dst, start)
}

// decodeFilter decodes a filter section of the given layout.
func decodeFilter(buf []byte, s site, blocked bool) (*bloomFilter, error) {
	body, err := checkSectionCRC(buf, s, "filter")
	if err != nil {
		return nil, err
	}
	if len(body) < 8 {
		return nil, s.corrupt(0, "filter is %d bytes, shorter than its 8-byte header", len(body))
	}
	k := binary.LittleEndian.Uint32(body)
	words := binary.LittleEndian.Uint32(body[4:])
	if k < 1 || k > maxBloomProbes {
		return nil, s.corrupt(0, "filter probe count %d is not in [1, %d]", k, maxBloomProbes)
	}
	if words == 0 || uint64(words)*8 != uint64(len(body)-8) {
		return nil, s.corrupt(4, "filter word count %d does not match its %d bytes of bits", words, len(body)-8)
	}
	if blocked && words%lineWords != 0 {
		return nil, s.corrupt(4, "blocked filter word count %d is not whole lines of %d words", words, lineWords)
	}
	f := &bloomFilter{k: k, blocked: blocked, bits: make([]uint64, words)}
	for i := range f.bits {
		f.bits[i] = binary.LittleEndian.Uint64(body[8+8*i:])
	}
	return f, nil
}

// Properties describe a whole SST file.
type Properties struct {
	Entries    uint64      // entries of every kind
	Deletes    uint64      // entries of KindDelete
	DataBlocks uint64      // data blocks
	MaxSeq     uint64      // largest seq of any entry
	Smallest   InternalKey // first key (zero when Entries is 0)
	Largest    InternalKey // last key (zero when Entries is 0)
}

// Properties format:
//
//	entries, deletes, dataBlocks, maxSeq uvarint
//	smallestLen uvarint, smallest, largestLen uvarint, largest (encoded internal keys; both empty when entries is 0)
//	crc32c uint32
func encodeProps(dst []byte, p Properties) []byte {
	start := len(dst)
	for _, v := range []uint64{p.Entries, p.Deletes, p.DataBlocks, p.MaxSeq} {
		dst = binary.AppendUvarint(dst, v)
	}
	for _, k := range []InternalKey{p.Smallest, p.Largest} {
		var enc []byte
		if p.Entries > 0 {
			enc = appendKey(nil, k)
		}
		dst = binary.AppendUvarint(dst, uint64(len(enc)))
		dst = append(dst, enc...)
	}
	return appendSectionCRC(dst, start)
}

func decodeProps(buf []byte, s site) (Properties, error) {
	body, err := checkSectionCRC(buf, s, "properties")
	if err != nil {
		return Properties{}, err
	}
	c := cursor{buf: body}
	var v [4]uint64
	for i := range v {
		x, ok := c.uvarint()
		if !ok {
			return Properties{}, s.corrupt(c.off, "properties field %d is unreadable", i)
		}
		v[i] = x
	}
	p := Properties{Entries: v[0], Deletes: v[1], DataBlocks: v[2], MaxSeq: v[3]}
	var keys [2]InternalKey
	for i := range keys {
		at := c.off
		enc, ok := c.bytes()
		if !ok {
			return Properties{}, s.corrupt(at, "properties key %d is truncated", i)
		}
		if p.Entries == 0 {
			if len(enc) != 0 {
				return Properties{}, s.corrupt(at, "properties of an empty file carry a key")
			}
			continue
		}
		k, ok := parseKey(enc)
		if !ok {
			return Properties{}, s.corrupt(at, "properties key %d: bad internal key %x", i, enc)
		}
		keys[i] = cloneKey(k)
	}
	if c.off != len(body) {
		return Properties{}, s.corrupt(c.off, "properties have %d bytes after the last field", len(body)-c.off)
	}
	p.Smallest, p.Largest = keys[0], keys[1]
	switch {
	case p.Deletes > p.Entries:
		return Properties{}, s.corrupt(0, "properties count %d deletes among %d entries", p.Deletes, p.Entries)
	case p.DataBlocks > p.Entries || (p.Entries > 0) != (p.DataBlocks > 0):
		return Properties{}, s.corrupt(0, "properties count %d data blocks for %d entries", p.DataBlocks, p.Entries)
	case p.MaxSeq > MaxSeq:
		return Properties{}, s.corrupt(0, "properties max seq %d exceeds %d", p.MaxSeq, uint64(MaxSeq))
	case p.Entries > 0 && Compare(p.Smallest, p.Largest) > 0:
		return Properties{}, s.corrupt(0, "properties smallest key %s sorts after largest %s", p.Smallest, p.Largest)
	}
	return p, nil
}

// Footer format, the last FooterLen bytes of the file:
//
//	 0 indexOff u64   8 indexLen u64
//	16 filterOff u64 24 filterLen u64
//	32 propsOff u64  40 propsLen u64
//	48 version u32   52 crc32c u32 (of bytes 0..51)
//	56 magic u64
const (
	// FooterLen is the size of the footer at the end of every SST file.
	FooterLen = 64
	// Version is the format version this package writes: 2, whose bloom
	// filter is blocked in cache lines. It also reads version 1 (a whole
	// filter), which differs in nothing else.
	Version = 2
	// oldestVersion is the oldest format version this package reads.
	oldestVersion = 1
	// blockedFilterVersion is the first format version whose bloom filter
	// is blocked in cache lines.
	blockedFilterVersion = 2
	// Magic ends every SST file ("rsSST\x00\x01\xf0" little-endian).
	Magic uint64 = 0xf001005453537372
)

type footer struct {
	index, filter, props section
	version              uint32
}

// section is the offset and length (checksum included) of a metadata
// section.
type section struct{ off, len uint64 }

func encodeFooter(dst []byte, f footer) []byte {
	start := len(dst)
	for _, v := range []uint64{f.index.off, f.index.len, f.filter.off, f.filter.len, f.props.off, f.props.len} {
		dst = binary.LittleEndian.AppendUint64(dst, v)
	}
	dst = binary.LittleEndian.AppendUint32(dst, f.version)
	dst = binary.LittleEndian.AppendUint32(dst, crc32c.Checksum(dst[start:]))
	return binary.LittleEndian.AppendUint64(dst, Magic)
}

// decodeFooter checks a footer's magic, checksum and version. Where its
// sections lie is checked by the caller, who knows the file size.
func decodeFooter(buf []byte, s site) (footer, error) {
	if len(buf) != FooterLen {
		return footer{}, s.corrupt(0, "footer is %d bytes, want %d", len(buf), FooterLen)
	}
	if m := binary.LittleEndian.Uint64(buf[56:]); m != Magic {
		return footer{}, s.corrupt(56, "footer magic %#016x, want %#016x (not an SST file, or truncated)", m, Magic)
	}
	stored := binary.LittleEndian.Uint32(buf[52:])
	if got := crc32c.Checksum(buf[:52]); got != stored {
		return footer{}, s.corrupt(52, "footer checksum mismatch: stored %#08x, computed %#08x", stored, got)
	}
	var f footer
	u := func(i int) uint64 { return binary.LittleEndian.Uint64(buf[8*i:]) }
	f.index, f.filter, f.props = section{u(0), u(1)}, section{u(2), u(3)}, section{u(4), u(5)}
	f.version = binary.LittleEndian.Uint32(buf[48:])
	if f.version < oldestVersion || f.version > Version {
		return footer{}, s.corrupt(48, "format version %d, this reader knows %d to %d", f.version, oldestVersion, Version)
	}
	return f, nil
}
