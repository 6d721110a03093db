package kv

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// TestMultiGetPastTheCache: a MultiGet whose blocks are several times an
// 8-frame cache reads, on io_uring, the blocks past its first Pin without
// the cache in the same submission — one round, one uncached read call —
// and returns every value; a read of those failing with EIO, or a damaged
// block among them, fails the MultiGet with an error naming the table (and
// the offset), and the next MultiGet of undamaged blocks succeeds. On the
// syscall backend the round is read in as many Pins as it takes.
func TestMultiGetPastTheCache(t *testing.T) {
	const n = 2000
	val := func(i int) []byte { return fmt.Appendf(nil, "%0100d", i) }
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := testdir.Direct(t)
			plan := ioengine.NewFaultPlan()
			opts := Options{Engine: testengine.New(t, mode, ioengine.Options{Faults: plan}), CacheSize: 32 << 10,
				MemtableSize: 4 << 20, DisableAutoCompaction: true, Unsafe: UnsafeOptions{NoSync: true}, Logf: t.Logf}
			db, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			var b Batch
			keys := make([][]byte, n)
			for i := range n {
				keys[i] = keyOf(i)
				b.Put(keys[i], val(i))
			}
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
			check := func(what string) {
				t.Helper()
				vals, found, err := db.MultiGet(keys)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				for i := range keys {
					if !found[i] || !bytes.Equal(vals[i], val(i)) {
						t.Fatalf("%s: %s = %.20q (found %v)", what, keys[i], vals[i], found[i])
					}
				}
			}
			before := db.Stats()
			check("MultiGet")
			st := db.Stats()
			rounds, direct := st.ReadRounds-before.ReadRounds, st.DirectReads-before.DirectReads
			t.Logf("%d keys, %d frames: %d rounds, %d uncached read calls, %d blocks read", n, st.Cache.Frames, rounds, direct, st.BlockReads-before.BlockReads)
			if st.BlockReads-before.BlockReads < 4*uint64(st.Cache.Frames) {
				t.Fatalf("%d blocks read: the test needs several times the %d frames", st.BlockReads-before.BlockReads, st.Cache.Frames)
			}
			if mode == ioengine.Syscall {
				if rounds < 2 || direct != 0 {
					t.Errorf("syscall: %d rounds, %d uncached read calls; want several Pins and none", rounds, direct)
				}
				return
			}
			if rounds != 1 || direct != 1 {
				t.Errorf("io_uring: %d rounds, %d uncached read calls; want 1 and 1", rounds, direct)
			}

			plan.Add(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead})
			if _, _, err := db.MultiGet(keys); !errors.Is(err, unix.EIO) || !strings.Contains(err.Error(), ".sst") {
				t.Fatalf("MultiGet with a failing read: %v, want EIO naming the table", err)
			}
			check("MultiGet after the fault")

			// Damage a block the first Pin does not take.
			ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(ssts) != 1 {
				t.Fatalf("tables %v, want one", ssts)
			}
			r, err := sstable.Open(ssts[0])
			if err != nil {
				t.Fatal(err)
			}
			bi := r.NumBlocks() - 2
			h := r.Block(bi)
			r.Close()
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			flipByte(t, ssts[0], int64(h.Offset)+20)
			opts.Engine = testengine.New(t, mode, ioengine.Options{})
			if db, err = Open(dir, opts); err != nil {
				t.Fatal(err)
			}
			_, _, err = db.MultiGet(keys)
			checkSSTCorrupt(t, fmt.Sprintf("MultiGet with block %d damaged", bi), err, ssts[0], h.Offset, h.Offset+h.Len)
		})
	}
}

// TestPastTheCacheMemoryReused: the memory of reads past the cache goes
// back for other reads once their blocks are handed over (directCall.
// release, ReadAhead.Done); the values a MultiGet returned from it are
// copies, unchanged by the MultiGets and read-aheads that reuse it. Values
// differ per round, so a value still pointing into reused memory would
// show another round's bytes.
func TestPastTheCacheMemoryReused(t *testing.T) {
	const n, rounds = 600, 6
	val := func(round, i int) []byte { return fmt.Appendf(nil, "r%d-%0200d", round, i) }
	for _, ahead := range []bool{false, true} {
		t.Run(fmt.Sprintf("readahead=%v", ahead), func(t *testing.T) {
			dir := testdir.Direct(t)
			opts := Options{Engine: testengine.New(t, ioengine.URing, ioengine.Options{Inline: true}), CacheSize: 32 << 10,
				MemtableSize: 4 << 20, DisableAutoCompaction: true, Unsafe: UnsafeOptions{NoSync: true}, Logf: t.Logf}
			db, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { db.Close() }()
			// Each round's keys in a table of their own, so every MultiGet
			// reads many times the cache's 8 frames.
			keys := make([][][]byte, rounds)
			for r := range rounds {
				var b Batch
				for i := range n {
					keys[r] = append(keys[r], fmt.Appendf(nil, "round%d-key%06d", r, i))
					b.Put(keys[r][i], val(r, i))
				}
				if err := db.Write(&b); err != nil {
					t.Fatal(err)
				}
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			got := make([][][]byte, rounds)
			before := db.Stats()
			for r := range rounds {
				var ro ReadOptions
				if ahead {
					ro.ReadAhead = db.ReadAhead(keys[r])
				}
				vals, found, err := db.MultiGetWith(ro, keys[r])
				ro.ReadAhead.Done()
				if err != nil {
					t.Fatalf("round %d: %v", r, err)
				}
				for i := range vals {
					if !found[i] {
						t.Fatalf("round %d: %s not found", r, keys[r][i])
					}
				}
				got[r] = vals
			}
			st := db.Stats()
			if st.DirectReads == before.DirectReads {
				t.Fatal("no read went past the cache: the test reads nothing it means to")
			}
			if ahead && st.ReadAheadBlocks == before.ReadAheadBlocks {
				t.Fatal("nothing was read ahead")
			}
			for r := range rounds {
				for i, v := range got[r] {
					if want := val(r, i); !bytes.Equal(v, want) {
						t.Fatalf("round %d, %s: %.30q after later rounds, want %.30q", r, keys[r][i], v, want)
					}
				}
			}
		})
	}
}
