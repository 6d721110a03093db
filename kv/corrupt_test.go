package kv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/manifest"
	"github.com/ringstore/ringstore/kv/sstable"
	"github.com/ringstore/ringstore/wal"
)

const corruptKeys = 600

func corruptValue(i int) []byte {
	return fmt.Appendf(nil, "%0100d", i)
}

// corruptOptions keep everything in one flushed table: no background
// flush or compaction moves it while a test damages it.
func corruptOptions() Options {
	return Options{MemtableSize: 4 << 20, DisableAutoCompaction: true, CacheSize: 256 << 10}
}

// storeOneTable writes corruptKeys keys, flushes them to one SST and closes
// the store; it returns the SST's path.
func storeOneTable(t *testing.T, dir string) string {
	t.Helper()
	db := openTest(t, dir, config{mode: ioengine.Syscall, opts: corruptOptions()})
	var b Batch
	for i := range corruptKeys {
		b.Put(keyOf(i), corruptValue(i))
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) != 1 {
		t.Fatalf("want one table in %s, have %v (%v)", dir, ssts, err)
	}
	return ssts[0]
}

// flipByte inverts the byte at off in path and returns a function that
// restores it.
func flipByte(t *testing.T, path string, off int64) (restore func()) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, off); err != nil {
		t.Fatalf("reading %s at %d: %v", path, off, err)
	}
	b[0] ^= 0xff
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b[0] ^= 0xff
		if _, err := f.WriteAt(b, off); err != nil {
			t.Fatal(err)
		}
	}
}

// checkSSTCorrupt fails unless err reports damage in path within
// [lo, hi), by errors.Is, errors.As and in its message.
// checkCompactionFails runs a compaction of db, which holds the damaged
// block h of table path: it must fail naming the block, and the damaged
// table must still be there after db is closed.
func checkCompactionFails(t *testing.T, db *DB, path string, h sstable.BlockHandle) {
	t.Helper()
	err := db.Compact()
	checkSSTCorrupt(t, "Compact", err, path, h.Offset, h.Offset+h.Len)
	if cerr := db.Close(); cerr != nil {
		t.Logf("Close after the failed compaction: %v", cerr)
	}
	if _, serr := os.Stat(path); serr != nil {
		t.Fatalf("the damaged table is gone after the failed compaction: %v", serr)
	}
}

func checkSSTCorrupt(t *testing.T, what string, err error, path string, lo, hi uint64) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error from a damaged block", what)
		return
	}
	if !errors.Is(err, sstable.ErrCorrupt) || !errors.Is(err, ringstore.ErrCorrupt) {
		t.Errorf("%s: %v: not errors.Is(err, sstable.ErrCorrupt) and ringstore.ErrCorrupt", what, err)
	}
	var ce *sstable.CorruptError
	if !errors.As(err, &ce) {
		t.Errorf("%s: %v: no *sstable.CorruptError in the chain", what, err)
		return
	}
	if ce.Path != path || ce.Offset < int64(lo) || ce.Offset >= int64(hi) {
		t.Errorf("%s: %v: names %s at offset %d, the damage is in %s at [%d, %d)", what, err, ce.Path, ce.Offset, path, lo, hi)
	}
	var rce *ringstore.CorruptError
	if !errors.As(err, &rce) || rce.Path != ce.Path || rce.Offset != ce.Offset || rce.What != ce.What {
		t.Errorf("%s: %v: as a *ringstore.CorruptError %+v, want %s at offset %d: %s", what, err, rce, ce.Path, ce.Offset, ce.What)
	}
	if msg := err.Error(); !strings.Contains(msg, path) || !strings.Contains(msg, fmt.Sprint(ce.Offset)) {
		t.Errorf("%s: the message %q does not name the file %s and the offset %d", what, msg, path, ce.Offset)
	}
}

