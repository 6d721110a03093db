package state

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"unsafe"

	"github.com/ringstore/ringstore/kv"
)

// MiniBatch gathers the reads and writes of a batch of events: its reads
// go to kv in one MultiGet (Load), its writes in one kv.Batch (Commit).
// One goroutine at a time.
type MiniBatch struct {
	b *Backend
	// seen holds what the batch knows of a key, one entry a key: wanted
	// (pending until Load reads it), read by Load or a Get, or written;
	// its stored value (nil: absent). wantKeys and wantEntries list the
	// keys wanted since the last Load, each once, in the order wanted, and
	// their entries.
	seen        map[string]*entry
	wantKeys    [][]byte
	wantEntries []*entry
	// order is the written keys in the order of their first write.
	order []string
	now   int64
	ahead *kv.ReadAhead // the reads ReadAhead started, released by Load or Reset
	batch kv.Batch      // Commit's, reused
	// values holds the stored values ReadAhead and Load copied out of kv
	// (seen's), until Reset: what Get returns is valid until then.
	values kv.ValueBuffer
	// entries backs seen's entries, until Reset (newEntry).
	entries []entry
}

// maxReusedBatch bounds the batch memory a MiniBatch keeps between commits.
const maxReusedBatch = 1 << 20

type entry struct {
	stored  []byte // the stored value (header + payload), nil when absent
	written bool   // Commit writes it (stored nil: a delete)
	pending bool   // wanted, not yet read or written: stored means nothing
}

// newEntry returns a zero entry of the batch's, valid until Reset. seen
// points into entries: an entry that does not fit starts another slice, and
// the earlier one lives on with its pointers.
func (mb *MiniBatch) newEntry() *entry {
	if len(mb.entries) == cap(mb.entries) {
		mb.entries = make([]entry, 0, max(minEntries, min(2*cap(mb.entries), maxReusedKeys)))
	}
	mb.entries = mb.entries[:len(mb.entries)+1]
	return &mb.entries[len(mb.entries)-1]
}

// minEntries is the fewest entries a batch allocates at once.
const minEntries = 64

// NewMiniBatch returns an empty batch of the backend.
func (b *Backend) NewMiniBatch() *MiniBatch {
	mb := &MiniBatch{b: b}
	mb.Reset()
	return mb
}

// maxReusedKeys bounds the keys a MiniBatch's maps may have held and still
// be emptied for the next batch rather than made anew.
const maxReusedKeys = 1 << 16

// Reset empties the batch, dropping what it has not committed.
func (mb *MiniBatch) Reset() {
	mb.ahead.Done()
	mb.ahead = nil
	mb.values.Reset()
	clear(mb.entries)
	mb.entries = mb.entries[:0]
	if cap(mb.entries) > maxReusedKeys {
		mb.entries = nil
	}
	if mb.seen == nil || len(mb.seen) > maxReusedKeys {
		mb.seen = map[string]*entry{}
	} else {
		clear(mb.seen)
	}
	clear(mb.wantKeys)
	clear(mb.wantEntries)
	clear(mb.order)
	mb.wantKeys, mb.wantEntries, mb.order = mb.wantKeys[:0], mb.wantEntries[:0], mb.order[:0]
	mb.now = mb.b.opts.Clock().UnixNano()
}

// wantKey declares a read of the stored key k: a key the batch knows
// already (wanted, read or written) is not read again. k is the batch's
// from then on, never modified (every caller builds it for the call): seen
// keys by a string of its bytes, not a copy.
func (mb *MiniBatch) wantKey(k []byte) {
	mb.b.wanted.Add(1)
	if mb.seen[string(k)] != nil {
		mb.b.deduped.Add(1)
		return
	}
	e := mb.newEntry()
	e.pending = true
	mb.seen[unsafe.String(unsafe.SliceData(k), len(k))] = e
	mb.wantKeys = append(mb.wantKeys, k)
	mb.wantEntries = append(mb.wantEntries, e)
}

// ReadAhead starts the reads of the keys wanted since the last Load and
// returns without waiting (kv.DB.ReadAhead): the blocks the cache holds are
// searched at once, and while the caller processes another batch those it
// lacks are read (past it, so running ahead takes none of its frames); Load
// waits for them and reads as of its own call, taking what the read ahead
// found where nothing changed in between, so writes committed meanwhile are
// seen. On the syscall backend it does nothing.
func (mb *MiniBatch) ReadAhead() {
	if mb.b.closed.Load() || len(mb.wantKeys) == 0 {
		return
	}
	mb.ahead.Done()
	mb.ahead = mb.b.db.ReadAheadInto(&mb.values, mb.wantKeys)
}

