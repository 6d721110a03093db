package kv

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// TestReadAhead reads batches of keys ahead and then with MultiGet, writing
// some of them in between: the MultiGet sees the writes (a read ahead changes
// what is cached, never what is read), finds the blocks the read ahead
// loaded, and Done leaves no announcement open. On the
// syscall backend the read ahead does nothing.
func TestReadAhead(t *testing.T) {
	const keys = 20000
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%08d", i)) }
	val := func(i, gen int) []byte { return []byte(fmt.Sprintf("value-%d-%d-%0200d", i, gen, i)) }
	for _, c := range []struct {
		mode    ioengine.IOMode
		workers int
	}{{ioengine.URing, 0}, {ioengine.Syscall, 0}, {ioengine.Syscall, 4}} {
		t.Run(fmt.Sprintf("%s/read-workers=%d", c.mode, c.workers), func(t *testing.T) {
			eng := testengine.New(t, c.mode, ioengine.Options{})
			db, err := Open(testdir.Direct(t), Options{Engine: eng, Unsafe: UnsafeOptions{NoSync: true}, CacheSize: 256 << 10, ReadWorkers: c.workers, Logf: t.Logf})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var b Batch
			for i := 0; i < keys; i++ {
				b.Put(key(i), val(i, 0))
				if b.Len() == 500 {
					if err := db.Write(&b); err != nil {
						t.Fatal(err)
					}
					b.Reset()
				}
			}
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			gen := make([]int, keys)
			for round := 0; round < 20; round++ {
				batch := make([][]byte, 100)
				idx := make([]int, len(batch))
				for j := range batch {
					idx[j] = (round*7919 + j*104729) % keys
					batch[j] = key(idx[j])
				}
				ra := db.ReadAhead(batch)
				// Writes between the read ahead and the read: every fourth key.
				for j := 0; j < len(batch); j += 4 {
					gen[idx[j]]++
					if err := db.Put(batch[j], val(idx[j], gen[idx[j]])); err != nil {
						t.Fatal(err)
					}
				}
				if round == 10 {
					if err := db.Flush(); err != nil { // tables change under the read ahead
						t.Fatal(err)
					}
				}
				vals, found, err := db.MultiGet(batch)
				ra.Done()
				if err != nil {
					t.Fatal(err)
				}
				for j := range batch {
					if want := val(idx[j], gen[idx[j]]); !found[j] || string(vals[j]) != string(want) {
						t.Fatalf("round %d: %s = %.20q (found %v), want %.20q", round, batch[j], vals[j], found[j], want)
					}
				}
			}
			st := db.Stats()
			if st.Cache.OpenAnnouncements != 0 {
				t.Errorf("%d announcements left open after Done", st.Cache.OpenAnnouncements)
			}
			if db.eng.Backend() == ioengine.BackendSyscall {
				if st.ReadAheadBlocks != 0 || st.Cache.PrefetchIssued != 0 {
					t.Errorf("syscall backend: read ahead started %d blocks, prefetched %d; want none", st.ReadAheadBlocks, st.Cache.PrefetchIssued)
				}
				return
			}
			if st.ReadAheadBlocks == 0 {
				t.Errorf("io_uring: nothing was read ahead")
			}
			// Blocks read ahead are found by the MultiGet: once its loads are
			// done, a MultiGet of a few cold keys misses nothing.
			few := [][]byte{key(1), key(5003), key(11007), key(17011)}
			ra := db.ReadAhead(few)
			ra.Wait()
			before := db.Stats().Cache.Misses
			if _, _, err := db.MultiGet(few); err != nil {
				t.Fatal(err)
			}
			ra.Done()
			if m := db.Stats().Cache.Misses - before; m != 0 {
				t.Errorf("MultiGet after a finished read ahead of its keys: %d cache misses, want 0", m)
			}
			t.Logf("read ahead %d blocks; cache: %s", st.ReadAheadBlocks, st.Cache)
		})
	}
}

// TestReadWorkersOption: out-of-range values are refused by name.
func TestReadWorkersOption(t *testing.T) {
	for _, n := range []int{-1, 257} {
		_, err := Open(t.TempDir(), Options{ReadWorkers: n})
		if err == nil || !errors.Is(err, ErrBadOptions) || !strings.Contains(err.Error(), "ReadWorkers") {
			t.Errorf("ReadWorkers %d: %v, want ErrBadOptions", n, err)
		}
	}
}
