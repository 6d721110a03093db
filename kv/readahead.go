package kv

import (
	"bytes"

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
	pool  *bufpool.Pool
	spans []bufpool.Span
	call  *bufpool.LoadCall

	// v is the version whose tables looks refers to; compared by pointer
	// only (a MultiGet uses looks only while it holds v itself).
	v *version
	// keys are copies of the first keys of the call, as many as the read
	// ahead looked at; looks[i] is what it found for keys[i].
	keys  [][]byte
	looks []aheadLookup
}

// aheadLookup is what ReadAhead found for one key.
type aheadLookup struct {
	looked bool      // false: the key was in a memtable, or over the size limit
	cands  []*table  // the tables that may hold the key, newest first
	first  blockRead // the block of cands[0] (when cands is not empty)
}

// ReadAhead starts reading the blocks a MultiGet of keys would read in its
// first round (for each key not in a memtable, the block of the newest table
// that may hold it, past its bloom filter) and returns without waiting: it
// loads them into the block cache with bufpool.Pool.LoadStart, whose reads
// go to the engine with ioengine.Engine.Start — on an inline io_uring
// engine, submitted from the caller's thread, with no goroutine or thread
// waiting for them. The blocks are announced to the cache
// (bufpool.Pool.Announce) so that eviction keeps them until the MultiGet
// pins them or Done retracts them.
//
// It reads ahead what the MultiGet's first Pin takes: the blocks of the
// first keys, each distinct block once, as many as the cache has frames; the
// keys past that are left to the MultiGet. The MultiGet's first submission
// then finds every block it needs loaded or in flight, and does not wait for
// the device again for them.
func (db *DB) ReadAhead(keys [][]byte) *ReadAhead {
	ra := &ReadAhead{}
	if db.pool == nil || db.eng.Backend() == ioengine.BackendSyscall || len(keys) == 0 {
		return ra
	}
	rs, err := db.acquire(ReadOptions{})
	if err != nil {
		return ra // the MultiGet reports it
	}
	defer db.release(rs)
	ra.v = rs.v
	budget := db.pool.Frames()
	type blockKey struct {
		fid bufpool.FileID
		off uint64
	}
	seen := make(map[blockKey]struct{}, min(len(keys), budget))
	var arena []byte     // the copies of the keys
	var backing []*table // every key's candidates, cut into looks' at the end
	bounds := make([][2]int, 0, len(keys))
	ra.looks = make([]aheadLookup, 0, len(keys))
	for _, k := range keys {
		var al aheadLookup
		lo := len(backing)
		if len(k) <= sstable.MaxKeyLen {
			if _, _, ok := memGet(rs.mems, k, rs.seq); !ok {
				al.looked = true
				backing = appendCandidates(backing, rs.v, k)
			}
		}
		if len(backing) > lo {
			al.first = blockFor(backing[lo], k)
			if r := al.first; !r.skip {
				bk := blockKey{r.t.fid, r.h.Offset}
				if _, ok := seen[bk]; !ok {
					n := blockFrames(r.h)
					if n > budget {
						// The MultiGet's first Pin ends here too: this key
						// and the rest are left to the MultiGet.
						backing = backing[:lo]
						break
					}
					budget -= n
					seen[bk] = struct{}{}
					ra.spans = append(ra.spans, bufpool.Span{File: r.t.fid, Off: int64(r.h.Offset), Len: int64(r.h.Len)})
				}
			}
		}
		at := len(arena)
		arena = append(arena, k...)
		ra.keys = append(ra.keys, arena[at:len(arena):len(arena)])
		ra.looks = append(ra.looks, al)
		bounds = append(bounds, [2]int{lo, len(backing)})
	}
	// Cut the candidate lists only now: appending may have moved backing.
	for i, b := range bounds {
		ra.looks[i].cands = backing[b[0]:b[1]:b[1]]
	}
	if len(ra.spans) == 0 {
		return ra
	}
	db.pool.Announce(ra.spans)
	ra.pool, ra.call = db.pool, db.pool.LoadStart(ra.spans)
	db.stats.readAheadBlocks.Add(uint64(len(ra.spans)))
	return ra
}

// lookFor returns what ra found for key i of a MultiGet at version v, or
// nil where it has nothing to offer: another version, a key it did not
// look at, or another key at that place.
func (ra *ReadAhead) lookFor(v *version, i int, key []byte) *aheadLookup {
	if ra == nil || ra.v != v || i >= len(ra.looks) || !ra.looks[i].looked || !bytes.Equal(ra.keys[i], key) {
		return nil
	}
	return &ra.looks[i]
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

// Done finishes the loads — by then the MultiGet's pins have usually
// finished them, so this waits only for a block no read needed — and
// retracts what the read ahead announced and no read pinned since, so the
// cache may evict it again. Safe on a nil ReadAhead and more than once.
func (ra *ReadAhead) Done() {
	if ra == nil {
		return
	}
	if ra.pool != nil {
		ra.call.Wait()
		ra.pool.Retract(ra.spans)
	}
	*ra = ReadAhead{}
}
