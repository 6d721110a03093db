package kv

import (
	"bytes"
	"fmt"
	"io"
	"sort"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/memtable"
	"github.com/ringstore/ringstore/kv/sstable"
)

// internalIter walks internal keys in order. Keys and values are valid until
// the next call to next or seek.
type internalIter interface {
	// seekGE positions at the first entry whose user key is >= key (nil:
	// the first entry) and reports whether there is one.
	seekGE(key []byte) bool
	next() bool
	key() sstable.InternalKey
	value() []byte
	err() error
}

// memIter adapts a memtable iterator.
type memIter struct{ it *memtable.Iterator }

func (m *memIter) seekGE(key []byte) bool {
	if key == nil {
		return m.it.First()
	}
	return m.it.SeekGE(key)
}
func (m *memIter) next() bool               { return m.it.Next() }
func (m *memIter) key() sstable.InternalKey { return m.it.Key() }
func (m *memIter) value() []byte            { return m.it.Value() }
func (m *memIter) err() error               { return nil }

// tableIter walks one table block by block, each block copied into the
// iterator's own aligned buffer (through the block cache when there is one,
// else with a direct read), so no cache frame stays pinned between calls.
// A compaction's iterator (newCompactionIter) instead reads chunks of
// consecutive blocks with the table's descriptor and decodes the blocks in
// place: it fills neither the block cache nor (with O_DIRECT) the page
// cache, and needs no second open of the table.
type tableIter struct {
	db     *DB
	t      *table
	noFill bool
	chunk  *blockChunk     // compaction inputs only
	r      *sstable.Reader // t's metadata, held from the first seek on
	blk    int             // index of the loaded block (-1: none)
	loads  int             // blocks loaded so far
	buf    []byte
	it     *sstable.BlockIter
	e      error
}

func newTableIter(db *DB, t *table, noFill bool) *tableIter {
	return &tableIter{db: db, t: t, noFill: noFill, blk: -1}
}

// newCompactionIter returns the iterator a compaction walks input t with.
func newCompactionIter(db *DB, t *table) *tableIter {
	return &tableIter{db: db, t: t, blk: -1, chunk: &blockChunk{}}
}

// reader loads the table's metadata on first use, holding it for the
// iterator's life.
func (ti *tableIter) reader() bool {
	if ti.r == nil {
		if ti.chunk != nil {
			ti.r, ti.e = ti.db.transientReader(ti.t)
		} else {
			ti.r, ti.e = ti.db.reader(ti.t)
		}
		if ti.e != nil {
			ti.it = nil
			return false
		}
	}
	return true
}

func (ti *tableIter) load(i int) bool {
	ti.it = nil
	if !ti.reader() {
		return false
	}
	if i >= ti.r.NumBlocks() {
		if ti.chunk != nil {
			// A compaction input walked to its end gives back its chunk
			// buffers and metadata: a merge holds those of the inputs it
			// is still walking only (a sorted level's tables one at a time).
			ti.chunk.release(ti.t)
			ti.r = nil
		}
		return false
	}
	h := ti.r.Block(i)
	var buf []byte
	if ti.chunk != nil {
		var err error
		if buf, err = ti.chunk.block(ti.db, ti.t, ti.r, i); err != nil {
			ti.e = err
			return false
		}
	} else {
		if cap(ti.buf) < int(h.Len) {
			ti.buf = alignedBuf(int(h.Len))
		}
		buf = ti.buf[:h.Len]
		if p := ti.db.pool; p != nil && !ti.noFill && ti.loads > 0 && i+1 < ti.r.NumBlocks() {
			// A walk past its first block reads ahead: the next readAhead
			// blocks (those resident or loading are skipped by Prefetch).
			last := min(i+readAhead, ti.r.NumBlocks()-1)
			first, end := ti.r.Block(i+1), ti.r.Block(last)
			p.Prefetch([]bufpool.Span{{File: ti.t.fid, Off: int64(first.Offset), Len: int64(end.Offset + end.Len - first.Offset)}})
		}
		if err := ti.db.readBlockInto(ti.t, h, buf, ti.noFill); err != nil {
			ti.e = err
			return false
		}
	}
	b, err := ti.r.DecodeBlock(h, buf)
	if err != nil {
		ti.e = fmt.Errorf("kv: %w", err)
		return false
	}
	ti.blk = i
	ti.loads++
	ti.it = b.Iter()
	return true
}