// TestCorruptDataBlock damages one byte of a data block in the middle of an
// SST: every read of a key in that block fails naming the file and the
// block's offset, reads of other blocks still work, and an iteration stops
// with the error, never skipping the block.
func TestCorruptDataBlock(t *testing.T) {
	dir := testdir.Direct(t)
	path := storeOneTable(t, dir)
	r, err := sstable.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if r.NumBlocks() < 5 {
		t.Fatalf("%s has %d blocks; the test needs 5", path, r.NumBlocks())
	}
	h := r.Block(2)
	inBlock := -1 // the first key in the damaged block
	for i := range corruptKeys {
		if got, ok := r.BlockFor(keyOf(i)); ok && got == h {
			inBlock = i
			break
		}
	}
	r.Close()
	if inBlock < 0 {
		t.Fatalf("no key in block 2 (%+v) of %s", h, path)
	}
	flipByte(t, path, int64(h.Offset)+20)

	nocache := corruptOptions()
	nocache.NoBlockCache = true
	buffered := nocache
	buffered.BufferedIO = true
	for _, c := range []config{
		{"uring-nocache", ioengine.URing, nocache},
		{"syscall-nocache", ioengine.Syscall, nocache},
		{"uring-buffered", ioengine.URing, buffered},
		{"uring-cache", ioengine.URing, corruptOptions()},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, dir, c)
			defer db.Close()
			bad, good := keyOf(inBlock), keyOf(0)
			for _, ro := range []ReadOptions{{}, {NoFillCache: true}} {
				what := fmt.Sprintf("NoFillCache=%v", ro.NoFillCache)
				// MultiGet first, so that no Get has been through the block.
				_, _, err := db.MultiGetWith(ro, [][]byte{good, bad, keyOf(corruptKeys - 1)})
				checkSSTCorrupt(t, what+": MultiGet", err, path, h.Offset, h.Offset+h.Len)
				if ro.NoFillCache && err != nil {
					t.Logf("MultiGet: %v", err)
				}
				_, err = db.GetWith(ro, bad)
				checkSSTCorrupt(t, what+": Get", err, path, h.Offset, h.Offset+h.Len)
				if v, err := db.GetWith(ro, good); err != nil || !bytes.Equal(v, corruptValue(0)) {
					t.Errorf("%s: Get of %s in an undamaged block: %.20q, %v", what, good, v, err)
				}
				vals, found, err := db.MultiGetWith(ro, [][]byte{good, keyOf(corruptKeys - 1)})
				if err != nil || !found[0] || !found[1] || !bytes.Equal(vals[1], corruptValue(corruptKeys-1)) {
					t.Errorf("%s: MultiGet of keys in undamaged blocks: %v %v", what, found, err)
				}
				for _, lower := range [][]byte{nil, keyOf(inBlock - 1)} {
					it := db.NewIteratorWith(ro, lower, nil)
					i := 0
					if lower != nil {
						i = inBlock - 1
					}
					for it.Next() {
						if !bytes.Equal(it.Key(), keyOf(i)) || i >= inBlock {
							t.Errorf("%s: iterator from %q: key %q where %s was expected, before the damaged block at key %d", what, lower, it.Key(), keyOf(i), inBlock)
							break
						}
						i++
					}
					err := it.Close()
					checkSSTCorrupt(t, fmt.Sprintf("%s: iterator from %q (stopped after %d keys)", what, lower, i), err, path, h.Offset, h.Offset+h.Len)
				}
			}
		})
	}
}

// TestCorruptOpen damages a store's files so that Open must refuse it: the
// error names the damaged file, and Open changes nothing (the repaired store
// opens with all its data).
func TestCorruptOpen(t *testing.T) {
	type damage struct {
		name string
		// corrupt damages the store in dir and returns the file the
		// error must name and how to undo the damage.
		corrupt func(t *testing.T, dir, sst string) (file string, undo func())
		is      error // errors.Is must hold, when set
	}
	truncate := func(t *testing.T, path string, by int64) func() {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, int64(len(b))-by); err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	sstIndexOff := func(t *testing.T, sst string) int64 {
		r, err := sstable.Open(sst)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		last := r.Block(r.NumBlocks() - 1)
		return int64(last.Offset + last.Len)
	}
	size := func(t *testing.T, path string) int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	for _, d := range []damage{
		{"sst-truncated-by-one", func(t *testing.T, dir, sst string) (string, func()) {
			return sst, truncate(t, sst, 1)
		}, nil},
		{"sst-truncated-to-data", func(t *testing.T, dir, sst string) (string, func()) {
			return sst, truncate(t, sst, size(t, sst)-sstIndexOff(t, sst))
		}, nil},
		{"sst-index-byte", func(t *testing.T, dir, sst string) (string, func()) {
			return sst, flipByte(t, sst, sstIndexOff(t, sst)+1)
		}, sstable.ErrCorrupt},
		{"sst-footer-byte", func(t *testing.T, dir, sst string) (string, func()) {
			return sst, flipByte(t, sst, size(t, sst)-10)
		}, sstable.ErrCorrupt},
		{"manifest-byte", func(t *testing.T, dir, sst string) (string, func()) {
			m := filepath.Join(dir, manifest.FileName)
			return m, flipByte(t, m, size(t, m)/2)
		}, nil},
		{"manifest-truncated", func(t *testing.T, dir, sst string) (string, func()) {
			m := filepath.Join(dir, manifest.FileName)
			return m, truncate(t, m, 3)
		}, nil},
	} {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			dir := testdir.Direct(t)
			sst := storeOneTable(t, dir)
			file, undo := d.corrupt(t, dir, sst)
			checkOpenRefused(t, dir, file, d.is)
			undo()
			checkStoreWhole(t, dir, corruptKeys)
		})
	}
}

