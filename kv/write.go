package kv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/ringstore/ringstore/kv/sstable"
	"github.com/ringstore/ringstore/wal"
)

// maxGroupBytes bounds the batches one leader commits in one log append.
const maxGroupBytes = 4 << 20

// writer is one Write (batch != nil) or barrier (batch == nil: a Flush, or
// Close waiting for the writes queued before it) in the write queue.
type writer struct {
	batch *Batch
	// wake gets exactly one send for each time the writer waits in the
	// queue: from the writer ahead of it when it reaches the front (it
	// leads; done is false), or from the leader that took its batch into
	// its group, once the group is applied or has failed (done is true).
	// Buffered, so that the sender never waits for the receiver.
	wake chan struct{}
	done bool  // written by the waking leader before its send; read after the receive
	err  error // likewise
	// taken is set, under DB.wmu, when a leader takes the batch into its
	// group: from then on the writer waits for the group's outcome.
	taken bool
	// group is the leader's scratch: the writers it took (itself first).
	group []*writer
	// flushed is set for a Flush writer: the memtable it made immutable
	// (nil when the memtable was empty).
	flushed *memTable
}

// writerPool recycles writers with their channels: a writer goes back only
// once its one send has been received, so a recycled wake is empty.
var writerPool = sync.Pool{New: func() any { return &writer{wake: make(chan struct{}, 1)} }}

func getWriter(b *Batch) *writer {
	w := writerPool.Get().(*writer)
	w.batch = b
	return w
}

func putWriter(w *writer) {
	w.batch, w.done, w.err, w.taken, w.flushed = nil, false, nil, false, nil
	writerPool.Put(w)
}

// enqueue puts w at the back of the write queue and waits until it is at
// the front — then it returns true with wmu held, and w leads — or a leader
// took its batch and completed it (false: w.err is its result), or ctx is
// done while no leader has taken it (false: w.err is ctx.Err(), and w is
// out of the queue). A writer a leader took waits for the group's outcome
// whatever ctx does. On every return w.wake is empty, so w can be reused.
func (db *DB) enqueue(ctx context.Context, w *writer) bool {
	db.wmu.Lock()
	db.writers = append(db.writers, w)
	if len(db.writers) == 1 {
		return true
	}
	db.wmu.Unlock()
	select {
	case <-w.wake:
	case <-ctx.Done():
		db.wmu.Lock()
		switch {
		case w.taken: // on its way to the log: wait for the outcome
			db.wmu.Unlock()
			<-w.wake
		case db.writers[0] == w: // made the leader (sent under wmu): step aside
			<-w.wake
			db.leaveLocked(1)
			db.wmu.Unlock()
			w.done, w.err = true, ctx.Err()
		default: // queued: leave; nobody sends to a writer not at the front
			i := slices.Index(db.writers, w)
			db.writers = slices.Delete(db.writers, i, i+1)
			db.wmu.Unlock()
			w.done, w.err = true, ctx.Err()
		}
	}
	if w.done {
		return false
	}
	db.wmu.Lock()
	return true
}

// leaveLocked takes the n writers at the front off the queue and wakes the
// writer then at the front, the next leader: one wake-up per change of
// leader. Called by the leader with wmu held.
func (db *DB) leaveLocked(n int) {
	clear(db.writers[:n])
	db.writers = db.writers[n:]
	if len(db.writers) > 0 {
		db.writers[0].wake <- struct{}{}
	}
}

// commitGroup is one leader's batches on their way through the commit
// pipeline.
type commitGroup struct {
	mem      *memTable          // immutable after Write queued it
	payloads [][]byte           // immutable after Write queued it
	last     uint64             // the seq of its last write; immutable after Write queued it
	pending  *wal.PendingAppend // waited for by the group's leader alone
	applied  chan struct{}      // closed once the group is visible or has failed
	one      [1][]byte          // payloads' array for a group of one batch
	// Guarded by DB.pipeMu:
	flushed  bool   // its log request is done
	inserted bool   // its writes are in mem
	first    uint64 // its first log entry (0 without a log)
	err      error  // read after applied is closed
}

