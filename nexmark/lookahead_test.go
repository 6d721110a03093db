package nexmark

import (
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// A timed query's worker gets a watermark message between its batches;
// those carry no reads and must not use up the read-ahead: with
// ReadAheadBatches n, the worker starts the reads of the n batches after
// the one it processes, whatever messages without events come between.
func TestLookAheadPastWatermarks(t *testing.T) {
	q, _ := Lookup("q4")
	cfg, err := RunConfig{Query: q.Name, Events: 1000, Batch: 10, Dir: testdir.Direct(t), IOMode: ioengine.URing,
		ReadAhead: true, ReadAheadBatches: lookAheadLimit}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	w, err := openWorker(0, q, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.close()
	if !q.timed(w.op) {
		t.Fatal("q4 has no timers: the test needs a query whose workers get watermark messages")
	}
	in := make(chan batchMsg, 4*lookAheadLimit)
	var keys []int64
	id := int64(0)
	for b := 0; b < lookAheadLimit+1; b++ {
		var events []keyedEvent
		for len(events) < cfg.Batch {
			e := cfg.Gen.Generate(id)
			id++
			for _, k := range q.Keys(e, keys[:0]) {
				events = append(events, keyedEvent{e, k})
			}
		}
		// Two watermark messages between batches, as a worker with fewer
		// than its share of the events gets.
		in <- batchMsg{wm: int64(b)}
		in <- batchMsg{wm: int64(b) + 1}
		in <- batchMsg{events: events, wm: int64(b) + 1}
	}
	w.lookAhead(in)
	if w.ahead != lookAheadLimit {
		t.Fatalf("read ahead %d batches, want %d (ReadAheadBatches); %d messages taken", w.ahead, lookAheadLimit, len(w.queue))
	}
}
