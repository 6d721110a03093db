package sstable

import (
	"fmt"
	"io"
	"sync"
)

const (
	// DefaultBlockSize is the default target of a data block's used bytes.
	DefaultBlockSize = Alignment
	// DefaultBloomBitsPerKey gives about a 1% false-positive rate.
	DefaultBloomBitsPerKey = 10
	// MaxBlockSize bounds Options.BlockSize.
	MaxBlockSize = 1 << 24
	// MaxBloomBitsPerKey bounds Options.BloomBitsPerKey.
	MaxBloomBitsPerKey = 40
	// MaxKeyLen bounds a user key.
	MaxKeyLen = 1 << 16
	// MaxValueLen bounds a value.
	MaxValueLen = 1 << 28
)

// Options configure a Writer. The zero value is valid: every zero field
// takes its default (filled in by withDefaults only).
type Options struct {
	// BlockSize is the target of a data block's used bytes (entries,
	// restart array and trailer): a block is cut before the entry that
	// would take it past BlockSize. Blocks are padded to a multiple of
	// Alignment on disk, so values that are not multiples of 4096 waste
	// the rest of the last page. An entry larger than BlockSize gets a
	// block of its own. 0 means DefaultBlockSize; at most MaxBlockSize.
	BlockSize int
	// BloomBitsPerKey sizes the bloom filter. 0 means
	// DefaultBloomBitsPerKey; at most MaxBloomBitsPerKey.
	BloomBitsPerKey int
}

func (o Options) String() string {
	return fmt.Sprintf("sstable.Options{BlockSize: %d, BloomBitsPerKey: %d}", o.BlockSize, o.BloomBitsPerKey)
}

func (o Options) withDefaults() (Options, error) {
	if o.BlockSize == 0 {
		o.BlockSize = DefaultBlockSize
	}
	if o.BloomBitsPerKey == 0 {
		o.BloomBitsPerKey = DefaultBloomBitsPerKey
	}
	if o.BlockSize < 0 || o.BlockSize > MaxBlockSize {
		return o, fmt.Errorf("%w: BlockSize %d is not in [1, %d]", ErrBadOptions, o.BlockSize, MaxBlockSize)
	}
	if o.BloomBitsPerKey < 0 || o.BloomBitsPerKey > MaxBloomBitsPerKey {
		return o, fmt.Errorf("%w: BloomBitsPerKey %d is not in [1, %d]", ErrBadOptions, o.BloomBitsPerKey, MaxBloomBitsPerKey)
	}
	return o, nil
}

// Meta describes a finished SST file.
type Meta struct {
	Properties
	Size uint64 // bytes written, footer included
}

// Writer writes one SST file, sequentially, to an io.Writer, in writes
// of about 256 KiB of data blocks (and one for the metadata). The file
// starts at the writer's position when NewWriter is called; offsets in the
// file are relative to it, and Open expects the file to start at offset 0.
// A Writer is owned by one goroutine.
//
// The Writer never syncs: after Finish the caller must fsync the file
// (and the directory, for a new file) before relying on it surviving a
// crash.
type Writer struct {
	w    io.Writer
	opts Options

	block   blockBuilder
	buf     []byte       // a finished block or the metadata, reused
	index   []indexEntry // one per written data block
	hashes  hashList     // bloomHash of each distinct user key, for the filter
	props   Properties
	last    InternalKey // previous key added; owns its memory
	enc     []byte      // the encoded key being added, reused
	off     uint64      // bytes of the file produced so far (in buf or written)
	written uint64      // bytes handed to w.w
	err     error       // sticky: ErrFinished or the first write error
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer, opts Options) (*Writer, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Writer{w: w, opts: o, buf: (*writeBufs.Get().(*[]byte))[:0]}, nil
}

// writeBufs recycles the Writers' buffers, which would otherwise grow from
// nothing to writeBufferSize and more in every table written.
var writeBufs = sync.Pool{New: func() any {
	b := make([]byte, 0, writeBufferSize+64<<10)
	return &b
}}

// maxPooledWriteBuf bounds the buffers kept for reuse: a table with a huge
// index does not pin its memory in the pool.
const maxPooledWriteBuf = 4 << 20

// releaseBuf gives the buffer back; the Writer holds none afterwards.
func (w *Writer) releaseBuf() {
	if b := w.buf[:0]; cap(b) <= maxPooledWriteBuf {
		writeBufs.Put(&b)
	}
	w.buf = nil
}

