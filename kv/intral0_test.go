package kv

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ringstore/ringstore/ioengine"
)

// TestIntraL0Compaction writes small flushes over a large L1, as a store
// flushed every second does: L0's tables are merged among themselves
// (Stats.Compacted[0]) instead of rewriting L1 every L0CompactionTrigger
// flushes. Updates and deletes of the same keys in many overlapping tables,
// a snapshot taken between them, and a flush installed while a merge runs
// (newer than its whole run) must read back as the model says: newest wins,
// before and after a reopen (whose manifest check wants L0 newest first by
// number).
func TestIntraL0Compaction(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(mode.String(), func(t *testing.T) { testIntraL0(t, mode) })
	}
}

func testIntraL0(t *testing.T, mode ioengine.IOMode) {
	dir := t.TempDir()
	opts := Options{MemtableSize: 4 << 20, L0CompactionTrigger: 4, L0StopWritesTrigger: 12,
		BaseLevelSize: 8 << 20, TargetFileSize: 256 << 10, CacheSize: 1 << 20, IOMode: mode,
		DisableWAL: true, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { db.Close() }()
	r := rand.New(rand.NewPCG(30, 0))
	const nkeys = 12000
	m := model{}
	put := func(i int) {
		k, v := keyOf(i), valueOf(r)
		if err := db.Put(k, v); err != nil {
			t.Fatal(err)
		}
		m[string(k)] = v
	}
	for i := range nkeys {
		put(i)
	}
	if err := db.Compact(); err != nil { // L1 only: about 1.8 MB
		t.Fatal(err)
	}
	base := db.Stats()
	if base.Levels[1].Bytes < 1<<20 || base.Levels[0].Tables != 0 {
		t.Fatalf("after Compact: L0 %d tables, L1 %d bytes; want 0 and over 1 MiB", base.Levels[0].Tables, base.Levels[1].Bytes)
	}

	// A flush installed while the first merge is running: its writes are
	// newer than every table of the run and must stay ahead of the output.
	// Keys [0, hookKeys) are written in each of the first four flushes (the
	// first merge's run) and by the hook, and by nothing else.
	const hookKeys = 50
	duringMerge := []byte("written during the merge")
	var once sync.Once
	hookErr := make(chan error, 1)
	db.mu.Lock()
	db.testInCompaction = func() {
		once.Do(func() {
			var err error
			for i := 0; i < hookKeys && err == nil; i++ {
				err = db.Put(keyOf(i), duringMerge)
			}
			if err == nil {
				err = db.Flush()
			}
			hookErr <- err
		})
	}
	db.mu.Unlock()

	var snap *Snapshot
	var snapModel model
	for round := range 24 {
		if round < 4 {
			for i := range hookKeys {
				put(i)
			}
		}
		for range 60 {
			i := hookKeys + r.IntN(nkeys-hookKeys)
			if r.IntN(5) == 0 {
				if err := db.Delete(keyOf(i)); err != nil {
					t.Fatal(err)
				}
				delete(m, string(keyOf(i)))
			} else {
				put(i)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		// A store flushed every second gives its merges time between
		// flushes; without this wait a slow machine piles up
		// intraL0MaxTables tables, which rightly go to L1.
		waitL0Below(t, db, opts.L0CompactionTrigger)
		if round == 5 {
			snap, snapModel = db.NewSnapshot(), m.clone()
		}
	}
	select {
	case err := <-hookErr:
		if err != nil {
			t.Fatalf("writing during the merge: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no merging compaction ran")
	}
	for i := range hookKeys {
		m[string(keyOf(i))] = duringMerge
	}
	s := waitL0Below(t, db, opts.L0CompactionTrigger)
	t.Logf("after the flushes:\n%s", s)
	if s.Compacted[0].Count < 2 {
		t.Errorf("%d intra-L0 merges, want at least 2", s.Compacted[0].Count)
	}
	if got := s.Compacted[1].Written - base.Compacted[1].Written; got != 0 {
		t.Errorf("L0→L1 compactions rewrote %d bytes of L1 for small flushes, want none", got)
	}
	if s.Levels[0].Tables >= opts.L0CompactionTrigger {
		t.Errorf("L0 holds %d tables, want fewer than the trigger %d", s.Levels[0].Tables, opts.L0CompactionTrigger)
	}
	checkAgainst(t, db, m, r, ReadOptions{}, nkeys)
	// The snapshot was taken after round 5; the hook's writes may be on
	// either side of it, so only the keys it did not write are compared.
	for i := hookKeys; i < nkeys; i++ {
		k := keyOf(i)
		got, err := db.GetWith(ReadOptions{Snapshot: snap}, k)
		want, ok := snapModel[string(k)]
		if ok != (err == nil) || (err != nil && !errors.Is(err, ErrNotFound)) || !bytes.Equal(got, want) {
			t.Fatalf("snapshot Get %s: %x, %v; model found=%v %x", k, got, err, ok, want)
		}
	}
	snap.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(dir, opts); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		checkAgainst(t, db, m, r, ReadOptions{}, nkeys)
	}
}

// waitL0Below waits up to 30 seconds for L0 to hold fewer than n tables
// and returns the Stats it last saw (the caller checks them).
func waitL0Below(t *testing.T, db *DB, n int) Stats {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s := db.Stats()
		if s.Levels[0].Tables < n || time.Now().After(deadline) {
			return s
		}
		time.Sleep(time.Millisecond)
	}
}
