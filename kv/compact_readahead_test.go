package kv

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// readAheadKeys makes a table of about 2.6 MB: ten compaction chunks.
const readAheadKeys = 12000

func readAheadValue(i, gen int) []byte { return fmt.Appendf(nil, "%d:%0200d", gen, i) }

// buildReadAheadStore writes two overlapping L0 tables into dir: every key
// (generation 0), then every third key again (generation 1). It returns
// the path of the older table.
func buildReadAheadStore(t *testing.T, dir string, mode ioengine.IOMode) string {
	t.Helper()
	db := openTest(t, dir, config{mode: mode, opts: Options{DisableAutoCompaction: true, Unsafe: UnsafeOptions{NoSync: true}, MemtableSize: 16 << 20}})
	for gen, step := range []int{1, 3} {
		var b Batch
		for i := 0; i < readAheadKeys; i += step {
			b.Put(keyOf(i), readAheadValue(i, gen))
		}
		if err := db.Write(&b); err != nil {
			t.Fatal(err)
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	db.mu.Lock()
	l0 := db.current.levels[0]
	older := l0[len(l0)-1]
	db.mu.Unlock()
	if older.meta.Size < 4*compactionChunk {
		t.Fatalf("the table is %d bytes: want several %d-byte chunks", older.meta.Size, compactionChunk)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return older.path
}

// TestCompactionReadAhead: on io_uring and on the syscall backend, a
// compaction whose inputs span many read-ahead chunks writes exactly the
// merge of its inputs (the newer version of every third key).
func TestCompactionReadAhead(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(fmt.Sprintf("mode=%s", mode), func(t *testing.T) {
			dir := testdir.Direct(t)
			buildReadAheadStore(t, dir, mode)
			db := openTest(t, dir, config{mode: mode, opts: Options{DisableAutoCompaction: true, Unsafe: UnsafeOptions{NoSync: true}, NoBlockCache: true}})
			defer db.Close()
			if err := db.Compact(); err != nil {
				t.Fatal(err)
			}
			st := db.Stats()
			if st.Compactions == 0 {
				t.Fatalf("no compaction merged the tables: %+v", st)
			}
			db.mu.Lock()
			l0 := len(db.current.levels[0])
			db.mu.Unlock()
			if l0 != 0 {
				t.Fatalf("%d L0 tables left after Compact", l0)
			}
			it := db.NewIterator(nil, nil)
			i := 0
			for it.Next() {
				gen := 0
				if i%3 == 0 {
					gen = 1
				}
				if !bytes.Equal(it.Key(), keyOf(i)) || !bytes.Equal(it.Value(), readAheadValue(i, gen)) {
					t.Fatalf("entry %d after the compaction: %q=%.12q, want %q=%.12q", i, it.Key(), it.Value(), keyOf(i), readAheadValue(i, gen))
				}
				i++
			}
			if err := it.Close(); err != nil || i != readAheadKeys {
				t.Fatalf("%d keys after the compaction, want %d: %v", i, readAheadKeys, err)
			}
		})
	}
}

// TestCompactionReadAheadCorrupt: damage in a block that a compaction input
// reads ahead (in its third chunk) fails the compaction with an error naming
// the file and the block, and the table stays.
func TestCompactionReadAheadCorrupt(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(fmt.Sprintf("mode=%s", mode), func(t *testing.T) {
			dir := testdir.Direct(t)
			path := buildReadAheadStore(t, dir, mode)
			db := openTest(t, dir, config{mode: mode, opts: Options{DisableAutoCompaction: true, Unsafe: UnsafeOptions{NoSync: true}, NoBlockCache: true}})
			db.mu.Lock()
			var tb *table
			for _, x := range db.current.levels[0] {
				if x.path == path {
					tb = x
				}
			}
			db.mu.Unlock()
			if tb == nil {
				t.Fatalf("%s is not in L0", path)
			}
			rd, err := db.reader(tb)
			if err != nil {
				t.Fatal(err)
			}
			bi := 0
			for bi < rd.NumBlocks() && rd.Block(bi).Offset < 2*compactionChunk+compactionChunk/2 {
				bi++
			}
			h := rd.Block(bi)
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			restore := flipByte(t, path, int64(h.Offset)+100)
			checkCompactionFails(t, openTest(t, dir, config{mode: mode, opts: Options{DisableAutoCompaction: true, Unsafe: UnsafeOptions{NoSync: true}}}), path, h)
			restore()
			ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(ssts) != 2 {
				t.Fatalf("tables after the failed compaction: %v, want the two inputs only", ssts)
			}
		})
	}
}

// TestCompactionIterAbandoned: a compaction iterator closed part way, with a
// chunk read ahead in flight, gives its buffers back and leaves the engine
// usable; a walk from the start after it still reads the whole table.
func TestCompactionIterAbandoned(t *testing.T) {
	dir := testdir.Direct(t)
	buildReadAheadStore(t, dir, ioengine.URing)
	db := openTest(t, dir, config{mode: ioengine.URing, opts: Options{DisableAutoCompaction: true, Unsafe: UnsafeOptions{NoSync: true}}})
	defer db.Close()
	db.mu.Lock()
	tb := db.current.levels[0][len(db.current.levels[0])-1]
	db.mu.Unlock()
	for _, stop := range []int{1, 40, 700, 5000} {
		ti := newCompactionIter(db, tb)
		n := 0
		for ok := ti.seekGE(nil); ok && n < stop; ok = ti.next() {
			n++
		}
		if ti.err() != nil || n != stop {
			t.Fatalf("stop %d: walked %d: %v", stop, n, ti.err())
		}
		ti.close()
		if ti.chunk.ahead.p != nil {
			t.Fatalf("stop %d: a read ahead is still in flight after close", stop)
		}
	}
	ti := newCompactionIter(db, tb)
	defer ti.close()
	n := 0
	for ok := ti.seekGE(nil); ok; ok = ti.next() {
		if !bytes.Equal(ti.key().UserKey, keyOf(n)) {
			t.Fatalf("entry %d is %s", n, ti.key())
		}
		n++
	}
	if ti.err() != nil || n != readAheadKeys {
		t.Fatalf("%d entries, want %d: %v", n, readAheadKeys, ti.err())
	}
}