// Put sets key to value.
func (db *DB) Put(key, value []byte) error {
	b := batchPool.Get().(*Batch)
	b.Put(key, value)
	err := db.Write(b)
	putBatch(b)
	return err
}

// Delete removes key.
func (db *DB) Delete(key []byte) error {
	b := batchPool.Get().(*Batch)
	b.Delete(key)
	err := db.Write(b)
	putBatch(b)
	return err
}

// batchPool recycles the one-operation batches of Put and Delete: once
// Write returns, nothing refers to a batch's bytes (the log copied them
// into its group's buffer, the memtable into its arena).
var batchPool = sync.Pool{New: func() any { return new(Batch) }}

// putBatch returns b to batchPool unless it grew past what a pool should
// keep.
func putBatch(b *Batch) {
	if cap(b.data) > 64<<10 {
		return
	}
	b.Reset()
	batchPool.Put(b)
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
// fdatasync). The inserter adds the groups' writes to the memtable while
// their flush runs (finishCommit); flushed groups become visible to reads
// one at a time in sequence order; then their writers return.
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
	w := getWriter(b)
	defer putWriter(w)
	// A writer most often leads a group of its own batch: its group is
	// made before it takes wmu, so that the leader's time under wmu, which
	// every other writer waits for, holds no allocation.
	g := &commitGroup{applied: make(chan struct{})}
	if !db.enqueue(ctx, w) {
		return w.err
	}
	// w leads. Room first (a stall lets wmu go while it waits, so that
	// writers queued behind may give up); then take the queued batches
	// behind it (a barrier ends the group).
	mem, err := db.makeRoom(ctx)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		db.leaveLocked(1)
		db.wmu.Unlock()
		return err
	}
	n, size := 1, w.batch.Size()
	for n < len(db.writers) && db.writers[n].batch != nil && size+db.writers[n].batch.Size() <= maxGroupBytes {
		size += db.writers[n].batch.Size()
		n++
	}
	group := append(w.group[:0], db.writers[:n]...)
	for _, x := range group {
		x.taken = true
	}
	g.mem = mem
	if n == 1 {
		g.payloads = g.one[:0]
	} else {
		g.payloads = make([][]byte, 0, n)
	}
	queued := false
	if err == nil {
		for _, x := range group {
			g.payloads = append(g.payloads, x.batch.encode(db.lastSeq+1))
			db.lastSeq += uint64(x.batch.Len())
		}
		// The group joins the pipeline before its request can reach the
		// log, so that the inserter the log wakes as it forms a group
		// commit (wakeInserter) finds it there.
		g.last = db.lastSeq
		db.pipeMu.Lock()
		db.pipeline = append(db.pipeline, g)
		db.pipeMu.Unlock()
		queued = true
		if db.log != nil {
			g.pending, err = db.log.StartAppendBatch(g.payloads)
		}
		if err == nil {
			db.applied = g.applied
		} else {
			// The log refused the request: the group fails as one whose
			// request failed (never visible; the store is read-only).
			err = db.logFailed(err)
			db.pipeMu.Lock()
			g.flushed, g.err = true, err
			db.pipeMu.Unlock()
		}
	}
	db.leaveLocked(n)
	db.wmu.Unlock()

	if queued {
		err = db.finishCommit(g)
	}
	// Each follower is woken by its own send, once its batch is applied
	// (or has failed with the group).
	for _, x := range group[1:] {
		x.done, x.err = true, err
		x.wake <- struct{}{}
	}
	clear(group)
	w.group = group[:0]
	return err
}