func (ti *tableIter) seekGE(key []byte) bool {
	ti.e = nil
	if !ti.reader() {
		return false
	}
	i := 0
	if key != nil {
		h, ok := ti.r.BlockFor(key)
		if !ok {
			ti.it = nil
			return false
		}
		n := ti.r.NumBlocks()
		i = sort.Search(n, func(j int) bool { return ti.r.Block(j).Offset >= h.Offset })
	}
	if !ti.load(i) {
		return false
	}
	for ti.next() {
		if key == nil || bytes.Compare(ti.it.Key().UserKey, key) >= 0 {
			return true
		}
	}
	return false
}

func (ti *tableIter) next() bool {
	for {
		if ti.it == nil {
			return false
		}
		if ti.it.Next() {
			return true
		}
		if !ti.load(ti.blk + 1) {
			return false
		}
	}
}

// close waits for a compaction iterator's read ahead; the iterator must not
// be dropped before (its buffer may belong to the engine).
func (ti *tableIter) close() {
	if ti.chunk != nil {
		ti.chunk.close(ti.t)
	}
}

func (ti *tableIter) key() sstable.InternalKey { return ti.it.Key() }
func (ti *tableIter) value() []byte            { return ti.it.Value() }
func (ti *tableIter) err() error               { return ti.e }

// readAhead is how many blocks a table iterator past its first block keeps
// loading ahead of itself through the block cache.
const readAhead = 4

// readBlockInto reads one data block of t into buf (aligned, h.Len bytes).
func (db *DB) readBlockInto(t *table, h sstable.BlockHandle, buf []byte, noFill bool) error {
	if db.pool != nil {
		s := []bufpool.Span{{File: t.fid, Off: int64(h.Offset), Len: int64(h.Len)}}
		var frames []*bufpool.Frame
		var err error
		ok := true
		if noFill {
			frames, ok, err = db.pool.PinResident(s, nil)
		} else {
			frames, err = db.pool.Pin(s, nil)
		}
		if err != nil {
			return fmt.Errorf("kv: reading a block of %s at offset %d: %w", t.path, h.Offset, err)
		}
		if ok {
			err = bufpool.CopyOut(buf, frames, int64(h.Offset))
			for _, f := range frames {
				f.Unpin()
			}
			if err != nil {
				return fmt.Errorf("kv: block of %s at offset %d: %w", t.path, h.Offset, err)
			}
			return nil
		}
	}
	db.stats.blockReads.Add(uint64(len(buf)) / directio.BlockSize)
	db.stats.directCalls.Add(1)
	return readTableAt(db.eng, t, buf, int64(h.Offset))
}

// readTableAt reads len(buf) bytes of t at off with its data descriptor
// (O_DIRECT unless BufferedIO: buf aligned, off and len(buf) multiples of
// the block size) on eng; a short read means the table is shorter than its
// index says.
func readTableAt(eng *ioengine.Engine, t *table, buf []byte, off int64) error {
	req := [1]ioengine.Request{{Op: ioengine.OpRead, File: t.data, Buf: buf, Off: off}}
	err := eng.Do(req[:])
	return checkTableRead(t, off, len(buf), req[0].N, err)
}

// checkTableRead turns the outcome of a read of want bytes of t at off
// that read n into readTableAt's error.
func checkTableRead(t *table, off int64, want, n int, err error) error {
	if err != nil || n != want {
		if err == nil || err == io.EOF {
			err = io.ErrUnexpectedEOF // the table is shorter than its index says
		}
		return fmt.Errorf("kv: reading %s at offset %d (%d bytes): read %d: %w", t.path, off, want, n, err)
	}
	return nil
}

// compactionChunk is how many bytes of consecutive data blocks a
// compaction's iterator reads at a time.
const compactionChunk = 256 << 10

// blockChunk holds the chunk of consecutive blocks a compaction's iterator
// is walking, and reads the chunk after it ahead: once the walk is past the
// first block of a chunk, the next chunk's read is started on the
// compaction engine (DB.compactEng, ioengine.Engine.Start) into a second
// buffer, so that it is in flight while the merge decodes this one. Not
// counted in
// Stats.BlockReads (what lookups read); Stats.CompactedIn counts
// compaction inputs.
//
// Invariant: while ahead.p is not nil, ahead.buf belongs to the engine;
// close (or the block call that takes it) waits for it, and the owner
// calls close before dropping the blockChunk.
type blockChunk struct {
	cur   chunkSpan
	ahead chunkSpan
	spare []byte // an aligned buffer for the next read, when not in ahead
}

