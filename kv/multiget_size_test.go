package kv

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// bigStore writes n keys of 40-byte values into tables (flushed and
// compacted) of a store with a 256 KiB block cache: 64 frames, a small
// share of the tables' blocks.
func bigStore(t *testing.T, mode ioengine.IOMode, n int) *DB {
	t.Helper()
	opts := Options{CacheSize: 256 << 10, MemtableSize: 4 << 20, BaseLevelSize: 8 << 20, TargetFileSize: 2 << 20}
	db := openTest(t, testdir.Direct(t), config{mode: mode, opts: opts})
	var b Batch
	for i := range n {
		b.Put(mgKey(i), mgValue(i))
		if b.Len() == 1000 {
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	return db
}

func mgKey(i int) []byte   { return []byte(fmt.Sprintf("key%09d", i)) }
func mgValue(i int) []byte { return bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 20) }

// TestMultiGetLargerThanTheCache: a MultiGet of 200,000 keys, whose blocks
// are many times the 64 frames of the block cache, returns every value, on
// io_uring and on syscalls; keys that were never written are not found.
func TestMultiGetLargerThanTheCache(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(mode.String(), func(t *testing.T) {
			const n = 200_000
			db := bigStore(t, mode, n)
			defer db.Close()
			keys := make([][]byte, 0, n+1000)
			for i := range n {
				keys = append(keys, mgKey(i))
			}
			for i := range 1000 {
				keys = append(keys, []byte(fmt.Sprintf("key%09d-missing", i*97)))
			}
			before := db.Stats()
			vals, found, err := db.MultiGet(keys)
			if err != nil {
				t.Fatalf("MultiGet of %d keys: %v", len(keys), err)
			}
			for i := range n {
				if !found[i] || !bytes.Equal(vals[i], mgValue(i)) {
					t.Fatalf("key %d: found %v, %d bytes", i, found[i], len(vals[i]))
				}
			}
			for i := n; i < len(keys); i++ {
				if found[i] {
					t.Fatalf("%s found", keys[i])
				}
			}
			st := db.Stats()
			t.Logf("%d keys: %d block reads in %d rounds (%d cache frames)", len(keys), st.BlockReads-before.BlockReads, st.ReadRounds-before.ReadRounds, st.Cache.Frames)
			if st.ReadRounds-before.ReadRounds < 2 {
				t.Errorf("%d rounds for blocks many times the cache", st.ReadRounds-before.ReadRounds)
			}
		})
	}
}

// TestMultiGetOversizeConcurrent: 8 callers, each asking for more blocks
// than the cache holds, at once: all finish (no caller waits for another's
// pins for good) with the right values.
func TestMultiGetOversizeConcurrent(t *testing.T) {
	const n = 50_000
	db := bigStore(t, ioengine.URing, n)
	defer db.Close()
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			keys := make([][]byte, 0, 5000)
			for i := g; i < n; i += 10 {
				keys = append(keys, mgKey(i))
			}
			vals, found, err := db.MultiGet(keys)
			if err != nil {
				t.Error(err)
				return
			}
			for j, k := range keys {
				var i int
				fmt.Sscanf(string(k), "key%09d", &i)
				if !found[j] || !bytes.Equal(vals[j], mgValue(i)) {
					t.Errorf("caller %d: %s wrong", g, k)
					return
				}
			}
		}()
	}
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatal("concurrent oversize MultiGets did not finish: deadlock")
	}
}

// TestMultiGetThatFitsIsOneRound: a batch whose blocks fit in the cache is
// read in one round (one Pin, one submission of its misses).
func TestMultiGetThatFitsIsOneRound(t *testing.T) {
	db := bigStore(t, ioengine.URing, 50_000)
	defer db.Close()
	// One key per block, far apart: 40 blocks of the 64 frames.
	var keys [][]byte
	for i := 0; i < 40; i++ {
		keys = append(keys, mgKey(i*1200))
	}
	before := db.Stats()
	if _, _, err := db.MultiGet(keys); err != nil {
		t.Fatal(err)
	}
	st := db.Stats()
	if r := st.ReadRounds - before.ReadRounds; r != 1 {
		t.Errorf("%d rounds for 40 blocks in a 64-frame cache, want 1", r)
	}
}