// finishCommit waits for the group's log request, makes sure the writes of
// every group up to its own are in their memtables, and makes visible, in
// sequence order, every group at the head of the pipeline that is both
// flushed and inserted — its own and those of leaders that have not come
// back yet. It returns once its own group is visible (or has failed).
//
// The inserter goroutine (insertLoop) adds a group's writes to its memtable
// while the group's flush runs, woken by the log as it submits the group
// (wal.Options.OnGroupWrite), so that the memtable's work is out of the
// time between a group commit and the next: the writers a commit releases
// are back in the log's queue while the next group gathers, instead of
// waiting for inserts, or competing with them for the CPU. A write inserted
// but not yet durable has a seq above the visible one, so no read sees it,
// and its memtable is not flushed while the group is in flight
// (memTable.inflight); if its log request fails the store turns read-only
// and no memtable is flushed again, so the write never reaches a table.
//
// The log acknowledges its entries in order and kv is its only appender,
// the pipeline's groups queued in the log's order: once a group's request
// is durable, so is every group queued before it, and their entries are the
// ones just before its own. The first leader back from a group commit marks
// all of them flushed.
func (db *DB) finishCommit(g *commitGroup) error {
	var first uint64
	var err error
	if g.pending != nil { // nil without a log (DisableWAL)
		if first, err = g.pending.Wait(); err != nil {
			err = db.logFailed(err)
		}
	}
	select {
	case <-g.applied:
		// The first writer back from the group commit found g flushed
		// and inserted and made it visible (err was nil then: the log
		// acknowledges in order).
		return g.err
	default:
	}
	db.pipeMu.Lock()
	if !g.flushed {
		g.flushed, g.first, g.err = true, first, err
		if err == nil && first > 0 {
			db.markFlushedBeforeLocked(g)
		}
	}
	inserted := g.inserted
	db.pipeMu.Unlock()
	if !inserted {
		// Not yet (no log to wake the inserter, or the inserter is
		// behind): insert here, the groups ahead of g too.
		db.insertMu.Lock()
		db.insertLocked()
		db.insertMu.Unlock()
	}
	db.publishReady()
	<-g.applied
	return g.err
}

// markFlushedBeforeLocked marks flushed every group ahead of g in the
// pipeline, g's request being durable at g.first: their entries are the
// ones just before g's, in pipeline order. Called with pipeMu held.
func (db *DB) markFlushedBeforeLocked(g *commitGroup) {
	i := slices.Index(db.pipeline, g)
	next := g.first
	for j := i - 1; j >= 0; j-- {
		h := db.pipeline[j]
		if h.flushed {
			break // and so is every group before it
		}
		next -= uint64(len(h.payloads))
		h.flushed, h.first = true, next
	}
}

// minInsertAhead is the least number of requests in a group commit for
// which the log wakes the inserter (DB.minInsertAhead; tests lower it).
const minInsertAhead = 4

// insertLoop is the inserter: each time the log submits a group commit it
// inserts the writes of every group queued by then, until Close closes
// insertWake.
func (db *DB) insertLoop() {
	defer db.insertDone.Done()
	for range db.insertWake {
		db.insertMu.Lock()
		db.insertLocked()
		db.insertMu.Unlock()
	}
}

// wakeInserter is the log's OnGroupWrite: it wakes insertLoop without
// waiting (a wake already pending covers this group too), for a group of
// at least minInsertAhead requests. A smaller group's writers insert their
// own writes once it is flushed: a few inserts there cost less than waking
// a goroutine, which also delays the flush the log is about to submit.
func (db *DB) wakeInserter(requests int) {
	if requests < db.minInsertAhead {
		return
	}
	select {
	case db.insertWake <- struct{}{}:
	default:
	}
}

// insertLocked adds the writes of every queued group not yet inserted to
// its memtable (the memtable's single writer is whoever holds insertMu), in
// sequence order. A group whose request has failed is inserted too: its
// writes are never visible, and the store flushes nothing after a failure.
// Called with insertMu held.
func (db *DB) insertLocked() {
	for {
		db.pipeMu.Lock()
		todo := append(db.insertBuf[:0], db.pipeline[db.inserted:]...)
		db.pipeMu.Unlock()
		if len(todo) == 0 {
			return
		}
		for _, g := range todo {
			for _, p := range g.payloads {
				// The one decode of the batch: valid by construction
				// (WriteContext refused a batch with Batch.bad set).
				decodeBatch(p, func(seq uint64, kind sstable.Kind, key, value []byte) error { //nolint:errcheck // valid by construction
					g.mem.Add(seq, kind, key, value)
					return nil
				})
			}
		}
		db.pipeMu.Lock()
		for _, g := range todo {
			g.inserted = true
		}
		db.inserted += len(todo)
		db.pipeMu.Unlock()
		clear(todo)
		db.insertBuf = todo[:0]
	}
}

