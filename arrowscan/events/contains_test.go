package events

import (
	"math/rand"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestForEachRowContaining compares the one-run search with
// strings.Contains per row, on strings built from pieces of the needle so
// that matches straddle rows, sit at a row's start or end, repeat within a
// row, and rows are empty; also on a slice of the array (offsets that do
// not start at 0).
func TestForEachRowContaining(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	pieces := []string{"", "M", "Mo", "Mobile", "bile", "obi", "x", "Mobil", "e", "MobileMobile", "Android "}
	for round := 0; round < 200; round++ {
		n := rng.Intn(40)
		vals := make([]string, n)
		for i := range vals {
			var b strings.Builder
			for k := rng.Intn(4); k > 0; k-- {
				b.WriteString(pieces[rng.Intn(len(pieces))])
			}
			vals[i] = b.String()
		}
		sb := array.NewStringBuilder(memory.NewGoAllocator())
		sb.AppendValues(vals, nil)
		arr := sb.NewStringArray()
		sb.Release()
		check := func(s *array.String, vals []string) {
			var got, want []int
			forEachRowContaining(s, mobileMarker, func(row int) { got = append(got, row) })
			for i, v := range vals {
				if strings.Contains(v, "Mobile") {
					want = append(want, i)
				}
			}
			if len(got) != len(want) {
				t.Fatalf("round %d: rows %v, want %v (values %q)", round, got, want, vals)
			}
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("round %d: rows %v, want %v (values %q)", round, got, want, vals)
				}
			}
		}
		check(arr, vals)
		if n > 2 {
			lo, hi := 1+rng.Intn(n/2), n-rng.Intn(n/2)
			sl := array.NewSlice(arr, int64(lo), int64(hi)).(*array.String)
			check(sl, vals[lo:hi])
			sl.Release()
		}
		arr.Release()
	}
}
