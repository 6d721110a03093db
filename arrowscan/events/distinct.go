package events

import "math/bits"

// int64Set counts distinct int64 values. While the values fit in a window
// of setWindow consecutive integers (anchored at the first value, half on
// each side) it is a bitmap, one bit per integer; the first value outside
// turns it into a map for good. Customer ids, which the generator keeps in
// a range of about a million, stay in the bitmap: setting a bit costs a few
// ns where a map insert costs tens.
type int64Set struct {
	base int64    // the window's first value (wrapping arithmetic)
	bits []uint64 // nil before the first add and after the switch to m
	n    int64    // bits set
	m    map[int64]struct{}
}

const setWindow = 1 << 22 // 4 Mi values, a 512 KiB bitmap

func (s *int64Set) add(v int64) {
	if s.m != nil {
		s.m[v] = struct{}{}
		return
	}
	if s.bits == nil {
		s.base = v - setWindow/2 // may wrap; offsets below wrap the same way
		s.bits = make([]uint64, setWindow/64)
	}
	off := uint64(v - s.base)
	if off >= setWindow {
		s.toMap()
		s.m[v] = struct{}{}
		return
	}
	w, b := off/64, uint64(1)<<(off%64)
	if s.bits[w]&b == 0 {
		s.bits[w] |= b
		s.n++
	}
}

// toMap moves the bitmap's values into a map.
func (s *int64Set) toMap() {
	s.m = make(map[int64]struct{}, s.n)
	for w, word := range s.bits {
		for word != 0 {
			i := bits.TrailingZeros64(word)
			word &= word - 1
			s.m[s.base+int64(w*64+i)] = struct{}{}
		}
	}
	s.bits = nil
}

func (s *int64Set) len() int64 {
	if s.m != nil {
		return int64(len(s.m))
	}
	return s.n
}
