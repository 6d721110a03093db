package nexmark

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
	"github.com/ringstore/ringstore/state"
)

// memState is a final stage's state: values by name and key, and
// timers, in memory (a final stage is one operator of parallelism 1, its
// state a few keys per window or category).
type memState struct {
	Timers
	values map[string]map[string][]byte
}

func newMemState() *memState { return &memState{values: map[string]map[string][]byte{}} }

func (m *memState) get(name string, key []byte) ([]byte, bool) {
	v, ok := m.values[name][string(key)]
	return v, ok
}

func (m *memState) put(name string, key, value []byte) {
	if m.values[name] == nil {
		m.values[name] = map[string][]byte{}
	}
	m.values[name][string(key)] = append([]byte(nil), value...)
}

// update returns the value of key for the caller to change in place,
// size zero bytes if there is none, or one of another size.
func (m *memState) update(name string, key []byte, size int) []byte {
	v, ok := m.values[name][string(key)]
	if !ok || len(v) != size {
		if m.values[name] == nil {
			m.values[name] = map[string][]byte{}
		}
		v = make([]byte, size)
		m.values[name][string(key)] = v
	}
	return v
}

func (m *memState) delete(name string, key []byte) { delete(m.values[name], string(key)) }

// RunConfig is one run of a query.
type RunConfig struct {
	Query       string
	Events      int64
	Parallelism int   // workers; default DefaultParallelism
	Batch       int   // events per mini-batch; default DefaultBatch
	Checkpoint  int64 // a job checkpoint every this many events of the stream (checkpoint.go); 0: none
	Dir         string
	Gen         GenConfig
	Cache       int64 // each worker's block cache; default 1 MiB
	Memtable    int64 // each worker's memtable; default 4 MiB
	IOMode      ioengine.IOMode
	// StopAt ends the run after event StopAt-1 without a final checkpoint,
	// as a crash would (0: run to Events).
	StopAt int64
	// Restore starts the workers from the newest checkpoints in Dir and
	// replays the events after the positions they recorded. Checkpoints
	// taken with another Parallelism are rescaled: each worker takes its
	// key groups from them (checkpoint.go).
	Restore bool
	// KeyGroups is the number of key groups keys are hashed into, fixed
	// for the life of the state; default 128. A worker owns a contiguous
	// range of them (state.RangeForSubtask), so Parallelism can be at
	// most KeyGroups.
	KeyGroups int
	// ReadAhead starts the state reads of each worker's next mini-batches
	// while it processes the current one (state.MiniBatch.ReadAhead): the
	// worker submits them from its own thread and waits for them at their
	// Loads, with no goroutine or thread in between. On io_uring only: on
	// the syscall backend the reads wait for the Load.
	ReadAhead bool
	// ReadAheadBatches is how many mini-batches past the current one have
	// their reads in flight with ReadAhead, when the source has sent them;
	// default 4. Each holds the blocks it reads past the cache, up to
	// 1 MiB (kv.DB.ReadAhead).
	ReadAheadBatches int
	// ReadAheadPauseBelow pauses ReadAhead once the workers' state reads
	// have made fewer block reads from the device than this per second of
	// the process's CPU for a second, and resumes it as soon as they make
	// over 1.5 times this (aheadGate): where reads are that rare the
	// read-ahead's lookups cost more CPU than the waits they hide.
	// 0: DefaultReadAheadPauseBelow; negative: it never pauses.
	ReadAheadPauseBelow float64
	// ReadWorkers is, on the syscall backend, the goroutines that read
	// each worker's block-cache misses, each one pread at a time
	// (kv.Options.ReadWorkers): a MultiGet split over a pool of readers.
	// 0: one, the reads of a Load one after another.
	ReadWorkers int
	// SourceLead is how many events the source may have sent a worker
	// ahead of the one it processes (its channel holds SourceLead ÷ Batch
	// messages, at least 4); default DefaultSourceLead. The source makes
	// every worker's events in one order and stops at the first full
	// channel, so a worker behind by the whole lead stops the others' input
	// too; the deeper the lead, the longer one slow stretch it absorbs.
	SourceLead int
	// CheckpointEvery takes a job checkpoint each time this much wall time
	// has passed since the last (as a stream processor's periodic
	// checkpoints do), besides Checkpoint's; 0: none.
	CheckpointEvery time.Duration
	// CPUTime, if set, reads the process's CPU time in seconds (user and
	// system, every thread); Result.CPUSeconds is then its advance over
	// the span Result.Seconds measures, without the opening of the stores
	// before it and their closing after.
	CPUTime func() float64
	// MeasureSpan, if set, is called where the span Result.Seconds
	// measures starts, and the function it returns where that span ends:
	// the caller measures over exactly that span what the run does not
	// (the machine's CPU time, the device's counters).
	MeasureSpan func() (end func())
	// BesideReads, if its PerEvent is set, makes each stateful worker make
	// that many random reads of a file for each event it processes,
	// beside its state's: an instrument that prices a read (BesideReads).
	BesideReads BesideReads

	source func(id int64) Event // tests: the events instead of Gen's
	// gateTest, in tests, drives the read-ahead gate in place of its
	// sampling, until the function it returns is called.
	gateTest func(*aheadGate) (stop func())
}

