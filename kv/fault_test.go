package kv

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// TestFullDiskTurnsReadOnly: a log write failing with ENOSPC fails that
// Write with the errno, turns the store read-only (every later write says
// so), leaves reads working, and loses nothing acknowledged: after a reopen
// every write acknowledged before the failure is there. The syscall backend
// runs the log's writes on the faulted engine (on io_uring the log flushes
// through an inline engine of its own).
func TestFullDiskTurnsReadOnly(t *testing.T) {
	plan := ioengine.NewFaultPlan()
	eng := testengine.New(t, ioengine.Syscall, ioengine.Options{Faults: plan})
	dir := testdir.Direct(t)
	opts := crashOptions()
	opts.Engine, opts.Logf = eng, t.Logf
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	const acked = 300
	for i := 0; i < acked; i++ {
		if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("v%04d", i))); err != nil {
			t.Fatal(err)
		}
	}
	// The failing log write is held until the write is in the memtable:
	// the inserter adds a group's writes while its flush runs (here even a
	// group of one write's).
	db.minInsertAhead = 1
	hold := make(chan struct{})
	plan.Add(ioengine.Fault{Kind: ioengine.FaultENOSPC, Op: ioengine.OpWrite, Times: -1, Hold: hold})
	putErr := make(chan error, 1)
	go func() { putErr <- db.Put([]byte("late"), []byte("x")) }()
	memLen := func() int {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.mem.Len()
	}
	for deadline := time.Now().Add(10 * time.Second); memLen() != acked+1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("memtable holds %d writes while the log write is held, want the %d acknowledged and the pending one", memLen(), acked)
		}
	}
	if v, err := db.Get([]byte("late")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of a write in the memtable whose log write is in flight: %q, %v; want ErrNotFound", v, err)
	}
	close(hold)
	if err := <-putErr; !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Put on a full disk: %v, want ENOSPC", err)
	}
	err = db.Put([]byte("later"), []byte("y"))
	if err == nil || !strings.Contains(err.Error(), "read-only") || !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("Put after the failure: %v, want read-only naming ENOSPC", err)
	}
	if v, err := db.Get([]byte("k0007")); err != nil || string(v) != "v0007" {
		t.Fatalf("Get after the failure: %q, %v", v, err)
	}
	// The failed write is in the memtable; it is never visible, and never
	// flushed.
	if v, err := db.Get([]byte("late")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get of the write whose log write failed: %q, %v; want ErrNotFound", v, err)
	}
	it := db.NewIterator(nil, nil)
	n := 0
	for it.Next() {
		if string(it.Key()) == "late" {
			t.Fatalf("an iterator yields the write whose log write failed")
		}
		n++
	}
	if err := it.Close(); err != nil || n != acked {
		t.Fatalf("iterator after the failure: %d keys, %v; want %d", n, err, acked)
	}
	if err := db.Flush(); err == nil {
		t.Fatal("Flush after the failure succeeded; want the store read-only")
	}
	db.Close()

	opts.Engine = testengine.New(t, ioengine.Syscall, ioengine.Options{})
	db, err = Open(dir, opts)
	if err != nil {
		t.Fatalf("reopen after the full disk: %v", err)
	}
	defer db.Close()
	for i := 0; i < acked; i++ {
		k := fmt.Sprintf("k%04d", i)
		if v, err := db.Get([]byte(k)); err != nil || string(v) != fmt.Sprintf("v%04d", i) {
			t.Fatalf("after reopen, acknowledged %s: %q, %v", k, v, err)
		}
	}
	for _, k := range []string{"late", "later"} {
		if _, err := db.Get([]byte(k)); !errors.Is(err, ErrNotFound) {
			t.Fatalf("the failed write of %s is there after reopen: %v", k, err)
		}
	}
}

// TestReadEIO: a block read failing with EIO fails the MultiGet with an
// error naming the table and wrapping the errno; nothing is cached, so the
// next MultiGet reads again and succeeds. With and without the cache.
func TestReadEIO(t *testing.T) {
	for _, cache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", cache), func(t *testing.T) {
			plan := ioengine.NewFaultPlan()
			eng := testengine.New(t, ioengine.URing, ioengine.Options{Faults: plan})
			opts := crashOptions()
			opts.Engine, opts.Logf, opts.NoBlockCache, opts.Unsafe.NoSync = eng, t.Logf, !cache, true
			db, err := Open(testdir.Direct(t), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var keys [][]byte
			var b Batch
			for i := 0; i < 2000; i++ {
				k := []byte(fmt.Sprintf("key%05d", i))
				b.Put(k, []byte(strings.Repeat("v", 100)))
				if i%50 == 0 {
					keys = append(keys, k)
				}
			}
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			plan.Add(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead})
			_, _, err = db.MultiGet(keys)
			if !errors.Is(err, unix.EIO) || !strings.Contains(err.Error(), ".sst") {
				t.Fatalf("MultiGet with a failing read: %v, want EIO naming the table", err)
			}
			_, found, err := db.MultiGet(keys)
			if err != nil {
				t.Fatalf("MultiGet after the fault: %v", err)
			}
			for i, f := range found {
				if !f {
					t.Fatalf("key %s missing after the fault", keys[i])
				}
			}
		})
	}
}
