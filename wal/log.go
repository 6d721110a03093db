package wal

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringstore/ringstore/internal/crc32c"
	"github.com/ringstore/ringstore/internal/durable"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// Log is a durable append-only log of entries numbered by consecutive
// sequence numbers. All methods are safe for concurrent use. See the
// package documentation for the formats, the crash rules and the order of
// operations.
type Log struct {
	dir       string           // immutable
	opts      Options          // immutable after Open
	eng       *ioengine.Engine // immutable
	ownEngine bool             // immutable: Close closes eng
	// flushEng, when set, is an inline io_uring engine (ioengine
	// Options.Inline) that the committer alone uses for its group flushes
	// at pipeline depth 1: the flush is submitted and waited for on the
	// committer's own thread, without the hand-offs to and from a ring
	// goroutine. Immutable; closed by Close.
	flushEng *ioengine.Engine
	lock     *os.File // immutable: flock on wal.lock, held until Close
	capacity int      // immutable: the largest encoded request a new segment holds
	dsync    bool     // immutable: durable writes use RWF_DSYNC instead of a linked fdatasync

	// mu guards the queue of requests and the state below it.
	mu      sync.Mutex
	cond    *sync.Cond // signaled when pending grows or closing is set
	pending []*request
	closing bool
	// gatherWant is how many queued requests the committer waits for
	// before it takes the next group: the writers of the group acknowledged
	// last (who tend to append again at once) plus those queued then.
	// gatherGen counts the starts and ends of gathering waits (odd while
	// one is on), so that a timer of an earlier wait ends no later one.
	gatherWant int
	gatherGen  uint64
	gatherOver bool
	gatherMax  time.Duration // the wait's upper bound; 0: maxGather (tests set it longer)
	failed     error         // set by the first failed write or sync; permanent

	// Owned by the committer goroutine (by Open before it starts).
	next       uint64   // sequence number of the next entry
	active     *segment // segment appends go to; nil until the next rotation
	activeOff  int64    // where the next group is written in active
	activeCRC  uint32   // CRC32C of active's data bytes so far
	spareAsked bool     // the next segment has been asked for

	// meta is wal.meta opened for its in-place slot writes once a
	// TruncateFront has made or found it in the two-slot layout; metaSlot
	// is the slot holding the current first seq (read by Open's recovery),
	// -1 while the file is absent or has the one-record layout. Owned by
	// the lifecycle's job goroutine while a truncation is queued, by the
	// committer when none is (truncsIdle).
	meta     *ioengine.File
	metaSlot int

	slots  chan struct{} // a token for every group in flight (PipelineDepth)
	flushQ chan *group   // groups to write and flush, to the flushers
	ackQ   chan *group   // the same groups, in order, to the acker
	bufs   chan []byte   // group buffers not in use

	// segMu guards segs, first, last, notify, closed, and the segment
	// fields that say so.
	segMu  sync.RWMutex
	segs   []*segment // sorted by base; the last may be active
	first  uint64     // first entry kept (the next one when the log is empty)
	last   uint64     // last durable entry (first-1 when empty)
	notify chan struct{}
	closed bool

	wg sync.WaitGroup // committer, flushers, acker

	// files makes the next segment ahead of need, writes sealed
	// segments' next stale tables, keeps files for reuse and makes front
	// truncations durable beside the appends (lifecycle.go).
	files lifecycle

	flushNanos atomic.Int64 // how long the last group write + flush took
	flushHist  latencyRecorder

	appends, entries, bytes, flushes, rotations, recycled atomic.Uint64
	tailCuts                                              atomic.Uint64

	recovery Recovery // immutable after Open: what recovery did
}

// Stats are a log's counters since Open.
type Stats struct {
	Appends   uint64 // Append and AppendBatch calls acknowledged
	Entries   uint64 // entries made durable
	Bytes     uint64 // payload bytes made durable
	Flushes   uint64 // group commits: one write and one fdatasync each
	Rotations uint64 // segments sealed and created
	Recycled  uint64 // segments made from the file of a truncated one (RecycleSegments)
	TailCuts  uint64 // torn tails cut by recovery at Open
	// TailCutBytes and TailCutEntries are what those cuts removed: the
	// bytes after the last valid entry, and the whole entries among them
	// (entries of the group in flight at the crash that lay past its torn
	// part; never acknowledged).
	TailCutBytes, TailCutEntries uint64
	// FlushLatency counts how long each group commit's write and
	// fdatasync took, from submission to completion (failed ones too).
	FlushLatency LatencyHistogram
	Segments     int // segment files
	FirstSeq     uint64
	LastSeq      uint64
	Backend      ioengine.Backend
	// FallbackReason says why the log's engine is not on io_uring, if so.
	FallbackReason string
}

