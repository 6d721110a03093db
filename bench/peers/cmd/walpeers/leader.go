package main

import (
	"fmt"
	"sync/atomic"
)

// batchLeader feeds a peer the way a batching raft leader feeds its log:
// writers queue their entries and wait; one goroutine takes every entry
// queued (at most max), makes them durable with one call of the peer's
// batch API, and acknowledges them all. Indexes follow the queue's order,
// so each writer's entries (one in flight at a time) are in its order.
// After a failed call the log is not written again: that call's writers
// and every later one get its error.
type batchLeader struct {
	p       peerLog // owned by the leader goroutine
	max     int     // immutable
	queue   chan *pending
	stopped chan struct{} // closed when the leader goroutine has returned

	calls   atomic.Uint64 // peer calls that succeeded
	entries atomic.Uint64 // entries they made durable
}

// pending is one writer's append. A writer reuses its own pending: it has
// one append in flight at most.
type pending struct {
	payload []byte     // set by the writer before it queues; read by the leader
	done    chan error // capacity 1; the leader sends the outcome once
}

// newBatchLeader starts a leader writing p in calls of at most max
// entries.
func newBatchLeader(p peerLog, max int) (*batchLeader, error) {
	if max < 1 {
		return nil, fmt.Errorf("walpeers: batch cap %d: want at least 1", max)
	}
	l := &batchLeader{p: p, max: max, queue: make(chan *pending, max), stopped: make(chan struct{})}
	go l.run()
	return l, nil
}

// newPending returns a writer's pending.
func newPending() *pending { return &pending{done: make(chan error, 1)} }

// append queues payload as w's next entry and waits until it is durable.
// payload must stay unchanged until append returns.
func (l *batchLeader) append(w *pending, payload []byte) error {
	w.payload = payload
	l.queue <- w
	return <-w.done
}

// stop ends the leader. Every append must have returned before, and none
// may come after.
func (l *batchLeader) stop() {
	close(l.queue)
	<-l.stopped
}

func (l *batchLeader) run() {
	defer close(l.stopped)
	next := uint64(1)
	var failed error
	batch := make([]*pending, 0, l.max)
	payloads := make([][]byte, 0, l.max)
	for first := range l.queue {
		batch = append(batch[:0], first)
	take:
		for len(batch) < l.max {
			select {
			case w, ok := <-l.queue:
				if !ok {
					break take
				}
				batch = append(batch, w)
			default:
				break take
			}
		}
		err := failed
		if err == nil {
			payloads = payloads[:0]
			for _, w := range batch {
				payloads = append(payloads, w.payload)
			}
			n := uint64(len(batch))
			if err = l.p.write(next, payloads); err != nil {
				err = fmt.Errorf("write %d–%d: %w", next, next+n-1, err)
				failed = err
			} else {
				next += n
				l.calls.Add(1)
				l.entries.Add(n)
			}
			clear(payloads)
		}
		for _, w := range batch {
			w.payload = nil
			w.done <- err
		}
	}
}
