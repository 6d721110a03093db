package kv

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// TestWritersOnAFailedSync: 64 writers write until they fail while the
// log's next fdatasync is held and then fails with EIO, so that the groups
// queued behind it fail together. Every writer returns (none is left
// waiting in the queue), each with an error wrapping EIO: those in the
// failed groups with the failure itself, later ones with the read-only
// store's. Reads go on working, and after a reopen every acknowledged write
// is there. The syscall backend runs the log's syncs on the faulted engine.
func TestWritersOnAFailedSync(t *testing.T) {
	plan := ioengine.NewFaultPlan()
	dir := testdir.Direct(t)
	opts := Options{Engine: testengine.New(t, ioengine.Syscall, ioengine.Options{Faults: plan}), Logf: t.Logf}
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	key := func(w, i int) []byte { return []byte(fmt.Sprintf("w%02d-%04d", w, i)) }
	if err := db.Put([]byte("before"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	plan.Add(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpFdatasync, Hold: hold})

	const writers, most = 64, 200
	acked := make([]int, writers) // writes acknowledged, in order, per writer
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range most {
				if errs[w] = db.Put(key(w, i), bytes.Repeat([]byte{byte(w)}, 100)); errs[w] != nil {
					return
				}
				acked[w]++
			}
		}()
	}
	time.Sleep(200 * time.Millisecond) // let the writers queue behind the held sync
	close(hold)
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(60 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("writers still waiting a minute after the failed sync:\n%s", buf[:runtime.Stack(buf, true)])
	}
	failedInGroup := 0
	for w, err := range errs {
		if err == nil {
			t.Fatalf("writer %d wrote %d batches without an error after the log failed", w, most)
		}
		if !errors.Is(err, unix.EIO) {
			t.Fatalf("writer %d: %v, want an error wrapping EIO", w, err)
		}
		if !strings.HasPrefix(err.Error(), "kv: store is read-only") {
			failedInGroup++
		}
	}
	// The held sync keeps the writers that arrive meanwhile in its group
	// or queued behind it; all of those fail with it.
	if failedInGroup < 2 {
		t.Errorf("%d writers failed with the sync itself, want the held group's and those queued behind it", failedInGroup)
	}
	t.Logf("%d of %d writers failed with the sync, the rest as read-only; first: %v; last: %v", failedInGroup, writers, errs[0], errs[writers-1])
	if err := db.Put([]byte("after"), []byte("y")); err == nil || !strings.HasPrefix(err.Error(), "kv: store is read-only") {
		t.Fatalf("Put after the failed sync: %v, want read-only", err)
	}
	if v, err := db.Get([]byte("before")); err != nil || string(v) != "x" {
		t.Fatalf("Get after the failed sync: %q, %v", v, err)
	}
	if err := db.Close(); err != nil {
		t.Logf("Close after the failure: %v", err)
	}

	opts.Engine = testengine.New(t, ioengine.Syscall, ioengine.Options{})
	db, err = Open(dir, opts)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer db.Close()
	for w := range writers {
		for i := range acked[w] {
			if v, err := db.Get(key(w, i)); err != nil || len(v) != 100 || v[0] != byte(w) {
				t.Fatalf("acknowledged %s after reopen: %d bytes, %v", key(w, i), len(v), err)
			}
		}
	}
}

// TestWriteRefusesOversizedBatch: a batch with a key or value over the
// limits fails Write naming the operation, writes nothing of the batch, and
// leaves the store writable; Reset makes the batch usable again.
func TestWriteRefusesOversizedBatch(t *testing.T) {
	db := openTest(t, t.TempDir(), config{"uring", ioengine.URing, Options{Unsafe: UnsafeOptions{NoSync: true}}})
	defer db.Close()
	cases := []struct {
		name string
		add  func(b *Batch)
		want string
	}{
		{"key", func(b *Batch) { b.Put(make([]byte, sstable.MaxKeyLen+1), nil) }, "operation 1 (a put)"},
		{"delete", func(b *Batch) { b.Delete(make([]byte, sstable.MaxKeyLen+1)) }, "operation 1 (a delete)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var b Batch
			b.Put([]byte("first"), []byte("1"))
			c.add(&b)
			b.Put([]byte("third"), []byte("3"))
			err := db.Write(&b)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "kv: Write") {
				t.Fatalf("Write of a batch with an oversized %s: %v, want an error naming %q", c.name, err, c.want)
			}
			if _, err := db.Get([]byte("first")); !errors.Is(err, ErrNotFound) {
				t.Fatalf("part of a refused batch is visible: %v", err)
			}
			b.Reset()
			b.Put([]byte("ok"), []byte("1"))
			if err := db.Write(&b); err != nil {
				t.Fatalf("Write after Reset: %v", err)
			}
		})
	}
}

// TestFlushWaitsForInflightGroup holds a group's log flush while a Flush
// makes its memtable immutable: the flush of that memtable waits for the
// group, and must run once the group is published (the publish wakes the
// flush goroutine; nothing else does).
func TestFlushWaitsForInflightGroup(t *testing.T) {
	plan := ioengine.NewFaultPlan()
	opts := Options{Engine: testengine.New(t, ioengine.Syscall, ioengine.Options{Faults: plan}), Logf: t.Logf}
	db, err := Open(testdir.Direct(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Put([]byte("before"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	hold := make(chan struct{})
	plan.Add(ioengine.Fault{Kind: ioengine.FaultEAGAIN, Op: ioengine.OpFdatasync, Hold: hold})
	put := make(chan error, 1)
	go func() { put <- db.Put([]byte("held"), []byte("y")) }()
	time.Sleep(50 * time.Millisecond) // the Put's group waits on its held sync
	flushed := make(chan error, 1)
	go func() { flushed <- db.Flush() }()
	time.Sleep(50 * time.Millisecond) // the Flush made the memtable immutable
	close(hold)
	for _, c := range []struct {
		what string
		ch   chan error
	}{{"Put", put}, {"Flush", flushed}} {
		select {
		case err := <-c.ch:
			if err != nil {
				t.Fatalf("%s: %v", c.what, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not return once the held group was durable", c.what)
		}
	}
	if got, err := db.Get([]byte("held")); err != nil || string(got) != "y" {
		t.Fatalf("Get(held): %q, %v", got, err)
	}
	if s := db.Stats(); s.Levels[0].Tables == 0 {
		t.Fatalf("no table after the Flush:\n%s", s)
	}
}
