package intscan

import (
	"math/rand"
	"testing"
	"unsafe"
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

// TestAllBelow checks AllBelow against a plain loop on every lane width,
// signed and unsigned, at bounds around half the lane's range and on
// slices of every length through two words, with each bad value placed in
// every position (every lane of every word, and the tail).
func TestAllBelow(t *testing.T) {
	testAllBelow[int8](t, []uint64{0, 1, 2, 50, 127, 128, 129, 200, 1 << 20})
	testAllBelow[uint8](t, []uint64{0, 1, 2, 50, 127, 128, 129, 255, 256, 1 << 20})
	testAllBelow[int16](t, []uint64{0, 1, 200, 32767, 32768, 32769, 1 << 20})
	testAllBelow[uint16](t, []uint64{0, 1, 200, 32768, 32769, 65535, 65536})
	testAllBelow[int32](t, []uint64{0, 1, 200, 1 << 31})
	testAllBelow[uint64](t, []uint64{0, 1, 200, 1 << 63})
}

func testAllBelow[T Integer](t *testing.T, bounds []uint64) {
	t.Helper()
	rng := rand.New(rand.NewSource(3))
	want := func(vals []T, n uint64) bool {
		for _, v := range vals {
			if v < 0 || uint64(v) >= n {
				return false
			}
		}
		return true
	}
	var zero T
	for _, n := range bounds {
		for size := 0; size <= 40; size++ {
			vals := make([]T, size)
			for i := range vals {
				if n > 0 {
					vals[i] = T(rng.Uint64() % min(n, 1<<62))
				}
			}
			// Every start within a word, so that the values before the
			// first word boundary vary too.
			for off := 0; off <= min(size, 7); off++ {
				vals := vals[off:]
				if got := AllBelow(vals, n); got != want(vals, n) {
					t.Fatalf("%T below %d: %v: %v, want %v", zero, n, vals, got, want(vals, n))
				}
				for i := range vals {
					old := vals[i]
					for _, bad := range []T{T(n), T(n + 1), ^T(0), ^T(0) >> 1, T(1) << (8*unsafe.Sizeof(zero) - 1)} {
						vals[i] = bad
						if got := AllBelow(vals, n); got != want(vals, n) {
							t.Fatalf("%T below %d, %v at %d of %d (from %d): %v, want %v", zero, n, bad, i, len(vals), off, got, want(vals, n))
						}
					}
					vals[i] = old
				}
			}
		}
	}
}

func BenchmarkAllBelow(b *testing.B) {
	vals := make([]int16, 64<<10)
	for i := range vals {
		vals[i] = int16(i % 200)
	}
	b.Run("MaxUnsigned", func(b *testing.B) {
		b.SetBytes(int64(2 * len(vals)))
		for b.Loop() {
			if MaxUnsigned(vals) >= 200 {
				b.Fatal("bad")
			}
		}
	})
	b.Run("AllBelow", func(b *testing.B) {
		b.SetBytes(int64(2 * len(vals)))
		for b.Loop() {
			if !AllBelow(vals, 200) {
				b.Fatal("bad")
			}
		}
	})
}
