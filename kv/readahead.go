package kv

import (
	"bytes"
	"sync"

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
// MultiGet are seen (a key written meanwhile is found in the memtable; what
// the read ahead found in a table that a flush or compaction has since
// replaced is not used). A MultiGet given the ReadAhead
// (ReadOptions.ReadAhead) takes what it found for each key instead of
// looking again, while the store's tables are those it saw. A ReadAhead
// belongs to one goroutine.
type ReadAhead struct {
	db *DB

	// v is the version whose tables looks refers to; compared by pointer
	// only (a MultiGet uses looks only while it holds v itself). seq is
	// the sequence number it read at.
	v   *version
	seq uint64
	// keys are copies of the first keys of the call, as many as the read
	// ahead looked at; looks[i] is what it found for keys[i].
	keys  [][]byte
	looks []aheadLookup
	// scratch backs keys, looks and their candidates until Done.
	scratch *aheadScratch

	// The blocks read past the cache (the MultiGet would read them so):
	// dreads[j]'s bytes are dbufs[j] once direct's reads are waited for
	// (nil where a read failed).
	dreads []blockRead
	direct *directCall
	dbufs  [][]byte  // set by once
	rs     readState // held until once has waited for direct's reads
	once   sync.Once
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
	seen    map[blockKey]int
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
// FilterHash. looked: the key was not in a memtable.
type aheadRange struct {
	lo, hi int
	hash   uint64
	looked bool
}

// maxScratchArena bounds the key bytes of a scratch kept for reuse.
const maxScratchArena = 1 << 20

var aheadScratches = sync.Pool{New: func() any { return &aheadScratch{seen: map[blockKey]int{}} }}

// release gives sc back, unless a huge call made it too large to keep.
func (sc *aheadScratch) release() {
	if cap(sc.looks) > maxScratchKeys || cap(sc.arena) > maxScratchArena {
		return
	}
	clear(sc.seen)
	clear(sc.backing[:cap(sc.backing)])
	clear(sc.looks[:cap(sc.looks)])
	clear(sc.keys[:cap(sc.keys)])
	sc.arena, sc.backing, sc.bounds, sc.looks, sc.keys, sc.ranges = sc.arena[:0], sc.backing[:0], sc.bounds[:0], sc.looks[:0], sc.keys[:0], sc.ranges[:0]
	clear(sc.probe[:cap(sc.probe)])
	clear(sc.frames[:cap(sc.frames)])
	sc.probe, sc.pinned, sc.frames = sc.probe[:0], sc.pinned[:0], sc.frames[:0]
	aheadScratches.Put(sc)
}

// aheadLookup is what ReadAhead found for one key.
type aheadLookup struct {
	looked bool      // false: the key was in a memtable, or over the size limit
	cands  []*table  // the tables that may hold the key, newest first
	first  blockRead // the block of cands[0] (when cands is not empty)
	dread  int       // first was read past the cache as dreads[dread-1]; 0: not
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

// ReadAhead starts the first round of a MultiGet of keys (for each key not
// in a memtable, the block of the newest table that may hold it, past its
// bloom filter) and returns without waiting:
//
//   - a block the block cache holds is pinned and searched at once, and
//     the key's value copied out (bufpool.Pool.PinEachResident): its
//     MultiGet looks in the memtables again and, where the key was not
//     written meanwhile, takes that value without reading the block or
//     holding its frame in between;
//   - a block the cache lacks is read past it, up to 1 MiB, into memory of
//     the ReadAhead's own: running ahead takes no frame from the cache,
//     however far ahead it runs. A MultiGet given the ReadAhead uses the
//     block and, once it has checked it, puts it in the cache
//     (bufpool.Pool.Insert), as its own load would have; only such a
//     MultiGet uses it.
//
// The keys past that are left to the MultiGet, as are those whose first
// block failed its check or held a version spilling into the next. The
// reads go to the engine with ioengine.Engine.Start: on an inline io_uring
// engine, submitted from the caller's thread, with no goroutine or thread
// waiting for them. Until Done the ReadAhead holds the tables it reads (a
// flush or compaction meanwhile does not remove them); Close waits for its
// reads. Call Done once the MultiGet is made, or if it will not be.
func (db *DB) ReadAhead(keys [][]byte) *ReadAhead {
	ra := &ReadAhead{}
	if db.pool == nil || db.eng.Backend() == ioengine.BackendSyscall || len(keys) == 0 {
		return ra
	}
	rs, err := db.acquire(ReadOptions{})
	if err != nil {
		return ra // the MultiGet reports it
	}
	// The reads past the cache hold the read set until they are waited
	// for: its last release would close their tables, and a table's close
	// waits for its reads in flight, which on an inline engine only a
	// waiter drives.
	defer func() {
		if ra.direct == nil {
			db.release(rs)
		}
	}()
	ra.db, ra.v, ra.rs = db, rs.v, rs
	ra.seq = rs.seq
	// seen maps each distinct block read past the cache to j+1, its place
	// in ra.dreads.
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
			if _, _, ok := memGet(rs.mems, k, rs.seq); !ok {
				var err error
				if backing, r.hash, err = db.appendInRange(backing, rs.v, k); err != nil {
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
	// Then, key by key, the first blocks: one the cache holds is searched
	// now, pinned only meanwhile; one it lacks is read past it.
	frames, pinned = db.pool.PinEachResident(probe, frames, pinned)
	defer func() {
		for _, f := range frames {
			f.Unpin()
		}
	}()
	va := valueArena{left: len(probe)}
	nth, fi := 0, 0 // pinned[nth] is the next first block's; its frames from frames[fi]
looks:
	for i := range ra.looks {
		al := &ra.looks[i]
		if al.first.t == nil || al.first.skip {
			continue
		}
		r := al.first
		if pinned[nth] {
			n := blockFrames(r.h)
			// A table none of whose entries is above seq holds for the
			// key what a read at any later seq finds in it.
			if r.t.meta.MaxSeq <= rs.seq {
				al.got, al.value = db.searchAhead(r, frames[fi:fi+n], ra.keys[i], rs.seq, &sc.scratch, &va)
			}
			nth, fi = nth+1, fi+n
			continue
		}
		nth++
		bk := blockKey{r.t.fid, r.h.Offset}
		where, ok := seen[bk]
		switch {
		case ok:
		case directBytes+r.h.Len <= maxOverflowBytes:
			directBytes += r.h.Len
			ra.dreads = append(ra.dreads, r)
			where = len(ra.dreads)
			seen[bk] = where
		default:
			// This key and the rest are left to the MultiGet.
			ra.keys, ra.looks, bounds = ra.keys[:i], ra.looks[:i], bounds[:i]
			break looks
		}
		al.dread = where
	}
	// Cut the candidate lists only now: appending may have moved backing.
	for i, b := range bounds {
		ra.looks[i].cands = backing[b[0]:b[1]:b[1]]
	}
	if len(ra.dreads) > 0 {
		order := make([]int, len(ra.dreads))
		for j := range order {
			order[j] = j
		}
		dc := db.planDirect(ra.dreads, order)
		if err := dc.start(db.eng); err != nil {
			ra.dreads = nil // the MultiGet reads them itself
		} else {
			ra.direct = dc
			db.aheadMu.Lock()
			if db.aheads == nil {
				db.aheads = map[*ReadAhead]struct{}{}
			}
			db.aheads[ra] = struct{}{}
			db.aheadMu.Unlock()
			db.stats.readAheadBlocks.Add(uint64(len(ra.dreads)))
		}
	}
	return ra
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

// directBuf returns the block ra read past the cache as dreads[j], or nil
// if its read failed (the MultiGet then reads it itself and meets the
// error, if it lasts). The first call waits for those reads.
func (ra *ReadAhead) directBuf(j int) []byte {
	if ra.direct == nil {
		return nil
	}
	ra.waitDirect()
	return ra.dbufs[j]
}

// waitDirect waits for the reads past the cache and releases the read set
// they held, once, from whichever goroutine comes first: the owner's
// MultiGet or Done, or the DB's Close (finishReadAheads).
func (ra *ReadAhead) waitDirect() {
	if ra.direct == nil {
		return
	}
	ra.once.Do(func() {
		dc, db := ra.direct, ra.db
		werr := dc.wait(db)
		ra.dbufs = make([][]byte, len(ra.dreads))
		dc.deliver(ra.dreads, werr, func(j int, buf []byte, _ bool) error {
			ra.dbufs[j] = buf
			return nil
		})
		db.aheadMu.Lock()
		delete(db.aheads, ra)
		db.aheadMu.Unlock()
		db.release(ra.rs)
	})
}

// finishReadAheads waits for the reads past the cache of every ReadAhead
// not yet waited for, before Close closes what they read with.
func (db *DB) finishReadAheads() {
	db.aheadMu.Lock()
	open := make([]*ReadAhead, 0, len(db.aheads))
	for ra := range db.aheads {
		open = append(open, ra)
	}
	db.aheadMu.Unlock()
	for _, ra := range open {
		ra.waitDirect()
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

// Wait waits for the reads past the cache (often done by then). A failed
// read is not used: the MultiGet reads the block again and reports what it
// meets. Without Wait the reads are waited for by whatever needs them
// first (the MultiGet, Done, Close). Safe on a nil ReadAhead and more than
// once.
func (ra *ReadAhead) Wait() {
	if ra != nil {
		ra.waitDirect()
	}
}

// Done finishes the reads past the cache — by then the MultiGet has
// usually waited for them — and releases the tables the ReadAhead held and
// the memory those reads went into, for other reads to reuse: Done must not
// run while a MultiGet given the ReadAhead runs. The values it found are
// the MultiGet's caller's. Safe on a nil ReadAhead, after Close, and more
// than once.
func (ra *ReadAhead) Done() {
	if ra == nil {
		return
	}
	ra.waitDirect() // the reads past the cache, unused, may be in flight
	if ra.direct != nil {
		// The MultiGet that used dbufs is done: their memory is free.
		ra.direct.release()
	}
	// direct and once stay: a Close that listed ra may still call
	// waitDirect, which once makes a no-op.
	ra.v, ra.keys, ra.looks, ra.dreads, ra.dbufs = nil, nil, nil, nil, nil
	if sc := ra.scratch; sc != nil {
		ra.scratch = nil
		sc.release()
	}
}