// EntriesPerFlush is the mean number of entries one group commit carried.
func (s Stats) EntriesPerFlush() float64 {
	if s.Flushes == 0 {
		return 0
	}
	return float64(s.Entries) / float64(s.Flushes)
}

type reqKind uint8

const (
	reqAppend reqKind = iota
	reqTruncateFront
	reqTruncateBack
)

// request is one Append, AppendBatch or truncation waiting for the
// committer. Truncations go through the same queue so that they are
// ordered with the appends around them.
type request struct {
	kind     reqKind
	payloads [][]byte
	one      [1][]byte
	size     int    // encoded bytes of all payloads
	seq      uint64 // first seq assigned (appends) or the argument (truncations)
	err      error
	done     chan struct{} // receives once when the request is finished
}

var requestPool = sync.Pool{New: func() any { return &request{done: make(chan struct{}, 1)} }}

func (r *request) finish(err error) {
	r.err = err
	r.done <- struct{}{}
}

// group is one group commit: the entries of several requests written with
// one write and flushed with one fdatasync.
type group struct {
	seg         *segment
	off         int64
	buf         []byte // the entries, then (reusable segments) zeros to the end of their page
	n           int    // bytes of entries in buf
	first, last uint64
	offsets     []uint32
	reqs        []*request
	err         error
	done        chan struct{} // closed by the flusher
}

// Open opens the log in dir, creating the directory if needed, and
// recovers it: a torn tail of the last segment is cut; damage anywhere else
// is an error (a *CorruptError naming the file and offset) and nothing is
// changed. Only one Log may have a directory open at a time.
func Open(dir string, opts Options) (*Log, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var lock *os.File
	if opts.ReadOnly {
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("wal: %s is not a directory", dir)
		}
	} else {
		if err := durable.MkdirAll(dir, opts.Unsafe.NoSync); err != nil {
			return nil, fmt.Errorf("wal: %w", err)
		}
		if lock, err = lockDir(filepath.Join(dir, lockName)); err != nil {
			return nil, err
		}
	}
	l := &Log{
		dir: dir, opts: opts, lock: lock,
		capacity: int(opts.segmentLimit()) - SegmentHeaderSize,
		notify:   make(chan struct{}),
	}
	l.cond = sync.NewCond(&l.mu)
	if opts.Engine != nil {
		l.eng = opts.Engine
	} else {
		l.eng, err = ioengine.New(ioengine.Options{Mode: opts.IOMode, Logf: opts.Logf})
		if err != nil {
			lock.Close()
			return nil, fmt.Errorf("wal: %w", err)
		}
		l.ownEngine = true
	}
	if b := l.eng.Backend(); !opts.linkedFdatasync && (b == ioengine.BackendURing || b == ioengine.BackendSQPoll) {
		l.dsync = true
	}
	if opts.PipelineDepth == 0 {
		opts.PipelineDepth = 1
		if l.eng.Backend() == ioengine.BackendSQPoll && !opts.RecycleSegments {
			opts.PipelineDepth = 2
		}
		l.opts.PipelineDepth = opts.PipelineDepth
	}
	if opts.PipelineDepth == 1 && l.eng.Backend() == ioengine.BackendURing && !opts.noInlineFlush && !opts.ReadOnly {
		// The log's own engine or a shared one (kv's): the committer
		// flushes inline either way. A failure leaves the flushes on eng.
		if fe, err := l.eng.NewInline(); err == nil {
			l.flushEng = fe
		}
	}
	l.slots = make(chan struct{}, opts.PipelineDepth)
	l.flushQ = make(chan *group, opts.PipelineDepth)
	l.ackQ = make(chan *group, opts.PipelineDepth)
	l.bufs = make(chan []byte, opts.PipelineDepth)
	for range opts.PipelineDepth {
		l.bufs <- nil
	}
	if err := l.recover(); err != nil {
		l.releaseAll()
		return nil, err
	}
	if opts.ReadOnly {
		return l, nil // no committer, flushers, acker or spares: enqueue refuses
	}
	l.startLifecycle()
	if l.active == nil || l.activeOff > l.active.size/2 {
		l.spareAsked = true
		l.requestSpare()
	}
	l.wg.Add(2 + opts.PipelineDepth)
	go l.commitLoop()
	go l.ackLoop()
	for range opts.PipelineDepth {
		go l.flushLoop()
	}
	return l, nil
}

