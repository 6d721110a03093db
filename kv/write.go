package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/ringstore/ringstore/kv/memtable"
	"github.com/ringstore/ringstore/kv/sstable"
	"github.com/ringstore/ringstore/wal"
)

// maxGroupBytes bounds the batches one leader commits in one log append.
const maxGroupBytes = 4 << 20

// writer is one Write (batch != nil) or Flush (batch == nil) in the write
// queue.
type writer struct {
	batch *Batch
	taken bool // a leader took it into its group (guarded by DB.wmu)
	done  bool
	err   error
	// flushed is set for a Flush writer: the memtable it made immutable
	// (nil when the memtable was empty).
	flushed *memTable
}

// commitGroup is one leader's batches on their way through the commit
// pipeline.
type commitGroup struct {
	mem      *memTable          // immutable after Write queued it
	payloads [][]byte           // immutable after Write queued it
	pending  *wal.PendingAppend // waited for by the group's leader alone
	applied  chan struct{}      // closed once the group is applied or has failed
	flushed  bool               // guarded by DB.applyMu: its log request is done
	first    uint64             // guarded by DB.applyMu: its first log entry
	err      error              // guarded by DB.applyMu; read after applied is closed
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

// Write is WriteContext with a context that is never done.
func (db *DB) Write(b *Batch) error { return db.WriteContext(context.Background(), b) }

// WriteContext applies the batch atomically: once it returns nil every operation is
// durable (one wal entry, flushed, unless Options.Unsafe.NoSync) and visible to
// later reads; after a crash either all of the batch is there or none. On an
// error the batch may or may not be in the log; the store turns read-only
// after a log failure.
//
// The commit pipeline: the writer at the front of the queue leads. Holding
// the queue's lock it takes the batches queued behind it, numbers them and
// queues them to the log as one request (wal.StartAppendBatch), so the
// log's order is the sequence order; then it leaves the front to the next
// leader and waits for its request to be flushed. The log gathers the
// requests of many leaders into one group commit (one write, one
// fdatasync). Flushed groups are applied to the memtable one at a time in
// sequence order, each becoming visible to reads as it is applied; then
// their writers return.
//
// ctx bounds the wait before the batch goes to the log: in the write
// queue, and in a write stall (too many memtables waiting for their flush,
// or too many L0 files). When ctx is done there, WriteContext returns
// ctx.Err() and the batch is not applied, not logged, and takes no
// sequence number. Once a leader has taken the batch into its group (after
// any stall) the batch is on its way to the log, and WriteContext waits
// for the outcome whatever ctx does.
func (db *DB) WriteContext(ctx context.Context, b *Batch) error {
	if db.opts.ReadOnly {
		return ErrOpenedReadOnly
	}
	if b.Len() == 0 {
		return nil
	}
	if err := b.check(); err != nil {
		return fmt.Errorf("kv: Write: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &writer{batch: b}
	db.wmu.Lock()
	db.writers = append(db.writers, w)
	stop := db.wakeOnDone(ctx)
	defer stop()
	for !w.done && (w.taken || db.writers[0] != w) {
		if err := ctx.Err(); err != nil && !w.taken && !w.done {
			db.leaveQueueLocked(w)
			db.wmu.Unlock()
			return err
		}
		db.wcond.Wait()
	}
	if w.done {
		db.wmu.Unlock()
		return w.err
	}
	// w leads. Room first (a stall lets wmu go while it waits, so that
	// writers queued behind may give up); then take the queued batches.
	g := &commitGroup{applied: make(chan struct{})}
	var err error
	g.mem, err = db.makeRoom(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		db.leaveQueueLocked(w)
		db.wmu.Unlock()
		return err
	}
	n, size := 1, w.batch.Size()
	for n < len(db.writers) && db.writers[n].batch != nil && size+db.writers[n].batch.Size() <= maxGroupBytes {
		size += db.writers[n].batch.Size()
		n++
	}
	group := append([]*writer(nil), db.writers[:n]...)
	for _, g := range group {
		g.taken = true
	}
	if err == nil {
		for _, x := range group {
			g.payloads = append(g.payloads, x.batch.encode(db.lastSeq+1))
			db.lastSeq += uint64(x.batch.Len())
		}
		if db.log != nil {
			g.pending, err = db.log.StartAppendBatch(g.payloads)
		}
		if err == nil {
			db.mu.Lock()
			g.mem.inflight++
			db.mu.Unlock()
			db.applyMu.Lock()
			db.pipeline = append(db.pipeline, g)
			db.applyMu.Unlock()
			db.applied = g.applied
		} else {
			err = db.logFailed(err)
		}
	}
	db.writers = db.writers[n:]
	db.wcond.Broadcast()
	db.wmu.Unlock()

	if err == nil {
		err = db.finishCommit(g)
	}

	db.wmu.Lock()
	for _, x := range group {
		x.done, x.err = true, err
	}
	db.wcond.Broadcast()
	db.wmu.Unlock()
	return err
}

// finishCommit waits for the group's log request to be flushed, then
// applies, in sequence order, every group at the head of the pipeline whose
// request is done — its own and those of leaders that have not come back
// yet — so the memtable's single writer is whoever finds groups ready, not
// a relay of every leader in turn. It returns once its own group is
// applied. A failed group is taken off in its turn too.
func (db *DB) finishCommit(g *commitGroup) error {
	var first uint64
	var err error
	if g.pending != nil { // nil without a log (DisableWAL): applied at once
		if first, err = g.pending.Wait(); err != nil {
			err = db.logFailed(err)
		}
	}
	db.applyMu.Lock()
	g.flushed, g.first, g.err = true, first, err
	for len(db.pipeline) > 0 && db.pipeline[0].flushed {
		h := db.pipeline[0]
		db.pipeline[0] = nil
		db.pipeline = db.pipeline[1:]
		db.applyLocked(h)
		close(h.applied)
	}
	db.applyMu.Unlock()
	<-g.applied
	return g.err
}

// applyLocked adds a flushed group's writes to its memtable and makes them
// visible. Called with applyMu held, in sequence order.
func (db *DB) applyLocked(g *commitGroup) {
	if g.err == nil {
		var last uint64
		for _, p := range g.payloads {
			decodeBatch(p, func(seq uint64, kind sstable.Kind, key, value []byte) error { //nolint:errcheck // checked in Write
				g.mem.Add(seq, kind, key, value)
				last = seq
				return nil
			})
		}
		g.mem.lastSeq = last
		if g.first > 0 {
			g.mem.walLast = g.first + uint64(len(g.payloads)) - 1
		}
		db.visible.Store(last)
		db.stats.writes.Add(uint64(len(g.payloads)))
		db.stats.commits.Add(1)
	}
	db.mu.Lock()
	g.mem.inflight--
	db.cond.Broadcast()
	db.mu.Unlock()
}

// logFailed records a failure of the log: the store turns read-only (every
// later write fails with it). It returns the error as writes report it.
func (db *DB) logFailed(err error) error {
	err = fmt.Errorf("kv: write: %w", err)
	db.mu.Lock()
	if db.bgErr == nil {
		db.bgErr = err
	}
	db.cond.Broadcast()
	db.mu.Unlock()
	return err
}

// makeRoom returns the memtable the leader writes into, making the current
// one immutable when it is full, and waiting (a write stall) while too many
// memtables wait for their flush or L0 has too many files, or until ctx is
// done (ctx.Err()). Called by the leader, at the front of the queue, with
// wmu held; while stalled it lets wmu go (the leader stays at the front,
// so no other writer leads and no Flush runs meanwhile) and takes it back,
// before mu, when the stall ends.
func (db *DB) makeRoom(ctx context.Context) (*memTable, error) {
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
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			if !stalled {
				stalled = true
				db.stats.writeStalls.Add(1)
			}
			db.wmu.Unlock()
			db.cond.Wait()
			db.mu.Unlock()
			db.wmu.Lock()
			db.mu.Lock()
		default:
			db.rotateLocked()
		}
	}
}

// wakeOnDone arranges for ctx's end to wake the waits of the write path
// (the write queue and a stall), which then see ctx.Err(). The returned
// function cancels that.
func (db *DB) wakeOnDone(ctx context.Context) (stop func() bool) {
	if ctx.Done() == nil {
		return func() bool { return false }
	}
	return context.AfterFunc(ctx, func() {
		db.wmu.Lock()
		db.wcond.Broadcast()
		db.wmu.Unlock()
		db.mu.Lock()
		db.cond.Broadcast()
		db.mu.Unlock()
	})
}

// leaveQueueLocked takes w, which no leader took, out of the write queue
// and wakes the writers (one of them may lead now). Called with wmu held.
func (db *DB) leaveQueueLocked(w *writer) {
	if i := slices.Index(db.writers, w); i >= 0 {
		db.writers = slices.Delete(db.writers, i, i+1)
	}
	db.wcond.Broadcast()
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
func (db *DB) Flush() error { return db.flush(context.Background()) }

// flush is Flush, given up with ctx.Err() when ctx is done while it waits
// in the write queue or for the table: the memtable it made immutable is
// still flushed, in the background.
func (db *DB) flush(ctx context.Context) error {
	if db.opts.ReadOnly {
		return ErrOpenedReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	w := &writer{}
	db.wmu.Lock()
	db.writers = append(db.writers, w)
	stop := db.wakeOnDone(ctx)
	defer stop()
	for db.writers[0] != w {
		if err := ctx.Err(); err != nil {
			db.leaveQueueLocked(w)
			db.wmu.Unlock()
			return err
		}
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
		if err := ctx.Err(); err != nil {
			return err
		}
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