// Add appends an entry. Keys must be strictly increasing in internal-key
// order (Compare); value must be empty for KindDelete. key and value are
// copied.
func (w *Writer) Add(key InternalKey, value []byte) error {
	if w.err != nil {
		return w.err
	}
	switch {
	case !key.Kind.Valid():
		return fmt.Errorf("sstable: key %s has an unknown kind", key)
	case key.Seq > MaxSeq:
		return fmt.Errorf("sstable: key %q has seq %d over the maximum %d", key.UserKey, key.Seq, uint64(MaxSeq))
	case len(key.UserKey) > MaxKeyLen:
		return fmt.Errorf("%w: user key of %d bytes (maximum %d)", ErrTooLarge, len(key.UserKey), MaxKeyLen)
	case len(value) > MaxValueLen:
		return fmt.Errorf("%w: value of %d bytes for key %s (maximum %d)", ErrTooLarge, len(value), key, MaxValueLen)
	case key.Kind == KindDelete && len(value) != 0:
		return fmt.Errorf("sstable: delete %s carries a %d-byte value", key, len(value))
	}
	if w.props.Entries > 0 && Compare(w.last, key) >= 0 {
		return fmt.Errorf("%w: %s added after %s", ErrOutOfOrder, key, w.last)
	}
	w.enc = appendKey(w.enc[:0], key)
	enc := w.enc
	if !w.block.empty() && w.block.usedLen()+entryLen(enc, len(value)) > w.opts.BlockSize-blockTrailerLen {
		if err := w.flushBlock(); err != nil {
			return err
		}
	}
	w.block.add(enc, value)
	if w.props.Entries == 0 || string(w.last.UserKey) != string(key.UserKey) {
		w.hashes.add(bloomHash(key.UserKey))
	}
	if w.props.Entries == 0 {
		w.props.Smallest = cloneKey(key)
	}
	w.last = InternalKey{UserKey: append(w.last.UserKey[:0], key.UserKey...), Seq: key.Seq, Kind: key.Kind}
	w.props.Entries++
	if key.Kind == KindDelete {
		w.props.Deletes++
	}
	w.props.MaxSeq = max(w.props.MaxSeq, key.Seq)
	return nil
}

// writeBufferSize is how many bytes of finished blocks the Writer gathers
// before one Write: one write per 4 KiB block would cost a system call
// each.
const writeBufferSize = 256 << 10

func (w *Writer) flushBlock() error {
	start := len(w.buf)
	var used int
	w.buf, used = w.block.finish(w.buf)
	n := uint64(len(w.buf) - start)
	last, _ := parseKey(w.block.lastKey)
	w.index = append(w.index, indexEntry{
		lastKey: cloneKey(last),
		handle:  BlockHandle{Offset: w.off, Len: n},
		used:    uint32(used),
	})
	w.off += n
	w.block.reset()
	if len(w.buf) >= writeBufferSize {
		return w.writeBuf()
	}
	return nil
}

// writeBuf writes what buf holds and empties it.
func (w *Writer) writeBuf() error {
	n, err := w.w.Write(w.buf)
	w.written += uint64(n)
	if err == nil && n != len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("sstable: writing at offset %d: %w", w.written, err)
		return w.err
	}
	w.buf = w.buf[:0]
	return nil
}

// Finish writes the last data block, the index, filter, properties and
// footer, and returns what the file holds. It does not sync (see Writer).
// After Finish the Writer accepts nothing more.
func (w *Writer) Finish() (Meta, error) {
	if w.err != nil {
		return Meta{}, w.err
	}
	if !w.block.empty() {
		if err := w.flushBlock(); err != nil {
			return Meta{}, err
		}
	}
	w.props.DataBlocks = uint64(len(w.index))
	if w.props.Entries > 0 {
		w.props.Largest = cloneKey(w.last)
	}
	filter := newBloomFilter(w.hashes.len(), w.opts.BloomBitsPerKey)
	w.hashes.each(filter.addHash)
	w.hashes.release()
	var f footer
	f.version = Version
	n := len(w.buf)
	w.buf = encodeIndex(w.buf, w.index)
	f.index = section{w.off, uint64(len(w.buf) - n)}
	n = len(w.buf)
	w.buf = encodeFilter(w.buf, filter)
	f.filter = section{f.index.off + f.index.len, uint64(len(w.buf) - n)}
	n = len(w.buf)
	w.buf = encodeProps(w.buf, w.props)
	f.props = section{f.filter.off + f.filter.len, uint64(len(w.buf) - n)}
	n = len(w.buf)
	w.buf = encodeFooter(w.buf, f)
	if err := w.writeBuf(); err != nil {
		return Meta{}, err
	}
	w.releaseBuf()
	w.err = ErrFinished
	return Meta{Properties: w.props, Size: w.written}, nil
}

// hashList holds a table's key hashes until its filter is built, in
// chunks of hashChunk recycled across Writers: a compaction's table of
// millions of keys grows it without copying, and with no garbage of the
// doublings an append would leave.
type hashList struct {
	chunks []*[hashChunk]uint64
	n      int // hashes held
}

const hashChunk = 8192 // 64 KiB

var hashChunks = sync.Pool{New: func() any { return new([hashChunk]uint64) }}

func (l *hashList) add(h uint64) {
	if l.n == len(l.chunks)*hashChunk {
		l.chunks = append(l.chunks, hashChunks.Get().(*[hashChunk]uint64))
	}
	l.chunks[l.n/hashChunk][l.n%hashChunk] = h
	l.n++
}

func (l *hashList) len() int { return l.n }

func (l *hashList) each(f func(uint64)) {
	for i := 0; i < l.n; i++ {
		f(l.chunks[i/hashChunk][i%hashChunk])
	}
}

// release gives the chunks back; the list is empty after.
func (l *hashList) release() {
	for _, c := range l.chunks {
		hashChunks.Put(c)
	}
	l.chunks, l.n = nil, 0
}