// MaxBatchBytes returns the most bytes one AppendBatch (or Append,
// StartAppendBatch) may encode to: the sum of EncodedLen of its payloads.
// It is what a new segment holds between its header and where its entries
// end, which is earlier under Options.RecycleSegments (before the stale
// table) than without (before the trailer). A larger batch fails with
// ErrEntryTooLarge. Each payload is also bounded by MaxEntrySize.
func (l *Log) MaxBatchBytes() int { return l.capacity }

// MaxEntrySize returns the largest payload one entry may carry: the
// options' MaxEntrySize, at most what a new segment holds.
func (l *Log) MaxEntrySize() int { return l.opts.MaxEntrySize }

// Dir returns the log's directory.
func (l *Log) Dir() string { return l.dir }

// Append writes payload as the next entry and returns its sequence number
// once the entry is on stable storage. Concurrent appends are committed
// together: one write and one fdatasync for many entries.
func (l *Log) Append(payload []byte) (uint64, error) {
	r := requestPool.Get().(*request)
	r.one[0] = payload
	seq, err := l.appendRequest(r, r.one[:])
	r.one[0] = nil
	requestPool.Put(r)
	return seq, err
}

// AppendBatch writes payloads as consecutive entries and returns the
// sequence number of the first once all are on stable storage. After a
// crash before it returns, any prefix of the batch may be present (each
// entry is whole or absent); use one entry when all-or-nothing matters. An
// empty batch returns LastSeq()+1 at once and writes nothing.
func (l *Log) AppendBatch(payloads [][]byte) (uint64, error) {
	if len(payloads) == 0 {
		return l.LastSeq() + 1, nil
	}
	r := requestPool.Get().(*request)
	seq, err := l.appendRequest(r, payloads)
	requestPool.Put(r)
	return seq, err
}

// PendingAppend is a batch StartAppendBatch queued. Wait must be called
// exactly once.
type PendingAppend struct {
	l *Log
	r *request
}

// StartAppendBatch queues payloads as AppendBatch does and returns without
// waiting for them to be durable. Batches go into the log in the order
// their StartAppendBatch (or Append, AppendBatch) calls queued them: a
// caller that serializes its calls — kv's commit pipeline, which numbers
// its writes under a lock and queues them under the same lock — gets its
// order as the log's. The log's committer gathers what is queued into its
// group commits as it does with concurrent Appends.
func (l *Log) StartAppendBatch(payloads [][]byte) (*PendingAppend, error) {
	if len(payloads) == 0 {
		return nil, errors.New("wal: StartAppendBatch of an empty batch")
	}
	r := requestPool.Get().(*request)
	if err := l.startAppend(r, payloads); err != nil {
		requestPool.Put(r)
		return nil, err
	}
	return &PendingAppend{l: l, r: r}, nil
}

// Wait returns the sequence number of the batch's first entry once all of
// its entries are on stable storage, or the error that failed them (then
// any prefix of the batch may be in the log; the log is read-only).
func (p *PendingAppend) Wait() (uint64, error) {
	seq, err := p.r.wait()
	requestPool.Put(p.r)
	p.r = nil
	return seq, err
}

func (l *Log) appendRequest(r *request, payloads [][]byte) (uint64, error) {
	if err := l.startAppend(r, payloads); err != nil {
		return 0, err
	}
	return r.wait()
}

// wait waits for an append request and returns its first seq.
func (r *request) wait() (uint64, error) {
	<-r.done
	seq, err := r.seq, r.err
	r.payloads = nil
	if err != nil {
		return 0, err
	}
	return seq, nil
}

// startAppend checks payloads and queues r to append them.
func (l *Log) startAppend(r *request, payloads [][]byte) error {
	size := 0
	for i, p := range payloads {
		if len(p) > l.opts.MaxEntrySize {
			return fmt.Errorf("%w: entry %d of the batch is %d bytes, the limit is %d", ErrEntryTooLarge, i, len(p), l.opts.MaxEntrySize)
		}
		size += EncodedLen(len(p))
	}
	if size > l.capacity {
		return fmt.Errorf("%w: a batch of %d entries encodes to %d bytes, more than a segment of %d bytes holds (%d)", ErrEntryTooLarge, len(payloads), size, l.opts.SegmentSize, l.capacity)
	}
	r.kind, r.payloads, r.size, r.seq, r.err = reqAppend, payloads, size, 0, nil
	return l.enqueue(r)
}

