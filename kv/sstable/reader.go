package sstable

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"unsafe"
)

// Reader gives access to one SST file. Open reads and checks the footer,
// index, filter and properties and keeps them in memory; data blocks are
// read on demand, by Get and Iterator with pread, or by the caller (kv's
// batched MultiGet) with BlockFor and DecodeBlock.
//
// A Reader is immutable after Open and safe for concurrent use, except
// Close, which must not run concurrently with other methods.
type Reader struct {
	r     io.ReaderAt
	owned *os.File // opened by Open, closed by Close; nil for NewReader
	path  string
	size  int64
	// index is the block index; BlockFor's binary search reads its last
	// user keys, which lie back to back.
	index blockIndex
	// dataEnd is where the data blocks end and the index begins.
	dataEnd uint64
	filter  *bloomFilter
	props   Properties
}

// Open opens the SST file at path (without O_DIRECT: its metadata is read
// with unaligned preads) and checks it. The Reader owns the file until
// Close.
func Open(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("sstable: open: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("sstable: stat: %w", err)
	}
	r, err := NewReader(f, st.Size(), path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.owned = f
	return r, nil
}

// NewReader checks the SST of size bytes readable from r, which must accept
// unaligned reads (not an O_DIRECT file), and names it name in errors. The
// caller keeps r open while the Reader is used.
func NewReader(r io.ReaderAt, size int64, name string) (*Reader, error) {
	rd := &Reader{r: r, path: name, size: size}
	file := site{path: name}
	if size < FooterLen {
		return nil, file.corrupt(0, "file is %d bytes, shorter than the %d-byte footer", size, FooterLen)
	}
	footOff := size - FooterLen
	var fb [FooterLen]byte
	if err := rd.readAt(fb[:], footOff); err != nil {
		return nil, err
	}
	f, err := decodeFooter(fb[:], site{name, footOff})
	if err != nil {
		return nil, err
	}
	// The metadata sections follow one another, the index at the aligned
	// end of the data blocks and the properties right before the footer.
	fo := uint64(footOff)
	switch {
	case f.index.off%Alignment != 0:
		return nil, site{name, footOff}.corrupt(0, "footer: index offset %d is not a multiple of %d", f.index.off, Alignment)
	case f.index.off > fo || f.index.len > fo-f.index.off || f.filter.off != f.index.off+f.index.len:
		return nil, site{name, footOff}.corrupt(0, "footer: index [%d, +%d) does not end where the filter starts (%d) within the file", f.index.off, f.index.len, f.filter.off)
	case f.filter.len > fo-f.filter.off || f.props.off != f.filter.off+f.filter.len:
		return nil, site{name, footOff + 16}.corrupt(0, "footer: filter [%d, +%d) does not end where the properties start (%d)", f.filter.off, f.filter.len, f.props.off)
	case f.props.len != fo-f.props.off:
		return nil, site{name, footOff + 32}.corrupt(0, "footer: properties [%d, +%d) do not end at the footer (%d)", f.props.off, f.props.len, fo)
	}
	meta := make([]byte, fo-f.index.off)
	if err := rd.readAt(meta, int64(f.index.off)); err != nil {
		return nil, err
	}
	part := func(s section) []byte { return meta[s.off-f.index.off : s.off-f.index.off+s.len] }
	if rd.index, err = decodeIndex(part(f.index), site{name, int64(f.index.off)}); err != nil {
		return nil, err
	}
	if rd.filter, err = decodeFilter(part(f.filter), site{name, int64(f.filter.off)}, f.version >= blockedFilterVersion); err != nil {
		return nil, err
	}
	if rd.props, err = decodeProps(part(f.props), site{name, int64(f.props.off)}); err != nil {
		return nil, err
	}
	rd.dataEnd = f.index.off
	var end uint64
	if n := rd.index.len(); n > 0 {
		h := rd.index.handle(n - 1)
		end = h.Offset + h.Len
	}
	switch {
	case end != rd.dataEnd:
		return nil, site{name, int64(f.index.off)}.corrupt(0, "index: data blocks end at %d, but the index starts at %d", end, rd.dataEnd)
	case rd.props.DataBlocks != uint64(rd.index.len()):
		return nil, site{name, int64(f.props.off)}.corrupt(0, "properties count %d data blocks, the index %d", rd.props.DataBlocks, rd.index.len())
	case rd.index.len() > 0 && Compare(rd.props.Largest, rd.index.lastKey(rd.index.len()-1)) != 0:
		return nil, site{name, int64(f.props.off)}.corrupt(0, "properties largest key %s is not the index's last key %s", rd.props.Largest, rd.index.lastKey(rd.index.len()-1))
	}
	return rd, nil
}

// readAt reads len(b) bytes at off; a short read is corruption (the file
// ends early), anything else an I/O error naming the path and offset.
func (r *Reader) readAt(b []byte, off int64) error {
	n, err := r.r.ReadAt(b, off)
	if n == len(b) {
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		return &CorruptError{Path: r.path, Offset: off + int64(n), What: fmt.Sprintf("file ends %d bytes into a %d-byte read at offset %d", n, len(b), off)}
	}
	return fmt.Errorf("sstable: read %s at offset %d: %w", r.path, off, err)
}

// Close closes the file if Open opened it.
func (r *Reader) Close() error {
	if r.owned == nil {
		return nil
	}
	err := r.owned.Close()
	r.owned = nil
	return err
}

// Path returns the name the Reader uses in errors.
func (r *Reader) Path() string { return r.path }

// Properties returns the file's properties. Their keys are shared with
// the Reader and must not be modified.
func (r *Reader) Properties() Properties { return r.props }

// NumBlocks returns the number of data blocks.
func (r *Reader) NumBlocks() int { return r.index.len() }

// Block returns the handle of data block i, in file order, for
// 0 <= i < NumBlocks().
func (r *Reader) Block(i int) BlockHandle { return r.index.handle(i) }

// MayContain reports whether the file may hold some version of userKey:
// false is certain, true may be a bloom false positive.
func (r *Reader) MayContain(userKey []byte) bool { return r.filter.mayContain(userKey) }

// MayContainHash is MayContain for a key whose FilterHash is h: a lookup
// that asks several files hashes its key once.
func (r *Reader) MayContainHash(h uint64) bool { return r.filter.mayContainHash(h) }

// PrefetchFilter starts loading into the CPU's cache the part of the
// filter that MayContainHash(h) reads (a blocked filter's line; nothing
// for a whole one, whose probes are spread over all of it), and returns
// at once.
func (r *Reader) PrefetchFilter(h uint64) {
	if f := r.filter; f.blocked && len(f.bits) > 0 {
		prefetch((*byte)(unsafe.Pointer(&f.line(h)[0])))
	}
}

// BlockFor returns the one data block that holds the newest version of
// userKey if the file holds any: the first block whose last user key is
// not less than userKey. ok is false when userKey sorts after every key
// in the file. It does no I/O and does not consult the bloom filter.
func (r *Reader) BlockFor(userKey []byte) (h BlockHandle, ok bool) {
	i := r.blockIndex(userKey)
	if i == r.index.len() {
		return BlockHandle{}, false
	}
	return r.index.handle(i), true
}

func (r *Reader) blockIndex(userKey []byte) int { return r.index.search(userKey) }

// DecodeBlock checks a data block read into buf (exactly h.Len bytes, as
// read from h.Offset) and returns it. h must be one of the file's blocks
// (from BlockFor or Block). Damage gives a *CorruptError naming the file
// and the offset; the Block aliases buf.
func (r *Reader) DecodeBlock(h BlockHandle, buf []byte) (Block, error) {
	i := sort.Search(r.index.len(), func(i int) bool { return uint64(r.index.page[i])*Alignment >= h.Offset })
	if i == r.index.len() || r.index.handle(i) != h {
		return Block{}, fmt.Errorf("%w: %s has no data block at offset %d of length %d", ErrBadHandle, r.path, h.Offset, h.Len)
	}
	if uint64(len(buf)) != h.Len {
		return Block{}, fmt.Errorf("%w: buffer of %d bytes for the %d-byte block at offset %d of %s", ErrBadHandle, len(buf), h.Len, h.Offset, r.path)
	}
	s := site{r.path, int64(h.Offset)}
	b, err := decodeBlock(buf, s)
	if err != nil {
		return Block{}, err
	}
	ie := r.index.entry(i)
	if b.used != int(ie.used) {
		return Block{}, s.corrupt(len(buf)-blockTrailerLen, "data block used length %d, the index says %d", b.used, ie.used)
	}
	if Compare(b.last, ie.lastKey) != 0 {
		return Block{}, s.corrupt(0, "data block ends with key %s, the index says %s", b.last, ie.lastKey)
	}
	if i == 0 && Compare(b.first, r.props.Smallest) != 0 {
		return Block{}, s.corrupt(0, "data block starts with key %s, the properties' smallest key is %s", b.first, r.props.Smallest)
	}
	if i > 0 && Compare(r.index.lastKey(i-1), b.first) >= 0 {
		return Block{}, s.corrupt(0, "data block starts with key %s, not after the previous block's last key %s", b.first, r.index.lastKey(i-1))
	}
	return b, nil
}

// readBlock preads and decodes data block i into a buffer reused from buf
// when it is large enough.
func (r *Reader) readBlock(i int, buf []byte) (Block, []byte, error) {
	h := r.index.handle(i)
	if uint64(cap(buf)) < h.Len {
		buf = make([]byte, h.Len)
	}
	buf = buf[:h.Len]
	if err := r.readAt(buf, int64(h.Offset)); err != nil {
		return Block{}, buf, err
	}
	b, err := r.DecodeBlock(h, buf)
	return b, buf, err
}

// Get returns the newest version of userKey in the file, reading its block
// with one pread and looking in it with GetInBlock (the unbatched path;
// kv's MultiGet uses BlockIndexFor and GetInBlock on blocks it reads
// itself). value is freshly allocated memory owned by the caller.
func (r *Reader) Get(userKey []byte) (value []byte, kind Kind, seq uint64, found bool, err error) {
	if !r.MayContain(userKey) {
		return nil, 0, 0, false, nil
	}
	i := r.blockIndex(userKey)
	if i == r.index.len() {
		return nil, 0, 0, false, nil
	}
	h := r.index.handle(i)
	buf := make([]byte, h.Len)
	if err := r.readAt(buf, int64(h.Offset)); err != nil {
		return nil, 0, 0, false, err
	}
	got, err := r.GetInBlock(i, buf, userKey, MaxSeq)
	if err != nil || !got.Found {
		return nil, 0, 0, false, err
	}
	return got.Value, got.Kind, got.Seq, true, nil
}

// NewIterator returns an iterator over every entry of the file in order.
func (r *Reader) NewIterator() *Iterator { return &Iterator{r: r} }

// Iterator walks an SST file's entries in order, reading one data block at
// a time with pread. Keys and values are valid until the next call to
// Next. An Iterator is owned by one goroutine.
type Iterator struct {
	r     *Reader
	next  int // next block to read
	buf   []byte
	block *BlockIter
	err   error
}

// Next moves to the next entry. It returns false at the end or on an
// error (see Err).
func (it *Iterator) Next() bool {
	for it.err == nil {
		if it.block != nil && it.block.Next() {
			return true
		}
		if it.next == it.r.index.len() {
			return false
		}
		var b Block
		b, it.buf, it.err = it.r.readBlock(it.next, it.buf)
		it.next++
		if it.err == nil {
			it.block = b.Iter()
		}
	}
	return false
}

// Key returns the current key (the zero key before the first Next).
func (it *Iterator) Key() InternalKey {
	if it.block == nil {
		return InternalKey{}
	}
	return it.block.Key()
}

// Value returns the current value.
func (it *Iterator) Value() []byte {
	if it.block == nil {
		return nil
	}
	return it.block.Value()
}

// Err returns the error that stopped the iterator, if any.
func (it *Iterator) Err() error { return it.err }

// MetaBytes is the memory the Reader's decoded metadata takes: the block
// index (an entry and its last key per block, and the search copy of the
// keys), the bloom filter's bits and the properties' keys. It is fixed at
// Open.
func (r *Reader) MetaBytes() int64 {
	n := int64(unsafe.Sizeof(*r)) + r.index.bytes()
	n += int64(unsafe.Sizeof(*r.filter)) + 8*int64(len(r.filter.bits))
	return n + int64(len(r.props.Smallest.UserKey)+len(r.props.Largest.UserKey))
}
