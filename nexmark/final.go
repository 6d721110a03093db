package nexmark

import (
	"bytes"
	"cmp"
	"container/heap"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"

	"github.com/ringstore/ringstore/internal/crc32c"
	"github.com/ringstore/ringstore/internal/durable"
)

// finalStage runs a query's Final operator on one goroutine: it holds
// the first stage's records and, once every input's watermark has passed a
// record's time, processes the records in (time, bytes) order, then fires
// its timers. The order does not depend on which worker sent a record or
// when, so the output is the same in every run.
//
// A worker mostly sends its records in that order already: each input's
// records that come in order wait in a queue of its own (runs[i]), the
// others in one heap (pending), and the next record is the least of the
// queues' heads and the heap's top.
type finalStage struct {
	q       Query
	store   *memState
	out     Out
	wms     []int64 // each input's watermark
	done    int64   // the watermark processed up to
	runs    [][]Record
	pending recordHeap
}

// recordLess orders records by time, then bytes.
func recordLess(a, b *Record) bool {
	return a.TS < b.TS || a.TS == b.TS && string(a.Data) < string(b.Data)
}

type recordHeap []Record

func (h recordHeap) Len() int           { return len(h) }
func (h recordHeap) Less(i, j int) bool { return recordLess(&h[i], &h[j]) }
func (h recordHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)        { *h = append(*h, x.(Record)) }
func (h *recordHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newFinalStage(q Query, inputs int) *finalStage {
	f := &finalStage{q: q, store: newMemState(), wms: make([]int64, inputs), done: math.MinInt64, runs: make([][]Record, inputs)}
	for i := range f.wms {
		f.wms[i] = math.MinInt64
	}
	return f
}

// add takes input i's records and its new watermark.
func (f *finalStage) add(i int, recs []Record, wm int64) error {
	for _, r := range recs {
		if r.TS <= f.done {
			return fmt.Errorf("nexmark: %s: a record at %d after the final stage passed %d", f.q.Name, r.TS, f.done)
		}
		if run := f.runs[i]; len(run) == 0 || !recordLess(&r, &run[len(run)-1]) {
			f.runs[i] = append(run, r)
		} else {
			heap.Push(&f.pending, r)
		}
	}
	f.wms[i] = max(f.wms[i], wm)
	low := f.wms[0]
	for _, w := range f.wms[1:] {
		low = min(low, w)
	}
	if low <= f.done {
		return nil
	}
	f.done = low
	for {
		r, ok := f.next(low)
		if !ok {
			break
		}
		if err := f.q.Final.Process(r, f.store, &f.out); err != nil {
			return fmt.Errorf("nexmark: %s final stage: %w", f.q.Name, err)
		}
	}
	for {
		due := f.store.Timers.due(low)
		if len(due) == 0 {
			return nil
		}
		for _, t := range due {
			if err := f.q.Final.OnTimer(t.ts, []byte(t.key), f.store, &f.out); err != nil {
				return fmt.Errorf("nexmark: %s final stage, timer at %d: %w", f.q.Name, t.ts, err)
			}
		}
	}
}

// next takes the least record held, if its time is at most low.
func (f *finalStage) next(low int64) (Record, bool) {
	var least *Record
	from := -1 // the run least heads; -1: the heap
	if len(f.pending) > 0 {
		least = &f.pending[0]
	}
	for i, run := range f.runs {
		if len(run) > 0 && (least == nil || recordLess(&run[0], least)) {
			least, from = &run[0], i
		}
	}
	if least == nil || least.TS > low {
		return Record{}, false
	}
	if from < 0 {
		return heap.Pop(&f.pending).(Record), true
	}
	r := f.runs[from][0]
	f.runs[from][0] = Record{}
	if f.runs[from] = f.runs[from][1:]; len(f.runs[from]) == 0 {
		f.runs[from] = f.runs[from][:0:0] // its array is used up: a fresh one next time
	}
	return r, true
}

// finalMsg is what a worker sends the final stage: its records and the
// watermark it has reached, or (barrier > 0) that it has taken job
// checkpoint barrier.
type finalMsg struct {
	worker  int
	recs    []Record
	wm      int64
	barrier int
}

// aligner feeds a final stage the workers' messages, aligned as Flink
// aligns checkpoint barriers: once a worker's barrier n has come, its
// later messages are held until every worker's has; then the stage's
// state is its state at checkpoint n (every record of an event before
// the barrier's position, none after), snapshot is called with it, and
// the held messages go on.
type aligner struct {
	f        *finalStage
	held     [][]finalMsg // per worker, after its barrier
	arrived  int          // workers whose barrier has come
	barrier  int          // the barrier being aligned (0: none)
	snapshot func(n int, f *finalStage) error
}

func (a *aligner) deliver(m finalMsg) error {
	if a.held[m.worker] != nil {
		a.held[m.worker] = append(a.held[m.worker], m)
		return nil
	}
	if err := a.f.add(m.worker, m.recs, m.wm); err != nil {
		return err
	}
	if m.barrier == 0 {
		return nil
	}
	if a.barrier != 0 && a.barrier != m.barrier {
		return fmt.Errorf("nexmark: %s final stage: barrier %d from worker %d while aligning %d", a.f.q.Name, m.barrier, m.worker, a.barrier)
	}
	a.barrier = m.barrier
	a.held[m.worker] = []finalMsg{}
	if a.arrived++; a.arrived < len(a.held) {
		return nil
	}
	if err := a.snapshot(a.barrier, a.f); err != nil {
		return err
	}
	held := a.held
	a.held, a.arrived, a.barrier = make([][]finalMsg, len(held)), 0, 0
	for _, ms := range held {
		for _, m := range ms {
			if err := a.deliver(m); err != nil {
				return err
			}
		}
	}
	return nil
}

// finalSnapshot is a final stage's state at a checkpoint.
type finalSnapshot struct {
	Values  map[string]map[string][]byte
	Timers  []finalTimer
	Pending []Record
	WMs     []int64
	Done    int64
	Sink    Sink
}

type finalTimer struct {
	TS  int64
	Key string
}

// A final stage's snapshot file: the snapshot, gob-encoded, then its
// CRC-32C (4 bytes, big endian).

func (f *finalStage) encodeSnapshot() ([]byte, error) {
	s := finalSnapshot{Values: f.store.values, Pending: slices.Concat(append([][]Record{f.pending}, f.runs...)...), WMs: f.wms, Done: f.done, Sink: f.out.Sink}
	for k := range f.store.Timers.set {
		s.Timers = append(s.Timers, finalTimer{k.ts, k.key})
	}
	slices.SortFunc(s.Timers, func(a, b finalTimer) int {
		return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.Key, b.Key))
	})
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(&s); err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint32(buf.Bytes(), crc32c.Checksum(buf.Bytes())), nil
}

