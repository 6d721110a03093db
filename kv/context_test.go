package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
)

// stalledDB returns a store whose next write stalls: L0 holds
// L0StopWritesTrigger tables, compactions are off, and the memtable is
// full. It returns the keys written.
func stalledDB(t *testing.T, dir string) (*DB, Options, []string) {
	t.Helper()
	opts := Options{MemtableSize: 64 << 10, L0CompactionTrigger: 1, L0StopWritesTrigger: 2, DisableAutoCompaction: true, Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 1024)
	var keys []string
	put := func(ctx context.Context, k string) error {
		var b Batch
		b.Put([]byte(k), value)
		return db.WriteContext(ctx, &b)
	}
	for round := range 2 {
		for i := range 40 { // less than a memtable: each round is one L0 table
			k := fmt.Sprintf("r%d-%03d", round, i)
			if err := put(context.Background(), k); err != nil {
				t.Fatal(err)
			}
			keys = append(keys, k)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	// Fill the memtable: the write after the one that fills it stalls,
	// which a short deadline shows.
	for i := range 200 {
		k := fmt.Sprintf("r2-%03d", i)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		err := put(ctx, k)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			if db.Stats().WriteStalls == 0 {
				t.Fatal("a write gave up with no stall counted")
			}
			return db, opts, keys
		}
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	t.Fatal("no write stalled")
	return nil, opts, nil
}

func TestWriteContextStall(t *testing.T) {
	dir := testdir.Direct(t)
	db, opts, keys := stalledDB(t, dir)
	last := db.visible.Load()

	// A leader stalled, and a writer queued behind it: the writer's
	// deadline ends its wait while the leader still waits.
	leaderCtx, cancelLeader := context.WithCancel(context.Background())
	stalls := db.Stats().WriteStalls
	leader := make(chan error, 1)
	go func() {
		var b Batch
		b.Put([]byte("leader"), []byte("x"))
		leader <- db.WriteContext(leaderCtx, &b)
	}()
	for db.Stats().WriteStalls == stalls {
		time.Sleep(time.Millisecond)
	}
	follower := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		var b Batch
		b.Put([]byte("follower"), []byte("y"))
		follower <- db.WriteContext(ctx, &b)
	}()
	select {
	case err := <-follower:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("queued writer: %v, want DeadlineExceeded", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a writer queued behind a stalled leader did not give up at its deadline")
	}
	select {
	case err := <-leader:
		t.Fatalf("the stalled leader returned %v before its context ended", err)
	default:
	}
	cancelLeader()
	if err := <-leader; !errors.Is(err, context.Canceled) {
		t.Fatalf("stalled leader: %v, want Canceled", err)
	}
	if got := db.visible.Load(); got != last {
		t.Fatalf("visible seq %d after the abandoned writes, want %d", got, last)
	}

	// The store goes on: a compaction ends the stall, the next write
	// takes the next sequence number, and no abandoned write is there.
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if err := db.Put([]byte("after"), []byte("z")); err != nil {
		t.Fatal(err)
	}
	if got := db.visible.Load(); got != last+1 {
		t.Fatalf("visible seq %d after the next write, want %d", got, last+1)
	}
	check := func(db *DB) {
		t.Helper()
		for _, k := range []string{"leader", "follower"} {
			if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
				t.Fatalf("Get(%s) of an abandoned write: %v, want ErrNotFound", k, err)
			}
		}
		for _, k := range append(keys, "after") {
			if _, err := db.Get([]byte(k)); err != nil {
				t.Fatalf("Get(%s): %v", k, err)
			}
		}
	}
	check(db)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	check(db)
}

func TestCheckpointContext(t *testing.T) {
	dir := testdir.Direct(t)
	db, err := Open(dir, Options{Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cp := filepath.Join(t.TempDir(), "cp")
	if err := db.Checkpoint(ctx, cp); !errors.Is(err, context.Canceled) {
		t.Fatalf("Checkpoint with a canceled context: %v, want Canceled", err)
	}
	if _, err := os.Stat(cp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a canceled Checkpoint left %s: %v", cp, err)
	}
	var b Batch
	b.Put([]byte("k2"), []byte("v2"))
	if err := db.WriteContext(ctx, &b); !errors.Is(err, context.Canceled) {
		t.Fatalf("WriteContext with a canceled context: %v, want Canceled", err)
	}
	if _, err := db.Get([]byte("k2")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a write given up: %v, want ErrNotFound", err)
	}
	if err := db.Checkpoint(context.Background(), cp); err != nil {
		t.Fatal(err)
	}
}