// checkOpenRefused fails unless Open(dir) fails with damage
// (ringstore.ErrCorrupt, a *ringstore.CorruptError) naming file (and is,
// when set).
func checkOpenRefused(t *testing.T, dir, file string, is error) {
	t.Helper()
	for _, c := range []config{{"uring", ioengine.URing, corruptOptions()}, {"syscall-nocache", ioengine.Syscall, Options{NoBlockCache: true, MemtableSize: 4 << 20}}} {
		opts := c.opts
		opts.Engine = testengineNew(t, c.mode)
		opts.Logf = t.Logf
		db, err := Open(dir, opts)
		if err == nil {
			db.Close()
			t.Errorf("%s: Open of a store with %s damaged succeeded", c.name, file)
			continue
		}
		if !strings.Contains(err.Error(), file) {
			t.Errorf("%s: Open: %v: does not name %s", c.name, err, file)
		}
		if is != nil && !errors.Is(err, is) {
			t.Errorf("%s: Open: %v: not errors.Is(err, %v)", c.name, err, is)
		}
		var ce *ringstore.CorruptError
		if !errors.Is(err, ringstore.ErrCorrupt) || !errors.As(err, &ce) || ce.Path != file {
			t.Errorf("%s: Open: %v: not damage (ringstore.ErrCorrupt) naming %s", c.name, err, file)
		}
		t.Logf("%s: Open: %v", c.name, err)
	}
}

// checkStoreWhole opens dir and checks that it holds keys 0..n-1 with
// corruptValue and nothing else.
func checkStoreWhole(t *testing.T, dir string, n int) {
	t.Helper()
	db := openTest(t, dir, config{mode: ioengine.Syscall, opts: corruptOptions()})
	defer db.Close()
	it := db.NewIterator(nil, nil)
	i := 0
	for it.Next() {
		if !bytes.Equal(it.Key(), keyOf(i)) || !bytes.Equal(it.Value(), corruptValue(i)) {
			t.Fatalf("after the repair: key %d is %q=%.20q", i, it.Key(), it.Value())
		}
		i++
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Fatalf("after the repair: %d keys, want %d", i, n)
	}
}

