package kv

import (
	"bytes"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// ReadAhead is a read started before it is needed: the first round of a
// MultiGet of some keys, looked up and read while the caller does other
// work. Done finishes it and releases what it holds.
//
//	ra := db.ReadAhead(nextKeys)   // submitted; returns at once
//	... process the current batch, commit its writes ...
//	vals, found, err := db.MultiGetWith(kv.ReadOptions{ReadAhead: ra}, nextKeys)
//	ra.Done()
//
// It changes what is cached, never what a read returns: the MultiGet reads
// the store as of its own call, so writes made between ReadAhead and
// MultiGet are seen (a key written meanwhile is found in the memtable, or
// in a table flushed since, whose entries go above the read ahead's seq).
// A MultiGet given the ReadAhead (ReadOptions.ReadAhead) takes what it
// found for each key instead of looking again: while the store's tables
// are those it saw, and, for a value or deletion it found, after a flush
// or compaction too while no table that may hold the key has an entry
// above its seq. Until Done the read ahead's seq is held as a snapshot's
// (not one that holds Close): compactions keep the versions it saw, so a
// later write of a key is never dropped from under that check.
//
// Until Done it also holds the memtables it looked in. Every write since
// its seq is in those or in the memtables made after them, so while none
// of the later ones has been flushed (ReadAhead.sinceFlushed), a MultiGet
// that finds a key in no live memtable looks in the ones flushed since the
// read ahead — the key's newest version in the tables is theirs, if they
// hold one — and otherwise takes the value or deletion the read ahead
// found, or finds now in the block it read past the cache for the key
// (ReadAhead.searchRead), whatever flushes and compactions did meanwhile:
// no version of the key was written since. A key in a memtable the read
// ahead held, then flushed, is thus read from memory, not from its new
// table.
// A ReadAhead belongs to one goroutine.
type ReadAhead struct {
	db *DB

	// v is the version whose tables looks refers to; compared by pointer
	// only (a MultiGet uses looks only while it holds v itself). seq is
	// the sequence number it read at, in DB.aheadSnaps while held.
	v    *version
	seq  uint64
	held bool
	// keys are copies of the first keys of the call, as many as the read
	// ahead looked at; looks[i] is what it found for keys[i].
	keys  [][]byte
	looks []aheadLookup
	// scratch backs keys, looks and their candidates until Done.
	scratch *aheadScratch

	// own are the blocks it reads past the cache (nil: none); joined are
	// other read aheads' reads past it that it takes blocks from, holding
	// a reference to each until Done.
	own    *aheadReads
	joined []*aheadReads
	// mems are the memtables it looked in, newest first, each referenced
	// until Done: a MultiGet after a flush of some of them still reads
	// them (ReadAhead.sinceFlushed).
	mems []*memTable
	// noFill: a MultiGet given it asked to keep what it read out of the
	// cache (ReadOptions.NoFillCache); Done then puts nothing there.
	noFill bool
}

// aheadReads are the blocks one ReadAhead reads past the cache, in memory
// of its own. A later read ahead of the same store that needs one of them
// before it is in the cache takes it from there (DB.aheadBlocks lists
// them until they are read) instead of reading it again; the memory goes
// back once every read ahead using it is done.
type aheadReads struct {
	db     *DB
	dreads []blockRead
	dc     *directCall // nil: the reads could not be started
	bufs   [][]byte    // set by once: dreads[j]'s bytes, nil where its read failed
	// checked[j], made by once: a lookup has verified bufs[j] (its checksum
	// and frame), so the lookups after it need not (GetInVerifiedBlock).
	// Any goroutine whose read ahead uses ar reads and sets it.
	checked []atomic.Bool
	rs      readState // the first read ahead's tables, held until once has waited
	once    sync.Once
	refs    int // guarded by db.aheadMu: the read aheads using it
}

// blockRef is a block read past the cache: from.dreads[j].
type blockRef struct {
	from *aheadReads
	j    int
}

// blockKey names a data block: its table's file in the cache, its offset.
type blockKey struct {
	fid bufpool.FileID
	off uint64
}

// aheadScratch is the working memory of a ReadAhead, from its start to its
// Done, reused from one to the next (aheadScratches). It goes back emptied,
// its pointers cleared: it holds no key or table between uses.
type aheadScratch struct {
	seen    map[blockKey]blockRef
	arena   []byte
	backing []*table
	bounds  [][2]int
	looks   []aheadLookup
	keys    [][]byte
	ranges  []aheadRange
	probe   []bufpool.Span   // the keys' first blocks, asked of the cache
	pinned  []bool           // the cache's answers: which it pinned
	frames  []*bufpool.Frame // the frames it pinned
	scratch []byte           // a block of more than one frame, copied out
}

// aheadRange is where a ReadAhead's first pass put one key's tables in
// backing: [lo, hi), their filters not yet asked for hash, the key's
// FilterHash. looked: no memtable may hold the key (memMayContain).
type aheadRange struct {
	lo, hi int
	hash   uint64
	looked bool
}

// maxScratchArena bounds the key bytes of a scratch kept for reuse.
const maxScratchArena = 1 << 20

var aheadScratches = sync.Pool{New: func() any { return &aheadScratch{seen: map[blockKey]blockRef{}} }}

// release gives sc back, unless a huge call made it too large to keep.
func (sc *aheadScratch) release() {
	if cap(sc.looks) > maxScratchKeys || cap(sc.arena) > maxScratchArena {
		return
	}
	// Past their lengths the lists hold no pointer: a ReadAhead that cuts
	// one clears what it cuts off.
	clear(sc.seen)
	clear(sc.backing)
	clear(sc.looks)
	clear(sc.keys)
	sc.arena, sc.backing, sc.bounds, sc.looks, sc.keys, sc.ranges = sc.arena[:0], sc.backing[:0], sc.bounds[:0], sc.looks[:0], sc.keys[:0], sc.ranges[:0]
	clear(sc.probe)
	clear(sc.frames)
	sc.probe, sc.pinned, sc.frames = sc.probe[:0], sc.pinned[:0], sc.frames[:0]
	aheadScratches.Put(sc)
}

// memMayContain says whether any of mems may hold a version of key, by
// their key filters alone: a read ahead leaves a key they may hold to its
// MultiGet, which looks in the memtables anyway, rather than search them
// twice.
func memMayContain(mems []*memTable, key []byte) bool {
	for _, m := range mems {
		if m.MayContain(key) {
			return true
		}
	}
	return false
}

// aheadLookup is what ReadAhead found for one key.
type aheadLookup struct {
	looked bool      // false: a memtable may hold the key (its filter), or it is over the size limit
	cands  []*table  // the tables that may hold the key, newest first
	first  blockRead // the block of cands[0] (when cands is not empty)
	read   blockRef  // where first is read past the cache (from nil: it is not)
	got    aheadGot  // what first, found in the cache, held for the key
	value  []byte    // the key's value, where got is gotValue
}

// aheadGot is what a read ahead found in a key's first block.
type aheadGot uint8

const (
	gotNothing aheadGot = iota // not searched: the MultiGet reads the block
	gotValue                   // a version of the key: value
	gotDeleted                 // a deletion of the key
	gotPassed                  // no version of the key: on to cands[1:]
)

// found says whether the read ahead found the key's newest version at its
// seq: a value or a deletion.
func (al *aheadLookup) found() bool { return al.got == gotValue || al.got == gotDeleted }

// ReadAhead starts the first round of a MultiGet of keys (for each key no
// memtable may hold, by its key filter, the block of the newest table that
// may hold it, past its bloom filter) and returns without waiting:
//
//   - a block the block cache holds is pinned and searched at once, and
//     the key's value copied out (bufpool.Pool.PinEachResident): its
//     MultiGet looks in the memtables again and, where the key was not
//     written meanwhile, takes that value without reading the block or
//     holding its frame in between;
//   - a block the cache lacks is read past it, up to 4 MiB, into memory of
//     the ReadAhead's own: running ahead takes no frame from the cache,
//     however far ahead it runs; only a MultiGet given the ReadAhead (or
//     one that joins its reads) uses the block. Done puts the blocks in the
//     cache (bufpool.Pool.Insert), as a load would have, marked checked
//     where a lookup checked them — those the MultiGet had no use for (its
//     keys written since) too, so that no later read reads them again.
//
// The keys past that are left to the MultiGet, as are those whose first
// block failed its check or held a version spilling into the next. The
// reads go to the engine with ioengine.Engine.Start: on an inline io_uring
// engine, submitted from the caller's thread, with no goroutine or thread
// waiting for them. Until Done the ReadAhead holds the tables it reads (a
// flush or compaction meanwhile does not remove them); Close waits for its
// reads. Call Done once the MultiGet is made, or if it will not be.
func (db *DB) ReadAhead(keys [][]byte) *ReadAhead { return db.ReadAheadInto(nil, keys) }

// ReadAheadInto is ReadAhead copying the values it finds into values (nil:
// memory of their own), where the MultiGet given it takes them from: give
// that MultiGet the same buffer (ReadOptions.Values), and Reset it only
// once the MultiGet's values are no longer needed.
func (db *DB) ReadAheadInto(values *ValueBuffer, keys [][]byte) *ReadAhead {
	ra := &ReadAhead{}
	if db.pool == nil || db.eng.Backend() == ioengine.BackendSyscall || len(keys) == 0 {
		return ra
	}
	// Its seq is held as a snapshot's from before the read set is taken:
	// a compaction begun after that keeps every version above it.
	db.mu.Lock()
	seq := db.visible.Load()
	db.aheadSnaps.add(seq)
	db.mu.Unlock()
	ra.db, ra.seq, ra.held = db, seq, true
	rs, err := db.acquireAt(seq)
	if err != nil {
		ra.release()
		return ra // the MultiGet reports it
	}
	ra.mems = append(make([]*memTable, 0, len(rs.mems)), rs.mems...)
	for _, m := range ra.mems {
		m.ref()
	}
	// The reads past the cache hold the read set until they are waited
	// for: its last release would close their tables, and a table's close
	// waits for its reads in flight, which on an inline engine only a
	// waiter drives.
	defer func() {
		if ra.own == nil || ra.own.dc == nil {
			db.release(rs)
		}
	}()
	ra.v = rs.v
	// seen maps each distinct block read past the cache to where it is
	// read: by this read ahead or by one it joins.
	sc := aheadScratches.Get().(*aheadScratch)
	ra.scratch = sc
	seen := sc.seen
	var directBytes uint64
	arena := sc.arena[:0]     // the copies of the keys
	backing := sc.backing[:0] // every key's candidates, cut into looks' at the end
	bounds := sc.bounds[:0]
	ra.looks, ra.keys = sc.looks[:0], sc.keys[:0]
	defer func() { sc.arena, sc.backing, sc.bounds, sc.looks, sc.keys = arena, backing, bounds, ra.looks, ra.keys }()
	// First the tables whose range holds each key, with the lines of their
	// filters on the way (appendInRange); then, key by key, the filters
	// and the first block: the batch's filter misses overlap. A key whose
	// tables' metadata fails to load, and the keys after it, are left to
	// the MultiGet, which reports it.
	ranges, probe, pinned, frames := sc.ranges[:0], sc.probe[:0], sc.pinned[:0], sc.frames[:0]
	defer func() { sc.ranges, sc.probe, sc.pinned, sc.frames = ranges, probe, pinned, frames }()
	for _, k := range keys {
		r := aheadRange{lo: len(backing), hi: len(backing)}
		if len(k) <= sstable.MaxKeyLen {
			if !memMayContain(rs.mems, k) {
				var err error
				if backing, r.hash, err = db.appendInRange(backing, rs.v, k); err != nil {
					clear(backing[r.lo:])
					backing = backing[:r.lo]
					break
				}
				r.looked, r.hi = true, len(backing)
			}
		}
		ranges = append(ranges, r)
	}
	for i, k := range keys[:len(ranges)] {
		r := ranges[i]
		al := aheadLookup{looked: r.looked}
		lo, hi := r.lo, r.hi
		if hi > lo {
			kept, err := db.filterCandidates(backing[lo:hi], r.hash)
			if err != nil {
				break
			}
			hi = lo + len(kept)
		}
		if hi > lo {
			first, err := db.blockFor(backing[lo], k)
			if err != nil {
				break
			}
			al.first = first
			if !first.skip {
				probe = append(probe, bufpool.Span{File: first.t.fid, Off: int64(first.h.Offset), Len: int64(first.h.Len)})
			}
		}
		at := len(arena)
		arena = append(arena, k...)
		ra.keys = append(ra.keys, arena[at:len(arena):len(arena)])
		ra.looks = append(ra.looks, al)
		bounds = append(bounds, [2]int{lo, hi})
	}
	// Then the first blocks: those the cache holds are searched now,
	// pinned only meanwhile; those it lacks are read past it.
	frames, pinned = db.pool.PinEachResident(probe, frames, pinned)
	defer func() {
		for _, f := range frames {
			f.Unpin()
		}
	}()
	va := valueArena{left: len(probe), vb: values}
	nth, fi := 0, 0 // pinned[nth] is the next first block's; its frames from frames[fi]
	for i := range ra.looks {
		al := &ra.looks[i]
		if r := al.first; r.t != nil && !r.skip {
			if pinned[nth] {
				n := blockFrames(r.h)
				// A table none of whose entries is above seq holds for
				// the key what a read at any later seq finds in it.
				if r.t.meta.MaxSeq <= rs.seq {
					al.got, al.value = db.searchAhead(r, frames[fi:fi+n], ra.keys[i], rs.seq, &sc.scratch, &va)
				}
				fi += n
			}
			nth++
		}
	}
	// A block an open read ahead is reading past the cache is taken from
	// it, not read again.
	var own *aheadReads
	joined := 0
	nth = 0
	db.aheadMu.Lock()
looks:
	for i := range ra.looks {
		al := &ra.looks[i]
		r := al.first
		if r.t == nil || r.skip {
			continue
		}
		if nth++; pinned[nth-1] {
			continue
		}
		bk := blockKey{r.t.fid, r.h.Offset}
		ref, ok := seen[bk]
		if !ok {
			ref, ok = db.aheadBlocks[bk]
			if ok {
				joined++
				if !slices.Contains(ra.joined, ref.from) {
					ref.from.refs++
					ra.joined = append(ra.joined, ref.from)
				}
				seen[bk] = ref
			}
		}
		switch {
		case ok:
		case directBytes+r.h.Len <= maxAheadBytes:
			directBytes += r.h.Len
			if own == nil {
				own = newAheadReads(db)
			}
			ref = blockRef{own, len(own.dreads)}
			own.dreads = append(own.dreads, r)
			seen[bk] = ref
		default:
			// This key and the rest are left to the MultiGet.
			clear(ra.keys[i:])
			clear(ra.looks[i:])
			ra.keys, ra.looks, bounds = ra.keys[:i], ra.looks[:i], bounds[:i]
			break looks
		}
		al.read = ref
	}
	db.aheadMu.Unlock()
	if joined > 0 {
		db.stats.readAheadJoined.Add(uint64(joined))
	}
	// Cut the candidate lists only now: appending may have moved backing.
	for i, b := range bounds {
		ra.looks[i].cands = backing[b[0]:b[1]:b[1]]
	}
	if own != nil {
		ra.own = own
		own.start(rs)
	}
	return ra
}

// start starts the reads and, once they are in flight, lists them for
// later read aheads to join and for Close to wait for; rs stays held until
// they are waited for. If they cannot be started, the MultiGets read the
// blocks themselves.
func (ar *aheadReads) start(rs readState) {
	db := ar.db
	order := make([]int, len(ar.dreads))
	for j := range order {
		order[j] = j
	}
	dc := db.planDirect(ar.dreads, order)
	if err := dc.start(db.eng); err != nil {
		dc.release() // nothing was submitted
		return
	}
	ar.dc, ar.rs = dc, rs
	db.aheadMu.Lock()
	ar.refs++
	if db.aheads == nil {
		db.aheads, db.aheadBlocks = map[*aheadReads]struct{}{}, map[blockKey]blockRef{}
	}
	db.aheads[ar] = struct{}{}
	for j, r := range ar.dreads {
		db.aheadBlocks[blockKey{r.t.fid, r.h.Offset}] = blockRef{ar, j}
	}
	db.aheadMu.Unlock()
	db.stats.readAheadBlocks.Add(uint64(len(ar.dreads)))
}

// searchAhead looks key up at seq in block r, pinned in the frames fs, and
// says what it found, the value copied into va. A block that fails its
// check, or whose version of the key may go on in the next block, is left
// to the MultiGet (gotNothing), which meets the same and reports it.
func (db *DB) searchAhead(r blockRead, fs []*bufpool.Frame, key []byte, seq uint64, scratch *[]byte, va *valueArena) (aheadGot, []byte) {
	buf, verified, err := pinnedBlock(r, fs, scratch)
	if err != nil {
		return gotNothing, nil
	}
	get := r.rd.GetInBlock
	if verified {
		get = r.rd.GetInVerifiedBlock
	}
	got, err := get(r.bi, buf, key, seq)
	if err != nil || got.Spills {
		return gotNothing, nil
	}
	notePinnedBlock(r, fs, buf, verified)
	switch {
	case !got.Found:
		return gotPassed, nil
	case got.Kind == sstable.KindSet:
		return gotValue, va.keep(got.Value)
	default:
		return gotDeleted, nil
	}
}

// block returns the block ar read as dreads[j] and its checked flag, or
// nil and nil if its read failed or was never started (the MultiGet then
// reads it itself and meets the error, if it lasts). The first call waits
// for the reads.
func (ar *aheadReads) block(j int) ([]byte, *atomic.Bool) {
	if ar.dc == nil {
		return nil, nil
	}
	ar.wait()
	if ar.bufs[j] == nil {
		return nil, nil
	}
	return ar.bufs[j], &ar.checked[j]
}

// wait waits for the reads, unlists them and releases the read set they
// held, once, from whichever goroutine comes first: a MultiGet, a Done, or
// the DB's Close (finishReadAheads).
func (ar *aheadReads) wait() {
	if ar.dc == nil {
		return
	}
	ar.once.Do(func() {
		dc, db := ar.dc, ar.db
		werr := dc.wait(db)
		ar.bufs = slices.Grow(ar.bufs[:0], len(ar.dreads))[:len(ar.dreads)]
		if cap(ar.checked) < len(ar.dreads) {
			ar.checked = make([]atomic.Bool, len(ar.dreads))
		}
		ar.checked = ar.checked[:len(ar.dreads)]
		clear(ar.checked) // another aheadReads' list, maybe
		dc.deliver(ar.dreads, werr, func(j int, buf []byte, _ bool) error {
			ar.bufs[j] = buf
			return nil
		})
		db.aheadMu.Lock()
		delete(db.aheads, ar)
		for _, r := range ar.dreads {
			// Read now: a later read ahead finds the block in the cache
			// once the MultiGet using it has put it there.
			k := blockKey{r.t.fid, r.h.Offset}
			if db.aheadBlocks[k].from == ar {
				delete(db.aheadBlocks, k)
			}
		}
		db.aheadMu.Unlock()
		db.release(ar.rs)
	})
}

// insertRead puts in the cache the blocks ar read that are not there,
// checked where a lookup verified them (aheadReads.checked): those its
// MultiGets looked keys up in, and those they had no use for (a key
// written since, found in a memtable), so that a later read ahead finds
// them there instead of reading them again. A block of a table no longer
// registered with the cache is turned away by it (bufpool.Pool.Insert).
func (ar *aheadReads) insertRead() {
	if ar.dc == nil {
		return
	}
	for j, r := range ar.dreads {
		if buf := ar.bufs[j]; buf != nil {
			ar.db.pool.Insert(bufpool.Span{File: r.t.fid, Off: int64(r.h.Offset), Len: int64(r.h.Len)}, buf, ar.checked[j].Load())
		}
	}
}

// unref drops a read ahead's use of ar; the last one gives its memory
// back. The reads are waited for by then: their first read ahead waits
// before it lets go.
func (ar *aheadReads) unref() {
	if ar.dc == nil {
		return
	}
	db := ar.db
	db.aheadMu.Lock()
	ar.refs--
	last := ar.refs == 0
	db.aheadMu.Unlock()
	if last {
		ar.dc.release()
		// No read ahead names ar any more: its lists serve another.
		clear(ar.dreads)
		clear(ar.bufs)
		aheadLists.Put(&aheadList{ar.dreads[:0], ar.bufs[:0], ar.checked[:0]})
		ar.dreads, ar.bufs, ar.checked = nil, nil, nil
	}
}

// aheadList is the memory of an aheadReads' lists, recycled through
// aheadLists from the last unref of one to the next.
type aheadList struct {
	dreads  []blockRead
	bufs    [][]byte
	checked []atomic.Bool
}

var aheadLists sync.Pool // of *aheadList

// newAheadReads returns an aheadReads of db with no reads, its lists'
// memory another's where one is free.
func newAheadReads(db *DB) *aheadReads {
	ar := &aheadReads{db: db}
	if l, ok := aheadLists.Get().(*aheadList); ok {
		ar.dreads, ar.bufs, ar.checked = l.dreads, l.bufs, l.checked
	}
	return ar
}

// finishReadAheads waits for the reads past the cache of every ReadAhead
// not yet waited for, before Close closes what they read with.
func (db *DB) finishReadAheads() {
	db.aheadMu.Lock()
	open := make([]*aheadReads, 0, len(db.aheads))
	for ar := range db.aheads {
		open = append(open, ar)
	}
	db.aheadMu.Unlock()
	for _, ar := range open {
		ar.wait()
	}
}

// lookFor returns what ra found for key i of a MultiGet reading at v and
// seq, or nil where it has nothing to offer: a key it did not look at, or
// another key at that place. sameVersion: it found it at v, so its tables
// and first block are the MultiGet's. settled: it searched the first block
// (aheadLookup.got), and a read at seq finds there what it found.
func (ra *ReadAhead) lookFor(v *version, seq uint64, i int, key []byte) (_ *aheadLookup, sameVersion, settled bool) {
	if ra == nil || ra.v == nil || i >= len(ra.looks) || !ra.looks[i].looked || !bytes.Equal(ra.keys[i], key) {
		return nil, false, false
	}
	al := &ra.looks[i]
	return al, ra.v == v, al.got != gotNothing && seq >= ra.seq
}

// holdsAcross says whether what ra found for a key at its seq is still
// the key's newest version for a MultiGet that found it in no memtable and
// whose tables that may hold it, past their filters, are cands: none of
// them has an entry above ra's seq. A write of the key since is in a
// memtable or in a table above that seq, since compactions keep the
// versions above a held seq (a deletion among them: not dropped with the
// version ra found).
func (ra *ReadAhead) holdsAcross(cands []*table) bool {
	if !ra.held {
		return false
	}
	for _, t := range cands {
		if t.meta.MaxSeq > ra.seq {
			return false
		}
	}
	return true
}

// sinceFlushed returns the memtables ra looked in that a flush has taken
// out of live (a read set's memtables, newest first), newest first, and
// whether they hold every write made since ra's seq that live does not:
// whether no memtable made after ra's newest has been flushed. When they
// do, a key that neither live nor they hold at a read's seq has no version
// above ra's seq: what ra found for it is still its newest. Nil and false
// where ra looked in no memtable.
func (ra *ReadAhead) sinceFlushed(live []*memTable) ([]*memTable, bool) {
	if ra == nil || len(ra.mems) == 0 || len(live) == 0 {
		return nil, false
	}
	oldestLive := live[len(live)-1].id
	if oldestLive > ra.mems[0].id+1 {
		return nil, false // a memtable ra never saw was flushed
	}
	n := 0
	for n < len(ra.mems) && ra.mems[n].id >= oldestLive {
		n++
	}
	return ra.mems[n:], true
}

// searchRead looks key up at seq, a read's at or after ra's, in the first
// block ra read past the cache for it (al, ra's lookup of key), and
// returns what it found there, if it found the key's version: with no
// write of the key since ra (sinceFlushed), that is its newest, whatever
// became of the block's table meanwhile — the block is ra's memory until
// Done, and looking it up needs only its table's Reader. A block whose read
// failed, that fails its check or that holds no version of the key gives
// nothing: the MultiGet looks the key up in its own version, and meets and
// reports any damage there.
func (ra *ReadAhead) searchRead(al *aheadLookup, key []byte, seq uint64) (sstable.Lookup, bool) {
	r := al.first
	if seq < ra.seq || al.got != gotNothing || al.read.from == nil || r.t == nil || r.t.meta.MaxSeq > seq {
		return sstable.Lookup{}, false
	}
	buf, checked := al.read.from.block(al.read.j)
	if buf == nil {
		return sstable.Lookup{}, false
	}
	get := r.rd.GetInBlock
	verified := checked.Load()
	if verified {
		get = r.rd.GetInVerifiedBlock
	}
	got, err := get(r.bi, buf, key, seq)
	if err != nil {
		return sstable.Lookup{}, false
	}
	if !verified {
		checked.Store(true)
	}
	if !got.Found {
		return sstable.Lookup{}, false
	}
	return got, true
}

// release lets go of the read ahead's seq, once.
func (ra *ReadAhead) release() {
	if !ra.held {
		return
	}
	ra.held = false
	ra.db.mu.Lock()
	ra.db.aheadSnaps.remove(ra.seq)
	ra.db.mu.Unlock()
}

// Wait waits for the reads past the cache (often done by then), its own
// and those it joined. A failed read is not used: the MultiGet reads the
// block again and reports what it meets. Without Wait the reads are waited
// for by whatever needs them first (the MultiGet, Done, Close). Safe on a
// nil ReadAhead and more than once.
func (ra *ReadAhead) Wait() {
	if ra == nil {
		return
	}
	if ra.own != nil {
		ra.own.wait()
	}
	for _, ar := range ra.joined {
		ar.wait()
	}
}

// Done finishes its reads past the cache — by then the MultiGet has
// usually waited for them —, puts them in the cache (unless the MultiGet
// was given ReadOptions.NoFillCache), releases the tables the ReadAhead
// held, and gives back its use of the memory those reads and the ones it joined went
// into, for other reads to reuse: Done must not run while a MultiGet given
// the ReadAhead runs. The values it found are the MultiGet's caller's. Safe
// on a nil ReadAhead, after Close, and more than once.
func (ra *ReadAhead) Done() {
	if ra == nil {
		return
	}
	if own := ra.own; own != nil {
		ra.own = nil
		own.wait() // unused, they may be in flight
		if !ra.noFill {
			own.insertRead()
		}
		own.unref()
	}
	for _, ar := range ra.joined {
		ar.unref()
	}
	ra.release()
	for _, m := range ra.mems {
		m.unref()
	}
	ra.v, ra.keys, ra.looks, ra.joined, ra.mems = nil, nil, nil, nil, nil
	if sc := ra.scratch; sc != nil {
		ra.scratch = nil
		sc.release()
	}
}

// maxAheadBytes bounds the blocks one ReadAhead reads past the cache, the
// memory it holds until Done: a batch whose first blocks come to more
// leaves the keys past that to its MultiGet. A batch just after a
// compaction, which rewrote the tables its keys' blocks were cached from,
// can need several times what one in the steady state does.
const maxAheadBytes = 4 << 20
