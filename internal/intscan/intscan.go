// Package intscan holds tight loops over integer columns that the decoders'
// checks share: first passes with no branch per value, so that checking
// a column costs little when it is good, and the caller looks for the bad
// row only when the pass says there is one.
package intscan

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
