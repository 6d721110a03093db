package kv

import (
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// ReadAhead is a read started before it is needed: the data blocks a
// MultiGet of some keys will read first, loading into the block cache while
// the caller does other work. Done releases it.
//
//	ra := db.ReadAhead(nextKeys)   // returns at once; the loads are in flight
//	... process the current batch, commit its writes ...
//	vals, found, err := db.MultiGet(nextKeys)   // finds its blocks cached or loading
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
	done  chan struct{} // closed when the loads have finished
}

// ReadAhead starts loading the blocks a MultiGet of keys would read in its
// first round (for each key not in a memtable, the block of the newest table
// that may hold it, past its bloom filter) and returns without waiting. A
// goroutine pins them through the block cache, whose misses go to the
// engine in one call (on io_uring, one submission, during which it waits
// parked, holding no thread), and unpins them. The blocks are announced to
// the cache (bufpool.Pool.Announce), once for that pin and once for the
// MultiGet's, so that eviction keeps them until the MultiGet pins them or
// Done retracts them; at most half of the cache is announced at once, and
// the keys past that are left to the MultiGet.
//
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
		cands = appendCandidates(cands[:0], rs.v, k)
		if len(cands) == 0 {
			continue
		}
		t := cands[0]
		bi, ok := t.r.BlockIndexFor(k)
		if !ok {
			continue
		}
		h := t.r.Block(bi)
		n := blockFrames(h)
		if n > budget {
			break
		}
		budget -= n
		ra.spans = append(ra.spans, bufpool.Span{File: t.fid, Off: int64(h.Offset), Len: int64(h.Len)})
	}
	if len(ra.spans) == 0 {
		return ra
	}
	ra.pool, ra.done = db.pool, make(chan struct{})
	db.pool.Announce(ra.spans) // the MultiGet's
	db.pool.Announce(ra.spans) // the load's, met by its Pin
	db.stats.readAheadBlocks.Add(uint64(len(ra.spans)))
	go ra.load()
	return ra
}

// load pins the spans (loading the missing blocks) and unpins them. A
// failed load is not cached and the MultiGet meets it again and reports
// it; its announcement is retracted here.
func (ra *ReadAhead) load() {
	defer close(ra.done)
	frames, err := ra.pool.Pin(ra.spans, nil)
	if err != nil {
		ra.pool.Retract(ra.spans)
		return
	}
	for _, f := range frames {
		f.Unpin()
	}
}

// Done waits for the loads, then retracts what the read ahead announced
// and no read pinned since, so the cache may evict it again. It is safe to call on a nil ReadAhead and
// more than once.
func (ra *ReadAhead) Done() {
	if ra == nil || ra.pool == nil {
		return
	}
	<-ra.done
	ra.pool.Retract(ra.spans)
	ra.pool, ra.spans = nil, nil
}