func (l *Log) enqueue(r *request) error {
	if l.opts.ReadOnly {
		return ErrOpenedReadOnly
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closing {
		return ErrClosed
	}
	if l.failed != nil && r.kind == reqAppend {
		return l.failed
	}
	l.pending = append(l.pending, r)
	if l.opts.queued != nil {
		l.opts.queued()
	}
	if len(l.pending) == 1 || len(l.pending) == l.gatherWant {
		l.cond.Signal()
	}
	return nil
}

// commitLoop is the committer: it takes the queued requests, gives each
// append its sequence numbers, encodes a group, and hands it to the
// flushers while it forms the next. It alone changes the set of segments.
func (l *Log) commitLoop() {
	defer l.wg.Done()
	for {
		// Wait for room in the pipeline before taking requests: what
		// arrives while every slot is busy joins this group instead of
		// being left for the one after (with one slot, writers then form two
		// cohorts, one flushing and one gathering, not three).
		l.slots <- struct{}{}
		l.mu.Lock()
		for len(l.pending) == 0 && !l.closing {
			l.cond.Wait()
		}
		if len(l.pending) == 0 {
			l.mu.Unlock()
			<-l.slots
			break
		}
		l.gatherLocked()
		reqs := l.takeLocked()
		failed := l.failed
		l.mu.Unlock()

		switch {
		case reqs[0].kind == reqTruncateFront:
			<-l.slots
			l.drain()
			l.truncateFront(reqs[0])
		case reqs[0].kind == reqTruncateBack:
			<-l.slots
			l.drain()
			reqs[0].finish(l.truncateBack(reqs[0].seq))
		case failed != nil:
			<-l.slots
			for _, r := range reqs {
				r.finish(failed)
			}
		default:
			l.commit(reqs) // takes over the slot
		}
	}
	l.drain()
	close(l.flushQ)
	close(l.ackQ)
}

// gatherLocked waits, briefly, for the writers the last acknowledgement
// released to append again, so that they join this group instead of
// forming a cohort of their own that flushes after it. Without the wait,
// writers that outnumber what one flush gathers settle into cohorts that
// alternate (two at pipeline depth 1): each append then waits a whole
// flush before its own. The wait ends at once when the writers are back,
// so a lone writer never waits. Otherwise it is bounded by a quarter of the
// last flush's duration (between minGather and maxGather), and extended by
// an eighth at a time while writers keep coming back, up to the last
// flush's whole duration (and maxGather): a writer that misses the group waits that flush
// and its own, so waiting a step for writers still on their way costs the
// group less than it saves them. A wait in which no writer came back during
// its last step ends. Called with mu held.
func (l *Log) gatherLocked() {
	want := l.gatherWant
	l.gatherWant = 0
	if l.opts.noGather || want <= len(l.pending) || l.closing {
		return
	}
	bound := l.gatherMax
	if bound == 0 {
		bound = maxGather
	}
	flush := time.Duration(l.flushNanos.Load())
	first := max(minGather, min(flush/4, bound))
	step := max(minGather, min(flush/8, bound))
	limit := max(first, min(flush, bound))
	l.gatherWant = want
	l.gatherGen++
	gen := l.gatherGen
	l.gatherOver = false
	start, seen := time.Now(), len(l.pending)
	var t *time.Timer
	// t, start and seen are read by the timer's function under mu, which
	// this goroutine holds until cond.Wait, so it sees t set.
	t = time.AfterFunc(first, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.gatherGen != gen {
			return
		}
		if len(l.pending) > seen && time.Since(start)+step <= limit {
			seen = len(l.pending)
			t.Reset(step)
			return
		}
		l.gatherOver = true
		l.cond.Broadcast()
	})
	for len(l.pending) < want && !l.gatherOver && !l.closing {
		l.cond.Wait()
	}
	t.Stop()
	l.gatherWant = 0
	l.gatherGen++
}

// Bounds of the gathering wait (gatherLocked).
const (
	minGather = 20 * time.Microsecond
	maxGather = 1 * time.Millisecond
)