// chunkSpan is blocks [first, end) of a table, read (or being read) into
// buf from file offset base.
type chunkSpan struct {
	buf        []byte // aligned
	first, end int
	base       uint64
	req        [1]ioengine.Request
	p          *ioengine.Pending // the read in flight, nil when none
	startErr   error             // Start refused the read
}

// chunkAt returns the blocks [i, end) of t that the chunk starting at
// block i holds (as many whole blocks as fit in compactionChunk, at least one) and
// their length in bytes.
func chunkAt(r *sstable.Reader, i int) (end, n int) {
	h := r.Block(i)
	end = i + 1
	for end < r.NumBlocks() && r.Block(end).Offset+r.Block(end).Len-h.Offset <= compactionChunk {
		end++
	}
	last := r.Block(end - 1)
	return end, int(last.Offset + last.Len - h.Offset)
}

// buffer returns an aligned buffer of n bytes, reusing spare.
func (c *blockChunk) buffer(n int) []byte {
	b := c.spare
	c.spare = nil
	if cap(b) < n {
		b = alignedBuf(max(n, compactionChunk))
	}
	return b[:n]
}

// block returns data block i of t: from the chunk being walked, from the
// chunk read ahead when the walk reaches it, or else read now.
func (c *blockChunk) block(db *DB, t *table, r *sstable.Reader, i int) ([]byte, error) {
	if i < c.cur.first || i >= c.cur.end {
		if c.ahead.p != nil && c.ahead.first == i {
			err := c.ahead.wait(t)
			if c.cur.buf != nil {
				c.spare = c.cur.buf
			}
			c.cur, c.ahead = c.ahead, chunkSpan{}
			if err != nil {
				c.cur.first, c.cur.end = 0, 0
				return nil, err
			}
		} else {
			c.close(t)
			end, n := chunkAt(r, i)
			buf := c.cur.buf
			if cap(buf) < n {
				buf = alignedBuf(max(n, compactionChunk))
			}
			c.cur = chunkSpan{buf: buf[:n], base: r.Block(i).Offset}
			if err := readTableAt(db.compactEng, t, c.cur.buf, int64(c.cur.base)); err != nil {
				return nil, err
			}
			c.cur.first, c.cur.end = i, end
		}
	} else if i > c.cur.first && c.ahead.p == nil && c.ahead.startErr == nil && c.cur.end < r.NumBlocks() {
		c.startAhead(db, t, r)
	}
	h := r.Block(i)
	return c.cur.buf[h.Offset-c.cur.base : h.Offset-c.cur.base+h.Len], nil
}

// startAhead starts the read of the chunk after the current one.
func (c *blockChunk) startAhead(db *DB, t *table, r *sstable.Reader) {
	i := c.cur.end
	end, n := chunkAt(r, i)
	a := &c.ahead
	*a = chunkSpan{buf: c.buffer(n), first: i, end: end, base: r.Block(i).Offset}
	a.req[0] = ioengine.Request{Op: ioengine.OpRead, File: t.data, Buf: a.buf, Off: int64(a.base)}
	p, err := db.compactEng.Start(a.req[:])
	if err != nil {
		// Reported when the walk reaches the chunk (read then with Do).
		a.startErr = err
		c.spare, a.buf = a.buf, nil
		return
	}
	a.p = p
}

// wait waits for the read ahead and checks it as readTableAt does.
func (a *chunkSpan) wait(t *table) error {
	err := a.p.Wait()
	a.p = nil
	return checkTableRead(t, a.req[0].Off, len(a.buf), a.req[0].N, err)
}

// release closes c and drops its buffers.
func (c *blockChunk) release(t *table) {
	c.close(t)
	c.cur, c.spare = chunkSpan{}, nil
}

// close waits for a read ahead still in flight (its result unused), so
// that no buffer of c belongs to the engine any more.
func (c *blockChunk) close(t *table) {
	if c.ahead.p != nil {
		_ = c.ahead.wait(t)
		c.spare = c.ahead.buf
	}
	c.ahead = chunkSpan{}
}

// levelIter concatenates the tables of one sorted level, opening a table
// iterator only when the walk reaches it.
//
// A compaction's levelIter (compaction set) walks its tables with
// compaction iterators, closing each before the next is opened: a merge
// holds one table's chunk buffers and metadata per sorted input level.
type levelIter struct {
	db         *DB
	ts         []*table
	noFill     bool
	compaction bool
	i          int
	cur        *tableIter
	e          error
}