// Load reads every key wanted since the last Load that the batch does not
// know yet, in one kv.MultiGet.
func (mb *MiniBatch) Load() error {
	if mb.b.closed.Load() {
		return ErrClosed
	}
	if len(mb.wantKeys) == 0 {
		return nil
	}
	// The MultiGet does not wait for the reads ahead first: its own misses
	// go to the engine while they are still in flight, a pin of one of
	// their blocks finishes them, and it takes the tables the read ahead
	// chose for each key.
	vals, found, err := mb.b.db.MultiGetWith(kv.ReadOptions{ReadAhead: mb.ahead, Values: &mb.values}, mb.wantKeys)
	mb.ahead.Done()
	mb.ahead = nil
	if err != nil {
		return fmt.Errorf("state: load: %w", mb.b.wrapClosed(err))
	}
	mb.b.multiGets.Add(1)
	mb.b.read.Add(uint64(len(mb.wantKeys)))
	// A key written or read by a Get since it was wanted keeps what the
	// batch has of it.
	for i, e := range mb.wantEntries {
		if e.pending {
			e.pending = false
			if found[i] {
				e.stored = vals[i]
			}
		}
	}
	clear(mb.wantKeys)
	clear(mb.wantEntries)
	mb.wantKeys, mb.wantEntries = mb.wantKeys[:0], mb.wantEntries[:0]
	return nil
}

// get returns the payload stored under k as the batch sees it.
func (mb *MiniBatch) get(k []byte) ([]byte, bool, error) {
	e := mb.seen[string(k)]
	switch {
	case e != nil && !e.pending:
		mb.b.hits.Add(1)
	case mb.b.closed.Load():
		return nil, false, ErrClosed
	case mb.b.opts.StrictReads && e != nil:
		return nil, false, fmt.Errorf("%w: key %x is wanted but not loaded yet (Load)", ErrNotWanted, k)
	case mb.b.opts.StrictReads:
		return nil, false, fmt.Errorf("%w: key %x", ErrNotWanted, k)
	default:
		mb.b.unplanned.Add(1)
		v, err := mb.b.db.Get(k)
		if err != nil && !errors.Is(err, kv.ErrNotFound) {
			return nil, false, fmt.Errorf("state: get: %w", mb.b.wrapClosed(err))
		}
		if e == nil {
			e = mb.newEntry()
			mb.seen[string(k)] = e
		}
		e.pending = false
		if err == nil {
			e.stored = v
		}
	}
	if e.stored == nil {
		return nil, false, nil
	}
	expires, payload, err := decodeValue(e.stored)
	if err != nil {
		return nil, false, fmt.Errorf("state: key %x: %w", k, err)
	}
	if expires != 0 && expires <= mb.now {
		mb.b.expired.Add(1)
		// Expired state leaves the disk as it is met.
		return nil, false, mb.del(k)
	}
	return payload, true, nil
}

func (mb *MiniBatch) write(k []byte, stored []byte) error {
	if mb.b.closed.Load() {
		return ErrClosed
	}
	s := string(k)
	e := mb.seen[s]
	if e == nil {
		e = mb.newEntry()
		mb.seen[s] = e
	}
	e.pending = false // a Load after this write keeps it
	if !e.written {
		mb.order = append(mb.order, s)
	}
	e.stored, e.written = stored, true
	return nil
}

func (mb *MiniBatch) put(k []byte, ttl int64, payload []byte) error {
	var expires int64
	if ttl > 0 {
		expires = mb.now + ttl
	}
	return mb.write(k, encodeValue(expires, payload))
}

func (mb *MiniBatch) del(k []byte) error { return mb.write(k, nil) }

// Commit writes every put and delete of the batch in one kv.Batch, atomic,
// then resets the batch.
func (mb *MiniBatch) Commit() error {
	if mb.b.closed.Load() {
		return ErrClosed
	}
	if len(mb.order) > 0 {
		// Write keeps nothing of the batch once it returns: its memory
		// serves the next Commit.
		b := &mb.batch
		b.Reset()
		defer func() {
			if b.Size() > maxReusedBatch {
				*b = kv.Batch{}
			}
		}()
		for _, s := range mb.order {
			if e := mb.seen[s]; e.stored != nil {
				b.Put([]byte(s), e.stored)
			} else {
				b.Delete([]byte(s))
			}
		}
		if err := mb.b.db.Write(b); err != nil {
			return fmt.Errorf("state: commit: %w", mb.b.wrapClosed(err))
		}
		mb.b.commits.Add(1)
		mb.b.writes.Add(uint64(len(mb.order)))
	}
	mb.Reset()
	return nil
}

// scanPrefix returns, sorted by key, the stored entries under prefix as the
// batch sees them: the store's, overlaid with the batch's writes.
func (mb *MiniBatch) scanPrefix(prefix []byte) ([][2][]byte, error) {
	if mb.b.closed.Load() {
		return nil, ErrClosed
	}
	merged := map[string][]byte{}
	it := mb.b.db.NewIterator(prefix, prefixEnd(prefix))
	for it.Next() {
		merged[string(it.Key())] = bytes.Clone(it.Value())
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return nil, fmt.Errorf("state: iterate: %w", err)
	}
	for _, s := range mb.order {
		if !bytes.HasPrefix([]byte(s), prefix) {
			continue
		}
		if e := mb.seen[s]; e.stored != nil {
			merged[s] = e.stored
		} else {
			delete(merged, s)
		}
	}
	out := make([][2][]byte, 0, len(merged))
	for k, v := range merged {
		out = append(out, [2][]byte{[]byte(k), v})
	}
	sort.Slice(out, func(i, j int) bool { return bytes.Compare(out[i][0], out[j][0]) < 0 })
	return out, nil
}

// prefixEnd is the smallest key after every key with prefix (nil: none).
func prefixEnd(prefix []byte) []byte {
	end := bytes.Clone(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return end[:i+1]
		}
	}
	return nil
}
