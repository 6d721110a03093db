package kv

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/kv/sstable"
)

// metaCache bounds the memory of the tables' decoded metadata (each SST's
// block index and bloom filter, an sstable.Reader): a table's Reader is
// loaded from its file on the first read that needs it and dropped again,
// CLOCK order, when the Readers held pass Options.TableMetaCacheSize. Its
// budget grows with the data otherwise (about 1.2 bytes of filter per key
// and the last key plus ~20 bytes of index per 4 KiB data block), while a store that only
// writes, as a restore does, needs no table's metadata but its compaction
// inputs'. So a new table of a flush or compaction keeps the Reader its
// writer checked only when a read has needed a table's metadata since the
// last flush or compaction (readSince): in a store that serves reads its
// first reads would load it again, on the reader's path.
//
// A dropped Reader is only unlinked from its table: a read that holds it
// goes on with it (the Go heap keeps it until the last user is done), so
// the budget bounds what the cache holds; what running reads and
// compactions hold besides is theirs, for their duration. A reload reads
// and checks the sections again: damage found then is the same
// *sstable.CorruptError, naming file and offset, Open would have reported.
type metaCache struct {
	budget int64
	mu     sync.Mutex
	used   int64    // guarded by mu: MetaBytes of the Readers in ring
	ring   []*table // guarded by mu: the tables whose Reader is held
	hand   int      // guarded by mu: the CLOCK hand, an index into ring
	loads  atomic.Uint64
	evicts atomic.Uint64
	// readSince is set by every read that needs a table's metadata
	// (DB.reader; a compaction's walk does not set it) and taken by each
	// flush and compaction (holdNewTables).
	readSince atomic.Bool
}

// tableMeta is a table's slot in the metaCache.
type tableMeta struct {
	rd     atomic.Pointer[sstable.Reader] // nil when not held
	used   atomic.Bool                    // read since the CLOCK hand last passed
	loadMu sync.Mutex                     // one load at a time
	bytes  int64                          // guarded by metaCache.mu: rd's MetaBytes while in ring
	inRing bool                           // guarded by metaCache.mu
}

// reader returns t's metadata, loading it (and dropping others' past the
// budget) if it is not held.
func (db *DB) reader(t *table) (*sstable.Reader, error) {
	if !db.meta.readSince.Load() {
		db.meta.readSince.Store(true)
	}
	if r := t.m.rd.Load(); r != nil {
		if !t.m.used.Load() {
			t.m.used.Store(true)
		}
		return r, nil
	}
	t.m.loadMu.Lock()
	defer t.m.loadMu.Unlock()
	if r := t.m.rd.Load(); r != nil {
		return r, nil
	}
	r, err := t.loadReader()
	if err != nil {
		return nil, err
	}
	db.meta.loads.Add(1)
	db.meta.hold(t, r)
	return r, nil
}

// holdNewTables reports whether the tables a flush or compaction is about
// to open keep their checked metadata: whether a read has needed a table's
// metadata since the last flush or compaction asked.
func (c *metaCache) holdNewTables() bool { return c.readSince.Swap(false) }

// transientReader returns t's metadata for a walk that needs it once (a
// compaction's input, which the compaction removes): the held Reader if
// there is one, else one loaded for the caller alone, not held.
func (db *DB) transientReader(t *table) (*sstable.Reader, error) {
	if r := t.m.rd.Load(); r != nil {
		return r, nil
	}
	db.meta.loads.Add(1)
	return t.loadReader()
}

// loadReader reads and checks t's metadata sections and that they describe
// the file the manifest names.
func (t *table) loadReader() (*sstable.Reader, error) {
	r, err := sstable.NewReader(t.mf, int64(t.meta.Size), t.path)
	if t.dropMeta {
		dropPageCache(int(t.mf.Fd())) // decoded now; data blocks are read with O_DIRECT
	}
	if err != nil {
		return nil, fmt.Errorf("kv: table %s: %w", t.path, err)
	}
	if p := r.Properties(); p.Entries != t.meta.Entries || p.MaxSeq != t.meta.MaxSeq {
		return nil, fmt.Errorf("kv: %w", &ringstore.CorruptError{Path: t.path, Offset: -1,
			What: fmt.Sprintf("the table is not the file the manifest describes: %d entries up to seq %d, the manifest says %d up to %d",
				p.Entries, p.MaxSeq, t.meta.Entries, t.meta.MaxSeq)})
	}
	return r, nil
}

// hold publishes r as t's Reader and drops other tables' Readers, least
// recently read first, until the held bytes fit the budget (t's own is
// kept even when it alone is over it).
func (c *metaCache) hold(t *table, r *sstable.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t.m.bytes = r.MetaBytes()
	t.m.inRing = true
	t.m.used.Store(true)
	t.m.rd.Store(r)
	c.ring = append(c.ring, t)
	c.used += t.m.bytes
	for c.used > c.budget && len(c.ring) > 1 {
		if c.hand >= len(c.ring) {
			c.hand = 0
		}
		v := c.ring[c.hand]
		if v == t || v.m.used.Swap(false) {
			c.hand++
			continue
		}
		c.removeAtLocked(c.hand)
		c.evicts.Add(1)
	}
}

// drop forgets t's Reader (at the table's close).
func (c *metaCache) drop(t *table) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.m.inRing {
		return
	}
	for i, v := range c.ring {
		if v == t {
			c.removeAtLocked(i)
			return
		}
	}
}

// removeAtLocked unlinks ring[i]'s Reader; the last table of the ring takes
// its place.
func (c *metaCache) removeAtLocked(i int) {
	t := c.ring[i]
	t.m.rd.Store(nil)
	t.m.inRing = false
	c.used -= t.m.bytes
	t.m.bytes = 0
	last := len(c.ring) - 1
	c.ring[i] = c.ring[last]
	c.ring[last] = nil
	c.ring = c.ring[:last]
}

// heldBytes returns the metadata bytes the cache holds.
func (c *metaCache) heldBytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.used
}
