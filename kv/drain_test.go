package kv

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestDrainL0 checks that DrainL0 moves the tables L0 holds at the call
// into L1 although they are fewer than L0CompactionTrigger, that a later
// flush keeps the usual trigger (stays in L0), and that every key reads
// back as the model says.
func TestDrainL0(t *testing.T) {
	db := openL0Test(t, 4)
	defer db.Close()
	r := rand.New(rand.NewPCG(32, 0))
	const nkeys = 2000
	m := model{}
	writeAndFlush := func() {
		t.Helper()
		for range 300 {
			i := r.IntN(nkeys)
			k, v := keyOf(i), valueOf(r)
			if err := db.Put(k, v); err != nil {
				t.Fatal(err)
			}
			m[string(k)] = v
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		writeAndFlush()
	}
	if got := db.Stats().Levels[0].Tables; got != 3 {
		t.Fatalf("L0 holds %d tables before DrainL0, want 3 (below the trigger)", got)
	}
	if err := db.DrainL0(context.Background()); err != nil {
		t.Fatal(err)
	}
	s := db.Stats()
	if s.Levels[0].Tables != 0 || s.Levels[1].Tables == 0 {
		t.Fatalf("after DrainL0: L0 %d tables, L1 %d; want 0 and some\n%s", s.Levels[0].Tables, s.Levels[1].Tables, s)
	}
	writeAndFlush()
	if err := db.WaitForCompactions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := db.Stats().Levels[0].Tables; got != 1 {
		t.Fatalf("a flush after DrainL0: L0 holds %d tables, want 1 (the trigger applies again)", got)
	}
	checkAgainst(t, db, m, r, ReadOptions{}, nkeys)
}

// TestWaitForCompactionsContext holds a compaction in its merge: the wait
// ends with the context's error, and without one once the merge is let go.
func TestWaitForCompactionsContext(t *testing.T) {
	db := openL0Test(t, 2)
	defer db.Close()
	entered, release := holdFirstMerge(db)
	defer release()
	for i := range 2 {
		if err := db.Put(keyOf(0), keyOf(i)); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := db.WaitForCompactions(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitForCompactions during a held merge: %v, want the context's deadline", err)
	}
	release()
	if err := db.WaitForCompactions(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := db.Stats().Levels[0].Tables; got >= db.Options().L0CompactionTrigger {
		t.Fatalf("after WaitForCompactions L0 holds %d tables, want fewer than %d", got, db.Options().L0CompactionTrigger)
	}
}

// openL0Test opens a small store without a log whose L0 compacts at
// trigger tables.
func openL0Test(t *testing.T, trigger int) *DB {
	t.Helper()
	db, err := Open(t.TempDir(), Options{MemtableSize: 1 << 20, L0CompactionTrigger: trigger,
		L0StopWritesTrigger: 12, CacheSize: 1 << 20, DisableWAL: true, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	return db
}
