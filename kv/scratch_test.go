package kv

import "testing"

// TestScratchReleaseHoldsNothing: a multiGet's and a ReadAhead's scratch go
// back to their pools emptied, with every pointer in their slices' whole
// capacity cleared, so that a pooled scratch keeps no table, key or block
// alive; one grown past the bounds is not kept at all.
func TestScratchReleaseHoldsNothing(t *testing.T) {
	tb := &table{}
	key := []byte("k")
	sc := getScratchFor(8)
	sc.lookups = append(sc.lookups, lookup{key: key, cands: []*table{tb}, first: blockRead{t: tb, buf: key}})
	sc.pending = append(sc.pending, &sc.lookups[0])
	sc.reads = append(sc.reads, blockRead{t: tb, buf: key})
	sc.cands = append(sc.cands, tb, tb)
	sc.release()
	if len(sc.lookups)+len(sc.pending)+len(sc.reads)+len(sc.cands) != 0 {
		t.Fatalf("released scratch not empty: %d %d %d %d", len(sc.lookups), len(sc.pending), len(sc.reads), len(sc.cands))
	}
	for _, l := range sc.lookups[:cap(sc.lookups)] {
		if l.key != nil || l.cands != nil || l.first.t != nil || l.first.buf != nil {
			t.Fatalf("released lookup holds %+v", l)
		}
	}
	for _, p := range sc.pending[:cap(sc.pending)] {
		if p != nil {
			t.Fatal("released pending holds a lookup")
		}
	}
	for _, r := range sc.reads[:cap(sc.reads)] {
		if r.t != nil || r.buf != nil {
			t.Fatalf("released read holds %+v", r)
		}
	}
	for _, c := range sc.cands[:cap(sc.cands)] {
		if c != nil {
			t.Fatal("released candidates hold a table")
		}
	}

	as := aheadScratches.Get().(*aheadScratch)
	as.seen[blockKey{fid: 1, off: 4096}] = blockRef{from: &aheadReads{}}
	as.arena = append(as.arena, key...)
	as.backing = append(as.backing, tb)
	as.bounds = append(as.bounds, [2]int{0, 1})
	as.looks = append(as.looks, aheadLookup{looked: true, cands: as.backing[:1], first: blockRead{t: tb}, read: blockRef{from: &aheadReads{}}, value: []byte("v")})
	as.keys = append(as.keys, as.arena[:1])
	as.release()
	if len(as.seen)+len(as.arena)+len(as.backing)+len(as.bounds)+len(as.looks)+len(as.keys) != 0 {
		t.Fatal("released read-ahead scratch not empty")
	}
	for _, l := range as.looks[:cap(as.looks)] {
		if l.cands != nil || l.first.t != nil || l.read.from != nil || l.value != nil {
			t.Fatalf("released look holds %+v", l)
		}
	}
	for _, k := range as.keys[:cap(as.keys)] {
		if k != nil {
			t.Fatal("released keys hold a key")
		}
	}
	for _, b := range as.backing[:cap(as.backing)] {
		if b != nil {
			t.Fatal("released backing holds a table")
		}
	}

	big := getScratchFor(maxScratchKeys + 1)
	big.cands = append(big.cands, tb)
	big.release()
	if len(big.cands) != 1 {
		t.Error("a scratch over maxScratchKeys was emptied and kept")
	}
}

// TestValueArena: the values a multiGet copies share chunks, but each
// value's capacity ends with it, so appending to one never writes into
// the next; a one-key call allocates its value's size; an empty value is
// empty, not nil.
func TestValueArena(t *testing.T) {
	a := valueArena{left: 3}
	x, e, y := a.keep([]byte("abc")), a.keep(nil), a.keep([]byte("def"))
	if e == nil || len(e) != 0 {
		t.Fatalf("empty value %#v", e)
	}
	if cap(x) != 3 || cap(y) != 3 {
		t.Fatalf("capacities %d %d, want 3 3", cap(x), cap(y))
	}
	_ = append(x, 'X')
	if string(y) != "def" || string(x) != "abc" {
		t.Fatalf("after an append to the first: %q %q", x, y)
	}
	one := valueArena{left: 1}
	if v := one.keep(make([]byte, 300)); cap(one.buf) != 300 || len(v) != 300 {
		t.Fatalf("one key: chunk of %d bytes for a 300-byte value", cap(one.buf))
	}
	many := valueArena{left: 1000}
	many.keep(make([]byte, 300))
	if cap(many.buf) != valueChunk {
		t.Fatalf("1000 keys: chunk of %d bytes, want %d", cap(many.buf), valueChunk)
	}
	big := valueArena{left: 2}
	if v := big.keep(make([]byte, 3*valueChunk)); len(v) != 3*valueChunk {
		t.Fatalf("a value larger than a chunk: %d bytes", len(v))
	}
}

