package kv

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// TestReadAhead reads batches of keys ahead and then with MultiGet, writing
// and deleting some of them in between and flushing once: the MultiGet sees
// the writes (a read ahead changes what is cached, never what is read),
// finds the blocks the read ahead loaded, and Done leaves no announcement
// open — given the ReadAhead (ReadOptions.ReadAhead, taking its choice of
// tables and blocks) or not. On the syscall backend the read ahead does
// nothing.
func TestReadAhead(t *testing.T) {
	for _, given := range []bool{false, true} {
		t.Run(fmt.Sprintf("given=%v", given), func(t *testing.T) { testReadAhead(t, given) })
	}
}

func testReadAhead(t *testing.T, given bool) {
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
				// Writes between the read ahead and the read: every fourth
				// key put, every tenth deleted (gen -1: absent).
				for j := 0; j < len(batch); j += 4 {
					gen[idx[j]] = max(gen[idx[j]], 0) + 1
					if err := db.Put(batch[j], val(idx[j], gen[idx[j]])); err != nil {
						t.Fatal(err)
					}
				}
				for j := 1; j < len(batch); j += 10 {
					gen[idx[j]] = -1
					if err := db.Delete(batch[j]); err != nil {
						t.Fatal(err)
					}
				}
				if round == 10 {
					if err := db.Flush(); err != nil { // tables change under the read ahead
						t.Fatal(err)
					}
				}
				ro := ReadOptions{}
				if given {
					ro.ReadAhead = ra
				}
				vals, found, err := db.MultiGetWith(ro, batch)
				ra.Done()
				if err != nil {
					t.Fatal(err)
				}
				for j := range batch {
					if gen[idx[j]] < 0 {
						if found[j] {
							t.Fatalf("round %d: deleted %s found: %.20q", round, batch[j], vals[j])
						}
						continue
					}
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
			if given != (st.ReadAheadLookups > 0) {
				t.Errorf("given %v: %d keys' lookups taken from the read ahead", given, st.ReadAheadLookups)
			}
			// Blocks read ahead are found by the MultiGet: once its loads are
			// done, a MultiGet of a few cold keys misses nothing in its first
			// round (a later one, after a bloom filter's false positive,
			// reads blocks nobody read ahead: at most one per key).
			few := [][]byte{key(1), key(5003), key(11007), key(17011)}
			ra := db.ReadAhead(few)
			ra.Wait()
			before := db.Stats()
			if _, _, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, few); err != nil {
				t.Fatal(err)
			}
			ra.Done()
			after := db.Stats()
			m, rounds := after.Cache.Misses-before.Cache.Misses, after.ReadRounds-before.ReadRounds
			if m > (rounds-1)*uint64(len(few)) {
				t.Errorf("MultiGet after a finished read ahead of its keys: %d cache misses in %d rounds, want none in the first", m, rounds)
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

// TestReadAheadOtherKeys gives a MultiGet a ReadAhead of other keys — a
// different list, and the same list with a key's bytes changed in place
// after the read ahead — and of a snapshot read: each key is looked up as
// itself, so the values are those of the keys read.
func TestReadAheadOtherKeys(t *testing.T) {
	eng := testengine.New(t, ioengine.URing, ioengine.Options{})
	db, err := Open(testdir.Direct(t), Options{Engine: eng, Unsafe: UnsafeOptions{NoSync: true}, CacheSize: 64 << 10, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	var b Batch
	for i := 0; i < 4000; i++ {
		b.Put(key(i), []byte(fmt.Sprintf("v%d", i)))
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	check := func(what string, ro ReadOptions, keys [][]byte, want func(i int) string) {
		t.Helper()
		vals, found, err := db.MultiGetWith(ro, keys)
		if err != nil {
			t.Fatal(err)
		}
		for j := range keys {
			if w := want(j); !found[j] || string(vals[j]) != w {
				t.Errorf("%s: %s = %q (found %v), want %q", what, keys[j], vals[j], found[j], w)
			}
		}
	}
	valOf := func(k []byte) string {
		n, err := strconv.Atoi(string(k[3:]))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("v%d", n)
	}
	idx := []int{7, 1500, 3999, 42}
	keys := make([][]byte, len(idx))
	for j, i := range idx {
		keys[j] = key(i)
	}
	other := [][]byte{key(8), key(2900), key(100), key(43), key(1000)}
	ra := db.ReadAhead(keys)
	check("other keys", ReadOptions{ReadAhead: ra}, other, func(j int) string { return valOf(other[j]) })
	copy(keys[1], key(2501)) // the same slice, a key changed in place
	check("a key changed in place", ReadOptions{ReadAhead: ra}, keys, func(j int) string { return valOf(keys[j]) })
	ra.Done()

	// A snapshot taken before a key is written and read ahead after: the
	// read ahead skips the key (in the memtable), the snapshot's read
	// looks it up in the tables.
	snap := db.NewSnapshot()
	defer snap.Close()
	if err := db.Put(key(7), []byte("new")); err != nil {
		t.Fatal(err)
	}
	keys = [][]byte{key(7), key(8)}
	ra = db.ReadAhead(keys)
	check("snapshot", ReadOptions{ReadAhead: ra, Snapshot: snap}, keys, func(j int) string { return fmt.Sprintf("v%d", 7+j) })
	check("latest", ReadOptions{ReadAhead: ra}, keys, func(j int) string { return []string{"new", "v8"}[j] })
	ra.Done()
	if st := db.Stats(); st.ReadAheadLookups == 0 {
		t.Errorf("no lookup was taken from a read ahead")
	}
}

// TestReadAheadOpenAtClose: a read ahead left open — its reads past an
// 8-frame cache in flight, holding the tables — does not hold Close up:
// Close waits for them and releases the tables; Done after Close is
// harmless. Then a read ahead whose tables a flush and
// compaction replace before its MultiGet: the MultiGet reads the new tables
// and Done releases the old ones.
func TestReadAheadOpenAtClose(t *testing.T) {
	key := func(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }
	open := func(dir string) *DB {
		eng := testengine.New(t, ioengine.URing, ioengine.Options{})
		db, err := Open(dir, Options{Engine: eng, Unsafe: UnsafeOptions{NoSync: true}, CacheSize: 32 << 10, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	dir := testdir.Direct(t)
	db := open(dir)
	var b Batch
	keys := make([][]byte, 0, 3000)
	for i := 0; i < 3000; i++ {
		b.Put(key(i), fmt.Appendf(nil, "%0100d", i))
		keys = append(keys, key(i))
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	ra := db.ReadAhead(keys)
	if ra.own == nil || ra.own.dc == nil {
		t.Fatalf("no read past the cache started (%d keys found in the cache)", settledKeys(ra))
	}
	done := make(chan error, 1)
	go func() { done <- db.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close hangs on an open read ahead")
	}
	// Close waited for the reads and let the tables go.
	if ra.own.bufs == nil || len(db.aheads) != 0 {
		t.Errorf("after Close: reads past the cache not waited for (%d read aheads listed)", len(db.aheads))
	}
	ra.Done()

	db = open(dir)
	defer db.Close()
	ra = db.ReadAhead(keys)
	for i := 0; i < 3000; i += 3 {
		if err := db.Put(key(i), []byte("new")); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	ra.Done()
	if err != nil {
		t.Fatal(err)
	}
	for i := range keys {
		want := string(fmt.Appendf(nil, "%0100d", i))
		if i%3 == 0 {
			want = "new"
		}
		if !found[i] || string(vals[i]) != want {
			t.Fatalf("%s = %.20q (found %v), want %.20q", keys[i], vals[i], found[i], want)
		}
	}
}

// TestReadAheadsShareTheCache: read aheads open together, their blocks
// more than the cache holds, read what it lacks past it and hold none of
// its frames while open; each MultiGet then reads its keys.
func TestReadAheadsShareTheCache(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	// Three batches of 40 keys on distinct blocks: more blocks than the
	// cache's 64 frames in all.
	batches := make([][][]byte, 3)
	for i := range batches {
		for j := 0; j < 40; j++ {
			batches[i] = append(batches[i], sharedCacheKey((i*40+j)*(sharedCacheKeys/120)))
		}
	}
	before := db.Stats()
	ras := make([]*ReadAhead, len(batches))
	for i, keys := range batches {
		ras[i] = db.ReadAhead(keys)
	}
	if st := db.Stats().Cache; st.Pinned != 0 || st.Misses != before.Cache.Misses {
		t.Errorf("open read aheads: cache %s (before %s); want no frame pinned, no load", st, before.Cache)
	}
	for i, keys := range batches {
		vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ras[i]}, keys)
		ras[i].Done()
		if err != nil {
			t.Fatal(err)
		}
		for j, k := range keys {
			n, _ := strconv.Atoi(strings.TrimPrefix(string(k), "key"))
			if !found[j] || string(vals[j]) != string(sharedCacheVal(n)) {
				t.Fatalf("batch %d: %s = %.20q (found %v)", i, k, vals[j], found[j])
			}
		}
	}
	after := db.Stats()
	if got := after.ReadAheadBlocks - before.ReadAheadBlocks; got < 120 {
		t.Errorf("%d blocks read ahead for 120 keys on distinct uncached blocks", got)
	}
	if got := after.BlockReads - before.BlockReads; got != after.ReadAheadBlocks-before.ReadAheadBlocks {
		t.Errorf("%d blocks read, %d of them by the read aheads: the MultiGets read the rest", got, after.ReadAheadBlocks-before.ReadAheadBlocks)
	}
}

// TestReadAheadSettlesCachedKeys: a read ahead searches the blocks the
// cache holds at once. Its MultiGet then reads none of them, even once
// other reads have evicted them all, and still returns what the store holds
// at its own call: a key written or deleted in between is read from the
// memtable, and a MultiGet at a snapshot older than the read ahead does not
// take what it found in a table written since.
func TestReadAheadSettlesCachedKeys(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	// 20 keys on distinct blocks, cached; then 200 other keys on distinct
	// blocks, more than the cache's 64 frames, read in between.
	var hot, other [][]byte
	for j := 0; j < 20; j++ {
		hot = append(hot, sharedCacheKey(j*(sharedCacheKeys/220)))
	}
	for j := 20; j < 220; j++ {
		other = append(other, sharedCacheKey(j*(sharedCacheKeys/220)))
	}
	if _, _, err := db.MultiGet(hot); err != nil {
		t.Fatal(err)
	}
	ra := db.ReadAhead(hot)
	if n := settledKeys(ra); n != len(hot) {
		t.Fatalf("the read ahead settled %d of %d cached keys", n, len(hot))
	}
	for i := 0; i < len(other); i += 20 {
		if _, _, err := db.MultiGet(other[i : i+20]); err != nil {
			t.Fatal(err)
		}
	}
	err := db.Put(hot[3], []byte("rewritten"))
	if err == nil {
		err = db.Delete(hot[7])
	}
	if err != nil {
		t.Fatal(err)
	}
	before := db.Stats()
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, hot)
	ra.Done()
	if err != nil {
		t.Fatal(err)
	}
	if d := db.Stats(); d.BlockReads != before.BlockReads || d.Cache.Hits != before.Cache.Hits || d.Cache.Misses != before.Cache.Misses {
		t.Errorf("the MultiGet read %d blocks (cache %d hits, %d misses); the read ahead had settled every key", d.BlockReads-before.BlockReads, d.Cache.Hits-before.Cache.Hits, d.Cache.Misses-before.Cache.Misses)
	}
	if string(vals[3]) != "rewritten" || found[7] {
		t.Errorf("keys written between the read ahead and its MultiGet: %q (want rewritten), deleted one found %v", vals[3], found[7])
	}
	vals[3], found[3], vals[7], found[7] = []byte(sharedCacheVal(3*(sharedCacheKeys/220))), true, []byte(sharedCacheVal(7*(sharedCacheKeys/220))), true
	checkSharedCacheValues(t, "MultiGet given the read ahead", hot, vals, found)

	// A snapshot, then a key rewritten and flushed: a read ahead made
	// after that finds the new value; a MultiGet at the snapshot given it
	// must not take it.
	snap := db.NewSnapshot()
	defer snap.Close()
	if err := db.Put(hot[5], []byte("after the snapshot")); err == nil {
		err = db.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.MultiGet(hot); err != nil { // the new table's block, cached
		t.Fatal(err)
	}
	ra = db.ReadAhead(hot)
	defer ra.Done()
	if ra.looks[5].got != gotValue || string(ra.looks[5].value) != "after the snapshot" {
		t.Fatalf("read ahead after the flush: key 5 %v %q", ra.looks[5].got, ra.looks[5].value)
	}
	vals, found, err = db.MultiGetWith(ReadOptions{ReadAhead: ra, Snapshot: snap}, hot)
	if err != nil {
		t.Fatal(err)
	}
	if want := sharedCacheVal(5 * (sharedCacheKeys / 220)); !found[5] || string(vals[5]) != string(want) {
		t.Errorf("MultiGet at the snapshot given a later read ahead: %.20q (found %v), want %.20q", vals[5], found[5], want)
	}
}

// settledKeys counts the keys ra found in the cache and searched.
func settledKeys(ra *ReadAhead) int {
	n := 0
	for _, al := range ra.looks {
		if al.got != gotNothing {
			n++
		}
	}
	return n
}

// The store of the tests of read aheads sharing a cache: on io_uring (the
// test is skipped where it is refused), a 256 KiB cache (64 frames), and
// sharedCacheKeys keys, sharedCacheKey(i) holding sharedCacheVal(i) (some
// 210 bytes), compacted into tables.
const sharedCacheKeys = 20000

func sharedCacheKey(i int) []byte { return []byte(fmt.Sprintf("key%08d", i)) }
func sharedCacheVal(i int) []byte { return []byte(fmt.Sprintf("value-%d-%0200d", i, i)) }

func openSharedCacheStore(t *testing.T) *DB { return openSharedCacheStoreWith(t, nil) }

// openSharedCacheStoreWith is openSharedCacheStore on an engine that
// injects faults (the plan may be empty while the store is built).
func openSharedCacheStoreWith(t *testing.T, faults *ioengine.FaultPlan) *DB {
	t.Helper()
	eng := testengine.New(t, ioengine.URing, ioengine.Options{Faults: faults})
	if eng.Backend() != ioengine.BackendURing {
		t.Skip("io_uring refused: read aheads do nothing")
	}
	db, err := Open(testdir.Direct(t), Options{Engine: eng, Unsafe: UnsafeOptions{NoSync: true}, CacheSize: 256 << 10, Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	var b Batch
	for i := 0; i < sharedCacheKeys; i++ {
		b.Put(sharedCacheKey(i), sharedCacheVal(i))
	}
	if err := db.Write(&b); err == nil {
		err = db.Compact()
	}
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return db
}

// TestReadAheadAcrossAFlush: a flush between a read ahead and its MultiGet
// gives the MultiGet another version, but a key whose newest table is still
// the one the read ahead found reads the block the read ahead read: none
// of them is read again, even those read past the cache. A key written and
// flushed in between is read from its new table.
func TestReadAheadAcrossAFlush(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	// 100 keys on distinct blocks: more than the cache's 64 frames, so the
	// read ahead reads some past the cache into memory of its own.
	var keys [][]byte
	for j := 0; j < 100; j++ {
		keys = append(keys, sharedCacheKey(j*(sharedCacheKeys/100)))
	}
	ra := db.ReadAhead(keys)
	ra.Wait()
	ra.Wait() // its reads past the cache are counted now, not in the MultiGet's
	// Another value for one key, and a key past all of them, flushed: a new
	// table whose range holds the first.
	rewritten := []byte("rewritten")
	if err := db.Put(keys[50], rewritten); err == nil {
		err = db.Put(sharedCacheKey(sharedCacheKeys), []byte("new"))
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	before := db.Stats()
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	ra.Done()
	if err != nil {
		t.Fatal(err)
	}
	after := db.Stats()
	for j, k := range keys {
		want := sharedCacheVal(j * (sharedCacheKeys / 100))
		if j == 50 {
			want = rewritten
		}
		if !found[j] || string(vals[j]) != string(want) {
			t.Fatalf("%s = %.20q (found %v), want %.20q", k, vals[j], found[j], want)
		}
	}
	// The rewritten key's block of the new table, and a block for each of
	// the few keys the new table's filter lets through by mistake, are the
	// only reads.
	if taken := after.ReadAheadLookups - before.ReadAheadLookups; taken < 95 {
		t.Errorf("%d of 100 keys' first blocks taken from the read ahead made before the flush, want at least 95", taken)
	}
	if n := after.BlockReads - before.BlockReads; n > 5 {
		t.Errorf("%d blocks read after the flush, want at most 5", n)
	}
}

// TestReadAheadSettledAcrossACompaction: what a read ahead found for a key
// in a block the cache held still answers its MultiGet after a compaction
// has rewritten the key's table, where no table that may hold the key has
// an entry above the read ahead's seq: nothing is read. A key written or
// deleted after the read ahead is read from its new table; while the read
// ahead is open, a compaction to the bottom keeps the deletion (and the
// version under it), as it would for a snapshot.
func TestReadAheadSettledAcrossACompaction(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	var hot [][]byte
	for j := 0; j < 20; j++ {
		hot = append(hot, sharedCacheKey(j*(sharedCacheKeys/20)))
	}
	// Keys next to the hot ones rewritten and flushed before the read
	// ahead: the compaction below merges their table with the hot keys'
	// and rewrites those, adding no entry above the read ahead's seq.
	var b Batch
	for j := range hot {
		b.Put(sharedCacheKey(j*(sharedCacheKeys/20)+1), []byte("between"))
	}
	err := db.Write(&b)
	if err == nil {
		err = db.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.MultiGet(hot); err != nil { // their blocks, cached
		t.Fatal(err)
	}
	ra := db.ReadAhead(hot)
	settled := settledKeys(ra)
	if settled < len(hot)-1 { // the new table's filter may let one through by mistake
		t.Fatalf("the read ahead settled %d of %d cached keys", settled, len(hot))
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	if ra.v == db.current {
		t.Fatal("the compaction left the read ahead's version in place")
	}
	before := db.Stats()
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, hot)
	ra.Done()
	if err != nil {
		t.Fatal(err)
	}
	checkSharedCacheValues(t, "MultiGet after a compaction, given the read ahead", hot, vals, found)
	after := db.Stats()
	if taken := after.ReadAheadLookups - before.ReadAheadLookups; taken != uint64(settled) {
		t.Errorf("%d keys taken from the read ahead after the compaction, want the %d it settled", taken, settled)
	}
	if n := after.BlockReads - before.BlockReads; n > uint64(len(hot)-settled) {
		t.Errorf("%d blocks read after the compaction, want at most %d", n, len(hot)-settled)
	}

	// Written and deleted after the read ahead, then compacted to the
	// bottom: read again; while the read ahead is open the versions it saw
	// stay under the new ones, the deletion with them (two entries more).
	if _, _, err := db.MultiGet(hot); err != nil {
		t.Fatal(err)
	}
	entries := liveEntries(db)
	ra = db.ReadAhead(hot)
	defer ra.Done()
	err = db.Put(hot[3], []byte("rewritten"))
	if err == nil {
		err = db.Delete(hot[7])
	}
	if err == nil {
		err = db.Compact()
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := liveEntries(db); got != entries+2 {
		t.Errorf("%d entries in the tables after the compaction, want %d: the versions the read ahead saw kept under the rewrite and the deletion", got, entries+2)
	}
	vals, found, err = db.MultiGetWith(ReadOptions{ReadAhead: ra}, hot)
	if err != nil {
		t.Fatal(err)
	}
	if string(vals[3]) != "rewritten" || found[7] {
		t.Errorf("keys written after the read ahead: %q (want rewritten), deleted one found %v", vals[3], found[7])
	}
}

// liveEntries counts the entries of the tables of db's current version.
func liveEntries(db *DB) uint64 {
	db.mu.Lock()
	defer db.mu.Unlock()
	var n uint64
	for _, level := range db.current.levels {
		for _, t := range level {
			n += t.meta.Entries
		}
	}
	return n
}

// TestReadAheadPastTheCache: a read ahead announces the blocks the cache
// holds and reads the others past it, so that running ahead takes no frame
// from the cache; the MultiGet given it puts those blocks in the cache once
// it has checked them, and a second read of the keys reads nothing.
func TestReadAheadPastTheCache(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	// 40 keys on distinct blocks, none cached; then 10 of them cached.
	var cold, warm [][]byte
	for j := 0; j < 40; j++ {
		k := sharedCacheKey(j * (sharedCacheKeys / 40))
		if j < 10 {
			warm = append(warm, k)
		} else {
			cold = append(cold, k)
		}
	}
	if _, _, err := db.MultiGet(warm); err != nil {
		t.Fatal(err)
	}
	keys := append(append([][]byte(nil), warm...), cold...)
	before := db.Stats()
	ra := db.ReadAhead(keys)
	if n := settledKeys(ra); n != len(warm) || ra.own == nil || ra.own.dc == nil || len(ra.own.dreads) != len(cold) {
		t.Fatalf("read ahead of %d cached and %d uncached blocks: %d keys found in the cache, reads past the cache %+v", len(warm), len(cold), n, ra.own)
	}
	ra.Wait()
	mid := db.Stats()
	if n := mid.Engine.FixedTransfers - before.Engine.FixedTransfers; !mid.DirectFixed || n != uint64(len(ra.own.dc.reqs)) {
		t.Errorf("the read ahead's %d reads past the cache: %d as READ_FIXED (arena registered: %v %s)", len(ra.own.dc.reqs), n, mid.DirectFixed, mid.DirectFixedOff)
	}
	if st := mid.Cache; st.Hits != before.Cache.Hits+uint64(len(warm)) || st.Pinned != 0 || st.Misses != before.Cache.Misses || st.Resident != before.Cache.Resident {
		t.Fatalf("after the read ahead: cache %s (before: %s); want %d hits, nothing pinned, no load", st, before.Cache, len(warm))
	}
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	ra.Done()
	if err != nil {
		t.Fatal(err)
	}
	checkSharedCacheValues(t, "MultiGet given the read ahead", keys, vals, found)
	after := db.Stats()
	if n := after.BlockReads - mid.BlockReads; n != 0 {
		t.Errorf("the MultiGet read %d blocks; the read ahead had them all", n)
	}
	if n := after.Cache.Inserted - mid.Cache.Inserted; n != uint64(len(cold)) {
		t.Errorf("the MultiGet and Done put %d blocks read past the cache in it, want %d", n, len(cold))
	}
	if n := after.Cache.Hits - mid.Cache.Hits; n != 0 {
		t.Errorf("the MultiGet pinned %d cached blocks; the read ahead had searched them", n)
	}
	if _, _, err := db.MultiGet(keys); err != nil {
		t.Fatal(err)
	}
	if again := db.Stats(); again.BlockReads != after.BlockReads || again.Cache.Misses != after.Cache.Misses {
		t.Errorf("a second MultiGet of the keys read %d blocks (%d cache misses)", again.BlockReads-after.BlockReads, again.Cache.Misses-after.Cache.Misses)
	}
}

// checkSharedCacheValues checks that a MultiGet of keys of the shared-cache
// store (sharedCacheKey) returned each key's value.
func checkSharedCacheValues(t *testing.T, what string, keys, vals [][]byte, found []bool) {
	t.Helper()
	for j, k := range keys {
		i, err := strconv.Atoi(string(k[len("key"):]))
		if err != nil {
			t.Fatal(err)
		}
		if want := sharedCacheVal(i); !found[j] || string(vals[j]) != string(want) {
			t.Fatalf("%s: %s = %.20q (found %v), want %.20q", what, k, vals[j], found[j], want)
		}
	}
}

// TestReadAheadReadFails: a read the read ahead made past the cache that
// fails is not used and not put in the cache: the MultiGet reads the block
// itself and, where the failure was passing, returns the right values;
// where it lasts, the MultiGet fails naming the error, and loses nothing:
// once the device reads again, every value is there.
func TestReadAheadReadFails(t *testing.T) {
	plan := ioengine.NewFaultPlan()
	db := openSharedCacheStoreWith(t, plan)
	defer db.Close()
	batch := func(from int) [][]byte {
		var keys [][]byte
		for j := 0; j < 20; j++ {
			keys = append(keys, sharedCacheKey(from+j*(sharedCacheKeys/20)))
		}
		return keys
	}
	// Passing: the read ahead's first read fails once.
	keys := batch(7)
	plan.Add(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead})
	ra := db.ReadAhead(keys)
	if ra.own == nil || ra.own.dc == nil {
		t.Fatalf("cold keys: nothing read past the cache")
	}
	before := db.Stats()
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	ra.Done()
	if err != nil {
		t.Fatalf("MultiGet after a read ahead whose read failed once: %v", err)
	}
	if plan.Injected() != 1 {
		t.Fatalf("%d faults injected, want 1", plan.Injected())
	}
	checkSharedCacheValues(t, "after a passing failure", keys, vals, found)
	after := db.Stats()
	if after.DirectLostPages == 0 {
		t.Errorf("the registered pages of the failed read ahead went back for reuse")
	}
	if after.Cache.Misses == before.Cache.Misses {
		t.Errorf("the MultiGet read none of the blocks itself after the read ahead's read failed")
	}
	if vals, found, err = db.MultiGet(keys); err != nil {
		t.Fatal(err)
	}
	checkSharedCacheValues(t, "read again", keys, vals, found)
	// Lasting: every read fails until the plan's faults are used up.
	keys = batch(11)
	plan.Add(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead, Times: 1000})
	ra = db.ReadAhead(keys)
	_, _, err = db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	ra.Done()
	if !errors.Is(err, unix.EIO) || !strings.Contains(err.Error(), ".sst") {
		t.Fatalf("MultiGet while every read fails: %v, want EIO naming the table", err)
	}
	for i := 0; plan.Injected() < 1001; i++ { // use the faults up
		if i == 2000 {
			t.Fatalf("faults left after 2000 failing MultiGets: %d injected", plan.Injected())
		}
		db.MultiGet(keys) //nolint:errcheck // failing on purpose
	}
	if vals, found, err = db.MultiGet(keys); err != nil {
		t.Fatalf("MultiGet once reads succeed again: %v", err)
	}
	checkSharedCacheValues(t, "after the failures", keys, vals, found)
}

// TestReadAheadJoinsOpenReads: a read ahead that needs blocks another open
// read ahead is reading past the cache takes them from it instead of
// reading them again, whichever of the two is done first; the memory they
// went into goes back once both are done.
func TestReadAheadJoinsOpenReads(t *testing.T) {
	for _, firstDoneFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("firstDoneFirst=%v", firstDoneFirst), func(t *testing.T) {
			db := openSharedCacheStore(t)
			defer db.Close()
			// 30 cold keys on distinct blocks; the second read ahead asks
			// for the last 20 of them and 10 other cold ones.
			var keys [][]byte
			for j := 0; j < 40; j++ {
				keys = append(keys, sharedCacheKey(j*(sharedCacheKeys/40)))
			}
			firstKeys, secondKeys := keys[:30], keys[10:]
			before := db.Stats()
			first := db.ReadAhead(firstKeys)
			second := db.ReadAhead(secondKeys)
			mid := db.Stats()
			if n := mid.ReadAheadJoined - before.ReadAheadJoined; n != 20 {
				t.Errorf("the second read ahead joined %d blocks of the first, want 20", n)
			}
			if n := mid.ReadAheadBlocks - before.ReadAheadBlocks; n != 40 {
				t.Errorf("%d blocks read past the cache for 40 distinct cold blocks", n)
			}
			get := func(ra *ReadAhead, keys [][]byte) {
				t.Helper()
				vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
				if err != nil {
					t.Fatal(err)
				}
				checkSharedCacheValues(t, "MultiGet given a read ahead", keys, vals, found)
			}
			get(first, firstKeys)
			if firstDoneFirst {
				first.Done()
				// Evict what the first MultiGet put in the cache, and
				// read 20 blocks past it (memory the first's reads would
				// have freed, were they not joined): the second must still
				// have the blocks it joined.
				var others [][]byte
				for j := 0; j < 84; j++ {
					others = append(others, sharedCacheKey(j*(sharedCacheKeys/84)+1))
				}
				if _, _, err := db.MultiGet(others); err != nil {
					t.Fatal(err)
				}
			}
			second.Wait() // its own reads are counted now, not in its MultiGet
			mid = db.Stats()
			get(second, secondKeys)
			if !firstDoneFirst {
				first.Done()
			}
			second.Done()
			after := db.Stats()
			if n := after.BlockReads - mid.BlockReads; n != 0 && firstDoneFirst {
				t.Errorf("the second MultiGet read %d blocks: the read aheads had them all", n)
			}
			if a := db.directArena; a != nil {
				a.mu.Lock()
				out := a.out
				a.mu.Unlock()
				if out != 0 {
					t.Errorf("%d pages of the arena still out after both read aheads are done", out)
				}
			}
			if len(db.aheads) != 0 || len(db.aheadBlocks) != 0 {
				t.Errorf("after both are done: %d reads and %d blocks still listed", len(db.aheads), len(db.aheadBlocks))
			}
		})
	}
}

// TestReadAheadReadsFlushedMemtables: a read ahead holds the memtables it
// looked in until Done. After a flush of them its MultiGet reads the keys
// they hold from them, not from their new table, writes made after the
// read ahead included, and takes what the read ahead found for the others:
// nothing is read. Once a memtable made after the read ahead has been
// flushed as well, the MultiGet looks in the tables again, and still reads
// every key as written.
func TestReadAheadReadsFlushedMemtables(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	var inTables, inMem [][]byte
	want := map[string]string{}
	for j := 0; j < 20; j++ {
		k := sharedCacheKey(j * (sharedCacheKeys / 20))
		inTables = append(inTables, k)
		want[string(k)] = string(sharedCacheVal(j * (sharedCacheKeys / 20)))
	}
	if _, _, err := db.MultiGet(inTables); err != nil { // their blocks cached
		t.Fatal(err)
	}
	var b Batch
	for j := 0; j < 20; j++ {
		k, v := fmt.Sprintf("mem%04d", j), fmt.Sprintf("in memory %d", j)
		inMem = append(inMem, []byte(k))
		b.Put([]byte(k), []byte(v))
		want[k] = v
	}
	if err := db.Write(&b); err != nil {
		t.Fatal(err)
	}
	held := db.Stats().HeldMemtables
	keys := append(slices.Clone(inTables), inMem...)
	check := func(when string, vals [][]byte, found []bool) {
		t.Helper()
		for i, k := range keys {
			w, ok := want[string(k)]
			if found[i] != ok || string(vals[i]) != w {
				t.Fatalf("%s: %s = %q (found %v), want %q (found %v)", when, k, vals[i], found[i], w, ok)
			}
		}
	}
	write := func(put bool, k []byte, v string) {
		t.Helper()
		var err error
		if put {
			err, want[string(k)] = db.Put(k, []byte(v)), v
		} else {
			err = db.Delete(k)
			delete(want, string(k))
		}
		if err != nil {
			t.Fatal(err)
		}
	}

	ra := db.ReadAhead(keys)
	// Into the memtable the read ahead looked in: a rewrite and a deletion
	// of a key it found there and of one it found in a table. Then that
	// memtable is flushed.
	write(true, inMem[3], "rewritten")
	write(false, inMem[7], "")
	write(true, inTables[5], "rewritten")
	write(false, inTables[9], "")
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := db.Stats().HeldMemtables; n != held+1 {
		t.Errorf("%d memtables held after the flush, want %d: the read ahead holds the one flushed", n, held+1)
	}
	before := db.Stats()
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	ra.Done()
	if err != nil {
		t.Fatal(err)
	}
	check("after a flush of the memtable the read ahead held", vals, found)
	after := db.Stats()
	if n := after.BlockReads - before.BlockReads; n != 0 {
		t.Errorf("%d blocks read after the flush, want none", n)
	}
	if n := after.ReadAheadLookups - before.ReadAheadLookups; n != uint64(len(keys)) {
		t.Errorf("%d keys taken from the read ahead and its memtables, want all %d", n, len(keys))
	}
	if n := after.HeldMemtables; n != held {
		t.Errorf("%d memtables held after Done, want %d", n, held)
	}

	// A memtable made after the read ahead, flushed too: the MultiGet
	// cannot know what it held, and looks in the tables.
	ra = db.ReadAhead(keys)
	defer ra.Done()
	write(true, inMem[4], "rewritten again")
	if err := db.Flush(); err == nil {
		write(true, inTables[6], "rewritten again")
		err = db.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ra.sinceFlushed(db.reads.Load().mems); ok {
		t.Fatal("after two flushes the read ahead claims its memtables hold every write since it")
	}
	vals, found, err = db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	if err != nil {
		t.Fatal(err)
	}
	check("after a flush of a memtable made after the read ahead", vals, found)
}

// TestReadAheadReadPastTheCacheAcrossACompaction: the blocks a read ahead
// read past the cache still answer its MultiGet after a compaction has
// rewritten their tables, where no key of the batch was written since: the
// MultiGet looks the keys up in the read ahead's blocks and reads nothing.
// Writes of other keys since the read ahead (into the memtable it holds)
// do not change that.
func TestReadAheadReadPastTheCacheAcrossACompaction(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	// 40 keys on distinct blocks, none cached.
	var keys [][]byte
	for j := 0; j < 40; j++ {
		keys = append(keys, sharedCacheKey(j*(sharedCacheKeys/40)))
	}
	ra := db.ReadAhead(keys)
	defer ra.Done()
	ra.Wait() // its reads past the cache are counted now, not in the MultiGet's
	if st := db.Stats(); st.ReadAheadBlocks < 30 {
		t.Fatalf("the read ahead read %d blocks past the cache, want most of the 40", st.ReadAheadBlocks)
	}
	var b Batch
	for j := range keys {
		b.Put(sharedCacheKey(j*(sharedCacheKeys/40)+1), []byte("between"))
	}
	err := db.Write(&b)
	if err == nil {
		err = db.Compact()
	}
	if err != nil {
		t.Fatal(err)
	}
	if ra.v == db.current {
		t.Fatal("the compaction left the read ahead's version in place")
	}
	before := db.Stats()
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	if err != nil {
		t.Fatal(err)
	}
	checkSharedCacheValues(t, "MultiGet after a compaction, given the read ahead", keys, vals, found)
	after := db.Stats()
	if n := after.BlockReads - before.BlockReads; n != 0 {
		t.Errorf("%d blocks read after the compaction, want none", n)
	}
	if n := after.ReadAheadLookups - before.ReadAheadLookups; n != uint64(len(keys)) {
		t.Errorf("%d keys taken from the read ahead after the compaction, want all %d", n, len(keys))
	}
}

// TestReadAheadDonePutsUnusedBlocksInTheCache: blocks a read ahead read past
// the cache that its MultiGet had no use for (every key written since, found
// in the memtable) go in the cache at Done, so the next read of them reads
// nothing; a MultiGet given ReadOptions.NoFillCache leaves them out.
func TestReadAheadDonePutsUnusedBlocksInTheCache(t *testing.T) {
	for _, noFill := range []bool{false, true} {
		t.Run(fmt.Sprintf("NoFillCache=%v", noFill), func(t *testing.T) {
			db := openSharedCacheStore(t)
			defer db.Close()
			var keys [][]byte // on distinct blocks, none cached
			for j := 0; j < 20; j++ {
				keys = append(keys, sharedCacheKey(j*(sharedCacheKeys/20)))
			}
			ra := db.ReadAhead(keys)
			if ra.own == nil || len(ra.own.dreads) != len(keys) {
				t.Fatalf("read ahead of %d uncached blocks: reads past the cache %+v", len(keys), ra.own)
			}
			var blocks []bufpool.Span
			for _, r := range ra.own.dreads {
				blocks = append(blocks, bufpool.Span{File: r.t.fid, Off: int64(r.h.Offset), Len: int64(r.h.Len)})
			}
			var b Batch
			for _, k := range keys {
				b.Put(k, []byte("written since"))
			}
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			before := db.Stats()
			vals, _, err := db.MultiGetWith(ReadOptions{ReadAhead: ra, NoFillCache: noFill}, keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				if string(v) != "written since" {
					t.Fatalf("%s = %q after a write", keys[i], v)
				}
			}
			if n := db.Stats().Cache.Inserted - before.Cache.Inserted; n != 0 {
				t.Fatalf("the MultiGet, which found every key in the memtable, put %d blocks in the cache", n)
			}
			ra.Done()
			inserted := db.Stats().Cache.Inserted - before.Cache.Inserted
			resident := 0
			for _, ok := range db.pool.Present(blocks, nil) {
				if ok {
					resident++
				}
			}
			switch {
			case noFill && (inserted != 0 || resident != 0):
				t.Errorf("NoFillCache: Done put %d blocks in the cache, %d of the %d resident; want none", inserted, resident, len(blocks))
			case !noFill && (inserted != uint64(len(blocks)) || resident != len(blocks)):
				t.Errorf("Done put %d blocks in the cache, %d of the %d resident; want all", inserted, resident, len(blocks))
			}
		})
	}
}

// TestReadAheadBlockCheckedOnce: a block read past the cache that two keys
// share is verified by the first lookup of it, and goes in the cache marked
// checked, so no later lookup verifies it again; a block whose keys were
// all written since, which no lookup verified, goes in unchecked at Done.
func TestReadAheadBlockCheckedOnce(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	shared := [][]byte{sharedCacheKey(0), sharedCacheKey(1)} // the first block
	unused := sharedCacheKey(sharedCacheKeys / 2)
	keys := append(slices.Clone(shared), unused)
	ra := db.ReadAhead(keys)
	if ra.own == nil || len(ra.own.dreads) != 2 {
		t.Fatalf("read ahead of 2 uncached blocks for 3 keys: reads past the cache %+v", ra.own)
	}
	own := ra.own
	spans := make([]bufpool.Span, 2)
	for j, r := range own.dreads {
		spans[j] = bufpool.Span{File: r.t.fid, Off: int64(r.h.Offset), Len: int64(r.h.Len)}
	}
	if err := db.Put(unused, []byte("written since")); err != nil {
		t.Fatal(err)
	}
	vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra}, keys)
	if err != nil {
		t.Fatal(err)
	}
	checkSharedCacheValues(t, "the keys sharing a block", shared, vals[:2], found[:2])
	for j := range own.checked {
		if want := j == 0; own.checked[j].Load() != want {
			t.Errorf("block %d (of %s) checked %v after the MultiGet, want %v", j, keys[2*j], !want, want)
		}
	}
	ra.Done()
	for j, s := range spans {
		frames, err := db.pool.Pin([]bufpool.Span{s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := frames[0].Checked(), j == 0; got != want {
			t.Errorf("block %d in the cache: checked %v, want %v", j, got, want)
		}
		frames[0].Unpin()
	}
}
