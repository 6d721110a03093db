package base

import (
	"bytes"
	"testing"
)

// TestCompare: user keys ascending, then seq descending, then set before
// delete; the encoding keeps the key whole.
func TestCompare(t *testing.T) {
	ordered := []InternalKey{
		{UserKey: nil, Seq: 9, Kind: KindSet},
		{UserKey: []byte("a"), Seq: 9, Kind: KindSet},
		{UserKey: []byte("a"), Seq: 9, Kind: KindDelete},
		{UserKey: []byte("a"), Seq: 2, Kind: KindSet},
		{UserKey: []byte("a\x00"), Seq: MaxSeq, Kind: KindSet},
		{UserKey: []byte("ab"), Seq: MaxSeq, Kind: KindSet},
		{UserKey: []byte("b"), Seq: 0, Kind: KindDelete},
	}
	for i := range ordered {
		for j := range ordered {
			want := 0
			if i < j {
				want = -1
			} else if i > j {
				want = 1
			}
			if got := Compare(ordered[i], ordered[j]); got != want {
				t.Errorf("Compare(%v, %v) = %d, want %d", ordered[i], ordered[j], got, want)
			}
		}
		back, ok := ParseKey(AppendKey(nil, ordered[i]))
		if !ok || Compare(back, ordered[i]) != 0 {
			t.Errorf("%v encodes and parses to %v, %v", ordered[i], back, ok)
		}
	}
}

// FuzzParseKey: no input panics; what parses encodes back to its bytes.
func FuzzParseKey(f *testing.F) {
	f.Add(AppendKey(nil, InternalKey{UserKey: []byte("k"), Seq: 7, Kind: KindSet}))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, ok := ParseKey(b)
		if !ok {
			return
		}
		if enc := AppendKey(nil, k); !bytes.Equal(enc, b) {
			t.Fatalf("%x parses to %v, which encodes to %x", b, k, enc)
		}
	})
}
