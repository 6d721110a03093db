package intscan

import (
	"math/rand"
	"testing"
)

func TestMaxUnsigned(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for n := 0; n < 40; n++ {
		vals := make([]int16, n)
		for i := range vals {
			vals[i] = int16(rng.Intn(200))
		}
		want := uint64(0)
		for _, v := range vals {
			want = max(want, uint64(v))
		}
		if got := MaxUnsigned(vals); got != want {
			t.Fatalf("%v: %d, want %d", vals, got, want)
		}
		for i := range vals { // a negative value anywhere, in any lane
			old := vals[i]
			vals[i] = -1
			if got := MaxUnsigned(vals); got < 1<<63 {
				t.Fatalf("-1 at %d of %d: max %d, not huge", i, n, got)
			}
			vals[i] = old
		}
	}
}

func TestNonDecreasing(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for n := 0; n < 40; n++ {
		offs := make([]int32, n)
		for i := 1; i < n; i++ {
			offs[i] = offs[i-1] + int32(rng.Intn(3))
		}
		if !NonDecreasing(offs) {
			t.Fatalf("%v reported decreasing", offs)
		}
		for i := 1; i < n; i++ {
			old := offs[i]
			offs[i] = offs[i-1] - 1
			if NonDecreasing(offs) {
				t.Fatalf("%v: the decrease at %d not seen", offs, i)
			}
			offs[i] = old
		}
	}
	// Differences that overflow: a decrease to the most negative offset
	// after a large one, first or after an earlier decrease.
	for _, offs := range [][]int32{{0, 1 << 30, -1 << 31}, {0, 5, 1, 1 << 30, -1 << 31}, {-1}, {1<<31 - 1, -1 << 31}} {
		if NonDecreasing(offs) {
			t.Errorf("%v reported non-decreasing", offs)
		}
	}
}
