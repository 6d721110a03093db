package kv

import (
	"bytes"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The memtables' memory is off the Go heap and given back (to a free list
// the next memtables take their chunks from) once nothing can read it:
// these tests hold readers across flushes, with the memory of the flushed
// memtables reused meanwhile, and check that what they read is unchanged.

// lifeValue is key's value at round: it names both and is padded with a
// byte of the round's, so a value read from memory reused by another
// memtable shows.
func lifeValue(key []byte, round int) []byte {
	v := fmt.Appendf(nil, "%s@%d:", key, round)
	return append(v, bytes.Repeat([]byte{byte('a' + round%26)}, 40+round%50)...)
}

func lifeKey(i int) []byte { return fmt.Appendf(nil, "key%05d", i) }

// putRound writes every key's value at round, in batches.
func putRound(t *testing.T, db *DB, keys, round int) {
	t.Helper()
	var b Batch
	for i := range keys {
		b.Put(lifeKey(i), lifeValue(lifeKey(i), round))
		if b.Len() == 50 || i == keys-1 {
			if err := db.Write(&b); err != nil {
				t.Fatal(err)
			}
			b.Reset()
		}
	}
}

// TestIteratorHoldsFlushedMemtable: an iterator opened on a memtable, and
// held while that memtable is flushed and twenty more are written (over
// every key, with other bytes), flushed and released with collections in
// between, still reads the memtable's own bytes; once it is closed the
// memtable is released, and Close releases the rest.
func TestIteratorHoldsFlushedMemtable(t *testing.T) {
	for _, c := range []config{configs()[0], configs()[3]} {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, t.TempDir(), c)
			const keys = 200 // under one 64 KiB memtable
			putRound(t, db, keys, 0)
			if st := db.Stats(); st.Flushes != 0 {
				t.Fatalf("%d flushes before the iterator", st.Flushes)
			}
			it := db.NewIterator(nil, nil)
			if !it.Next() || !bytes.Equal(it.Key(), lifeKey(0)) || !bytes.Equal(it.Value(), lifeValue(lifeKey(0), 0)) {
				t.Fatalf("first entry %q=%q", it.Key(), it.Value())
			}
			for round := 1; round <= 20; round++ {
				putRound(t, db, keys, round)
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
				runtime.GC()
			}
			st := db.Stats()
			if st.HeldMemtables != st.Memtables+1 {
				t.Fatalf("%d memtables held with %d in the store and one iterator", st.HeldMemtables, st.Memtables)
			}
			n := 1
			for ; it.Next(); n++ {
				if k := lifeKey(n); !bytes.Equal(it.Key(), k) || !bytes.Equal(it.Value(), lifeValue(k, 0)) {
					t.Fatalf("entry %d: %q=%q after the flushes; want %q=%q", n, it.Key(), it.Value(), k, lifeValue(k, 0))
				}
			}
			if err := it.Close(); err != nil || n != keys {
				t.Fatalf("iterator: %d keys, %v", n, err)
			}
			if st := db.Stats(); st.HeldMemtables != st.Memtables {
				t.Fatalf("%d memtables held after the iterator's Close, %d in the store", st.HeldMemtables, st.Memtables)
			}
			if v, err := db.Get(lifeKey(7)); err != nil || !bytes.Equal(v, lifeValue(lifeKey(7), 20)) {
				t.Fatalf("Get = %q, %v", v, err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if n := db.memHeld.Load(); n != 0 {
				t.Fatalf("%d memtables not released after Close", n)
			}
		})
	}
}

// TestSnapshotAcrossFlushes: a snapshot taken while its writes are in a
// memtable reads them, after that memtable's flush and many more and
// collections, the same through Get, MultiGet and an iterator (from the
// tables: a snapshot holds a sequence number, not memtables).
func TestSnapshotAcrossFlushes(t *testing.T) {
	db := openTest(t, t.TempDir(), configs()[0])
	defer db.Close()
	const keys = 150
	putRound(t, db, keys, 0)
	snap := db.NewSnapshot()
	defer snap.Close()
	it := snap.NewIterator(nil, nil) // opened before the flushes
	for round := 1; round <= 10; round++ {
		putRound(t, db, keys, round)
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
		runtime.GC()
	}
	all := make([][]byte, keys)
	for i := range all {
		all[i] = lifeKey(i)
	}
	vals, found, err := snap.MultiGet(all)
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range all {
		if !found[i] || !bytes.Equal(vals[i], lifeValue(k, 0)) {
			t.Fatalf("MultiGet %q = %q, %v", k, vals[i], found[i])
		}
		if v, err := snap.Get(k); err != nil || !bytes.Equal(v, lifeValue(k, 0)) {
			t.Fatalf("Get %q = %q, %v", k, v, err)
		}
	}
	later := snap.NewIterator(nil, nil) // opened after them
	for _, it := range []*Iterator{it, later} {
		n := 0
		for ; it.Next(); n++ {
			if k := lifeKey(n); !bytes.Equal(it.Key(), k) || !bytes.Equal(it.Value(), lifeValue(k, 0)) {
				t.Fatalf("entry %d: %q=%q", n, it.Key(), it.Value())
			}
		}
		if err := it.Close(); err != nil || n != keys {
			t.Fatalf("iterator: %d keys, %v", n, err)
		}
	}
}

