package kv

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore/internal/crashfs"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// The crash-state test of kv, as wal's TestCrashStates is the log's: a
// workload of batches, flushes, compactions (which replace the manifest)
// and checkpoints runs against a real store while internal/crashfs records
// every change the store makes to its files — the log's segments, the
// tables, the manifest, the directories — and the test's acknowledgements,
// in one order. From that record the test builds many states a power loss
// could leave (internal/crashfs: writes not yet durable lost, kept or torn
// at 512 B or 4 KiB, a prefix of the directory changes not yet durable
// kept), writes each to a fresh directory and checks:
//
//   - Open succeeds: a state a real crash produces is never corruption;
//   - every batch acknowledged before the crash is there, whole;
//   - every batch is all or nothing, acknowledged or not;
//   - a checkpoint that Checkpoint had returned opens and holds every batch
//     acknowledged before Checkpoint was called, each all or nothing;
//   - the recovered store accepts a write and opens again (every tenth
//     state).

var kvCrashStates = flag.Int("kv.crashstates", 1000, "crash states checked by TestCrashStates")

type ackBatch struct{ batch int }
type ckStarted struct {
	n     int
	acked int // batches acknowledged before Checkpoint was called
}
type ckDone struct{ n int }

const crashBatchKeys = 4

func csKey(batch, i int) []byte {
	return []byte(fmt.Sprintf("%04d-b%05d-%d", (batch*37+i*101)%997, batch, i)) // batches overlap in key space: merging compactions
}
func csValue(batch, i int) []byte {
	return bytes.Repeat([]byte{byte(batch), byte(batch >> 8), byte(i)}, 40+batch%7)
}

func crashStateOpts() Options {
	return Options{MemtableSize: 64 << 10, CacheSize: 64 << 10, BaseLevelSize: 256 << 10, TargetFileSize: 64 << 10,
		L0CompactionTrigger: 2, Logf: func(string, ...any) {}}
}

func TestCrashStates(t *testing.T) {
	base := testdir.Direct(t)
	dbDir := filepath.Join(base, "db")
	rec := crashfs.Start()
	opts := crashStateOpts()
	opts.IOMode = ioengine.Syscall
	db, err := Open(dbDir, opts)
	if err != nil {
		crashfs.Stop()
		t.Fatal(err)
	}
	const batches = 400
	cks := 0
	for b := range batches {
		var batch Batch
		for i := range crashBatchKeys {
			batch.Put(csKey(b, i), csValue(b, i))
		}
		if err := db.Write(&batch); err != nil {
			crashfs.Stop()
			t.Fatalf("batch %d: %v", b, err)
		}
		rec.Mark(ackBatch{b})
		switch {
		case b%97 == 96:
			if err := db.Compact(); err != nil {
				crashfs.Stop()
				t.Fatal(err)
			}
		case b%61 == 60:
			rec.Mark(ckStarted{cks, b + 1})
			if err := db.Checkpoint(context.Background(), filepath.Join(base, fmt.Sprintf("ck%d", cks))); err != nil {
				crashfs.Stop()
				t.Fatal(err)
			}
			rec.Mark(ckDone{cks})
			cks++
		case b%23 == 22:
			if err := db.Flush(); err != nil {
				crashfs.Stop()
				t.Fatal(err)
			}
		}
	}
	if err := db.Close(); err != nil {
		crashfs.Stop()
		t.Fatal(err)
	}
	crashfs.Stop()
	events := rec.Events()
	st := db.Stats()
	t.Logf("workload: %d batches, %d flushes, %d compactions, %d checkpoints, %d recorded changes", batches, st.Flushes, st.Compactions, cks, len(events))
	if st.Flushes < 5 || st.Compactions < 2 {
		t.Fatalf("the workload made %d flushes and %d compactions: too few to test", st.Flushes, st.Compactions)
	}

	rng := rand.New(rand.NewPCG(1, 2))
	for s := range *kvCrashStates {
		crashAt := rng.IntN(len(events) + 1)
		sector := 512
		if rng.IntN(2) == 0 {
			sector = 4096
		}
		seed := rng.Uint64()
		state := crashfs.Build(events, crashAt, rand.New(rand.NewPCG(seed, 3)), sector)
		root, err := os.MkdirTemp(base, "state-")
		if err != nil {
			t.Fatal(err)
		}
		if err := state.Materialize(base, root); err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("state %d (crash after change %d of %d, %d-byte sectors, seed %d)", s, crashAt, len(events), sector, seed)
		// What had happened before the crash.
		acked, cksDone := 0, map[int]int{}
		started := map[int]int{}
		for _, e := range events[:crashAt] {
			switch m := e.Mark.(type) {
			case ackBatch:
				acked = m.batch + 1
			case ckStarted:
				started[m.n] = m.acked
			case ckDone:
				cksDone[m.n] = started[m.n]
			}
		}
		checkCrashStore(t, what, filepath.Join(root, "db"), acked, s%10 == 0)
		// The newest checkpoint done (the older ones are the newest of
		// earlier crash points).
		if n := len(cksDone) - 1; n >= 0 {
			checkCrashStore(t, what+fmt.Sprintf(", checkpoint %d", n), filepath.Join(root, fmt.Sprintf("ck%d", n)), cksDone[n], false)
		}
		if t.Failed() {
			t.Fatalf("%s failed; its files are in %s", what, root)
		}
		os.RemoveAll(root)
	}
}

// checkCrashStore opens the store a crash left in dir and checks it holds
// every batch below acked whole, and every other batch whole or not at all.
func checkCrashStore(t *testing.T, what, dir string, acked int, writeAgain bool) {
	t.Helper()
	opts := crashStateOpts()
	opts.IOMode, opts.CacheSize = ioengine.Syscall, 4<<20
	db, err := Open(dir, opts)
	if err != nil {
		t.Errorf("%s: Open: %v", what, err)
		return
	}
	defer db.Close()
	keys := make([][]byte, 0, 400*crashBatchKeys)
	for b := 0; b < 400; b++ {
		for i := range crashBatchKeys {
			keys = append(keys, csKey(b, i))
		}
	}
	vals, found, err := db.MultiGet(keys)
	if err != nil {
		t.Errorf("%s: MultiGet: %v", what, err)
		return
	}
	for b := 0; b < 400; b++ {
		present := 0
		for i := range crashBatchKeys {
			k := b*crashBatchKeys + i
			switch {
			case found[k] && bytes.Equal(vals[k], csValue(b, i)):
				present++
			case found[k]:
				t.Errorf("%s: batch %d key %d: a value that was never written (%d bytes)", what, b, i, len(vals[k]))
				return
			}
		}
		if b < acked && present != crashBatchKeys {
			t.Errorf("%s: acknowledged batch %d has %d of its %d keys", what, b, present, crashBatchKeys)
			return
		}
		if present != 0 && present != crashBatchKeys {
			t.Errorf("%s: batch %d is partly there: %d of %d keys", what, b, present, crashBatchKeys)
			return
		}
	}
	if writeAgain {
		if err := db.Put([]byte("after"), []byte("the crash")); err != nil {
			t.Errorf("%s: a write after recovery: %v", what, err)
			return
		}
		if err := db.Close(); err != nil {
			t.Errorf("%s: Close after recovery: %v", what, err)
			return
		}
		db2, err := Open(dir, opts)
		if err != nil {
			t.Errorf("%s: reopen after recovery: %v", what, err)
			return
		}
		if v, err := db2.Get([]byte("after")); err != nil || string(v) != "the crash" {
			t.Errorf("%s: the write after recovery: %q, %v", what, v, err)
		}
		db2.Close()
	}
}