// Result is what a run did.
type Result struct {
	Sink    Sink
	Events  int64
	Seconds float64 // from the first event sent to the last one's output
	// CPUSeconds is the process's CPU time over the same span, if
	// RunConfig.CPUTime was set.
	CPUSeconds  float64
	LoadSeconds float64 // time the workers spent in mini-batch Loads (state reads), summed
	StateBytes  int64   // the workers' stores on disk at the end
	CacheBytes  int64   // the workers' block caches, summed
	MultiGets   uint64
	KeysRead    uint64
	// The workers' block caches: lookups that found the block (CacheHits)
	// and that loaded it (CacheMisses); BlockReads counts every 4 KiB block
	// read from the device, cached or not.
	CacheHits, CacheMisses, BlockReads uint64
	// ReadAheadBlocks counts the blocks whose reads ran ahead of their
	// batch's Load (kv.Stats.ReadAheadBlocks).
	ReadAheadBlocks uint64
	// ReadAheadPaused counts the mini-batches with events loaded while
	// read-ahead was paused (RunConfig.ReadAheadPauseBelow); MultiGets
	// counts those and the rest, and the Loads of timers.
	ReadAheadPaused uint64
	// ReadCalls counts the engine calls that read blocks: the caches'
	// loads (bufpool.Stats.EngineCalls) and the reads past them
	// (kv.Stats.DirectReads).
	ReadCalls uint64
	// ReadingWorkers is how many workers the block reads were spread
	// over: (Σ rᵢ)² ÷ Σ rᵢ², rᵢ being worker i's block reads — the number
	// of workers for reads spread evenly, 1 where one worker made them
	// all (a query with one key).
	ReadingWorkers float64
	Backend        ioengine.Backend
	// ReadRequests and ReadBytes count the requests the workers' engines
	// made for their state: its reads (the caches' loads, the reads past
	// them, the tables' metadata; a read of adjacent blocks is one
	// request) and the few directory syncs of its checkpoints, which carry
	// no bytes.
	ReadRequests, ReadBytes uint64
	// WorkerEvents counts the events the workers processed: the stream's
	// events that the query's operators take (a query of bids takes no
	// person). BesideReads counts the reads RunConfig.BesideReads made,
	// PerEvent for each of those.
	WorkerEvents int64
	BesideReads  int64
}

// A run's defaults: the workers (a stream processor's subtasks) and the
// events of one mini-batch (one MultiGet of each worker's state).
const (
	DefaultParallelism = 4
	DefaultBatch       = 1000
	DefaultSourceLead  = 2048
)

