package kv

import (
	"bytes"
	"testing"
)

// TestValueBufferRounds: MultiGets and ReadAheads that name a ValueBuffer
// return what they return without one — values from a memtable, from
// cached blocks the read ahead searched, from blocks read past the cache,
// one longer than a chunk, a missing key — their values lie in the
// buffer's chunks, and a round after Reset reuses the chunks' memory and
// the results slices. Under the race detector Reset overwrites what it
// held, so a caller keeping a value past it reads garbage.
func TestValueBufferRounds(t *testing.T) {
	db := openSharedCacheStore(t)
	defer db.Close()
	long := bytes.Repeat([]byte("L"), valueChunk+1)
	if err := db.Put([]byte("long"), long); err != nil {
		t.Fatal(err)
	}
	if err := db.Put(sharedCacheKey(1), []byte("in the memtable")); err != nil {
		t.Fatal(err)
	}
	keys := [][]byte{sharedCacheKey(1), []byte("long"), []byte("missing")}
	for j := 0; j < 100; j++ {
		keys = append(keys, sharedCacheKey(2+j*(sharedCacheKeys/100)))
	}
	if _, _, err := db.MultiGet(keys[50:]); err != nil { // some blocks cached
		t.Fatal(err)
	}
	want, wantFound, err := db.MultiGet(keys)
	if err != nil {
		t.Fatal(err)
	}
	var vb ValueBuffer
	var firstChunk *byte
	for round := 0; round < 3; round++ {
		ra := db.ReadAheadInto(&vb, keys)
		if round == 0 && settledKeys(ra) == 0 {
			t.Fatal("the read ahead settled no key from the cache")
		}
		vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: ra, Values: &vb}, keys)
		ra.Done()
		if err != nil {
			t.Fatal(err)
		}
		for i := range keys {
			if found[i] != wantFound[i] || !bytes.Equal(vals[i], want[i]) {
				t.Fatalf("round %d, key %s: %.20q (found %v), want %.20q (found %v)", round, keys[i], vals[i], found[i], want[i], wantFound[i])
			}
			if found[i] && i != 1 && !vb.holds(vals[i]) {
				t.Fatalf("round %d, key %s: its value is not in the buffer", round, keys[i])
			}
		}
		if vb.holds(vals[1]) {
			t.Fatal("a value longer than a chunk is in the buffer's chunks")
		}
		if round == 0 {
			firstChunk = &vb.chunks[0][:1][0]
		} else if &vb.chunks[0][:1][0] != firstChunk {
			t.Fatalf("round %d: the buffer's first chunk was not reused", round)
		}
		kept := vals[3]
		vb.Reset()
		if poisonValues && !bytes.Equal(kept, bytes.Repeat([]byte{0xdb}, len(kept))) {
			t.Fatalf("round %d: after Reset a value kept reads %.20q, not the poison", round, kept)
		}
		if len(vb.heads) != 0 || len(vb.founds) != 0 {
			t.Fatalf("round %d: results left after Reset", round)
		}
	}
}

// holds says whether v lies in one of the buffer's chunks.
func (vb *ValueBuffer) holds(v []byte) bool {
	p := uintptr(unsafePointer(v))
	for _, c := range vb.chunks {
		lo := uintptr(unsafePointer(c))
		if p >= lo && p < lo+uintptr(cap(c)) {
			return true
		}
	}
	return false
}

// TestValueBufferBounds: a round needing more chunks than Reset keeps gives
// the rest back, and the results slices of one round's calls do not
// overlap.
func TestValueBufferBounds(t *testing.T) {
	var vb ValueBuffer
	v := bytes.Repeat([]byte("v"), valueChunk/2+1) // one per chunk
	for i := 0; i < maxKeptChunks+10; i++ {
		if got := vb.copy(v); !bytes.Equal(got, v) || cap(got) != len(got) {
			t.Fatalf("copy %d: %d bytes, cap %d", i, len(got), cap(got))
		}
	}
	if len(vb.chunks) != maxKeptChunks+10 {
		t.Fatalf("%d chunks, want one per value", len(vb.chunks))
	}
	vb.Reset()
	if len(vb.chunks) != maxKeptChunks {
		t.Fatalf("Reset kept %d chunks, want %d", len(vb.chunks), maxKeptChunks)
	}
	h1, f1 := vb.results(3)
	h2, f2 := vb.results(4)
	h1[2], f1[2] = []byte("x"), true
	if h2[0] != nil || f2[0] || cap(h1) != 3 || cap(f1) != 3 {
		t.Fatal("the results of two calls overlap")
	}
	vb.Reset()
	h3, f3 := vb.results(3)
	if h3[2] != nil || f3[2] {
		t.Fatal("results after Reset are not zeroed")
	}
}