// takeLocked removes from the queue the requests of the next group: appends
// up to MaxGroupBytes (at least one), or one truncation.
func (l *Log) takeLocked() []*request {
	n, bytes := 0, 0
	for n < len(l.pending) {
		r := l.pending[n]
		if r.kind != reqAppend {
			if n == 0 {
				n = 1
			}
			break
		}
		if n > 0 && bytes+r.size > l.opts.MaxGroupBytes {
			break
		}
		bytes += r.size
		n++
	}
	reqs := make([]*request, n)
	copy(reqs, l.pending)
	rest := copy(l.pending, l.pending[n:])
	clear(l.pending[rest:])
	l.pending = l.pending[:rest]
	return reqs
}

// commit writes reqs as one or more groups, rotating when the active
// segment is full. The caller holds one pipeline slot, which the first
// group uses.
func (l *Log) commit(reqs []*request) {
	held := true
	defer func() {
		if held {
			<-l.slots
		}
	}()
	for len(reqs) > 0 {
		room := int64(0)
		if l.active != nil {
			room = l.active.header().DataLimit() - l.activeOff
		}
		if int64(reqs[0].size) > room {
			// An empty segment of today's size that cannot hold the request:
			// cannot happen, Append checks against a new segment's capacity.
			fresh := l.active != nil && l.activeOff == SegmentHeaderSize && l.active.size >= l.opts.SegmentSize
			if fresh {
				reqs[0].finish(fmt.Errorf("%w: %d bytes do not fit in %s", ErrEntryTooLarge, reqs[0].size, l.active.path))
				reqs = reqs[1:]
				continue
			}
			if held {
				<-l.slots
				held = false
			}
			l.drain()
			if err := l.rotate(); err != nil {
				for _, r := range reqs {
					r.finish(err)
				}
				return
			}
			continue
		}
		if err := l.Err(); err != nil {
			for _, r := range reqs {
				r.finish(err)
			}
			return
		}
		buf := <-l.bufs
		g := &group{seg: l.active, off: l.activeOff, first: l.next, done: make(chan struct{})}
		n := 0
		for n < len(reqs) && int64(len(buf)+reqs[n].size) <= room {
			r := reqs[n]
			r.seq = l.next
			for _, p := range r.payloads {
				g.offsets = append(g.offsets, uint32(l.activeOff+int64(len(buf))))
				buf = format.AppendEntry(buf, l.next, p)
				l.next++
			}
			n++
		}
		g.reqs, reqs = reqs[:n], reqs[n:]
		g.last, g.n = l.next-1, len(buf)
		l.activeCRC = crc32c.Update(l.activeCRC, buf)
		if g.seg.next != nil {
			g.seg.next.Add(buf)
		}
		if g.seg.reusable {
			// Zeros to the end of the page: the bytes past the last
			// durable entry read as unwritten (tail.go) whatever the
			// file held before.
			end := l.activeOff + int64(len(buf))
			buf = append(buf, zeroPage[:(pageSize-end%pageSize)%pageSize]...)
		}
		g.buf = buf
		l.activeOff += int64(g.n)
		if !l.spareAsked && l.activeOff > l.active.size/2 {
			l.spareAsked = true
			l.requestSpare()
		}
		if !held {
			l.slots <- struct{}{}
		}
		held = false
		if l.opts.OnGroupWrite != nil {
			l.opts.OnGroupWrite(len(g.reqs))
		}
		if cap(l.slots) == 1 {
			// One group at a time: write, flush and acknowledge here,
			// without handing the group to two more goroutines and back.
			l.flush(g)
			l.ackGroup(g)
			continue
		}
		l.ackQ <- g
		l.flushQ <- g
	}
}

// drain waits until every group in flight has been acknowledged.
func (l *Log) drain() {
	for range cap(l.slots) {
		l.slots <- struct{}{}
	}
	for range cap(l.slots) {
		<-l.slots
	}
}

// flushLoop writes groups and flushes them: one linked write + fdatasync.
func (l *Log) flushLoop() {
	defer l.wg.Done()
	for g := range l.flushQ {
		l.flush(g)
	}
}

// flush writes g and makes it durable, and records how long that took.
func (l *Log) flush(g *group) {
	start := time.Now()
	g.err = l.writeFileOn(l.flushEngine(), g.seg.f, g.seg.path, g.off, g.buf, !l.opts.Unsafe.NoSync)
	took := time.Since(start)
	l.flushNanos.Store(int64(took))
	l.flushHist.record(took)
	close(g.done)
}

