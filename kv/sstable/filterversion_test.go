package sstable

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestReadsVersion1: a file of format version 1 (the same file with a
// filter over all its bits, probed by double hashing) still opens and
// answers through its own filter; a version this package does not know is
// refused with both numbers named.
func TestReadsVersion1(t *testing.T) {
	_, data := smallFile(t)
	ft, err := decodeFooter(data[len(data)-FooterLen:], site{})
	if err != nil {
		t.Fatal(err)
	}
	if ft.version != 2 {
		t.Fatalf("Writer wrote version %d, want 2", ft.version)
	}
	r, err := NewReader(bytes.NewReader(data), int64(len(data)), "v2")
	if err != nil {
		t.Fatal(err)
	}
	if !r.filter.blocked {
		t.Fatal("a version 2 file's filter is not blocked")
	}
	// The keys, from the file itself.
	var keys [][]byte
	it := r.NewIterator()
	for it.Next() {
		if uk := it.Key().UserKey; len(keys) == 0 || !bytes.Equal(keys[len(keys)-1], uk) {
			keys = append(keys, append([]byte{}, uk...))
		}
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	whole := &bloomFilter{k: bloomProbes(DefaultBloomBitsPerKey), bits: make([]uint64, (len(keys)*DefaultBloomBitsPerKey+63)/64)}
	for _, k := range keys {
		whole.addHash(bloomHash(k))
	}
	out := append([]byte{}, data[:ft.filter.off]...)
	f := ft
	f.version = 1
	out = encodeFilter(out, whole)
	f.filter.len = uint64(len(out)) - f.filter.off
	f.props.off = uint64(len(out))
	out = append(out, data[ft.props.off:ft.props.off+ft.props.len]...)
	out = encodeFooter(out, f)

	r1, err := NewReader(bytes.NewReader(out), int64(len(out)), "v1")
	if err != nil {
		t.Fatalf("version 1 file: %v", err)
	}
	if r1.filter.blocked {
		t.Fatal("a version 1 file's filter read as blocked")
	}
	for _, k := range keys {
		if !r1.MayContain(k) {
			t.Fatalf("version 1 file: MayContain(%q) false for a key it holds", k)
		}
		if _, _, _, found, err := r1.Get(k); err != nil || !found {
			t.Fatalf("version 1 file: Get(%q): found=%v err=%v", k, found, err)
		}
	}
	if err := checkBytes(out, "v1", -1); err != nil {
		t.Fatalf("version 1 file: %v", err)
	}

	f.version = 3
	bad := encodeFooter(append([]byte{}, out[:len(out)-FooterLen]...), f)
	_, err = NewReader(bytes.NewReader(bad), int64(len(bad)), "v3")
	if err == nil || !strings.Contains(err.Error(), "format version 3, this reader knows 1 to 2") {
		t.Fatalf("version 3 file: %v", err)
	}
}

// TestBlockedFilter: every added key is found, a key's probes stay in one
// 64-byte line, and the false-positive rate at the default 10 bits per
// key stays near a blocked filter's (about 1%; a whole filter's is 0.8%).
func TestBlockedFilter(t *testing.T) {
	const n = 200_000
	f := newBloomFilter(n, DefaultBloomBitsPerKey)
	if len(f.bits)%lineWords != 0 {
		t.Fatalf("%d words, not whole lines", len(f.bits))
	}
	for i := range n {
		h := bloomHash(fmt.Appendf(nil, "key-%d", i))
		if i >= 1000 { // the line check below on the first thousand
			f.addHash(h)
			continue
		}
		before := append([]uint64{}, f.bits...)
		f.addHash(h)
		changed := -1
		for w := range f.bits {
			if f.bits[w] != before[w] {
				if changed >= 0 && changed/lineWords != w/lineWords {
					t.Fatalf("key %d set bits in lines %d and %d", i, changed/lineWords, w/lineWords)
				}
				changed = w
			}
		}
	}
	for i := range n {
		if !f.mayContain(fmt.Appendf(nil, "key-%d", i)) {
			t.Fatalf("key %d not found", i)
		}
	}
	fp := 0
	for i := range n {
		k := fmt.Appendf(nil, "absent-%d", i)
		got := f.mayContain(k)
		if got != f.mayContainHash(FilterHash(k)) {
			t.Fatalf("key %q: mayContain %v, mayContainHash of its FilterHash not", k, got)
		}
		if got {
			fp++
		}
	}
	rate := float64(fp) / n
	t.Logf("blocked filter: %d bits/key, k=%d, %.3f%% false positives", DefaultBloomBitsPerKey, f.k, 100*rate)
	if rate > 0.0125 {
		t.Fatalf("false-positive rate %.3f%%, over 1.25%%", 100*rate)
	}
}
