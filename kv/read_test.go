package kv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/ioengine"
)

// TestReadsTakeNoLock: Get, MultiGet and ReadAhead complete while DB.mu is
// held: a read takes its state from the published read set with an atomic
// reference, not under the store's lock.
func TestReadsTakeNoLock(t *testing.T) {
	db := openTest(t, t.TempDir(), config{"uring", ioengine.URing, Options{Unsafe: UnsafeOptions{NoSync: true}}})
	defer db.Close()
	for i := range 100 {
		if err := db.Put([]byte(fmt.Sprintf("k%03d", i)), []byte("v")); err != nil {
			t.Fatal(err)
		}
		if i == 50 {
			if err := db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	db.mu.Lock()
	done := make(chan error, 1)
	go func() {
		if _, err := db.Get([]byte("k007")); err != nil {
			done <- err
			return
		}
		_, found, err := db.MultiGet([][]byte{[]byte("k001"), []byte("k099"), []byte("none")})
		if err == nil && (!found[0] || !found[1] || found[2]) {
			err = fmt.Errorf("MultiGet found %v, want [true true false]", found)
		}
		done <- err
	}()
	select {
	case err := <-done:
		db.mu.Unlock()
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		db.mu.Unlock()
		<-done
		t.Fatal("a read waited for DB.mu")
	}
}

// TestReadSetKeepsTables: a read state taken before a compaction keeps the
// tables it looks at, open and on disk, until it is released; the compacted
// tables' files go after that release, removed by the cleaner, not by the
// release itself; and after Close reads fail with ErrClosed.
func TestReadSetKeepsTables(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, config{"uring", ioengine.URing, Options{Unsafe: UnsafeOptions{NoSync: true}}})
	for round := range 3 {
		for i := range 200 {
			if err := db.Put([]byte(fmt.Sprintf("k%04d", i)), []byte(fmt.Sprintf("v%d", round))); err != nil {
				t.Fatal(err)
			}
		}
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	rs, err := db.acquire(ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old := rs.v.levels[0]
	if len(old) != 3 {
		t.Fatalf("%d L0 tables, want 3", len(old))
	}
	if err := db.Compact(); err != nil {
		t.Fatal(err)
	}
	for _, tb := range old {
		if _, err := os.Stat(tb.path); err != nil {
			t.Fatalf("a table of a read state in use was removed: %v", err)
		}
	}
	if db.reads.Load() == rs.readSet {
		t.Fatal("the compaction did not publish a new read set")
	}
	// The cleaner waits on the hook: the release must return all the same,
	// with the files still there.
	cleanerAt, letGo := make(chan struct{}), make(chan struct{})
	db.mu.Lock()
	db.testBeforeClean = func() {
		close(cleanerAt)
		<-letGo
	}
	db.mu.Unlock()
	db.release(rs)
	select {
	case <-cleanerAt:
	case <-time.After(20 * time.Second):
		t.Fatal("no cleaner took the released tables")
	}
	for _, tb := range old {
		if _, err := os.Stat(tb.path); err != nil {
			t.Fatalf("the release removed %s itself, or the cleaner ran past its hook: %v", filepath.Base(tb.path), err)
		}
	}
	close(letGo)
	waitCleaned(db)
	for _, tb := range old {
		if _, err := os.Stat(tb.path); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("compacted %s still there after the last read released it: %v", filepath.Base(tb.path), err)
		}
	}
	if v, err := db.Get([]byte("k0007")); err != nil || string(v) != "v2" {
		t.Fatalf("Get after the compaction: %q, %v", v, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Get([]byte("k0007")); !errors.Is(err, ErrClosed) {
		t.Fatalf("Get after Close: %v, want ErrClosed", err)
	}
}

// TestCacheReadsFixed: on io_uring the block cache's arena is registered
// with the ring, so its block reads go as READ_FIXED and return the
// stored values; where the kernel refuses the registration (memlock),
// Stats says why and the reads go plain, with the same values.
func TestCacheReadsFixed(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, config{"uring", ioengine.URing, Options{Unsafe: UnsafeOptions{NoSync: true}, CacheSize: 1 << 20}})
	for i := range 2000 {
		if err := db.Put([]byte(fmt.Sprintf("k%05d", i)), []byte(fmt.Sprintf("value-%05d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, config{"uring", ioengine.URing, Options{CacheSize: 1 << 20}})
	defer db.Close()
	keys := [][]byte{[]byte("k00007"), []byte("k01999"), []byte("k00500")}
	vals, found, err := db.MultiGet(keys)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if !found[i] || string(vals[i]) != "value-"+string(k[1:]) {
			t.Errorf("%s: %q found %v", k, vals[i], found[i])
		}
	}
	st := db.Stats()
	if st.Cache == nil {
		t.Fatal("no block cache")
	}
	if !st.Cache.FixedBuffers {
		if st.Cache.FixedBuffersOff == "" {
			t.Fatal("the arena is not registered, and Stats does not say why")
		}
		t.Logf("registration refused here (%s): the reads went plain", st.Cache.FixedBuffersOff)
		return
	}
	if st.Engine.FixedTransfers == 0 {
		t.Errorf("the arena is registered but no block read went fixed: %+v", st.Engine)
	}
}

// TestBlockNotes: a cached block looked up again after the lookup that
// verified it gets a note of its layout (bufpool.Frame.CheckNote), and the
// lookups that prefetch with it, of keys of many blocks at once, find what
// was written.
func TestBlockNotes(t *testing.T) {
	dir := t.TempDir()
	db := openTest(t, dir, config{"uring", ioengine.URing, Options{Unsafe: UnsafeOptions{NoSync: true}, CacheSize: 4 << 20}})
	defer db.Close()
	const n = 3000
	key := func(i int) []byte { return fmt.Appendf(nil, "k%05d", i) }
	value := func(i int) []byte {
		return append(fmt.Appendf(nil, "value-%05d:", i), bytes.Repeat([]byte{byte(i)}, 250+i%100)...)
	}
	for i := range n {
		if err := db.Put(key(i), value(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Flush(); err != nil {
		t.Fatal(err)
	}
	var keys [][]byte
	for i := 0; i < n; i += 7 {
		keys = append(keys, key(i))
	}
	for round := range 3 {
		vals, found, err := db.MultiGet(keys)
		if err != nil {
			t.Fatal(err)
		}
		for j, k := range keys {
			if i := j * 7; !found[j] || !bytes.Equal(vals[j], value(i)) {
				t.Fatalf("round %d: %s: found %v, %d bytes", round, k, found[j], len(vals[j]))
			}
		}
	}
	// Every block of the table was looked up three times: each has a note
	// (values of 260–360 bytes: at most 16 entries, one restart, a block).
	rs, err := db.acquire(ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.release(rs)
	tables := rs.v.levels[0]
	if len(tables) != 1 {
		t.Fatalf("%d tables in L0, want the one flushed", len(tables))
	}
	tb := tables[0]
	rd, err := tb.loadReader()
	if err != nil {
		t.Fatal(err)
	}
	noted := 0
	for i := range rd.NumBlocks() {
		h := rd.Block(i)
		fs, ok, err := db.pool.PinResident([]bufpool.Span{{File: tb.fid, Off: int64(h.Offset), Len: int64(h.Len)}}, nil)
		if err != nil || !ok {
			t.Fatalf("block %d not resident: %v", i, err)
		}
		if fs[0].Checked() && fs[0].CheckNote()&1 != 0 {
			noted++
		}
		fs[0].Unpin()
	}
	if noted != rd.NumBlocks() {
		t.Fatalf("%d of %d blocks have a note", noted, rd.NumBlocks())
	}
}

// waitCleaned waits until the cleaner has retired every table queued.
func waitCleaned(db *DB) {
	db.mu.Lock()
	defer db.mu.Unlock()
	for !db.cleanedLocked() {
		db.cond.Wait()
	}
}
