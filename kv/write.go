package kv

import (
	"fmt"

	"github.com/ringstore/ringstore/kv/memtable"
	"github.com/ringstore/ringstore/kv/sstable"
)

// maxGroupBytes bounds the batches one leader commits in one log append.
const maxGroupBytes = 4 << 20

// writer is one Write (batch != nil) or Flush (batch == nil) in the write
// queue.
type writer struct {
	batch *Batch
	done  bool
	err   error
	// flushed is set for a Flush writer: the memtable it made immutable
	// (nil when the memtable was empty).
	flushed *memTable
}

// Put sets key to value.
func (db *DB) Put(key, value []byte) error {
	var b Batch
	b.Put(key, value)
	return db.Write(&b)
}

// Delete removes key.
func (db *DB) Delete(key []byte) error {
	var b Batch
	b.Delete(key)
	return db.Write(&b)
}

// Write applies the batch atomically: once it returns nil every operation is
// durable (one wal entry, flushed, unless Options.NoSync) and visible to
// later reads; after a crash either all of the batch is there or none.
// Concurrent Writes are committed together: the first queued writer commits
// every batch queued behind it in one log append (one write and one
// fdatasync). On an error the batch may or may not be in the log; the store
// turns read-only after a log failure.
func (db *DB) Write(b *Batch) error {
	if b.Len() == 0 {
		return nil
	}
	if err := b.check(); err != nil {
		return fmt.Errorf("kv: Write: %w", err)
	}
	w := &writer{batch: b}
	db.wmu.Lock()
	db.writers = append(db.writers, w)
	for !w.done && db.writers[0] != w {
		db.wcond.Wait()
	}
	if w.done {
		db.wmu.Unlock()
		return w.err
	}
	// w leads: take the queued batches behind it.
	n, size := 1, w.batch.Size()
	for n < len(db.writers) && db.writers[n].batch != nil && size+db.writers[n].batch.Size() <= maxGroupBytes {
		size += db.writers[n].batch.Size()
		n++
	}
	group := append([]*writer(nil), db.writers[:n]...)
	mem, err := db.makeRoom()
	var payloads [][]byte
	if err == nil {
		for _, g := range group {
			payloads = append(payloads, g.batch.encode(db.lastSeq+1))
			db.lastSeq += uint64(g.batch.Len())
		}
	}
	db.wmu.Unlock()

	if err == nil {
		err = db.commit(mem, payloads)
	}

	db.wmu.Lock()
	for _, g := range group {
		g.done, g.err = true, err
	}
	db.writers = db.writers[n:]
	db.wcond.Broadcast()
	db.wmu.Unlock()
	return err
}

// commit appends the group's payloads to the log, applies them to mem and
// makes them visible. Only the leader calls it.
func (db *DB) commit(mem *memTable, payloads [][]byte) error {
	first, err := db.log.AppendBatch(payloads)
	if err != nil {
		err = fmt.Errorf("kv: write: %w", err)
		db.mu.Lock()
		if db.bgErr == nil {
			db.bgErr = err
		}
		db.cond.Broadcast()
		db.mu.Unlock()
		return err
	}
	var last uint64
	for _, p := range payloads {
		decodeBatch(p, func(seq uint64, kind sstable.Kind, key, value []byte) error { //nolint:errcheck // checked in Write
			mem.Add(seq, kind, key, value)
			last = seq
			return nil
		})
	}
	mem.lastSeq = last
	mem.walLast = first + uint64(len(payloads)) - 1
	db.visible.Store(last)
	db.stats.writes.Add(uint64(len(payloads)))
	db.stats.commits.Add(1)
	return nil
}

// makeRoom returns the memtable the leader writes into, making the current
// one immutable when it is full, and waiting (a write stall) while too many
// memtables wait for their flush or L0 has too many files. Called by the
// leader with wmu held.
func (db *DB) makeRoom() (*memTable, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	stalled := false
	for {
		switch {
		case db.closed:
			return nil, ErrClosed
		case db.bgErr != nil:
			return nil, fmt.Errorf("kv: store is read-only after an earlier failure: %w", db.bgErr)
		case db.mem.ApproximateBytes() < db.opts.MemtableSize:
			return db.mem, nil
		case len(db.imm) >= maxImmutable || len(db.current.levels[0]) >= db.opts.L0StopWritesTrigger:
			if !stalled {
				stalled = true
				db.stats.writeStalls.Add(1)
			}
			db.cond.Wait()
		default:
			db.rotateLocked()
		}
	}
}

// rotateLocked makes the memtable immutable and starts a new one. Called by
// the write leader (or a Flush at the front of the queue) with mu held.
func (db *DB) rotateLocked() *memTable {
	old := db.mem
	db.imm = append(db.imm, old)
	db.mem = &memTable{Memtable: memtable.New()}
	db.cond.Broadcast()
	return old
}

// Flush writes the memtable to an L0 table and waits until it is in the
// manifest (and every memtable before it too). Writes queued after the
// Flush go to the next memtable.
func (db *DB) Flush() error {
	w := &writer{}
	db.wmu.Lock()
	db.writers = append(db.writers, w)
	for db.writers[0] != w {
		db.wcond.Wait()
	}
	db.mu.Lock()
	var err error
	switch {
	case db.closed:
		err = ErrClosed
	case db.bgErr != nil:
		err = db.bgErr
	case db.mem.Len() > 0:
		w.flushed = db.rotateLocked()
	case len(db.imm) > 0:
		w.flushed = db.imm[len(db.imm)-1]
	}
	db.mu.Unlock()
	db.writers = db.writers[1:]
	db.wcond.Broadcast()
	db.wmu.Unlock()
	if err != nil || w.flushed == nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	for db.bgErr == nil && !db.closed && db.isImmutableLocked(w.flushed) {
		db.cond.Wait()
	}
	if db.bgErr != nil {
		return db.bgErr
	}
	if db.closed && db.isImmutableLocked(w.flushed) {
		return ErrClosed
	}
	return nil
}

func (db *DB) isImmutableLocked(m *memTable) bool {
	for _, x := range db.imm {
		if x == m {
			return true
		}
	}
	return false
}
