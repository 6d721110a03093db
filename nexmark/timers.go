package nexmark

import (
	"container/heap"
	"fmt"
	"math"
)

// Timers is the event-time timers of the in-memory stores (Reference's
// MapStore and the final stage): a timer (ts, key) fires once the
// watermark reaches ts. The runner's workers keep theirs as state
// (state.TimerService). Setting a timer that is set does nothing;
// DeleteTimer drops one that has not fired. One goroutine at a time.
type Timers struct {
	set map[timerKey]struct{}
	h   timerHeap
}

type timerKey struct {
	ts  int64
	key string
}

type timerHeap []timerKey

func (h timerHeap) Len() int { return len(h) }
func (h timerHeap) Less(i, j int) bool {
	return h[i].ts < h[j].ts || h[i].ts == h[j].ts && h[i].key < h[j].key
}
func (h timerHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *timerHeap) Push(x any)   { *h = append(*h, x.(timerKey)) }
func (h *timerHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// Timer sets a timer at ts for key.
func (t *Timers) Timer(ts int64, key []byte) {
	if t.set == nil {
		t.set = map[timerKey]struct{}{}
	}
	k := timerKey{ts, string(key)}
	if _, ok := t.set[k]; ok {
		return
	}
	t.set[k] = struct{}{}
	heap.Push(&t.h, k)
}

// DeleteTimer drops the timer at ts for key, if it is set. The heap keeps
// its entry until it comes to the top, where due skips it.
func (t *Timers) DeleteTimer(ts int64, key []byte) { delete(t.set, timerKey{ts, string(key)}) }

// Len is the number of timers set.
func (t *Timers) Len() int { return len(t.set) }

// due removes and returns the timers at or before wm, in (ts, key) order.
func (t *Timers) due(wm int64) []timerKey {
	var out []timerKey
	for len(t.h) > 0 && t.h[0].ts <= wm {
		k := heap.Pop(&t.h).(timerKey)
		if _, ok := t.set[k]; ok {
			delete(t.set, k)
			out = append(out, k)
		}
	}
	return out
}

// Record is what a query's first stage forwards to its final stage: an
// event time and the stage's bytes.
type Record struct {
	TS   int64
	Data []byte
}

// Out is where an operator's results go: rows to the sink, and records to
// the query's final stage (Forward).
type Out struct {
	Sink
	fwd []Record
}

// Forward sends a record at event time ts to the query's final stage. ts
// must be later than the watermark the operator has seen.
func (o *Out) Forward(ts int64, data []byte) { o.fwd = append(o.fwd, Record{ts, data}) }

// finalStage runs a query's Final operator on one goroutine: it holds
// the first stage's records and, once every input's watermark has passed a
// record's time, processes the records in (time, bytes) order, then fires
// its timers. The order does not depend on which worker sent a record or
// when, so the output is the same in every run.
type finalStage struct {
	q       Query
	store   *MapStore
	out     Out
	wms     []int64 // each input's watermark
	done    int64   // the watermark processed up to
	pending recordHeap
}

type recordHeap []Record

func (h recordHeap) Len() int { return len(h) }
func (h recordHeap) Less(i, j int) bool {
	return h[i].TS < h[j].TS || h[i].TS == h[j].TS && string(h[i].Data) < string(h[j].Data)
}
func (h recordHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)   { *h = append(*h, x.(Record)) }
func (h *recordHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func newFinalStage(q Query, inputs int) *finalStage {
	f := &finalStage{q: q, store: NewMapStore(), wms: make([]int64, inputs), done: math.MinInt64}
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
		heap.Push(&f.pending, r)
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
	for len(f.pending) > 0 && f.pending[0].TS <= low {
		r := heap.Pop(&f.pending).(Record)
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
