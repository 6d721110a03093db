package sstable

import "testing"

// TestHashList: hashes come back in the order added, across chunks, and
// a released list is empty and can be filled again.
func TestHashList(t *testing.T) {
	var l hashList
	for round := 0; round < 2; round++ {
		n := 3*hashChunk + 17 - round*hashChunk
		for i := 0; i < n; i++ {
			l.add(uint64(i)*0x9e3779b97f4a7c15 + uint64(round))
		}
		if l.len() != n {
			t.Fatalf("round %d: len %d, want %d", round, l.len(), n)
		}
		i := 0
		l.each(func(h uint64) {
			if want := uint64(i)*0x9e3779b97f4a7c15 + uint64(round); h != want {
				t.Fatalf("round %d: hash %d is %#x, want %#x", round, i, h, want)
			}
			i++
		})
		if i != n {
			t.Fatalf("round %d: each gave %d hashes, want %d", round, i, n)
		}
		l.release()
		if l.len() != 0 {
			t.Fatalf("round %d: %d hashes after release", round, l.len())
		}
	}
}