// publishReady takes off the head of the pipeline every group that is
// flushed and inserted, in sequence order: a durable one becomes visible to
// reads; then each is released from its memtable and its writers are
// woken.
func (db *DB) publishReady() {
	var done []*commitGroup
	db.pipeMu.Lock()
	for len(db.pipeline) > 0 && db.pipeline[0].flushed && db.pipeline[0].inserted {
		h := db.pipeline[0]
		db.pipeline[0] = nil
		db.pipeline = db.pipeline[1:]
		db.inserted--
		if h.err == nil {
			h.mem.lastSeq = h.last
			if h.first > 0 {
				h.mem.walLast = h.first + uint64(len(h.payloads)) - 1
			}
			db.visible.Store(h.last)
			db.stats.writes.Add(uint64(len(h.payloads)))
			db.stats.commits.Add(1)
		}
		done = append(done, h)
	}
	db.pipeMu.Unlock()
	if len(done) == 0 {
		return
	}
	// Only the flush goroutine waits on an inflight count, that of an
	// immutable memtable (rotateLocked broadcasts when one becomes
	// immutable): the writes to the mutable one wake nobody, so a write
	// does not wake the flush and compaction goroutines to look and sleep
	// again.
	db.mu.Lock()
	wake := false
	for _, h := range done {
		h.mem.inflight--
		wake = wake || (h.mem.inflight == 0 && h.mem != db.mem)
	}
	if wake {
		db.cond.Broadcast()
	}
	db.mu.Unlock()
	for _, h := range done {
		close(h.applied)
	}
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

// makeRoom returns the memtable the leader writes into, with the leader's
// group counted in its inflight, making the current one immutable when it
// is full, and waiting (a write stall) while too many memtables wait for
// their flush or L0 has too many files, or until ctx is done (ctx.Err()).
// Called by the leader, at the front of the queue, with wmu held; while
// stalled it lets wmu go (the leader stays at the front, so no other writer
// leads and no Flush runs meanwhile, but writers queued behind may give up)
// and takes it back, before mu, when the stall ends.
func (db *DB) makeRoom(ctx context.Context) (*memTable, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	stalled := false
	defer db.wakeOnDone(ctx)()
	for {
		switch {
		case db.closed:
			return nil, ErrClosed
		case db.bgErr != nil:
			return nil, fmt.Errorf("kv: store is read-only after an earlier failure: %w", db.bgErr)
		case db.mem.ApproximateBytes() < db.opts.MemtableSize:
			db.mem.inflight++ // the leader's group, in the pipeline until published
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

// wakeOnDone arranges for ctx's end to wake the waits on db.cond (a
// stall, a Flush waiting for its table), which then see ctx.Err(); the
// returned function cancels that.
func (db *DB) wakeOnDone(ctx context.Context) (stop func() bool) {
	if ctx.Done() == nil {
		return func() bool { return false }
	}
	return context.AfterFunc(ctx, func() {
		db.mu.Lock()
		db.cond.Broadcast()
		db.mu.Unlock()
	})
}

// rotateLocked makes the memtable immutable and starts a new one. Called by
// the write leader (or a Flush at the front of the queue) with mu held.
func (db *DB) rotateLocked() *memTable {
	old := db.mem
	db.imm = append(db.imm, old)
	db.mem = db.newMemTable()
	db.publishReadSetLocked()
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
	w := getWriter(nil)
	defer putWriter(w)
	if !db.enqueue(ctx, w) { // a barrier is never taken into a group: it leads, or gives up
		return w.err
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
	db.leaveLocked(1)
	db.wmu.Unlock()
	if err != nil || w.flushed == nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	defer db.wakeOnDone(ctx)()
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