// ackLoop acknowledges groups in the order they were formed, so that an
// entry is acknowledged only when every entry before it is durable too. The
// first failure turns the log read-only; every later group fails with it.
func (l *Log) ackLoop() {
	defer l.wg.Done()
	for g := range l.ackQ {
		l.ackGroup(g)
	}
}

// ackGroup waits for g's flush and acknowledges its requests (or fails
// them), then frees its buffer and pipeline slot.
func (l *Log) ackGroup(g *group) {
	<-g.done
	if g.err != nil {
		l.fail(g.err)
	}
	if failed := l.Err(); failed != nil {
		for _, r := range g.reqs {
			r.finish(failed)
		}
	} else {
		l.segMu.Lock()
		g.seg.index = append(g.seg.index, g.offsets...)
		g.seg.last = g.last
		g.seg.dataEnd = g.off + int64(g.n)
		l.last = g.last
		close(l.notify)
		l.notify = make(chan struct{})
		l.segMu.Unlock()
		l.traceAck(g.last)
		var payload uint64
		for _, r := range g.reqs {
			for _, p := range r.payloads {
				payload += uint64(len(p))
			}
		}
		l.appends.Add(uint64(len(g.reqs)))
		l.entries.Add(g.last - g.first + 1)
		l.bytes.Add(payload)
		l.flushes.Add(1)
		l.mu.Lock()
		l.gatherWant = len(l.pending) + len(g.reqs)
		l.mu.Unlock()
		for _, r := range g.reqs {
			r.finish(nil)
		}
	}
	l.bufs <- g.buf[:0]
	<-l.slots
}

// fail makes the log read-only with err.
func (l *Log) fail(err error) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	return l.failed
}

// rotate seals the active segment (if any) and creates the next. Nothing
// may be in flight. A failure to seal is permanent; a failure to create
// (a full disk) is returned and the next append tries again.
func (l *Log) rotate() error {
	// After a failure the active segment's bytes past the last durable
	// group are unknown: it is never sealed (recovery cuts it instead), and
	// nothing more is written.
	if err := l.Err(); err != nil {
		return err
	}
	if l.active != nil {
		if err := l.seal(l.active, l.activeOff, l.activeCRC); err != nil {
			return l.fail(err)
		}
		if seg := l.active; seg.next != nil && seg.size == l.opts.SegmentSize {
			seg.recyclable = l.queueNextTable(seg, seg.next.Finish(l.activeOff, seg.size, seg.stale))
		}
		l.active.next, l.active.stale = nil, nil
		l.active = nil
	}
	seg, permanent, err := l.createSegment(l.next)
	if err != nil {
		if permanent {
			return l.fail(err)
		}
		return err
	}
	l.segMu.Lock()
	l.segs = append(l.segs, seg)
	l.segMu.Unlock()
	l.active, l.activeOff, l.activeCRC = seg, SegmentHeaderSize, 0
	l.spareAsked = false
	l.rotations.Add(1)
	return nil
}

// seal writes seg's trailer for the data up to dataEnd and flushes it. The
// segment's entries must all be durable already.
func (l *Log) seal(seg *segment, dataEnd int64, crc uint32) error {
	l.segMu.RLock()
	last := seg.last
	f := seg.f
	l.segMu.RUnlock()
	if f == nil {
		var err error
		if f, err = ioengine.OpenFile(seg.path, os.O_RDWR, 0); err != nil {
			return fmt.Errorf("wal: seal: %w", err)
		}
		defer f.Close()
	}
	var t [TrailerSize]byte
	format.Trailer{LastSeq: last, DataEnd: uint64(dataEnd), DataCRC: crc}.Encode(t[:])
	if err := l.writeFile(f, seg.path, seg.size-TrailerSize, t[:], !l.opts.Unsafe.NoSync); err != nil {
		return fmt.Errorf("wal: seal: %w", err)
	}
	l.sealed(seg)
	l.segMu.Lock()
	seg.sealed = true
	if seg.f != nil {
		seg.f.Close()
		seg.f = nil
		seg.loaded = false // map it on first read; the index is known
	}
	l.segMu.Unlock()
	return nil
}