// open makes table i the current one, closing the one before.
func (li *levelIter) open(i int) {
	li.close()
	if li.compaction {
		li.cur = newCompactionIter(li.db, li.ts[i])
	} else {
		li.cur = newTableIter(li.db, li.ts[i], li.noFill)
	}
}

// close closes the current table's iterator (see tableIter.close).
func (li *levelIter) close() {
	if li.cur != nil {
		li.cur.close()
	}
}

func (li *levelIter) seekGE(key []byte) bool {
	li.i = 0
	if key != nil {
		li.i = sort.Search(len(li.ts), func(j int) bool { return bytes.Compare(li.ts[j].largestUser, key) >= 0 })
	}
	for ; li.i < len(li.ts); li.i++ {
		li.open(li.i)
		if li.cur.seekGE(key) {
			return true
		}
		if li.e = li.cur.err(); li.e != nil {
			return false
		}
		key = nil
	}
	li.cur = nil
	return false
}

func (li *levelIter) next() bool {
	if li.cur == nil {
		return false
	}
	if li.cur.next() {
		return true
	}
	if li.e = li.cur.err(); li.e != nil {
		return false
	}
	for li.i++; li.i < len(li.ts); li.i++ {
		li.open(li.i)
		if li.cur.seekGE(nil) {
			return true
		}
		if li.e = li.cur.err(); li.e != nil {
			return false
		}
	}
	li.cur = nil
	return false
}

func (li *levelIter) key() sstable.InternalKey { return li.cur.key() }
func (li *levelIter) value() []byte            { return li.cur.value() }
func (li *levelIter) err() error               { return li.e }

// mergingIter merges internal iterators into one internal-key order. Its
// heap holds each live iterator with its current key, so that ordering the
// heap compares keys in place instead of asking every iterator for its key
// (an interface call) at each comparison.
type mergingIter struct {
	all []internalIter
	h   []mergeItem // a min-heap by key: h[0] is the current entry
	e   error
}

// mergeItem is a live iterator and its current key, valid until its next
// call to next or seekGE.
type mergeItem struct {
	it  internalIter
	key sstable.InternalKey
}

func (m *mergingIter) seekGE(key []byte) bool {
	m.h = m.h[:0]
	m.e = nil
	for _, it := range m.all {
		if it.seekGE(key) {
			m.h = append(m.h, mergeItem{it: it, key: it.key()})
		} else if err := it.err(); err != nil {
			m.e = err
			return false
		}
	}
	for i := len(m.h)/2 - 1; i >= 0; i-- {
		m.down(i)
	}
	return len(m.h) > 0
}

func (m *mergingIter) next() bool {
	if len(m.h) == 0 {
		return false
	}
	top := &m.h[0]
	if top.it.next() {
		top.key = top.it.key()
	} else {
		if err := top.it.err(); err != nil {
			m.e = err
			return false
		}
		n := len(m.h) - 1
		m.h[0] = m.h[n]
		m.h[n] = mergeItem{}
		m.h = m.h[:n]
	}
	m.down(0)
	return len(m.h) > 0
}

