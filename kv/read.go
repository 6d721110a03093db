package kv

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// readSet is what reads look at: the memtables newest first and a
// referenced version. The DB publishes a new one (publishReadSetLocked) at
// every change of its memtables or version; a read takes a reference with
// one atomic add and no lock, and the memtables and the version are
// unreferenced (the version under DB.mu) only when the last reference of a
// replaced set goes: a memtable's memory outlives every read that can see
// it.
type readSet struct {
	// refs counts the DB's pointer (while the set is published) and the
	// reads using it; a set at 0 is dead and never revived.
	refs atomic.Int64
	mems []*memTable // immutable; the set holds one reference to each
	v    *version    // immutable; the set holds one reference
}

// tryRef takes a reference unless the set is dead.
func (s *readSet) tryRef() bool {
	for {
		n := s.refs.Load()
		if n == 0 {
			return false
		}
		if s.refs.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// readState is one read's view: a referenced readSet and the seq it reads
// at.
type readState struct {
	*readSet
	seq uint64
}

// publishReadSetLocked publishes the read set of the current memtables and
// version and drops the DB's reference to the one it replaces. Called with
// DB.mu held after every change of mem, imm or current.
func (db *DB) publishReadSetLocked() {
	s := &readSet{mems: make([]*memTable, 0, 1+len(db.imm)), v: db.current}
	s.refs.Store(1)
	s.v.ref()
	s.mems = append(s.mems, db.mem)
	for i := len(db.imm) - 1; i >= 0; i-- {
		s.mems = append(s.mems, db.imm[i])
	}
	for _, m := range s.mems {
		m.ref()
	}
	if old := db.reads.Swap(s); old != nil {
		db.unrefReadSetLocked(old)
	}
}

// unpublishReadSetLocked withdraws the read set, so that every later read
// fails with ErrClosed. Called with DB.mu held.
func (db *DB) unpublishReadSetLocked() {
	if old := db.reads.Swap(nil); old != nil {
		db.unrefReadSetLocked(old)
	}
}

func (db *DB) unrefReadSetLocked(s *readSet) {
	if s.refs.Add(-1) == 0 {
		s.unrefMems()
		db.unrefVersionLocked(s.v)
	}
}

// unrefMems drops the dead set's references to its memtables.
func (s *readSet) unrefMems() {
	for _, m := range s.mems {
		m.unref()
	}
}

// acquire takes a consistent read state for ro without taking DB.mu;
// release it with release.
func (db *DB) acquire(ro ReadOptions) (readState, error) {
	seq := db.visible.Load()
	if ro.Snapshot != nil {
		if ro.Snapshot.db != db || ro.Snapshot.closed.Load() {
			return readState{}, errors.New("kv: read with a snapshot that is closed or of another DB")
		}
		seq = ro.Snapshot.seq
	}
	return db.acquireAt(seq)
}

// acquireAt is acquire reading at seq.
func (db *DB) acquireAt(seq uint64) (readState, error) {
	for {
		s := db.reads.Load()
		if s == nil {
			return readState{}, ErrClosed
		}
		// A set replaced between the load and the reference is dead (its
		// refs reached 0): load the new one.
		if s.tryRef() {
			return readState{readSet: s, seq: seq}, nil
		}
	}
}

func (db *DB) release(rs readState) {
	if rs.refs.Add(-1) == 0 {
		rs.unrefMems()
		db.mu.Lock()
		db.unrefVersionLocked(rs.v)
		db.mu.Unlock()
	}
}

// Get returns the value of key, or ErrNotFound. The value is the caller's.
func (db *DB) Get(key []byte) ([]byte, error) { return db.GetWith(ReadOptions{}, key) }

// GetWith is Get with read options.
func (db *DB) GetWith(ro ReadOptions, key []byte) ([]byte, error) {
	ro.ReadAhead, ro.Values = nil, nil
	vals, found, err := db.multiGet(ro, [][]byte{key}, false)
	if err != nil {
		return nil, err
	}
	db.stats.gets.Add(1)
	if !found[0] {
		return nil, ErrNotFound
	}
	return vals[0], nil
}

// MultiGet looks up every key in one consistent snapshot. values[i] is the
// value of keys[i] when found[i] (the caller's memory; the values of one
// call share a few allocations of at most valueChunk bytes, each value's
// capacity ending with it; with ReadOptions.Values they are in that
// buffer, valid until its Reset, and so are values and found). The data
// block reads the batch needs, in all tables of all levels, go to the
// engine together: each round reads, for every key not yet resolved, the
// block of the next table that may hold it (newest first, after the bloom
// filter), all in one submission. A key is resolved by the first table
// that has a version of it, so a second round happens only for bloom false
// positives.
func (db *DB) MultiGet(keys [][]byte) (values [][]byte, found []bool, err error) {
	return db.MultiGetWith(ReadOptions{}, keys)
}

// MultiGetWith is MultiGet with read options.
func (db *DB) MultiGetWith(ro ReadOptions, keys [][]byte) ([][]byte, []bool, error) {
	db.stats.multiGets.Add(1)
	db.stats.multiGetKeys.Add(uint64(len(keys)))
	if ro.ReadAhead != nil && ro.NoFillCache {
		ro.ReadAhead.noFill = true
	}
	return db.multiGet(ro, keys, ro.NoFillCache)
}

// lookup is one key's progress through a multiGet.
type lookup struct {
	i     int // index of the key in the call
	key   []byte
	cands []*table // tables that may hold key, newest first
	next  int      // index of the next candidate to read
	done  bool
	spill bool // the snapshot's version may be in a later block of cands[next]
	// first is the block of cands[0] a read ahead chose (ahead set), read
	// in the first round instead of looking it up again.
	first blockRead
	ahead bool
	// filtered: cands are past their bloom filters (a read ahead asked
	// them, at the same version).
	filtered bool
	read     blockRef // aheadLookup.read
	// older is what a read ahead made at another version found for key:
	// its first block is read ahead if cands[0], once filtered, is the
	// table it found first. olderSettled: it searched that block, and what
	// it found there holds at this call's seq (ReadAhead.lookFor).
	older        *aheadLookup
	olderSettled bool
	// hash is key's FilterHash: until the call's filter pass, the cands of
	// a lookup not read ahead are the tables whose range holds key, their
	// filters not yet asked.
	hash uint64
}

// getScratch is a multiGet's working memory, reused from call to call
// (getScratches) so that a batch of keys allocates little beyond the values
// it returns. It goes back emptied, its pointers cleared: it holds no key,
// table or block between calls. A call leaves each list as long as the most
// it wrote of it, and release clears that much only: past it the memory
// holds no pointer, and clearing all of it would touch memory no call has
// used (page faults, where the runtime gave it back to the kernel).
type getScratch struct {
	lookups []lookup
	pending []*lookup
	reads   []blockRead
	cands   []*table // backing store of every lookup's candidates
}

var getScratches = sync.Pool{New: func() any { return new(getScratch) }}

// maxScratchKeys bounds the calls whose scratch is kept for reuse: a rare
// huge batch does not pin its memory in the pool.
const maxScratchKeys = 4096

func getScratchFor(keys int) *getScratch {
	sc := getScratches.Get().(*getScratch)
	if cap(sc.lookups) < keys {
		// pending points into lookups: it must never grow.
		sc.lookups = make([]lookup, 0, keys)
	}
	return sc
}

func (sc *getScratch) release() {
	if cap(sc.lookups) > maxScratchKeys {
		return
	}
	clear(sc.lookups)
	clear(sc.pending)
	clear(sc.reads)
	clear(sc.cands)
	sc.lookups, sc.pending, sc.reads, sc.cands = sc.lookups[:0], sc.pending[:0], sc.reads[:0], sc.cands[:0]
	getScratches.Put(sc)
}

// takeSettled resolves lk by what a read ahead found in the block of
// lk.cands[0] (al.got, which holds at the call's seq): a value or a
// deletion ends it; where the block held no version of the key it goes on
// with the next candidate, and takeSettled says whether one is left.
func (lk *lookup) takeSettled(al *aheadLookup, values [][]byte, found []bool, va *valueArena) (pending bool) {
	switch al.got {
	case gotValue:
		values[lk.i], found[lk.i] = al.value, true
		va.left--
		return false
	case gotDeleted:
		return false
	}
	lk.next = 1
	return len(lk.cands) > 1
}

func (db *DB) multiGet(ro ReadOptions, keys [][]byte, noFill bool) ([][]byte, []bool, error) {
	rs, err := db.acquire(ro)
	if err != nil {
		return nil, nil, err
	}
	defer db.release(rs)
	var values [][]byte
	var found []bool
	if ro.Values != nil {
		values, found = ro.Values.results(len(keys))
	} else {
		values, found = make([][]byte, len(keys)), make([]bool, len(keys))
	}
	va := valueArena{left: len(keys), vb: ro.Values}
	sc := getScratchFor(len(keys))
	defer sc.release()
	pending, lookups, cands := sc.pending[:0], sc.lookups[:0], sc.cands[:0]
	// What the call grew goes back with the scratch, as long as the most it
	// wrote: lookups and cands only grow; pending is longest after the
	// filter pass (mostPending), each round then shrinks it in place.
	mostPending := 0
	defer func() {
		sc.lookups, sc.pending, sc.cands = lookups, pending[:max(len(pending), mostPending)], cands
	}()
	// flushed are the memtables the read ahead looked in that were flushed
	// since; while they and the live ones hold every write since its seq
	// (sinceFlushed), what it found for a key no memtable holds is still
	// the key's newest version, whatever flushes and compactions changed.
	flushed, sinceAhead := ro.ReadAhead.sinceFlushed(rs.mems)
	for i, k := range keys {
		if len(k) > sstable.MaxKeyLen {
			return nil, nil, fmt.Errorf("kv: key %d of %d bytes is over the limit %d", i, len(k), sstable.MaxKeyLen)
		}
		v, kind, ok := memGet(rs.mems, k, rs.seq)
		if !ok && len(flushed) > 0 {
			// No later memtable was flushed: its newest version in the
			// tables is the flushed memtables' (a flush copies one whole).
			if v, kind, ok = memGet(flushed, k, rs.seq); ok {
				db.stats.readAheadLookups.Add(1)
			}
		}
		if ok {
			if kind == sstable.KindSet {
				values[i], found[i] = va.keep(v), true
			}
			continue
		}
		al, sameVersion, settled := ro.ReadAhead.lookFor(rs.v, rs.seq, i, k)
		if al != nil && !sameVersion && sinceAhead {
			// No write of the key since the read ahead: what it found in
			// its first block, or finds there now, is the newest version
			// still, though that block's table may be gone.
			if settled && al.found() {
				db.stats.readAheadLookups.Add(1)
				lk := lookup{i: i, key: k}
				lk.takeSettled(al, values, found, &va)
				continue
			}
			if got, ok := ro.ReadAhead.searchRead(al, k, rs.seq); ok {
				db.stats.readAheadLookups.Add(1)
				if got.Kind == sstable.KindSet {
					values[i], found[i] = va.keep(got.Value), true
				}
				continue
			}
		}
		if al != nil && sameVersion {
			db.stats.readAheadLookups.Add(1)
			lk := lookup{i: i, key: k, cands: al.cands, filtered: true}
			if settled {
				if lk.takeSettled(al, values, found, &va) {
					lookups = append(lookups, lk)
				}
			} else if len(al.cands) > 0 {
				lk.first, lk.ahead, lk.read = al.first, true, al.read
				lookups = append(lookups, lk)
			}
			continue
		}
		start := len(cands)
		var h uint64
		if cands, h, err = db.appendInRange(cands, rs.v, k); err != nil {
			return nil, nil, err
		}
		if len(cands) > start {
			lk := lookup{i: i, key: k, cands: cands[start:len(cands):len(cands)], hash: h}
			if al != nil && len(al.cands) > 0 {
				lk.older, lk.olderSettled = al, settled
			}
			lookups = append(lookups, lk)
		}
	}
	// The filters are asked once the lines of every key's are on their
	// way (appendInRange), so that their cache misses overlap.
	for j := range lookups {
		lk := &lookups[j]
		if !lk.filtered {
			if lk.cands, err = db.filterCandidates(lk.cands, lk.hash); err != nil {
				return nil, nil, err
			}
			if len(lk.cands) == 0 {
				continue
			}
			if al := lk.older; al != nil && lk.cands[0] == al.cands[0] {
				// The newest table that may hold the key is the one the
				// read ahead found at its version: what it found in its
				// block, or the block it read, is this lookup's first.
				db.stats.readAheadLookups.Add(1)
				if lk.olderSettled {
					if !lk.takeSettled(al, values, found, &va) {
						continue
					}
				} else {
					lk.first, lk.ahead, lk.read = al.first, true, al.read
				}
			} else if al != nil && lk.olderSettled && al.found() && ro.ReadAhead.holdsAcross(lk.cands) {
				// A flush or compaction replaced the read ahead's table,
				// and no table that may hold the key has an entry above
				// its seq: the version it found is still the newest.
				db.stats.readAheadLookups.Add(1)
				lk.takeSettled(al, values, found, &va)
				continue
			}
		}
		pending = append(pending, lk)
	}
	mostPending = len(pending)
	for len(pending) > 0 {
		reads := sc.reads[:0]
		for _, lk := range pending {
			if lk.ahead {
				lk.ahead = false
				r := lk.first
				if lk.read.from != nil {
					r.buf, r.checked = lk.read.from.block(lk.read.j)
				}
				reads = append(reads, r)
				continue
			}
			r, err := db.blockFor(lk.cands[lk.next], lk.key)
			if err != nil {
				return nil, nil, err
			}
			reads = append(reads, r)
		}
		// The first round's reads are the most: the later ones reuse its
		// memory.
		sc.reads = reads[:max(len(reads), len(sc.reads))]
		db.stats.rounds.Add(1)
		err := db.readBlocks(reads, noFill, func(i int, buf []byte, verified bool) error {
			lk, r := pending[i], &reads[i]
			get := r.rd.GetInBlock
			if verified {
				get = r.rd.GetInVerifiedBlock
			}
			got, err := get(r.bi, buf, lk.key, rs.seq)
			switch {
			case err != nil:
				return fmt.Errorf("kv: %w", err)
			case got.Found:
				lk.done = true
				if got.Kind == sstable.KindSet {
					values[lk.i], found[lk.i] = va.keep(got.Value), true
				}
			case got.Spills:
				lk.spill = true // older versions go on in the next block
			}
			return nil
		})
		if err != nil {
			return nil, nil, err
		}
		next := pending[:0]
		for _, lk := range pending {
			if lk.spill {
				lk.spill = false
				v, kind, ok, err := db.tableGetAt(lk.cands[lk.next], lk.key, rs.seq, noFill)
				if err != nil {
					return nil, nil, err
				}
				if ok {
					lk.done = true
					if kind == sstable.KindSet {
						values[lk.i], found[lk.i] = va.keep(v), true
					}
				}
			}
			lk.next++
			if !lk.done && lk.next < len(lk.cands) {
				next = append(next, lk)
			}
		}
		pending = next
	}
	return values, found, nil
}

// valueChunk bounds the allocations a multiGet copies its values into.
const valueChunk = 16 << 10

// valueArena copies the values of one multiGet into a few allocations
// rather than one per value: a chunk holds the values of as many keys as
// are still unresolved (left), up to valueChunk bytes, so a one-key Get
// allocates its value's size and a batch about its values' total.
// With a ValueBuffer (vb) the copies go there instead.
type valueArena struct {
	buf  []byte
	left int // keys not yet given a value
	vb   *ValueBuffer
}

// keep returns a copy of v whose capacity ends with it.
func (a *valueArena) keep(v []byte) []byte {
	if len(v) == 0 {
		a.left--
		return []byte{}
	}
	if a.vb != nil {
		a.left--
		return a.vb.copy(v)
	}
	if cap(a.buf)-len(a.buf) < len(v) {
		a.buf = make([]byte, 0, max(len(v), min(valueChunk, len(v)*max(a.left, 1))))
	}
	a.left--
	n := len(a.buf)
	a.buf = append(a.buf, v...)
	return a.buf[n : n+len(v) : n+len(v)]
}

// memGet looks key up in the memtables, newest first.
func memGet(mems []*memTable, key []byte, seq uint64) ([]byte, sstable.Kind, bool) {
	for _, m := range mems {
		if v, kind, ok := m.Get(key, seq); ok {
			return v, kind, true
		}
	}
	return nil, 0, false
}

// appendInRange appends the tables of v whose key range holds key, newest
// first (L0's that cover it, then at most one per lower level), and returns
// key's FilterHash, h, for filterCandidates. It starts loading the line of
// each one's filter that h picks, so that the filters of a batch of keys
// are asked once their lines are on the way. No I/O but the loads of
// metadata the metaCache does not hold.
func (db *DB) appendInRange(out []*table, v *version, key []byte) (_ []*table, h uint64, _ error) {
	hashed := false
	add := func(t *table) error {
		r, err := db.reader(t)
		if err != nil {
			return err
		}
		if !hashed {
			h, hashed = sstable.FilterHash(key), true
		}
		r.PrefetchFilter(h)
		out = append(out, t)
		return nil
	}
	for _, t := range v.levels[0] {
		if t.containsUser(key) {
			if err := add(t); err != nil {
				return out, 0, err
			}
		}
	}
	for l := 1; l < numLevels; l++ {
		if t := findTable(v.levels[l], key); t != nil {
			if err := add(t); err != nil {
				return out, 0, err
			}
		}
	}
	return out, h, nil
}

// filterCandidates keeps, in place and in order, the tables of cands whose
// bloom filter may hold the key of FilterHash h.
func (db *DB) filterCandidates(cands []*table, h uint64) ([]*table, error) {
	n := 0
	for _, t := range cands {
		r, err := db.reader(t)
		if err != nil {
			return cands[:n], err
		}
		if r.MayContainHash(h) {
			cands[n] = t
			n++
		}
	}
	return cands[:n], nil
}

// tableGetAt returns the newest version of key in t with seq <= snap, walking
// the table's blocks from the first that holds key (the rare path of a
// snapshot read whose version is not in that first block).
func (db *DB) tableGetAt(t *table, key []byte, snap uint64, noFill bool) ([]byte, sstable.Kind, bool, error) {
	it := newTableIter(db, t, noFill)
	for ok := it.seekGE(key); ok; ok = it.next() {
		k := it.key()
		if !bytes.Equal(k.UserKey, key) {
			break
		}
		if k.Seq <= snap {
			return it.value(), k.Kind, true, nil
		}
	}
	return nil, 0, false, it.err()
}

// blockFor is the read of the block of t that may hold key.
func (db *DB) blockFor(t *table, key []byte) (blockRead, error) {
	rd, err := db.reader(t)
	if err != nil {
		return blockRead{}, err
	}
	bi, ok := rd.BlockIndexFor(key)
	if !ok {
		return blockRead{t: t, skip: true}, nil
	}
	return blockRead{t: t, rd: rd, bi: bi, h: rd.Block(bi)}, nil
}

// blockRead is one data block a read needs.
type blockRead struct {
	t    *table
	rd   *sstable.Reader // t's metadata, held for the read
	bi   int             // the block's place in the table (sstable.Reader.Block)
	h    sstable.BlockHandle
	skip bool // the key sorts after the table: nothing to read
	// buf, if not nil, is the block's bytes, read past the cache by a
	// ReadAhead, and checked its flag: set once a lookup has verified them
	// (aheadReads.checked).
	buf     []byte
	checked *atomic.Bool
}

// blockFunc is what readBlocks calls with each block: fn(i, buf, verified)
// for reads[i]. buf is valid only during fn, which checks and
// decodes it; its error ends the call. verified says a cached block's
// checksum passed in an earlier fn since it was loaded (the frame is
// marked once fn returns nil): a block is verified once per load, not once
// per lookup.
type blockFunc func(i int, buf []byte, verified bool) error

// readBlocks fetches the blocks of reads and calls fn with each block's
// bytes (not for skipped ones), all in one go: through the block cache in
// one Pin (its misses go to the engine together), or, without a cache, in
// one engine call of reads into buffers of this call's own, adjacent
// blocks of a file read as one.
func (db *DB) readBlocks(reads []blockRead, noFill bool, fn blockFunc) error {
	if db.pool != nil {
		return db.readBlocksCached(reads, noFill, fn)
	}
	return db.readBlocksDirect(reads, fn)
}

func (db *DB) readBlocksCached(reads []blockRead, noFill bool, fn blockFunc) error {
	// Sized for the common round, one single-frame block per read: no
	// append grows them, and Pin appends to frames without allocating
	// under the pool's lock.
	spans := make([]bufpool.Span, 0, len(reads))
	which := make([]int, 0, len(reads))
	frames := make([]*bufpool.Frame, 0, len(reads))
	var direct []int
	for i, r := range reads {
		if !r.skip && r.buf != nil {
			// A block read ahead is checked once, by its first lookup: the
			// lookups of other keys in it skip its checksum, as they would
			// in a cached frame. Its read ahead's Done puts it in the cache,
			// marked checked.
			verified := r.checked.Load()
			if err := fn(i, r.buf, verified); err != nil {
				return err
			}
			if !verified {
				r.checked.Store(true)
			}
		}
	}
	for i, r := range reads {
		if r.skip || r.buf != nil {
			continue
		}
		if blockFrames(r.h) > db.pool.Frames() {
			direct = append(direct, i) // a block larger than the cache: read past it
			continue
		}
		s := bufpool.Span{File: r.t.fid, Off: int64(r.h.Offset), Len: int64(r.h.Len)}
		if noFill {
			var ok bool
			var err error
			frames, ok, err = db.pool.PinResident([]bufpool.Span{s}, frames)
			if err != nil {
				return fmt.Errorf("kv: block cache: %w", err)
			}
			if !ok {
				direct = append(direct, i)
				continue
			}
		}
		which = append(which, i)
		spans = append(spans, s)
	}
	var scratch []byte
	// deliver hands the blocks of which (pinned in frames, in order) to fn.
	deliver := func(which []int, frames []*bufpool.Frame) error {
		fi := 0
		// pk is the next of which to prefetch, its first frame frames[pf]:
		// each block's lines start loading prefetchDistance blocks before
		// fn gets to it, while fn works on the blocks between.
		pk, pf := 0, 0
		for k, i := range which {
			for ; pk < len(which) && pk <= k+prefetchDistance; pk++ {
				pr := reads[which[pk]]
				if pf < len(frames) {
					pr.rd.PrefetchBlock(pr.bi, frames[pf].Bytes(), sstable.BlockNote(frames[pf].CheckNote()))
				}
				pf += blockFrames(pr.h)
			}
			r := reads[i]
			n := blockFrames(r.h)
			fs := frames[fi : fi+n]
			fi += n
			buf, verified, err := pinnedBlock(r, fs, &scratch)
			if err != nil {
				return err
			}
			if err := fn(i, buf, verified); err != nil {
				return err
			}
			notePinnedBlock(r, fs, buf, verified)
		}
		return nil
	}
	if noFill {
		err := deliver(which, frames)
		for _, f := range frames {
			f.Unpin()
		}
		if err != nil {
			return err
		}
	} else {
		// One Pin — its misses one engine call — for as many blocks as
		// the cache holds at once; a batch of more blocks than that is read
		// in as many Pins as it takes, each released before the next (so
		// concurrent callers never wait on each other's pins for good).
		limit := db.pool.Frames()
		// The common case, every span's frames (counted with repeats)
		// within the cache, is one Pin without counting distinct blocks.
		total := 0
		for _, i := range which {
			total += blockFrames(reads[i].h)
		}
		var seen map[blockKey]bool
		// chunkEnd is where a Pin from which[start] ends: at the end, or
		// before the block that would take it past the cache.
		chunkEnd := func(start int) int {
			end, nf := start, 0
			clear(seen)
			for end < len(which) {
				r := reads[which[end]]
				k := blockKey{r.t.fid, r.h.Offset}
				if !seen[k] {
					if end > start && nf+blockFrames(r.h) > limit {
						break
					}
					if seen == nil {
						seen = map[blockKey]bool{}
					}
					seen[k] = true
					nf += blockFrames(r.h)
				}
				end++
			}
			return end
		}
		// On io_uring, the blocks past the first Pin (up to
		// maxOverflowBytes) are read past the cache, submitted before that
		// Pin: the round waits for the device once, not once per Pin. The
		// cache could not keep them anyway — the later Pins of the round
		// would evict the earlier ones'.
		var over *directCall
		if total > limit && db.eng.Backend() != ioengine.BackendSyscall {
			end := chunkEnd(0)
			n, nb := 0, uint64(0)
			clear(seen)
			for ; end+n < len(which); n++ {
				r := reads[which[end+n]]
				k := blockKey{r.t.fid, r.h.Offset}
				if seen[k] {
					continue // another key's block: read once
				}
				if nb+r.h.Len > maxOverflowBytes {
					break
				}
				if seen == nil {
					seen = map[blockKey]bool{}
				}
				seen[k] = true
				nb += r.h.Len
			}
			if n > 0 {
				over = db.planDirect(reads, slices.Clone(which[end:end+n]))
				which, spans = slices.Delete(which, end, end+n), slices.Delete(spans, end, end+n)
				if err := over.start(db.eng); err != nil {
					over.release() // nothing was submitted
					return err
				}
			}
		}
		// finishOver waits for the reads past the cache (once, whatever
		// happened to the Pins) and, if err is nil, hands them to fn.
		finishOver := func(err error) error {
			if over == nil {
				return err
			}
			defer over.release()
			werr := over.wait(db)
			if err != nil {
				return err
			}
			return over.deliver(reads, werr, fn)
		}
		for start := 0; start < len(which); {
			end := len(which)
			if start > 0 || total > limit {
				end = chunkEnd(start)
			}
			if start > 0 {
				db.stats.rounds.Add(1) // another submission of this round's reads
			}
			var err error
			frames, err = db.pool.Pin(spans[start:end], frames[:0])
			if err != nil {
				return finishOver(fmt.Errorf("kv: reading blocks: %w", err))
			}
			err = deliver(which[start:end], frames)
			for _, f := range frames {
				f.Unpin()
			}
			if err != nil {
				return finishOver(err)
			}
			start = end
		}
		if err := finishOver(nil); err != nil {
			return err
		}
	}
	if len(direct) > 0 {
		sub := make([]blockRead, len(reads))
		for i := range sub {
			sub[i] = blockRead{skip: true}
		}
		for _, i := range direct {
			sub[i] = reads[i]
		}
		return db.readBlocksDirect(sub, fn)
	}
	return nil
}

// pinnedBlock returns the bytes of block r from the pinned frames that
// cover it (copied into *scratch where they are more than one), and
// whether its checksum passed since it was loaded.
func pinnedBlock(r blockRead, fs []*bufpool.Frame, scratch *[]byte) (buf []byte, verified bool, _ error) {
	if len(fs) == 1 {
		return fs[0].Bytes()[:r.h.Len], fs[0].Checked(), nil
	}
	if cap(*scratch) < int(r.h.Len) {
		*scratch = make([]byte, r.h.Len)
	}
	buf = (*scratch)[:r.h.Len]
	if err := bufpool.CopyOut(buf, fs, int64(r.h.Offset)); err != nil {
		return nil, false, fmt.Errorf("kv: block of %s at offset %d: %w", r.t.path, r.h.Offset, err)
	}
	return buf, false, nil
}

// notePinnedBlock records, once a lookup has checked pinnedBlock's buf (and
// it passed), what the next lookup of the block may skip: its checksum (a
// block is verified once per load), or else its note.
func notePinnedBlock(r blockRead, fs []*bufpool.Frame, buf []byte, verified bool) {
	switch {
	case len(fs) > 1:
	case !verified:
		fs[0].MarkChecked()
	case fs[0].CheckNote() == 0:
		// Looked up again since it was loaded: worth a note. A block that
		// has none (more than one restart) is not stored to, so lookups of
		// it do not contend for its frame.
		if note := r.rd.NoteBlock(r.bi, buf); note != 0 {
			fs[0].SetCheckNote(uint64(note))
		}
	}
}

// prefetchDistance is how many blocks ahead of its lookup a cached round
// starts loading a block's lines into the CPU's cache
// (sstable.Reader.PrefetchBlock).
const prefetchDistance = 2

// blockFrames is how many 4 KiB cache frames a block spans (blocks are
// 4 KiB-aligned).
func blockFrames(h sstable.BlockHandle) int {
	return int((h.Len + directio.BlockSize - 1) / directio.BlockSize)
}

// run is a contiguous byte range of one table read with one request.
type run struct {
	t        *table
	off, end uint64
	members  []int // indexes into reads, by offset (a run of the call's order)
}

// maxRunBytes bounds a coalesced read.
const maxRunBytes = 256 << 10

func (db *DB) readBlocksDirect(reads []blockRead, fn blockFunc) error {
	order := make([]int, 0, len(reads))
	for i, r := range reads {
		if !r.skip {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return nil
	}
	dc := db.planDirect(reads, order)
	defer dc.release()
	err := db.eng.Do(dc.reqs)
	db.stats.blockReads.Add(dc.bytes / directio.BlockSize)
	db.stats.directCalls.Add(1)
	return dc.deliver(reads, err, fn)
}

// maxOverflowBytes bounds the blocks a cached round reads past the cache
// in one submission.
const maxOverflowBytes = 1 << 20

// directCall is a read of blocks into memory of its own, past the cache:
// runs of adjacent blocks, one request each.
type directCall struct {
	runs  []run
	bufs  [][]byte
	reqs  []ioengine.Request
	bytes uint64
	pend  *ioengine.Pending
	mem   *directMem // backs bufs; recycled by release
	// failed: a request or the call failed; its memory is not recycled (a
	// ring that failed may not have finished with it).
	failed bool
}

// planDirect plans the reads of reads[order...]: adjacent blocks of a
// table coalesced up to maxRunBytes. order is sorted in place and becomes
// the call's: its runs' members are runs of it.
func (db *DB) planDirect(reads []blockRead, order []int) *directCall {
	sort.Slice(order, func(a, b int) bool {
		ra, rb := reads[order[a]], reads[order[b]]
		if ra.t != rb.t {
			return ra.t.meta.Num < rb.t.meta.Num
		}
		return ra.h.Offset < rb.h.Offset
	})
	dc := &directCall{runs: make([]run, 0, len(order))}
	for k, i := range order {
		r := reads[i]
		if n := len(dc.runs); n > 0 {
			last := &dc.runs[n-1]
			if last.t == r.t && r.h.Offset <= last.end && r.h.Offset+r.h.Len-last.off <= maxRunBytes {
				last.end = max(last.end, r.h.Offset+r.h.Len)
				last.members = order[k-len(last.members) : k+1]
				continue
			}
		}
		dc.runs = append(dc.runs, run{t: r.t, off: r.h.Offset, end: r.h.Offset + r.h.Len, members: order[k : k+1]})
	}
	for _, r := range dc.runs {
		dc.bytes += r.end - r.off
	}
	dc.mem = db.getDirectMem(int(dc.bytes))
	mem := dc.mem.b[:dc.bytes]
	dc.reqs = make([]ioengine.Request, len(dc.runs))
	dc.bufs = make([][]byte, len(dc.runs))
	var pos uint64
	for k, r := range dc.runs {
		dc.bufs[k] = mem[pos : pos+r.end-r.off]
		pos += r.end - r.off
		dc.reqs[k] = ioengine.Request{Op: ioengine.OpRead, File: r.t.data, Off: int64(r.off), Buf: dc.bufs[k]}
	}
	return dc
}

// start submits the call's reads without waiting; wait must follow.
func (dc *directCall) start(eng *ioengine.Engine) error {
	pend, err := eng.Start(dc.reqs)
	if err != nil {
		return fmt.Errorf("kv: reading blocks: %w", err)
	}
	dc.pend = pend
	return nil
}

// wait waits for the reads start began and counts them.
func (dc *directCall) wait(db *DB) error {
	err := dc.pend.Wait()
	if err != nil {
		dc.failed = true // whether or not its blocks are delivered
	}
	db.stats.blockReads.Add(dc.bytes / directio.BlockSize)
	db.stats.directCalls.Add(1)
	return err
}

// deliver checks each run's read (err: the call's) and hands each block to
// fn, unverified.
func (dc *directCall) deliver(reads []blockRead, err error, fn blockFunc) error {
	if err != nil {
		dc.failed = true
	}
	for k, r := range dc.runs {
		req := &dc.reqs[k]
		if req.Err != nil || req.N != len(dc.bufs[k]) {
			dc.failed = true
			cause := req.Err
			if cause == nil {
				cause = err
			}
			if cause == nil || cause == io.EOF {
				cause = io.ErrUnexpectedEOF // the table is shorter than its index says
			}
			return fmt.Errorf("kv: reading %s at offset %d (%d bytes): read %d: %w", r.t.path, r.off, r.end-r.off, req.N, cause)
		}
		for _, i := range r.members {
			br := reads[i]
			start := br.h.Offset - r.off
			if err := fn(i, dc.bufs[k][start:start+br.h.Len], false); err != nil {
				return err
			}
		}
	}
	return nil
}

// release gives the call's memory back for another call's reads, once
// its reads are waited for and its blocks handed over (a blockFunc keeps
// no reference to a block: it copies what it keeps). Memory of a call that
// failed is never reused: Go memory is left to the collector, the arena's
// pages are kept from every later call. Safe more than once.
func (dc *directCall) release() {
	if m := dc.mem; m != nil {
		switch {
		case m.arena != nil && dc.failed:
			m.arena.lose(m.pages)
		case m.arena != nil:
			m.arena.free(m.page, m.pages)
		case !dc.failed:
			putDirectMem(m)
		}
	}
	dc.mem, dc.bufs = nil, nil
}

// directMem is aligned memory for reads past the cache: pages of the
// store's registered arena (directArena), or else Go memory in size classes
// of directio.BlockSize << k up to maxAheadBytes, recycled through
// directMems: the reads of a cached store's rounds and read-aheads past
// its cache would otherwise allocate (and the collector reclaim) about a
// block of Go memory per block read. The class of Go memory follows from
// cap(b).
type directMem struct {
	b []byte // aligned; in Go memory, cap(b) is its class's size
	// arena is where b lies, nil for Go memory; b is its pages [page,
	// page+pages).
	arena       *directArena
	page, pages int
}

var directMems [directMemClasses]sync.Pool

const directMemClasses = 11 // 4 KiB … 4 MiB (maxAheadBytes)

// directMemClass is the class of the smallest size at least n, or -1 when
// n is over the largest.
func directMemClass(n int) int {
	k := 0
	for directio.BlockSize<<k < n {
		k++
	}
	if k >= directMemClasses {
		return -1
	}
	return k
}

// getDirectMem returns aligned memory of at least n bytes: the arena's
// while it has a run that long free, else Go memory.
func (db *DB) getDirectMem(n int) *directMem {
	if a := db.directArena; a != nil {
		if b, page, pages, ok := a.alloc(n); ok {
			return &directMem{b: b, arena: a, page: page, pages: pages}
		}
	}
	k := directMemClass(n)
	if k < 0 {
		return &directMem{b: alignedBuf(n)}
	}
	if m, ok := directMems[k].Get().(*directMem); ok {
		return m
	}
	return &directMem{b: alignedBuf(directio.BlockSize << k)}
}

// putDirectMem gives m back to its class; memory of no class (over the
// largest) is left to the collector.
func putDirectMem(m *directMem) {
	if k := directMemClass(cap(m.b)); k >= 0 && cap(m.b) == directio.BlockSize<<k {
		directMems[k].Put(m)
	}
}

// alignedBuf returns n bytes of Go memory aligned to directio.BlockSize (the
// engine pins it for the read).
func alignedBuf(n int) []byte {
	b := make([]byte, n+directio.BlockSize)
	off := 0
	if r := int(uintptr(unsafePointer(b)) % directio.BlockSize); r != 0 {
		off = directio.BlockSize - r
	}
	return b[off : off+n : off+n]
}
