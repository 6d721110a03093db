package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// fillTables writes n tables of per keys each (keys interleaved across the
// tables, so every table spans the key range) with auto compaction off.
func fillTables(t *testing.T, db *DB, n, per int) {
	t.Helper()
	for f := 0; f < n; f++ {
		for i := 0; i < per; i++ {
			k := i*n + f
			if err := db.Put(keyOf(k), []byte(fmt.Sprintf("value-%d", k))); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
}

func metaOptions(budget int64) Options {
	return Options{TableMetaCacheSize: budget, DisableAutoCompaction: true, L0StopWritesTrigger: 100,
		L0CompactionTrigger: 99, CacheSize: 256 << 10, DisableWAL: true}
}

// The metadata held stays within the budget however many tables are opened
// and read, and reads whose tables' metadata was dropped load it again and
// find every value.
func TestTableMetaBudget(t *testing.T) {
	const tables, per = 48, 3000
	dir := t.TempDir()
	db := openTest(t, dir, config{mode: ioengine.URing, opts: metaOptions(64 << 10)})
	fillTables(t, db, tables, per)
	if held := db.meta.heldBytes(); held != 0 {
		t.Errorf("after flushes only, the cache holds %d bytes of metadata, want 0 (nothing read)", held)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, config{mode: ioengine.URing, opts: metaOptions(64 << 10)})
	defer db.Close()
	var one int64
	db.mu.Lock()
	for _, tb := range db.current.levels[0] {
		r, err := tb.loadReader()
		if err != nil {
			t.Fatal(err)
		}
		one = max(one, r.MetaBytes())
	}
	n := len(db.current.levels[0])
	db.mu.Unlock()
	if n != tables || int64(tables)*one/2 < 64<<10 {
		t.Fatalf("%d tables of up to %d bytes of metadata: want %d tables of more than the budget together", n, one, tables)
	}
	check := func(when string) {
		t.Helper()
		if held := db.meta.heldBytes(); held > 64<<10 {
			t.Fatalf("%s: %d bytes of metadata held, budget %d", when, held, 64<<10)
		}
	}
	check("after Open")
	for round := 0; round < 2; round++ {
		for i := 0; i < tables*per; i += 97 {
			got, err := db.Get(keyOf(i))
			if err != nil {
				t.Fatalf("Get(%s): %v", keyOf(i), err)
			}
			if want := fmt.Sprintf("value-%d", i); string(got) != want {
				t.Fatalf("Get(%s) = %q, want %q", keyOf(i), got, want)
			}
			if i%(97*13) == 0 {
				check(fmt.Sprintf("round %d, key %d", round, i))
			}
		}
	}
	check("after the reads")
	if l, e := db.meta.loads.Load(), db.meta.evicts.Load(); e == 0 || l <= uint64(tables) {
		t.Errorf("%d loads, %d drops: the reads should have dropped and reloaded metadata", l, e)
	}
	it := db.NewIterator(nil, nil)
	count := 0
	for it.Next() {
		count++
	}
	if err := it.Close(); err != nil || count != tables*per {
		t.Fatalf("iterator: %d keys, %v; want %d", count, err, tables*per)
	}
	check("after the scan")
}

// A store that only writes holds no new table's metadata; a flush or
// compaction after reads that needed a table's metadata keeps what its
// writer checked, so the first reads of its tables load nothing; one with
// no such read since the last drops it again.
func TestNewTablesMetaHeld(t *testing.T) {
	const per = 2000
	dir := t.TempDir()
	db := openTest(t, dir, config{mode: ioengine.URing, opts: metaOptions(8 << 20)})
	defer db.Close()
	fillTables(t, db, 2, per)
	if held := db.meta.heldBytes(); held != 0 {
		t.Fatalf("after flushes only: %d bytes of metadata held, want 0", held)
	}
	get := func(k int) {
		t.Helper()
		if v, err := db.Get(keyOf(k)); err != nil || string(v) != fmt.Sprintf("value-%d", k) {
			t.Fatalf("Get(%s) = %q, %v", keyOf(k), v, err)
		}
	}
	// flushKeys writes a table of the keys [from, from+per).
	flushKeys := func(from int) {
		t.Helper()
		for k := from; k < from+per; k++ {
			if err := db.Put(keyOf(k), []byte(fmt.Sprintf("value-%d", k))); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	loadsBy := func(what string, want uint64, keys ...int) {
		t.Helper()
		before := db.meta.loads.Load()
		for _, k := range keys {
			get(k)
		}
		if l := db.meta.loads.Load() - before; l != want {
			t.Fatalf("%s: %d metadata loads, want %d", what, l, want)
		}
	}
	loadsBy("the first reads", 2, 0, 1)
	flushKeys(2 * per)
	loadsBy("a read of a table flushed after reads", 0, 2*per+7)
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	loadsBy("reads of the outputs of a compaction after reads", 0, 3, per+5, 2*per+9)
	flushKeys(3 * per) // reads came before it: held
	flushKeys(4 * per) // none since the last flush: dropped
	loadsBy("a read of a table flushed after reads", 0, 3*per+1)
	loadsBy("a read of a table flushed with no read since the flush before", 1, 4*per+1)
}

// A table's metadata damaged after the table was opened (and its metadata
// checked) is found when a read loads it: a *sstable.CorruptError naming the
// file and the offset in the section, from Get and from a compaction.
func TestTableMetaCorruptOnLoad(t *testing.T) {
	for _, sec := range []struct {
		name string
		at   func(foot []byte) (lo, hi uint64)
	}{
		{"index", func(f []byte) (uint64, uint64) {
			return binary.LittleEndian.Uint64(f), binary.LittleEndian.Uint64(f) + binary.LittleEndian.Uint64(f[8:])
		}},
		{"filter", func(f []byte) (uint64, uint64) {
			return binary.LittleEndian.Uint64(f[16:]), binary.LittleEndian.Uint64(f[16:]) + binary.LittleEndian.Uint64(f[24:])
		}},
	} {
		t.Run(sec.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openTest(t, dir, config{mode: ioengine.URing, opts: metaOptions(64 << 10)})
			defer db.Close()
			fillTables(t, db, 2, 2000) // flushed, checked, not held; they overlap
			ssts, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
			if len(ssts) != 2 {
				t.Fatalf("tables %v, want two", ssts)
			}
			path := ssts[0]
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := sec.at(raw[len(raw)-sstable.FooterLen:])
			flipByte(t, path, int64(lo+(hi-lo)/2))
			_, err = db.Get(keyOf(5))
			checkSSTCorrupt(t, "Get", err, path, lo, hi)
			if err := db.Compact(); err == nil || !errors.Is(err, sstable.ErrCorrupt) {
				t.Errorf("Compact: %v, want the damage reported", err)
			} else if !bytes.Contains([]byte(err.Error()), []byte(path)) {
				t.Errorf("Compact: %v does not name %s", err, path)
			}
		})
	}
}
