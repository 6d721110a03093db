// Package intscan holds tight loops over integer columns that the decoders'
// checks share: first passes with no branch per value, so that checking
// a column costs little when it is good, and the caller looks for the bad
// row only when the pass says there is one.
package intscan

import "unsafe"

// Integer is any fixed-width integer type.
type Integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// MaxUnsigned returns the largest of vals converted to uint64, 0 for none.
// A negative value converts to a huge one, so MaxUnsigned(vals) < n says
// that every value is in [0, n). It runs four independent lanes, with no
// branch per value.
func MaxUnsigned[T Integer](vals []T) uint64 {
	var m0, m1, m2, m3 uint64
	i := 0
	for ; i+4 <= len(vals); i += 4 {
		m0 = max(m0, uint64(vals[i]))
		m1 = max(m1, uint64(vals[i+1]))
		m2 = max(m2, uint64(vals[i+2]))
		m3 = max(m3, uint64(vals[i+3]))
	}
	for ; i < len(vals); i++ {
		m0 = max(m0, uint64(vals[i]))
	}
	return max(m0, m1, m2, m3)
}

// NonDecreasing reports whether offs is non-negative and never decreases.
// It ORs every offset and every difference of neighbours: the OR is
// negative if an offset is (its sign bit), and otherwise no difference can
// overflow, so a decrease makes one negative. No branch per value.
func NonDecreasing[T int32 | int64](offs []T) bool {
	var neg T
	if len(offs) > 0 {
		neg = offs[0]
	}
	for i := 1; i < len(offs); i++ {
		neg |= offs[i] | (offs[i] - offs[i-1])
	}
	return neg >= 0
}

// AllBelow reports whether every value of vals is in [0, n). For 8- and
// 16-bit values it tests eight or four lanes of a 64-bit word at a time
// (SWAR): with H the top bit of every lane, a word w is good when no
// lane's top bit is set (no value is negative or at least half the lane's
// range) and ((w &^ H) | H) - n·lanes leaves every top bit clear, which
// it does for a lane exactly when the lane is below n; no borrow crosses a
// lane, each lane's minuend being at least n. Wider values, and n above
// half an 8- or 16-bit lane's range, go through MaxUnsigned.
func AllBelow[T Integer](vals []T, n uint64) bool {
	if len(vals) == 0 {
		return true
	}
	var zero T
	switch size := unsafe.Sizeof(zero); size {
	case 1, 2:
		bits := 8 * uint(size)
		half := uint64(1) << (bits - 1)
		if n > half {
			if ^T(0) < 0 { // signed: every non-negative value is below n
				return MaxUnsigned(vals) < half
			}
			break
		}
		lane := uint64(1)<<bits - 1
		var h, reps uint64
		for i := uint(0); i < 64; i += bits {
			h |= half << i
			reps |= n << i
		}
		below := func(vals []T) bool {
			for _, v := range vals {
				if uint64(v)&lane >= n {
					return false
				}
			}
			return true
		}
		// The values before the first 8-byte boundary and after the last
		// one one by one, the words between as words.
		p := uintptr(unsafe.Pointer(unsafe.SliceData(vals)))
		head := min(len(vals), int((-p)&7)/int(size))
		if (p+uintptr(head)*size)&7 != 0 { // values not at their alignment
			return below(vals)
		}
		nw := (len(vals) - head) * int(size) / 8
		if !below(vals[:head]) || !below(vals[head+nw*8/int(size):]) {
			return false
		}
		if nw == 0 {
			return true
		}
		words := unsafe.Slice((*uint64)(unsafe.Pointer(&vals[head])), nw)
		var bad0, bad1, bad2, bad3 uint64
		i := 0
		for ; i+4 <= len(words); i += 4 {
			w0, w1, w2, w3 := words[i], words[i+1], words[i+2], words[i+3]
			bad0 |= w0 | (((w0 &^ h) | h) - reps)
			bad1 |= w1 | (((w1 &^ h) | h) - reps)
			bad2 |= w2 | (((w2 &^ h) | h) - reps)
			bad3 |= w3 | (((w3 &^ h) | h) - reps)
		}
		for ; i < len(words); i++ {
			w := words[i]
			bad0 |= w | (((w &^ h) | h) - reps)
		}
		return (bad0|bad1|bad2|bad3)&h == 0
	}
	return MaxUnsigned(vals) < n
}
