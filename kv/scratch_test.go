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
	as.seen[blockKey{fid: 1, off: 4096}] = 1
	as.arena = append(as.arena, key...)
	as.backing = append(as.backing, tb)
	as.bounds = append(as.bounds, [2]int{0, 1})
	as.looks = append(as.looks, aheadLookup{looked: true, cands: as.backing[:1], first: blockRead{t: tb}})
	as.keys = append(as.keys, as.arena[:1])
	as.release()
	if len(as.seen)+len(as.arena)+len(as.backing)+len(as.bounds)+len(as.looks)+len(as.keys) != 0 {
		t.Fatal("released read-ahead scratch not empty")
	}
	for _, l := range as.looks[:cap(as.looks)] {
		if l.cands != nil || l.first.t != nil {
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