// down moves h[i] down to its place in the heap.
func (m *mergingIter) down(i int) {
	h := m.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && sstable.Compare(h[r].key, h[l].key) < 0 {
			c = r
		}
		if sstable.Compare(h[c].key, h[i].key) >= 0 {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

func (m *mergingIter) key() sstable.InternalKey { return m.h[0].key }
func (m *mergingIter) value() []byte            { return m.h[0].it.value() }
func (m *mergingIter) err() error               { return m.e }

// Iterator walks the user keys of a range in order as of one snapshot.
//
//	it := db.NewIterator(lower, upper)
//	for it.Next() {
//		use(it.Key(), it.Value())
//	}
//	err := it.Close() // the first error, if any
//
// Key and Value are valid until the next call to Next (they are the
// iterator's copies, not the store's memory). An Iterator is owned by one
// goroutine and must be closed: until Close it keeps the tables and the
// memtables it reads from alive, flushed ones included (see "Memory" in the
// package documentation).
type Iterator struct {
	db           *DB
	rs           readState
	m            *mergingIter
	lower, upper []byte
	started      bool
	pos          bool // m stands on an entry Next has not consumed
	noFill       bool
	done         bool
	k, v         []byte
	e            error
	closed       bool
}

// NewIterator returns an iterator over the keys in [lower, upper) (nil:
// unbounded) as of now.
func (db *DB) NewIterator(lower, upper []byte) *Iterator {
	return db.NewIteratorWith(ReadOptions{}, lower, upper)
}

// NewIteratorWith is NewIterator with read options.
func (db *DB) NewIteratorWith(ro ReadOptions, lower, upper []byte) *Iterator {
	it := &Iterator{db: db, lower: append([]byte(nil), lower...), upper: append([]byte(nil), upper...)}
	if lower == nil {
		it.lower = nil
	}
	if upper == nil {
		it.upper = nil
	}
	rs, err := db.acquire(ro)
	if err != nil {
		it.e, it.done, it.closed = err, true, true
		return it
	}
	db.mu.Lock()
	db.iterators++
	db.mu.Unlock()
	it.rs = rs
	it.noFill = ro.NoFillCache
	it.m = db.newMerging(rs.mems, rs.v, ro.NoFillCache)
	return it
}

// newMerging merges the memtables and every table of v.
func (db *DB) newMerging(mems []*memTable, v *version, noFill bool) *mergingIter {
	m := &mergingIter{}
	for _, mt := range mems {
		m.all = append(m.all, &memIter{it: mt.NewIterator()})
	}
	for _, t := range v.levels[0] {
		m.all = append(m.all, newTableIter(db, t, noFill))
	}
	for l := 1; l < numLevels; l++ {
		if len(v.levels[l]) > 0 {
			m.all = append(m.all, &levelIter{db: db, ts: v.levels[l], noFill: noFill})
		}
	}
	return m
}

// Next moves to the next key with a value and reports whether there is one.
func (it *Iterator) Next() bool {
	if it.done {
		return false
	}
	var ok bool
	if !it.started {
		it.started = true
		it.db.prefetchSeek(it.rs.v, it.lower, it.noFill)
		ok = it.m.seekGE(it.lower)
	} else {
		ok = it.pos
	}
	for ok {
		k := it.m.key()
		if it.upper != nil && bytes.Compare(k.UserKey, it.upper) >= 0 {
			break
		}
		if k.Seq > it.rs.seq {
			ok = it.m.next()
			continue
		}
		// The newest visible version of this user key decides.
		it.k = append(it.k[:0], k.UserKey...)
		kind := k.Kind
		if kind == sstable.KindSet {
			it.v = append(it.v[:0], it.m.value()...)
		}
		for ok = it.m.next(); ok && bytes.Equal(it.m.key().UserKey, it.k); ok = it.m.next() {
		}
		if kind == sstable.KindSet {
			it.pos = ok
			return true
		}
	}
	if err := it.m.err(); err != nil {
		it.e = err
	}
	it.done = true
	return false
}

// Key returns the current key.
func (it *Iterator) Key() []byte { return it.k }

// Value returns the current value.
func (it *Iterator) Value() []byte { return it.v }

// Err returns the error that ended the iteration, if any.
func (it *Iterator) Err() error { return it.e }

// Close releases the iterator's tables and returns Err.
func (it *Iterator) Close() error {
	if it.closed {
		return it.e
	}
	it.closed, it.done = true, true
	it.m = nil // its memtable iterators point into memory the release may give back
	it.db.release(it.rs)
	it.db.mu.Lock()
	it.db.iterators--
	it.db.mu.Unlock()
	return it.e
}

// prefetchSeek starts, in one go, the loads of the block every table of v
// would read first when an iterator seeks to key (nil: the first blocks),
// so that the seek of each table finds its block loaded or loading instead
// of reading the tables one after another.
func (db *DB) prefetchSeek(v *version, key []byte, noFill bool) {
	if db.pool == nil || noFill {
		return
	}
	var spans []bufpool.Span
	add := func(t *table) {
		if t == nil {
			return
		}
		r, err := db.reader(t)
		if err != nil || r.NumBlocks() == 0 {
			return // the seek meets the error and reports it
		}
		h := r.Block(0)
		if key != nil {
			var ok bool
			if h, ok = r.BlockFor(key); !ok {
				return
			}
		}
		spans = append(spans, bufpool.Span{File: t.fid, Off: int64(h.Offset), Len: int64(h.Len)})
	}
	for _, t := range v.levels[0] {
		add(t)
	}
	for l := 1; l < numLevels; l++ {
		lvl := v.levels[l]
		if len(lvl) == 0 {
			continue
		}
		if key == nil {
			add(lvl[0])
			continue
		}
		i := sort.Search(len(lvl), func(j int) bool { return bytes.Compare(lvl[j].largestUser, key) >= 0 })
		if i < len(lvl) {
			add(lvl[i])
		}
	}
	if len(spans) > 1 {
		db.pool.Prefetch(spans)
	}
}