// TestReadStateHoldsMemtables: a read state taken before flushes holds its
// memtables (and no other), released at its release; with no read in
// flight, the store holds its own memtables only.
func TestReadStateHoldsMemtables(t *testing.T) {
	db := openTest(t, t.TempDir(), configs()[0])
	putRound(t, db, 100, 0)
	rs, err := db.acquire(ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for round := 1; round <= 5; round++ {
		putRound(t, db, 100, round)
		if err := db.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	st := db.Stats()
	if st.HeldMemtables != st.Memtables+len(rs.mems) {
		t.Fatalf("%d memtables held; the store has %d, the read state %d", st.HeldMemtables, st.Memtables, len(rs.mems))
	}
	if v, _, ok := memGet(rs.mems, lifeKey(3), rs.seq); !ok || !bytes.Equal(v, lifeValue(lifeKey(3), 0)) {
		t.Fatalf("held memtable: %q, %v", v, ok)
	}
	db.release(rs)
	if st := db.Stats(); st.HeldMemtables != st.Memtables {
		t.Fatalf("%d memtables held after the release; the store has %d", st.HeldMemtables, st.Memtables)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if n := db.memHeld.Load(); n != 0 {
		t.Fatalf("%d memtables not released after Close", n)
	}
}

// TestReadsWhileMemtablesRecycle runs Gets, MultiGets and iterators while a
// writer rewrites every key, round after round, into 64 KiB memtables that
// flush and give their memory to the next ones all along: every value read
// must be whole (one round's, of its key), and a reader's rounds must not
// go back. Run it with -race too.
func TestReadsWhileMemtablesRecycle(t *testing.T) {
	for _, c := range []config{configs()[0], configs()[3]} {
		t.Run(c.name, func(t *testing.T) {
			db := openTest(t, t.TempDir(), c)
			const keys = 64
			var round atomic.Int64
			putRound(t, db, keys, 0)
			check := func(k, v []byte) (int, error) {
				var r int
				if _, err := fmt.Sscanf(string(v[len(k)+1:]), "%d:", &r); err != nil || !bytes.Equal(v, lifeValue(k, r)) {
					return 0, fmt.Errorf("%q = %q: not a value of the key's", k, v)
				}
				return r, nil
			}
			stop := make(chan struct{})
			errs := make(chan error, 8)
			var wg sync.WaitGroup
			for rd := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					last := make([]int, keys) // per key
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						ki := (i * 13) % keys
						k := lifeKey(ki)
						var err error
						switch rd {
						case 0:
							var v []byte
							if v, err = db.Get(k); err == nil {
								var r int
								if r, err = check(k, v); err == nil && r < last[ki] {
									err = fmt.Errorf("%q went back from round %d to %d", k, last[ki], r)
								}
								last[ki] = max(last[ki], r)
							}
						case 1:
							batch := [][]byte{k, lifeKey((ki + 1) % keys), lifeKey((ki + 5) % keys)}
							var vals [][]byte
							if vals, _, err = db.MultiGet(batch); err == nil {
								for j := range batch {
									if _, err = check(batch[j], vals[j]); err != nil {
										break
									}
								}
							}
						case 2:
							it := db.NewIterator(nil, nil)
							n := 0
							for ; it.Next() && err == nil; n++ {
								_, err = check(it.Key(), it.Value())
								if n%16 == 0 {
									runtime.Gosched() // let the writer flush under the open iterator
								}
							}
							if cerr := it.Close(); err == nil {
								err = cerr
							}
							if err == nil && n != keys {
								err = fmt.Errorf("iterator saw %d keys", n)
							}
						}
						if err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			deadline := time.Now().Add(time.Second)
			for r := 1; time.Now().Before(deadline) || r < 20; r++ {
				putRound(t, db, keys, r)
				round.Store(int64(r))
			}
			close(stop)
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			st := db.Stats()
			t.Logf("%d rounds, %d flushes", round.Load(), st.Flushes)
			if st.Flushes < 5 {
				t.Errorf("only %d flushes: the memtables did not recycle", st.Flushes)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			if n := db.memHeld.Load(); n != 0 {
				t.Fatalf("%d memtables not released after Close", n)
			}
		})
	}
}