func (c RunConfig) withDefaults() (RunConfig, error) {
	if c.Parallelism == 0 {
		c.Parallelism = DefaultParallelism
	}
	if c.Batch == 0 {
		c.Batch = DefaultBatch
	}
	if c.Cache == 0 {
		c.Cache = 1 << 20
	}
	if c.Memtable == 0 {
		c.Memtable = 4 << 20
	}
	if c.KeyGroups == 0 {
		c.KeyGroups = 128
	}
	if c.ReadAheadBatches == 0 {
		c.ReadAheadBatches = 4
	}
	if c.ReadAheadPauseBelow == 0 {
		c.ReadAheadPauseBelow = DefaultReadAheadPauseBelow
	}
	if c.SourceLead == 0 {
		c.SourceLead = DefaultSourceLead
	}
	q, ok := Lookup(c.Query)
	switch {
	case !ok:
		return c, fmt.Errorf("nexmark: unknown query %q (known: %v)", c.Query, QueryNames())
	case c.Events < 1 || c.Parallelism < 1 || c.Batch < 1 || c.Checkpoint < 0 || c.CheckpointEvery < 0 || c.ReadWorkers < 0 || c.SourceLead < 0:
		return c, fmt.Errorf("nexmark: events %d, parallelism %d, batch %d, checkpoint %d, checkpoint every %v, read workers %d, source lead %d: events, parallelism and batch must be positive, the others not negative",
			c.Events, c.Parallelism, c.Batch, c.Checkpoint, c.CheckpointEvery, c.ReadWorkers, c.SourceLead)
	case math.IsNaN(c.ReadAheadPauseBelow) || math.IsInf(c.ReadAheadPauseBelow, 0):
		return c, fmt.Errorf("nexmark: read-ahead pause below %v block reads per CPU-second: want a number (negative: never pause)", c.ReadAheadPauseBelow)
	case c.ReadAheadBatches < 0 || c.ReadAheadBatches > lookAheadLimit:
		return c, fmt.Errorf("nexmark: read-ahead of %d mini-batches: at least 0 and at most %d", c.ReadAheadBatches, lookAheadLimit)
	case c.KeyGroups > 0xFFFF || c.Parallelism > c.KeyGroups:
		return c, fmt.Errorf("nexmark: parallelism %d over %d key groups: a worker needs at least one, and there are at most 65535", c.Parallelism, c.KeyGroups)
	case q.Stateful && c.Dir == "":
		return c, fmt.Errorf("nexmark: %s keeps state and needs a directory", c.Query)
	}
	return c, c.BesideReads.check()
}

// sourceMessages is the depth of the source's channel to each worker:
// SourceLead events in messages of Batch, at least 4.
func (c RunConfig) sourceMessages() int { return max(4, c.SourceLead/c.Batch) }

// keyGroupOf is the key group of partition key k: that of its 8 bytes,
// the first 8 of every state and timer key of k.
func keyGroupOf(k int64, keyGroups int) int {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(k))
	return state.KeyGroup(b[:], keyGroups)
}

// worker is one subtask: the key groups it owns, its events in order, its
// state, its timers, its sink.
type worker struct {
	i         int
	q         Query
	cfg       RunConfig
	keyGroups int
	rng       state.KeyGroupRange
	eng       *ioengine.Engine // its own, inline: one hot caller
	backend   *state.Backend
	op        Operator
	// A ring of mini-batches: slots[cur] runs the batch being processed;
	// slots[cur+1], …, slots[cur+ahead] (mod len(slots)) hold the wants of
	// the first ahead messages with events in queue, their reads started
	// (read-ahead).
	slots    []batchSlot
	cur      int
	ahead    int
	queue    []batchMsg    // received from the source, not yet processed
	inClosed bool          // the source closed the channel
	loadTime time.Duration // in the batches' Loads: the state's reads
	out      Out
	// from is, per key group of rng, the first event id the worker
	// processes (after a restore; 0 otherwise). Immutable once the run
	// starts: the source reads it.
	from []int64
	wm   int64 // the watermark it has reached
	// beside makes RunConfig.BesideReads' reads (nil: none).
	beside *besideReader
	events int64 // processed
	// gate pauses read-ahead (nil: never paused); paused counts the
	// batches loaded while it was.
	gate   *aheadGate
	paused uint64
}

