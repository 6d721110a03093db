package sstable

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestIndexSearch checks the index's word search against a plain binary
// search over the keys, on key sets with long shared prefixes, zero bytes
// (which the words' padding also gives), keys that are prefixes of others,
// and probes outside the shared prefix.
func TestIndexSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := [][]byte{[]byte("\x00\x01\xff"), []byte("0123456789"), []byte("ab")}
	for round := range 400 {
		alpha := alphabets[round%len(alphabets)]
		prefix := make([]byte, rng.IntN(12))
		for i := range prefix {
			prefix[i] = alpha[rng.IntN(len(alpha))]
		}
		randKey := func() []byte {
			k := append([]byte(nil), prefix[:rng.IntN(len(prefix)+1)]...)
			if rng.IntN(4) > 0 {
				k = append(k[:0], prefix...)
			}
			for range rng.IntN(14) {
				k = append(k, alpha[rng.IntN(len(alpha))])
			}
			return k
		}
		var keys [][]byte
		for range 1 + rng.IntN(40) {
			keys = append(keys, randKey())
		}
		slices.SortFunc(keys, bytes.Compare)
		keys = slices.CompactFunc(keys, bytes.Equal)
		var x blockIndex
		var all []byte
		for _, k := range keys {
			all = append(all, k...)
			x.keyEnd = append(x.keyEnd, uint32(len(all)))
			x.used = append(x.used, 4)
		}
		x.keys = all
		x.setWords()
		probes := append([][]byte{{}, {0xff, 0xff}}, keys...)
		for range 60 {
			probes = append(probes, randKey())
		}
		for _, p := range probes {
			want, _ := slices.BinarySearchFunc(keys, p, bytes.Compare)
			if got := x.search(p); got != want {
				t.Fatalf("round %d: keys %q (shared %d): search(%q) = %d, want %d", round, keys, x.shared, p, got, want)
			}
		}
	}
}
