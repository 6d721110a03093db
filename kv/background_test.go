package kv

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ringstore/ringstore/kv/sstable"
)

// TestFlushDuringCompaction holds a compaction in the middle of its merge
// and checks that a flush still completes meanwhile (flushes and
// compactions run on goroutines of their own), that writers are not held
// behind it, and that every key is read back once the compaction ends.
func TestFlushDuringCompaction(t *testing.T) {
	opts := crashOptions()
	opts.Logf = t.Logf
	db, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	entered, release := holdFirstMerge(db)
	defer release()

	key := func(i int) []byte { return fmt.Appendf(nil, "key%06d", i) }
	val := func(i int) []byte { return fmt.Appendf(nil, "value of %d, padded to a few dozen bytes", i) }
	n := 0
	writeAndFlush := func(count int) error {
		// Every table holds key 0, so their ranges overlap and the
		// compaction merges (no trivial move).
		if err := db.Put(key(0), val(0)); err != nil {
			return err
		}
		for range count {
			if err := db.Put(key(n), val(n)); err != nil {
				return err
			}
			n++
		}
		return db.Flush()
	}
	// Two L0 tables reach L0CompactionTrigger (2): a compaction starts and
	// stops in the hook.
	for range 2 {
		if err := writeAndFlush(500); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no compaction started after two flushes")
	}
	before := db.Stats()
	done := make(chan error, 1)
	go func() { done <- writeAndFlush(500) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a Flush did not finish while a compaction was running: flushes wait for compactions")
	}
	after := db.Stats()
	if after.Flushes != before.Flushes+1 || after.Compactions != before.Compactions {
		t.Errorf("while the compaction was held: flushes %d -> %d, compactions %d -> %d; want one more flush and no compaction",
			before.Flushes, after.Flushes, before.Compactions, after.Compactions)
	}
	release()
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if st := db.Stats(); st.Compactions == before.Compactions || st.Levels[0].Tables != 0 {
		t.Errorf("after Compact: %d compactions (%d before), %d L0 tables", st.Compactions, before.Compactions, st.Levels[0].Tables)
	}
	for i := range n {
		if v, err := db.Get(key(i)); err != nil || string(v) != string(val(i)) {
			t.Fatalf("Get(%s) after the compactions: %q, %v", key(i), v, err)
		}
	}
}

// TestCompactionInputWalksTheTable: a compaction's iterator, reading a table in
// chunks of consecutive blocks, yields exactly what the table's own
// sequential iterator yields, over a table of several chunks.
func TestCompactionInputWalksTheTable(t *testing.T) {
	opts := Options{Logf: t.Logf, DisableAutoCompaction: true, Unsafe: UnsafeOptions{NoSync: true}}
	db, err := Open(t.TempDir(), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for i := range 12000 {
		if err := db.Put(fmt.Appendf(nil, "key%06d", i), fmt.Appendf(nil, "%0200d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	db.mu.Lock()
	tb := db.current.levels[0][0]
	db.mu.Unlock()
	if tb.meta.Size < 3*compactionChunk {
		t.Fatalf("the table is %d bytes: want several %d-byte chunks", tb.meta.Size, compactionChunk)
	}
	rd, err := db.reader(tb)
	if err != nil {
		t.Fatal(err)
	}
	want := rd.NewIterator()
	got := newCompactionIter(db, tb)
	defer got.close()
	n := 0
	for ok := got.seekGE(nil); ; ok = got.next() {
		wok := want.Next()
		if ok != wok {
			t.Fatalf("entry %d: the compaction iterator has one: %v, the table iterator: %v (%v, %v)", n, ok, wok, got.err(), want.Err())
		}
		if !ok {
			break
		}
		if sstable.Compare(got.key(), want.Key()) != 0 || string(got.value()) != string(want.Value()) {
			t.Fatalf("entry %d: %s=%q, the table iterator %s=%q", n, got.key(), got.value(), want.Key(), want.Value())
		}
		n++
	}
	if got.err() != nil || want.Err() != nil || n != 12000 {
		t.Fatalf("%d entries, errors %v, %v", n, got.err(), want.Err())
	}
}

// holdFirstMerge makes db's first merging compaction stop in its merge:
// entered is closed when it has stopped there, and release (safe to call
// more than once) lets it go on.
func holdFirstMerge(db *DB) (entered <-chan struct{}, release func()) {
	in, out := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	db.mu.Lock()
	db.testInCompaction = func() {
		once.Do(func() {
			close(in)
			<-out
		})
	}
	db.mu.Unlock()
	return in, func() { released.Do(func() { close(out) }) }
}