// takes says whether the worker processes event id of key group g.
func (w *worker) takes(id int64, g int) bool { return id >= w.from[g-w.rng.First] }

// batchMsg is what the source sends a worker: events in order, each with
// the key it is processed under, then the watermark they bring (no later
// event of the worker is at or before it).
//
// A barrier message (barrier set) carries no events: the worker takes
// its part of that job checkpoint, at position next.
type batchMsg struct {
	events  []keyedEvent
	wm      int64
	barrier *jobCheckpoint
	next    int64
}

// keyedEvent is an event as a worker takes it: under one of its keys.
type keyedEvent struct {
	Event
	key int64
}

// newBatch returns an empty events slice for a batch: one a worker handed
// back on spare, or a new one with room for a batch of n events and the
// further deliveries of the event that fills it.
func newBatch(spare <-chan []keyedEvent, n int) []keyedEvent {
	select {
	case b := <-spare:
		return b
	default:
		return make([]keyedEvent, 0, n+4)
	}
}

// batchSlot is a mini-batch and the lookups of its events.
type batchSlot struct {
	mb      *state.MiniBatch // nil for a stateless query
	lookups []Lookups        // one per event of a batch
}

// want declares the reads of events in the slot.
func (s *batchSlot) want(op Operator, events []keyedEvent) {
	if len(s.lookups) < len(events) {
		s.lookups = make([]Lookups, len(events))
	}
	wantBatch(op, s.mb, s.lookups, events)
}

// lookAheadLimit bounds RunConfig.ReadAheadBatches.
const lookAheadLimit = 8

// queueLimit bounds the messages a worker takes from its channel ahead of
// the one it processes, looking for the next ones with events. Those
// without count too: a timed query's worker gets a watermark message for
// every Batch×Parallelism events of the stream, about one between two of
// its batches (more when it has fewer than its share of the events), and
// a barrier each checkpoint.
const queueLimit = 4 * lookAheadLimit

// next returns the next message to process, in the source's order, and
// false once the source is done.
func (w *worker) next(in <-chan batchMsg) (batchMsg, bool) {
	if len(w.queue) == 0 {
		if w.inClosed {
			return batchMsg{}, false
		}
		m, ok := <-in
		if !ok {
			w.inClosed = true
			return batchMsg{}, false
		}
		w.queue = append(w.queue, m)
	}
	m := w.queue[0]
	w.queue = w.queue[1:]
	return m, true
}

// lookAhead takes, without waiting, the messages the source has already
// sent, and starts the reads of the next ones with events, up to
// len(slots)-1 past the one being processed, each in a slot of its own:
// while this batch is processed they load (kv.DB.ReadAhead). Each Load
// later reads the state as of then, so the writes of the batches before it
// are seen and records of one key keep their order.
func (w *worker) lookAhead(in <-chan batchMsg) {
	seen := 0 // messages with events in queue[:i]
	for i := 0; w.ahead < len(w.slots)-1; i++ {
		if i == len(w.queue) {
			if w.inClosed || len(w.queue) >= queueLimit {
				return
			}
			select {
			case m, ok := <-in:
				if !ok {
					w.inClosed = true
					return
				}
				w.queue = append(w.queue, m)
			default:
				return
			}
		}
		if len(w.queue[i].events) == 0 {
			continue
		}
		if seen++; seen <= w.ahead {
			continue // its reads are in flight already
		}
		w.ahead++
		s := &w.slots[(w.cur+w.ahead)%len(w.slots)]
		s.want(w.op, w.queue[i].events)
		s.mb.ReadAhead()
	}
}