// createSegment creates, preallocates and names the segment starting at
// base: a temporary file gets its space and header, is flushed, renamed to
// its name, and the directory is flushed, all before any entry goes in.
// permanent reports a failure after which durability is in doubt.
func (l *Log) createSegment(base uint64) (_ *segment, permanent bool, _ error) {
	path := filepath.Join(l.dir, segmentName(base))
	size := l.opts.SegmentSize
	f, stale := l.takeSpare()
	var tmp string
	if f != nil {
		tmp = f.Name()
	} else {
		tmp = path + tmpSuffix
		var err error
		if f, err = ioengine.OpenFile(tmp, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644); err != nil {
			return nil, false, fmt.Errorf("wal: create segment: %w", err)
		}
		l.traceCreate(tmp, size)
		if err := preallocate(f.OS(), size); err != nil {
			f.Close()
			os.Remove(tmp)
			return nil, false, fmt.Errorf("wal: create segment: %w", err)
		}
	}
	// A reusable segment's header page is written whole: the header, then
	// zeros, so that the bytes past it read as unwritten (tail.go).
	reusable := l.opts.RecycleSegments
	h := make([]byte, SegmentHeaderSize, pageSize)
	format.SegmentHeader{BaseSeq: base, Size: uint64(size), Reusable: reusable}.Encode(h)
	if reusable {
		h = h[:pageSize]
	}
	if err := l.writeFile(f, tmp, 0, h, !l.opts.Unsafe.NoSync); err != nil {
		f.Close()
		os.Remove(tmp)
		// A failed write of a file that is then thrown away harms nothing
		// (a full disk: the next append tries again); a failed fdatasync is
		// never retried.
		var oe *ioengine.OpError
		synced := errors.As(err, &oe) && (oe.Op == ioengine.OpFdatasync || oe.Op == ioengine.OpFsync)
		return nil, synced, fmt.Errorf("wal: create segment: %w", err)
	}
	if err := l.rename(tmp, path); err != nil {
		f.Close()
		return nil, true, err
	}
	if err := l.syncDir(); err != nil {
		f.Close()
		return nil, true, err
	}
	if stale != nil {
		l.recycled.Add(1)
	}
	seg := &segment{base: base, path: path, size: size, reusable: reusable, last: base - 1, dataEnd: SegmentHeaderSize,
		index: []uint32{}, f: f, loaded: true}
	if reusable {
		seg.stale, seg.next = stale, format.NewStaleTableBuilder(size, h[:SegmentHeaderSize])
	}
	return seg, false, nil
}

// writeFile writes buf at off of f and, if sync, makes it durable: on
// io_uring with RWF_DSYNC on the write itself, otherwise (or with the
// linkedFdatasync test hook) with an fdatasync linked to the write — one
// submission, and the flush runs only after the write completed in full.
func (l *Log) writeFile(f *ioengine.File, path string, off int64, buf []byte, sync bool) error {
	return l.writeFileOn(l.eng, f, path, off, buf, sync)
}

// flushEngine is the engine of group flushes.
func (l *Log) flushEngine() *ioengine.Engine {
	if l.flushEng != nil {
		return l.flushEng
	}
	return l.eng
}

func (l *Log) writeFileOn(eng *ioengine.Engine, f *ioengine.File, path string, off int64, buf []byte, sync bool) error {
	id := l.traceWrite(path, off, buf)
	reqs := [2]ioengine.Request{
		{Op: ioengine.OpWrite, File: f, Off: off, Buf: buf},
		{Op: ioengine.OpFdatasync, File: f},
	}
	n := 1
	switch {
	case sync && l.dsync:
		reqs[0].DSync = true // one request: durable when it completes
	case sync:
		reqs[0].Link, n = true, 2
	}
	if err := eng.Do(reqs[:n]); err != nil {
		return fmt.Errorf("wal: write %s at offset %d, %d bytes: %w", path, off, len(buf), err)
	}
	if sync {
		l.traceSync(path, id)
	}
	return nil
}

// syncFile flushes f's data.
func (l *Log) syncFile(f *ioengine.File, path string) error {
	if l.opts.Unsafe.NoSync {
		return nil
	}
	req := [1]ioengine.Request{{Op: ioengine.OpFdatasync, File: f}}
	if err := l.eng.Do(req[:]); err != nil {
		return fmt.Errorf("wal: fdatasync %s: %w", path, err)
	}
	l.traceSync(path, 0)
	return nil
}

func (l *Log) rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	l.traceRename(from, to)
	return nil
}