// TestMultiGetValuesAreTheCallers: a caller may append to or overwrite a
// value MultiGet returned without changing another value of the call or
// what the store holds.
func TestMultiGetValuesAreTheCallers(t *testing.T) {
	for _, c := range configs()[:1] {
		db := openTest(t, t.TempDir(), c)
		keys := [][]byte{[]byte("a"), []byte("b"), []byte("c")}
		for i, k := range keys {
			if err := db.Put(k, []byte{byte('0' + i), byte('0' + i)}); err != nil {
				t.Fatal(err)
			}
		}
		for _, flush := range []bool{false, true} {
			if flush {
				if err := db.Flush(); err != nil {
					t.Fatal(err)
				}
			}
			vals, found, err := db.MultiGet(keys)
			if err != nil {
				t.Fatal(err)
			}
			for i := range vals {
				if !found[i] {
					t.Fatalf("flushed %v: key %q not found", flush, keys[i])
				}
				vals[i] = append(vals[i], 'X')
				vals[i][0] = 'Y'
			}
			again, _, err := db.MultiGet(keys)
			if err != nil {
				t.Fatal(err)
			}
			for i, v := range again {
				if want := string([]byte{byte('0' + i), byte('0' + i)}); string(v) != want {
					t.Fatalf("flushed %v: key %q is %q after the caller changed its copy, want %q", flush, keys[i], v, want)
				}
				if string(vals[i]) != "Y"+string([]byte{byte('0' + i)})+"X" {
					t.Fatalf("flushed %v: the caller's copy of %q is %q", flush, keys[i], vals[i])
				}
			}
		}
		db.Close()
	}
}

// TestReadAheadCutHoldsNothing: a ReadAhead whose reads past the cache
// reach maxAheadBytes leaves the rest of its keys to the MultiGet and
// cuts its lists; what it cut off is cleared there, so that its scratch,
// released at Done with only the lists' lengths cleared, holds no table,
// key or block past them.
func TestReadAheadCutHoldsNothing(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	// Every sixth key: their blocks, none cached, come to more than
	// maxAheadBytes (all the store's, some 1,170 of about 17 keys each),
	// and the scratch they grow stays within what is kept for reuse
	// (maxScratchKeys), so its release is what clears it.
	n := sharedCacheKeys / 6
	keys := make([][]byte, n)
	for j := range keys {
		keys[j] = sharedCacheKey(6 * j)
	}
	ra := db.ReadAhead(keys)
	sc, looked := ra.scratch, len(ra.looks)
	if sc == nil || looked == 0 || looked >= n {
		ra.Done()
		t.Fatalf("the read ahead looked at %d of %d keys; want it cut past %d bytes of reads", looked, n, maxAheadBytes)
	}
	ra.Done()
	if cap(sc.looks) > maxScratchKeys {
		t.Fatalf("the scratch grew to %d looks, past the %d kept for reuse: its release does not clear it", cap(sc.looks), maxScratchKeys)
	}
	for i, l := range sc.looks[:cap(sc.looks)] {
		if l.cands != nil || l.first.t != nil || l.first.rd != nil || l.read.from != nil || l.value != nil {
			t.Fatalf("released look %d holds %+v", i, l)
		}
	}
	for i, k := range sc.keys[:cap(sc.keys)] {
		if k != nil {
			t.Fatalf("released key %d holds %q", i, k)
		}
	}
	for i, b := range sc.backing[:cap(sc.backing)] {
		if b != nil {
			t.Fatalf("released backing %d holds a table", i)
		}
	}
}
