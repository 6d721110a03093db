package kv

import (
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// ReadAhead is a read started before it is needed: the data blocks a
// MultiGet of some keys will read first, in flight while the caller does
// other work. Wait waits for them; Done releases what the read ahead
// announced.
//
//	ra := db.ReadAhead(nextKeys)   // submitted; returns at once
//	... process the current batch, commit its writes ...
//	ra.Wait()                      // the loads are done (often already)
//	vals, found, err := db.MultiGet(nextKeys)   // finds its blocks cached
//	ra.Done()
//
// It changes what is cached, never what a read returns: the MultiGet reads
// the store as of its own call, so writes made between ReadAhead and
// MultiGet are seen (a key written meanwhile is found in the memtable; a
// block read ahead that a flush or compaction made stale is simply not
// used). A ReadAhead belongs to one goroutine.
type ReadAhead struct {
	pool  *bufpool.Pool
	spans []bufpool.Span
	call  *bufpool.LoadCall
}

// ReadAhead starts reading the blocks a MultiGet of keys would read in its
// first round (for each key not in a memtable, the block of the newest table
// that may hold it, past its bloom filter) and returns without waiting: it
// loads them into the block cache with bufpool.Pool.LoadStart, whose reads
// go to the engine with ioengine.Engine.Start — on an inline io_uring
// engine, submitted from the caller's thread, with no goroutine or thread
// waiting for them. The blocks are announced to the cache
// (bufpool.Pool.Announce) so that eviction keeps them until the MultiGet
// pins them or Done retracts them. At most half of the cache is read ahead
// at once; the keys past that are left to the MultiGet.
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
	budget := db.pool.Frames() / 2
	var cands []*table
	for _, k := range keys {
		if len(k) > sstable.MaxKeyLen {
			continue
		}
		if _, _, ok := memGet(rs.mems, k, rs.seq); ok {
			continue
		}
		if cands, err = db.appendCandidates(cands[:0], rs.v, k); err != nil {
			break // the MultiGet reports it
		}
		if len(cands) == 0 {
			continue
		}
		r, err := db.blockFor(cands[0], k)
		if err != nil {
			break
		}
		if r.skip {
			continue
		}
		n := blockFrames(r.h)
		if n > budget {
			break
		}
		budget -= n
		ra.spans = append(ra.spans, bufpool.Span{File: r.t.fid, Off: int64(r.h.Offset), Len: int64(r.h.Len)})
	}
	if len(ra.spans) == 0 {
		return ra
	}
	db.pool.Announce(ra.spans)
	ra.pool, ra.call = db.pool, db.pool.LoadStart(ra.spans)
	db.stats.readAheadBlocks.Add(uint64(len(ra.spans)))
	return ra
}

// Wait waits for the loads (often done by then). A failed load is not
// cached: the MultiGet meets it again and reports it. Without Wait the
// loads are finished by whatever needs their blocks first (the MultiGet's
// pin, an eviction). Safe on a nil ReadAhead and more than once.
func (ra *ReadAhead) Wait() {
	if ra != nil && ra.call != nil {
		ra.call.Wait()
	}
}

// Done retracts what the read ahead announced and no read pinned since,
// so the cache may evict it again. Safe on a nil ReadAhead and more than
// once.
func (ra *ReadAhead) Done() {
	if ra == nil || ra.pool == nil {
		return
	}
	ra.pool.Retract(ra.spans)
	ra.pool, ra.spans, ra.call = nil, nil, nil
}