// process runs a message: the events' reads in one load, their writes in
// one commit, then the timers the watermark fires. With read-ahead the
// next batches' reads are started before this one's load waits (after its
// own, where they were not started ahead) and again once it is done, and
// load while it waits and while it is processed.
func (w *worker) process(m batchMsg, in <-chan batchMsg) error {
	if len(m.events) > 0 {
		w.events += int64(len(m.events))
		startedAhead := w.ahead > 0 // this batch's reads, by lookAhead
		if startedAhead {
			// Its wants and reads are in the next slot. A batch not read
			// ahead reuses the last one's slot, whose maps are warm.
			w.cur = (w.cur + 1) % len(w.slots)
			w.ahead--
		}
		s := &w.slots[w.cur]
		ahead := w.cfg.ReadAhead && s.mb != nil // a stateless query reads nothing
		if ahead && w.gate != nil && w.gate.paused.Load() {
			ahead = false // the batches read ahead already keep their reads
			w.paused++
		}
		if !startedAhead {
			s.want(w.op, m.events)
			if ahead {
				// Not read ahead (the worker had caught up with the
				// source): its reads go first, then the next batches'.
				s.mb.ReadAhead()
			}
		}
		if ahead {
			w.lookAhead(in)
		}
		if w.beside != nil {
			if err := w.beside.batch(w.eng, len(m.events)); err != nil {
				return err
			}
		}
		if err := loadWanted(s.mb, &w.loadTime); err != nil {
			return err
		}
		if ahead {
			w.lookAhead(in) // what the source sent meanwhile
		}
		if err := processLoaded(w.op, w.q.Name, s.mb, s.lookups, m.events, &w.out); err != nil {
			return err
		}
	}
	if m.wm > w.wm {
		w.wm = m.wm
		if to, ok := w.op.(TimerOperator); ok {
			s := &w.slots[w.cur]
			return fireTimers(to, w.q.Name, s.mb, &s.lookups, m.wm, &w.out, &w.loadTime)
		}
	}
	return nil
}

// openWorker opens (or restores, from job checkpoint j) worker i's state.
func openWorker(i int, q Query, cfg RunConfig, j *jobCheckpoint) (*worker, error) {
	w := &worker{i: i, q: q, cfg: cfg, keyGroups: cfg.KeyGroups, rng: state.RangeForSubtask(i, cfg.Parallelism, cfg.KeyGroups), wm: math.MinInt64}
	w.from = make([]int64, w.rng.Last-w.rng.First+1)
	if !q.Stateful {
		w.slots = make([]batchSlot, 1) // no mini-batch: nothing to read
		var err error
		w.op, err = q.Open(nil)
		return w, err
	}
	// Each worker has its own engine, inline on io_uring: a worker whose
	// Load misses the cache submits its reads from its own thread, with no
	// hand-off to a ring goroutine and back; the reads it starts ahead are
	// submitted on that thread too. A worker that must wait parks on Go's
	// poller (ParkWaits), so its P runs the source, the other workers and
	// the final stage meanwhile: the workers outnumber the Ps.
	var err error
	if w.eng, err = ioengine.New(ioengine.Options{Mode: cfg.IOMode, Inline: true, ParkWaits: true, Logf: func(string, ...any) {}}); err != nil {
		return nil, fmt.Errorf("nexmark: %w", err)
	}
	// StrictReads: every read of an operator is declared (Wants, TimerWants)
	// and made in the batch's one MultiGet; one that is not is an error.
	opts := state.Options{MaxKeyGroups: cfg.KeyGroups, StrictReads: true, KV: kv.Options{Engine: w.eng, CacheSize: cfg.Cache, MemtableSize: cfg.Memtable,
		ReadWorkers: cfg.ReadWorkers, Logf: func(string, ...any) {}}}
	live := filepath.Join(cfg.Dir, fmt.Sprintf("worker-%d", i))
	if cfg.Restore {
		// What the crash left in the live directory is not used: the state
		// is the checkpoints'.
		if err = os.RemoveAll(live); err == nil && j != nil {
			err = w.restoreWorker(j, live, opts)
		}
	}
	if err == nil && w.backend == nil {
		w.backend, err = state.Open(live, opts)
	}
	if err == nil && cfg.BesideReads.PerEvent > 0 {
		w.beside, err = openBesideReader(cfg.BesideReads, i, cfg.Batch, w.eng)
	}
	if err == nil {
		w.op, err = q.Open(w.backend)
		n := 1
		if cfg.ReadAhead {
			n += cfg.ReadAheadBatches
		}
		w.slots = make([]batchSlot, n)
		for i := range w.slots {
			w.slots[i].mb = w.backend.NewMiniBatch()
		}
	}
	if err != nil {
		w.close()
		return nil, err
	}
	return w, nil
}

