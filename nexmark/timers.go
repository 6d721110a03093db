package nexmark

import (
	"container/heap"
)

// Timers is the event-time timers of a final stage (memState): a timer (ts, key) fires once the
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
func (t *Timers) DeleteTimer(ts int64, key []byte) {
	delete(t.set, timerKey{ts, string(key)})
	if len(t.h) > 2*len(t.set)+1024 {
		live := t.h[:0]
		for _, k := range t.h {
			if _, ok := t.set[k]; ok {
				live = append(live, k)
			}
		}
		clear(t.h[len(live):])
		t.h = live
		heap.Init(&t.h)
	}
}

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
	buf []byte // the memory of the rows row hands out, kept from one emitted row to the next
}

// row returns an empty output row built in o's own memory, which emitRow
// takes back: an emitted row costs no allocation once the memory has grown.
func (o *Out) row() row { return row{b: o.buf[:0], own: true} }

// emitRow counts the row r holds and, if it came from row, keeps its memory
// for the next.
func (o *Out) emitRow(r *row) {
	o.Sink.emitRow(r)
	if r.own {
		o.buf = r.b[:0]
	}
}

// Forward sends a record at event time ts to the query's final stage. ts
// must be later than the watermark the operator has seen.
func (o *Out) Forward(ts int64, data []byte) { o.fwd = append(o.fwd, Record{ts, data}) }
