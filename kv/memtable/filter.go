package memtable

import (
	"hash/maphash"
	"math/bits"
	"sync/atomic"
)

// keyFilter is a blocked Bloom filter of the user keys a memtable holds
// (RocksDB's memtable whole-key filtering): each key sets three bits of
// one 64-bit word, so a lookup reads one word. A Get whose key's bits are
// not all set returns at once, without searching the skiplist: in kv most
// reads are of keys a memtable does not hold, and each batch of them asks
// every memtable.
//
// It has no false negatives: Add sets a key's bits before the stores that
// publish its node, so a Get that reaches the node sees the bits. It is
// sized once, for the bytes the memtable is expected to hold (SizedNew);
// a memtable that grows past them only sees more false positives.
type keyFilter struct {
	words []atomic.Uint64 // a power of two of them; nil: no filter
}

// filterSeed keys the filter's hash: a filter lives in memory only, so
// any seed of the process's will do.
var filterSeed = maphash.MakeSeed()

const (
	// filterBytesPerBit: one bit of filter per 2 bytes of memtable. An
	// entry takes at least 40 bytes with its node, so a filled memtable
	// has at least 20 bits a key; with 16-byte keys and 1-byte values (67
	// bytes an entry, 33 bits a key) 0.16% of absent keys get through.
	filterBytesPerBit = 2
	minFilterWords    = 64      // 512 bytes
	maxFilterWords    = 1 << 19 // 4 MiB
)

// newKeyFilter returns a filter for a memtable of about size bytes.
func newKeyFilter(size int64) keyFilter {
	words := size / filterBytesPerBit / 64
	n := minFilterWords
	for int64(n) < words && n < maxFilterWords {
		n <<= 1
	}
	return keyFilter{words: make([]atomic.Uint64, n)}
}

// probe returns the word and the three bits of key.
func (f *keyFilter) probe(key []byte) (*atomic.Uint64, uint64) {
	h := maphash.Bytes(filterSeed, key)
	w := &f.words[h&uint64(len(f.words)-1)]
	hi := h >> 32
	mask := uint64(1)<<(hi&63) | uint64(1)<<(hi>>6&63) | uint64(1)<<(hi>>12&63)
	return w, mask
}

// add sets key's bits. Only the writer calls it; readers may be testing
// the same word meanwhile.
func (f *keyFilter) add(key []byte) {
	if f.words == nil {
		return
	}
	w, mask := f.probe(key)
	if w.Load()&mask != mask {
		w.Or(mask)
	}
}

// mayContain reports whether key may have been added: false only if it
// never was.
func (f *keyFilter) mayContain(key []byte) bool {
	if f.words == nil {
		return true
	}
	w, mask := f.probe(key)
	return w.Load()&mask == mask
}

// bitsSet is the number of bits set (for tests: how full the filter is).
func (f *keyFilter) bitsSet() int {
	n := 0
	for i := range f.words {
		n += bits.OnesCount64(f.words[i].Load())
	}
	return n
}
