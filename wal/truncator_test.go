package wal

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringstore/ringstore/wal/internal/format"
)

// metaGate holds every write of wal.meta (in place or whole) until it is
// opened, once armed.
type metaGate struct {
	armed   atomic.Bool
	reached chan struct{} // receives when a held write starts
	open    chan struct{}
}

func newMetaGate() *metaGate {
	return &metaGate{reached: make(chan struct{}, 16), open: make(chan struct{})}
}

func (g *metaGate) trace(ev traceEvent) {
	if ev.op == traceWrite && (ev.path == format.MetaName || ev.path == format.MetaName+tmpSuffix) && g.armed.Load() {
		g.reached <- struct{}{}
		<-g.open
	}
}

// appendWhileMetaHeld truncates the front at seq while wal.meta's write is
// held, and reports whether an append made meanwhile was acknowledged
// before the write was let go. The log holds 40 entries first.
func appendWhileMetaHeld(t *testing.T, seq func(last uint64) uint64) (ackedFirst bool, appended uint64) {
	t.Helper()
	g := newMetaGate()
	l, err := Open(t.TempDir(), Options{SegmentSize: 64 << 10, Logf: t.Logf, trace: g.trace})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for i := range 40 {
		if _, err := l.Append(fmt.Appendf(nil, "entry %d %0600d", i, i)); err != nil {
			t.Fatal(err)
		}
	}
	// The first TruncateFront writes wal.meta whole; the next ones write a
	// slot in place. Hold one of those.
	if err := l.TruncateFront(3); err != nil {
		t.Fatal(err)
	}
	g.armed.Store(true)
	target := seq(l.LastSeq())
	truncated := make(chan error, 1)
	go func() { truncated <- l.TruncateFront(target) }()
	<-g.reached
	type result struct {
		seq uint64
		err error
	}
	appendDone := make(chan result, 1)
	go func() {
		s, err := l.Append([]byte("after the truncation"))
		appendDone <- result{s, err}
	}()
	var r result
	select {
	case r = <-appendDone:
		ackedFirst = true
	case <-time.After(100 * time.Millisecond):
	}
	g.armed.Store(false)
	close(g.open)
	if err := <-truncated; err != nil {
		t.Fatal(err)
	}
	if !ackedFirst {
		r = <-appendDone
	}
	if r.err != nil {
		t.Fatal(r.err)
	}
	if got := l.FirstSeq(); got != target {
		t.Fatalf("FirstSeq %d after TruncateFront(%d)", got, target)
	}
	return ackedFirst, r.seq
}

// A front truncation that keeps entries makes wal.meta durable beside the
// appends: an append is acknowledged while the meta write is held.
func TestTruncateFrontBesideAppends(t *testing.T) {
	ackedFirst, seq := appendWhileMetaHeld(t, func(last uint64) uint64 { return last - 10 })
	if !ackedFirst {
		t.Fatal("an append waited for a front truncation's wal.meta write")
	}
	if seq != 41 {
		t.Fatalf("append got seq %d, want 41", seq)
	}
}

// A front truncation that empties the log past its last entry moves the
// next seq: no append may be acknowledged at the new seq before wal.meta
// says the log starts there (a crash would find a gap).
func TestTruncateFrontEmptyingHoldsAppends(t *testing.T) {
	ackedFirst, seq := appendWhileMetaHeld(t, func(last uint64) uint64 { return last + 5 })
	if ackedFirst {
		t.Fatal("an append was acknowledged before wal.meta recorded the emptied log's first seq")
	}
	if seq != 45 {
		t.Fatalf("append got seq %d, want 45", seq)
	}
}