// close closes the worker's state and engine.
func (w *worker) close() error {
	var err error
	if w.beside != nil {
		err = w.beside.close()
		w.beside = nil
	}
	if w.backend != nil {
		err = errors.Join(err, w.backend.Close())
	}
	if w.eng != nil {
		err = errors.Join(err, w.eng.Close())
	}
	return err
}

// Run runs a query over the generated events on cfg.Parallelism workers.
func Run(cfg RunConfig) (Result, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return Result{}, err
	}
	q, _ := Lookup(cfg.Query)
	end := cfg.Events
	if cfg.StopAt > 0 {
		end = min(end, cfg.StopAt)
	}
	var j *jobCheckpoint
	if cfg.Restore && q.Stateful {
		if j, err = findCheckpoint(cfg.Dir); err != nil {
			return Result{}, err
		}
	}
	// cur is the generation this run checkpoints into and its last
	// checkpoint's number.
	cur := jobCheckpoint{dir: cfg.Dir, parallelism: cfg.Parallelism}
	rescaled := j != nil && j.parallelism != cfg.Parallelism
	switch {
	case rescaled:
		cur.gen = j.gen + 1
	case j != nil:
		cur.gen, cur.n = j.gen, j.n
	}
	workers := make([]*worker, cfg.Parallelism)
	for i := range workers {
		if workers[i], err = openWorker(i, q, cfg, j); err != nil {
			for _, w := range workers[:i] {
				w.close()
			}
			return Result{}, err
		}
	}
	closeAll := func() {
		for _, w := range workers {
			w.close()
		}
	}
	var fin *finalStage
	if q.Final != nil {
		fin = newFinalStage(q, cfg.Parallelism)
		if j != nil {
			b, err := os.ReadFile(j.final())
			if err != nil {
				closeAll()
				return Result{}, fmt.Errorf("nexmark: checkpoint %s: %w", j.final(), err)
			}
			s, err := decodeFinalSnapshot(j.final(), b)
			if err != nil {
				closeAll()
				return Result{}, fmt.Errorf("nexmark: restoring the final stage: %w", err)
			}
			fin.restore(s)
		}
	}
	if rescaled {
		// Checkpoint 0 of the new generation before any event, so a crash
		// from here on restores the rescaled job, and one before it the
		// old.
		err = nil
		for _, w := range workers {
			err = errors.Join(err, w.checkpoint(cur, 0))
		}
		if err == nil && fin != nil {
			err = fin.writeSnapshot(cur.final())
		}
		if err == nil {
			err = cur.complete()
		}
		if err != nil {
			closeAll()
			return Result{}, err
		}
	}
	checkpoints := q.Stateful && (cfg.Checkpoint > 0 || cfg.CheckpointEvery > 0)
	need := cfg.Parallelism // the parts of a job checkpoint
	if fin != nil {
		need++
	}
	acks := make(chan ack, 4*need)
	coordDone := make(chan error, 1)
	gen := cur // the generation the goroutines name checkpoints in; the source counts them in cur.n
	go func() { coordDone <- coordinate(gen, need, acks) }()
	var finCh chan finalMsg
	finDone := make(chan error, 1)
	if fin != nil {
		finCh = make(chan finalMsg, 4*cfg.Parallelism)
		al := &aligner{f: fin, held: make([][]finalMsg, cfg.Parallelism), snapshot: func(n int, f *finalStage) error {
			bar := gen
			bar.n = n
			err := f.writeSnapshot(bar.final())
			acks <- ack{n, err}
			return err
		}}
		go func() {
			var err error
			for m := range finCh {
				if err == nil {
					err = al.deliver(m)
				}
			}
			finDone <- err
		}()
	} else {
		close(finDone)
	}
	var cpu0 float64
	if cfg.CPUTime != nil {
		cpu0 = cfg.CPUTime()
	}
	var endSpan func()
	if cfg.MeasureSpan != nil {
		endSpan = cfg.MeasureSpan()
	}
	start := time.Now()
	stopGate := startAheadGate(cfg, workers)
	chans := make([]chan batchMsg, cfg.Parallelism)
	// Each worker hands the events slices of the batches it has processed
	// back to the source, which fills them again: a batch's slice is
	// neither kept nor read once its message is processed.
	spare := make([]chan []keyedEvent, cfg.Parallelism)
	errs := make([]error, cfg.Parallelism)
	var wg sync.WaitGroup
	for i, w := range workers {
		chans[i] = make(chan batchMsg, cfg.sourceMessages())
		spare[i] = make(chan []keyedEvent, cfg.sourceMessages()+len(w.slots)+1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				m, ok := w.next(chans[i])
				if !ok {
					return
				}
				if errs[i] != nil {
					continue
				}
				if m.barrier != nil {
					errs[i] = w.checkpoint(*m.barrier, m.next)
					if finCh != nil {
						finCh <- finalMsg{worker: i, wm: w.wm, barrier: m.barrier.n}
					}
					acks <- ack{m.barrier.n, errs[i]}
					continue
				}
				errs[i] = w.process(m, chans[i])
				if m.events != nil {
					clear(m.events)
					select {
					case spare[i] <- m.events[:0]:
					default:
					}
				}
				if finCh != nil {
					finCh <- finalMsg{worker: i, recs: w.out.fwd, wm: w.wm}
					w.out.fwd = nil
				}
			}
		}()
	}
	// The source: every event made once, routed by key. A batch carries
	// the watermark of the stream at its last event; for a query with
	// windows, every Batch×Parallelism events each worker also gets the
	// watermark on its own, so a worker with few events still fires its
	// timers (held below the first event it has not been sent).
	pending := make([][]keyedEvent, cfg.Parallelism)
	sent := make([]int64, cfg.Parallelism)
	for p := range sent {
		sent[p] = math.MinInt64
	}
	every := int64(cfg.Batch * cfg.Parallelism)
	timed := q.timed(workers[0].op)
	source := cfg.Gen.Generate
	if cfg.source != nil {
		source = cfg.source
	}
	// Every worker has processed the events before first (a restore's
	// position): the source starts there.
	first := int64(math.MaxInt64)
	for _, w := range workers {
		first = min(first, slices.Min(w.from))
	}
	var keys []int64
	var to []int
	lastCheckpoint := time.Now()
	for id := first; id < end; id++ {
		e := source(id)
		wm := e.Time() - WatermarkLag
		keys = q.Keys(e, keys[:0])
		to = to[:0]
		for _, k := range keys {
			g := keyGroupOf(k, cfg.KeyGroups)
			p := state.SubtaskForGroup(g, cfg.Parallelism, cfg.KeyGroups)
			to = append(to, p)
			if workers[p].takes(id, g) { // before: in the worker's checkpoint
				if pending[p] == nil {
					pending[p] = newBatch(spare[p], cfg.Batch)
				}
				pending[p] = append(pending[p], keyedEvent{e, k})
			}
		}
		// A batch ends after all of an event's deliveries to the worker, so
		// a checkpoint's position (the next event id) splits none.
		for _, p := range to {
			if len(pending[p]) >= cfg.Batch {
				chans[p] <- batchMsg{events: pending[p], wm: wm}
				pending[p], sent[p] = nil, wm
			}
		}
		if checkpoints && checkpointDue(cfg, id, &lastCheckpoint) {
			// Job checkpoint: each worker's events before id+1, then the
			// barrier.
			cur.n++
			bar := cur
			for p := range pending {
				if len(pending[p]) > 0 {
					chans[p] <- batchMsg{events: pending[p], wm: wm}
					pending[p], sent[p] = nil, wm
				}
				chans[p] <- batchMsg{barrier: &bar, next: id + 1}
			}
		}
		if timed && (id+1)%every == 0 {
			for p := range pending {
				w := wm
				if len(pending[p]) > 0 {
					w = min(w, pending[p][0].Time()-1)
				}
				if w > sent[p] {
					chans[p] <- batchMsg{wm: w}
					sent[p] = w
				}
			}
		}
	}
	for p := range pending {
		// The end of the stream is the end of time (no watermark after a
		// stop, as after a crash).
		wm := int64(math.MinInt64)
		if end == cfg.Events && timed {
			wm = math.MaxInt64
		}
		if len(pending[p]) > 0 || wm > sent[p] {
			chans[p] <- batchMsg{events: pending[p], wm: wm}
		}
		close(chans[p])
	}
	wg.Wait()
	stopGate()
	if finCh != nil {
		close(finCh)
	}
	finErr := <-finDone
	close(acks)
	finErr = errors.Join(finErr, <-coordDone)
	res := Result{Events: end, Seconds: time.Since(start).Seconds(), CacheBytes: cfg.Cache * int64(cfg.Parallelism)}
	if cfg.CPUTime != nil {
		res.CPUSeconds = cfg.CPUTime() - cpu0
	}
	if endSpan != nil {
		endSpan()
	}
	if fin != nil {
		res.Sink.Add(fin.out.Sink)
	}
	var sumSq float64 // Σ over workers of their block reads squared
	for i, w := range workers {
		res.Sink.Add(w.out.Sink)
		res.LoadSeconds += w.loadTime.Seconds()
		if w.backend != nil {
			st := w.backend.Stats()
			res.MultiGets += st.MultiGets
			res.KeysRead += st.KeysRead
			res.BlockReads += st.KV.BlockReads
			sumSq += float64(st.KV.BlockReads) * float64(st.KV.BlockReads)
			res.ReadAheadBlocks += st.KV.ReadAheadBlocks
			res.ReadAheadPaused += w.paused
			res.ReadCalls += st.KV.DirectReads
			if c := st.KV.Cache; c != nil {
				res.CacheHits += c.Hits
				res.CacheMisses += c.Misses
				res.ReadCalls += c.EngineCalls
			}
			res.Backend = st.KV.Backend
		}
		res.WorkerEvents += w.events
		if w.beside != nil {
			errs[i] = errors.Join(errs[i], w.beside.finish()) // so the engine has counted them
		}
		if w.eng != nil {
			// The worker's engine makes its state's reads and, if any,
			// the reads beside them; its store has no log, and its
			// flushes and compactions have engines of their own.
			st := w.eng.Stats()
			res.ReadRequests += st.Requests
			res.ReadBytes += st.Bytes
		}
		if w.beside != nil {
			res.BesideReads += w.beside.reads
			res.ReadRequests -= uint64(w.beside.reads)
			res.ReadBytes -= uint64(w.beside.reads) * uint64(w.beside.size)
		}
		// After a StopAt the restore starts from the checkpoints, not from
		// what Close leaves in the live directory.
		errs[i] = errors.Join(errs[i], w.close())
	}
	if sumSq > 0 {
		res.ReadingWorkers = float64(res.BlockReads) * float64(res.BlockReads) / sumSq
	}
	if q.Stateful {
		filepath.WalkDir(cfg.Dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && !isCheckpoint(p, cfg.Dir) {
				if info, err := d.Info(); err == nil {
					res.StateBytes += info.Size()
				}
			}
			return nil
		})
	}
	return res, errors.Join(append(errs, finErr)...)
}

// checkpointDue says whether a job checkpoint follows event id: every
// cfg.Checkpoint events, and once cfg.CheckpointEvery has passed since the
// last (*last, the time of the last, is then moved on). The clock is read
// once per 1,024 events.
func checkpointDue(cfg RunConfig, id int64, last *time.Time) bool {
	if cfg.Checkpoint > 0 && (id+1)%cfg.Checkpoint == 0 {
		*last = time.Now()
		return true
	}
	if cfg.CheckpointEvery > 0 && (id+1)%1024 == 0 {
		if now := time.Now(); now.Sub(*last) >= cfg.CheckpointEvery {
			*last = now
			return true
		}
	}
	return false
}

func isCheckpoint(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && len(rel) > 3 && rel[:3] == "ck-"
}