// decodeFinalSnapshot reads what encodeSnapshot wrote, the file path, or
// says what is wrong with it: a *ringstore.CorruptError naming path.
func decodeFinalSnapshot(path string, b []byte) (finalSnapshot, error) {
	var s finalSnapshot
	if len(b) < 4 {
		return s, damaged(path, 0, "a final-stage snapshot of %d bytes", len(b))
	}
	body := b[:len(b)-4]
	if got, want := crc32c.Checksum(body), binary.BigEndian.Uint32(b[len(b)-4:]); got != want {
		return s, damaged(path, int64(len(body)), "a final-stage snapshot of %d bytes fails its checksum (%08x, recorded %08x)", len(b), got, want)
	}
	if err := gob.NewDecoder(bytes.NewReader(body)).Decode(&s); err != nil {
		return s, damaged(path, -1, "a final-stage snapshot: %v", err)
	}
	if len(s.WMs) == 0 {
		return s, damaged(path, -1, "a final-stage snapshot with no inputs")
	}
	return s, nil
}

// restore sets the stage to a snapshot taken with any number of inputs:
// with another number, every input starts at the lowest watermark any
// had (the stage had processed up to it, no further).
func (f *finalStage) restore(s finalSnapshot) {
	f.store = newMemState()
	if s.Values != nil {
		f.store.values = s.Values
	}
	for _, t := range s.Timers {
		f.store.Timers.Timer(t.TS, []byte(t.Key))
	}
	f.pending = slices.Clone(s.Pending)
	heap.Init(&f.pending)
	f.runs = make([][]Record, len(f.wms))
	if len(s.WMs) == len(f.wms) {
		copy(f.wms, s.WMs)
	} else {
		low := slices.Min(s.WMs)
		for i := range f.wms {
			f.wms[i] = low
		}
	}
	f.done, f.out = s.Done, Out{Sink: s.Sink}
}

// writeFileAtomic writes b to path whole or not at all: a temporary file,
// synced, renamed, the directory synced.
func writeFileAtomic(path string, b []byte) error {
	tmp := path + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if err = errors.Join(err, f.Close()); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return durable.SyncDir(filepath.Dir(path))
}

// writeSnapshot writes the stage's state to path, whole or not at all.
func (f *finalStage) writeSnapshot(path string) error {
	b, err := f.encodeSnapshot()
	if err == nil {
		err = writeFileAtomic(path, b)
	}
	if err != nil {
		return fmt.Errorf("nexmark: %s final stage: snapshot: %w", f.q.Name, err)
	}
	return nil
}