// TestCorruptLog damages the store's write-ahead log: a flipped byte in an
// entry of a sealed segment makes Open fail naming the segment file (a
// sealed segment is never cut as a torn tail), and an entry that is whole
// for the log but not a batch makes Open fail naming the log and the entry.
// Nothing is dropped silently: after the repair every write is there.
func TestCorruptLog(t *testing.T) {
	dir := testdir.Direct(t)
	// A memtable of 8 MiB gets log segments of 2 MiB: 5 MiB of writes, none
	// flushed, fill two sealed segments and part of a third.
	opts := Options{MemtableSize: 8 << 20, DisableAutoCompaction: true, CacheSize: 256 << 10}
	db := openTest(t, dir, config{mode: ioengine.Syscall, opts: opts})
	const n, vlen = 1280, 4000
	value := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, vlen) }
	var b Batch
	for i := 0; i < n; i++ {
		b.Put(keyOf(i), value(i))
		if b.Len() == 32 {
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
	if st := db.Stats(); st.Flushes != 0 {
		t.Fatalf("%d flushes: the writes must stay in the log", st.Flushes)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, walDir, "*.seg"))
	if err != nil || len(segs) < 2 {
		t.Fatalf("want two log segments or more, have %v (%v)", segs, err)
	}
	sort.Strings(segs)
	// The payload of the first entry of the first (sealed) segment.
	undo := flipByte(t, segs[0], wal.SegmentHeaderSize+16+100)
	for _, c := range []config{{"uring", ioengine.URing, opts}, {"syscall", ioengine.Syscall, opts}} {
		o := c.opts
		o.Engine = testengineNew(t, c.mode)
		o.Logf = t.Logf
		db, err := Open(dir, o)
		if err == nil {
			db.Close()
			t.Fatalf("%s: Open of a store with a damaged sealed log segment succeeded", c.name)
		}
		var ce *wal.CorruptError
		if !errors.Is(err, wal.ErrCorrupt) || !errors.Is(err, ringstore.ErrCorrupt) || !errors.As(err, &ce) || ce.Path != segs[0] || !strings.Contains(err.Error(), segs[0]) {
			t.Errorf("%s: Open: %v: want a wal.CorruptError naming %s", c.name, err, segs[0])
		}
		t.Logf("%s: Open: %v", c.name, err)
	}
	undo()
	check := func(extra int) {
		t.Helper()
		db := openTest(t, dir, config{mode: ioengine.URing, opts: opts})
		defer db.Close()
		for i := 0; i < n; i++ {
			if v, err := db.Get(keyOf(i)); err != nil || !bytes.Equal(v, value(i)) {
				t.Fatalf("after the repair: Get(%s): %d bytes, %v", keyOf(i), len(v), err)
			}
		}
		if st := db.Stats(); st.LastSeq != uint64(n+extra) {
			t.Errorf("after the repair: last seq %d, want %d", st.LastSeq, n+extra)
		}
	}
	check(0)

	// An entry the log holds intact whose payload is not a batch.
	l, err := wal.Open(filepath.Join(dir, walDir), wal.Options{IOMode: ioengine.Syscall, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	bad := (&Batch{}).encode(uint64(n + 1)) // a header with no operations
	seq, err := l.Append(bad)
	if err != nil {
		t.Fatal(err)
	}
	segPath, segOff, err := l.Locate(seq)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("%s at offset %d", segPath, segOff)
	o := opts
	o.Engine = testengineNew(t, ioengine.Syscall)
	o.Logf = t.Logf
	if db, err := Open(dir, o); err == nil {
		db.Close()
		t.Errorf("Open of a store whose log entry %d is not a batch succeeded", seq)
	} else if !strings.Contains(err.Error(), where) || !strings.Contains(err.Error(), fmt.Sprintf("entry %d", seq)) || !errors.Is(err, errBadBatch) || !errors.Is(err, ringstore.ErrCorrupt) {
		t.Errorf("Open: %v: does not name the entry %d, where it is (%s), errBadBatch and ringstore.ErrCorrupt", err, seq, where)
	} else if rce := (*ringstore.CorruptError)(nil); !errors.As(err, &rce) || rce.Path != segPath || rce.Offset != segOff || !strings.Contains(rce.What, fmt.Sprintf("entry %d", seq)) {
		t.Errorf("Open: %v: as a *ringstore.CorruptError %+v, want %s at offset %d", err, rce, segPath, segOff)
	} else {
		t.Logf("Open: %v", err)
	}
}

func testengineNew(t *testing.T, mode ioengine.IOMode) *ioengine.Engine {
	return testengine.New(t, mode, ioengine.Options{})
}

// TestCorruptCompaction damages a data block of an L0 table that a
// compaction must merge: Compact fails with the damage named, and the
// damaged table is neither dropped nor replaced by output missing its keys.
func TestCorruptCompaction(t *testing.T) {
	dir := testdir.Direct(t)
	path := storeOneTable(t, dir)
	r, err := sstable.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	h := r.Block(2)
	r.Close()
	// A second table over the same keys, so that the compaction merges.
	c := config{mode: ioengine.URing, opts: corruptOptions()}
	db := openTest(t, dir, c)
	for _, i := range []int{0, corruptKeys - 1} {
		if err := db.Put(keyOf(i), corruptValue(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	restore := flipByte(t, path, int64(h.Offset)+20)
	checkCompactionFails(t, openTest(t, dir, c), path, h)
	restore()
	checkStoreWhole(t, dir, corruptKeys)
}

// TestOpenRefusesTablesWithoutManifest: a store whose MANIFEST is gone is
// not opened as a new one (which would remove its tables); the files stay.
func TestOpenRefusesTablesWithoutManifest(t *testing.T) {
	c := config{"syscall", ioengine.Syscall, crashOptions()}
	dir := testdir.Direct(t)
	db := openTest(t, dir, c)
	if err := db.Put([]byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, manifest.FileName)); err != nil {
		t.Fatal(err)
	}
	before, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	_, err := Open(dir, Options{Logf: t.Logf, IOMode: ioengine.Syscall})
	if err == nil || !strings.Contains(err.Error(), "no MANIFEST") {
		t.Fatalf("Open without a MANIFEST: %v, want a refusal naming it", err)
	}
	after, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	if len(before) == 0 || len(after) != len(before) {
		t.Fatalf("tables before %v, after %v", before, after)
	}
}