func (l *Log) remove(path string) error {
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	l.traceRemove(path)
	return nil
}

// removeDurably removes path and flushes the directory, so that a later
// removal never becomes durable before this one.
func (l *Log) removeDurably(path string) error {
	if err := l.remove(path); err != nil {
		return err
	}
	return l.syncDir()
}

// syncDir flushes the directory, making creates, renames and removes in it
// durable.
func (l *Log) syncDir() error {
	if l.opts.Unsafe.NoSync {
		return nil
	}
	d, err := os.Open(l.dir)
	if err != nil {
		return fmt.Errorf("wal: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("wal: fsync directory %s: %w", l.dir, err)
	}
	l.traceSyncDir()
	return nil
}

// FirstSeq returns the sequence number of the first entry; when the log is
// empty, the one the next append gets.
func (l *Log) FirstSeq() uint64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.first
}

// LastSeq returns the sequence number of the last durable entry, or
// FirstSeq()-1 when the log is empty.
func (l *Log) LastSeq() uint64 {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	return l.last
}

// Stats returns the log's counters.
func (l *Log) Stats() Stats {
	l.segMu.RLock()
	s := Stats{Segments: len(l.segs), FirstSeq: l.first, LastSeq: l.last}
	l.segMu.RUnlock()
	s.Appends, s.Entries, s.Bytes = l.appends.Load(), l.entries.Load(), l.bytes.Load()
	s.Flushes, s.Rotations, s.TailCuts = l.flushes.Load(), l.rotations.Load(), l.tailCuts.Load()
	s.Recycled = l.recycled.Load()
	for _, c := range l.recovery.Cuts {
		s.TailCutBytes += uint64(c.Bytes)
		s.TailCutEntries += uint64(c.Entries)
	}
	s.Backend, s.FallbackReason = l.eng.Backend(), l.eng.FallbackReason()
	s.FlushLatency = l.flushHist.snapshot()
	return s
}

// Recovery returns what Open's recovery did to the files: the torn tail it
// cut, if any, and the stray files it removed.
func (l *Log) Recovery() Recovery { return l.recovery }

// Err returns the error that turned the log read-only, or nil.
func (l *Log) Err() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// Close waits for the appends in progress to finish, then releases the
// files. Appends after Close fail with ErrClosed. It returns the error that
// turned the log read-only, if one did.
//
// A log that did not fail (and is not Unsafe.NoSync) leaves a clean-close
// mark on its last segment, flushed: the next Open then treats damage to
// the entries it covers as corruption, not as a torn tail.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closing {
		l.mu.Unlock()
		return nil
	}
	l.closing = true
	l.cond.Broadcast()
	l.mu.Unlock()
	l.wg.Wait()
	l.stopLifecycle()
	err := l.Err()
	if err == nil {
		err = l.markClosed()
	}
	l.releaseAll()
	return err
}

// markClosed writes the clean-close mark over the active segment's
// trailer and flushes it: the entries end at activeOff after the last
// durable seq, and nothing is in flight. The committer has exited, so its
// fields are Close's to read. Without an active segment the last one is
// sealed (or there is none) and needs no mark.
func (l *Log) markClosed() error {
	seg := l.active
	if seg == nil || seg.f == nil || l.opts.Unsafe.NoSync {
		return nil
	}
	l.segMu.RLock()
	last := seg.last
	l.segMu.RUnlock()
	var t [TrailerSize]byte
	format.Trailer{LastSeq: last, DataEnd: uint64(l.activeOff), DataCRC: l.activeCRC, Closed: true}.Encode(t[:])
	if err := l.writeFile(seg.f, seg.path, seg.size-TrailerSize, t[:], true); err != nil {
		return fmt.Errorf("wal: close: writing the clean-close mark: %w", err)
	}
	return nil
}

// releaseAll unmaps and closes every segment, the engine (if the log's
// own) and the lock, and wakes followers.
func (l *Log) releaseAll() {
	l.segMu.Lock()
	if !l.closed {
		l.closed = true
		close(l.notify)
	}
	for _, s := range l.segs {
		s.release()
	}
	l.segs = nil
	l.segMu.Unlock()
	if l.meta != nil {
		l.meta.Close()
		l.meta = nil
	}
	if l.ownEngine {
		l.eng.Close()
	}
	if l.flushEng != nil {
		l.flushEng.Close()
	}
	if l.lock != nil {
		l.lock.Close()
	}
}
