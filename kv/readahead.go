package kv

import (
	"bytes"
	"sync"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// ReadAhead is a read started before it is needed: the data blocks a
// MultiGet of some keys will read first, in flight while the caller does
// other work. Done finishes it and releases what it announced.
//
//	ra := db.ReadAhead(nextKeys)   // submitted; returns at once
//	... process the current batch, commit its writes ...
//	vals, found, err := db.MultiGetWith(kv.ReadOptions{ReadAhead: ra}, nextKeys)
//	ra.Done()
//
// It changes what is cached, never what a read returns: the MultiGet reads
// the store as of its own call, so writes made between ReadAhead and
// MultiGet are seen (a key written meanwhile is found in the memtable; a
// block read ahead that a flush or compaction made stale is simply not
// used). A MultiGet given the ReadAhead (ReadOptions.ReadAhead) takes the
// tables and blocks it chose for each key instead of looking again, while
// the store's tables are those it saw. A ReadAhead belongs to one
// goroutine.
type ReadAhead struct {
	db     *DB
	pool   *bufpool.Pool
	spans  []bufpool.Span
	frames int // the frames spans cover, counted in db.aheadFrames until Done
	call   *bufpool.LoadCall

	// v is the version whose tables looks refers to; compared by pointer
	// only (a MultiGet uses looks only while it holds v itself).
	v *version
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
	probe   []bufpool.Span // the keys' first blocks, asked of the cache
	present []bool         // the cache's answers
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
	sc.probe, sc.present = sc.probe[:0], sc.present[:0]
	aheadScratches.Put(sc)
}

// aheadLookup is what ReadAhead found for one key.
type aheadLookup struct {
	looked bool      // false: the key was in a memtable, or over the size limit
	cands  []*table  // the tables that may hold the key, newest first
	first  blockRead // the block of cands[0] (when cands is not empty)
	dread  int       // first was read past the cache as dreads[dread-1]; 0: through it
}

// ReadAhead starts reading the blocks a MultiGet of keys would read in its
// first round (for each key not in a memtable, the block of the newest table
// that may hold it, past its bloom filter) and returns without waiting:
//
//   - a block the block cache holds is announced there
//     (bufpool.Pool.Announce), so that eviction keeps it until the MultiGet
//     pins it or Done retracts it, while the cache has frames no other read
//     ahead announced; past that it is left to the cache's policy;
//   - a block the cache lacks is read past it, up to 1 MiB, into memory of
//     the ReadAhead's own: running ahead takes no frame from the cache,
//     however far ahead it runs. A MultiGet given the ReadAhead uses the
//     block and, once it has checked it, puts it in the cache
//     (bufpool.Pool.Insert), as its own load would have; only such a
//     MultiGet uses it.
//
// The keys past that are left to the MultiGet. The reads go to the engine
// with ioengine.Engine.Start: on an inline io_uring engine, submitted from
// the caller's thread, with no goroutine or thread waiting for them. Until
// Done the ReadAhead holds the tables it reads (a flush or compaction
// meanwhile does not remove them); Close waits for its reads. Call Done once
// the MultiGet is made, or if it will not be.
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
	free := db.pool.Frames() - int(db.aheadFrames.Load())
	budget := free
	// seen maps each distinct block to where it is read: 0 announced in
	// the cache, j+1 past it as ra.dreads[j]; a cached block no frame was
	// left to announce is not in it.
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
	ranges, probe, present := sc.ranges[:0], sc.probe[:0], sc.present[:0]
	defer func() { sc.ranges, sc.probe, sc.present = ranges, probe, present }()
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
	// Then, key by key, where each first block is read: one the cache
	// holds is announced there while frames are free; one it lacks is read
	// past it.
	present = db.pool.Present(probe, present)
	nth := 0 // present[nth] is the next first block's
looks:
	for i := range ra.looks {
		al := &ra.looks[i]
		if al.first.t == nil || al.first.skip {
			continue
		}
		r := al.first
		bk := blockKey{r.t.fid, r.h.Offset}
		inCache := present[nth]
		nth++
		where, ok := seen[bk]
		switch {
		case ok:
		case inCache && blockFrames(r.h) <= budget:
			budget -= blockFrames(r.h)
			seen[bk] = 0
			ra.spans = append(ra.spans, bufpool.Span{File: r.t.fid, Off: int64(r.h.Offset), Len: int64(r.h.Len)})
		case inCache:
			// No frame left to announce it: left to the cache's policy.
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
	if len(ra.spans) == 0 {
		return ra
	}
	ra.frames = free - budget
	db.aheadFrames.Add(int64(ra.frames))
	db.pool.Announce(ra.spans)
	// Announced, they stay; one evicted since Present looked is loaded
	// again (LoadStart skips the rest).
	ra.pool, ra.call = db.pool, db.pool.LoadStart(ra.spans)
	return ra
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

// pinnedBlock marks, in a ReadAhead's seen, a block it announced in the
// cache that a Pin of the MultiGet given it has since met.
const pinnedBlock = -1

// notePinned records the blocks of reads that the MultiGet given ra pinned
// (blockRead.pinned): their Pin met their announcements.
func (ra *ReadAhead) notePinned(reads []blockRead) {
	if ra == nil || ra.pool == nil {
		return
	}
	seen := ra.scratch.seen
	for _, r := range reads {
		if !r.pinned {
			continue
		}
		k := blockKey{r.t.fid, r.h.Offset}
		if where, ok := seen[k]; ok && where == 0 { // loaded through the cache
			seen[k] = pinnedBlock
		}
	}
}

// lookFor returns what ra found for key i of a MultiGet, and whether it
// found it at the MultiGet's version v, or nil where it has nothing to
// offer: a key it did not look at, or another key at that place.
func (ra *ReadAhead) lookFor(v *version, i int, key []byte) (_ *aheadLookup, sameVersion bool) {
	if ra == nil || ra.v == nil || i >= len(ra.looks) || !ra.looks[i].looked || !bytes.Equal(ra.keys[i], key) {
		return nil, false
	}
	return &ra.looks[i], ra.v == v
}

// Wait waits for the loads (often done by then). A failed load is not
// cached: the MultiGet meets it again and reports it. Without Wait the
// loads are finished by whatever needs their blocks first (the MultiGet's
// pin, an eviction, Done). Safe on a nil ReadAhead and more than once.
func (ra *ReadAhead) Wait() {
	if ra != nil && ra.call != nil {
		ra.call.Wait()
	}
}

// Done finishes the reads — by then the MultiGet has usually finished them,
// so this waits only for blocks no read needed —, retracts what the read
// ahead announced and the MultiGet given it did not pin (the pin met
// those; retracting them again would take another read ahead's
// announcement of the same block), so the cache may evict it again, and
// releases the tables it held. The blocks read past the cache
// go back for other reads to reuse: Done must not run while a MultiGet
// given the ReadAhead runs. Safe on a nil ReadAhead, after Close, and more
// than once.
func (ra *ReadAhead) Done() {
	if ra == nil {
		return
	}
	if ra.pool != nil {
		ra.call.Wait()
		// The MultiGet's Pins met the announcements of the blocks it read;
		// retracting those again would take another read ahead's.
		open := ra.spans[:0]
		for _, s := range ra.spans {
			if ra.scratch.seen[blockKey{s.File, uint64(s.Off)}] != pinnedBlock {
				open = append(open, s)
			}
		}
		ra.pool.Retract(open)
		ra.db.aheadFrames.Add(-int64(ra.frames))
	}
	ra.waitDirect() // the reads past the cache, unused, may be in flight
	if ra.direct != nil {
		// The MultiGet that used dbufs is done: their memory is free.
		ra.direct.release()
	}
	// direct and once stay: a Close that listed ra may still call
	// waitDirect, which once makes a no-op.
	ra.pool, ra.spans, ra.call, ra.v, ra.keys, ra.looks, ra.dreads, ra.dbufs = nil, nil, nil, nil, nil, nil, nil, nil
	if sc := ra.scratch; sc != nil {
		ra.scratch = nil
		sc.release()
	}
}
