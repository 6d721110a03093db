package bench

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLatenciesPercentiles: the histogram's percentiles are within its 1%
// of the exact ones over the same samples, merging loses none, and the
// maximum is the largest sample.
func TestLatenciesPercentiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	a, b := NewLatencies(), NewLatencies()
	var exact []float64
	for i := range 200_000 {
		// Log-uniform from 1 µs to 100 ms.
		d := time.Duration(math.Exp(rng.Float64()*math.Log(1e5)) * 1e3)
		if i%2 == 0 {
			a.Add(d)
		} else {
			b.Add(d)
		}
		exact = append(exact, float64(d)/1e3)
	}
	a.Merge(b)
	if a.Count() != 200_000 {
		t.Fatalf("%d samples after the merge", a.Count())
	}
	slices.Sort(exact)
	for _, p := range []float64{50, 90, 99, 99.9} {
		want := exact[int(math.Ceil(float64(len(exact))*p/100))-1]
		if got := a.Percentile(p); math.Abs(got-want) > 0.01*want {
			t.Errorf("p%v = %.2f µs, exact %.2f µs", p, got, want)
		}
	}
	if got, want := a.Max(), exact[len(exact)-1]; math.Abs(got-want) > 0.01*want {
		t.Errorf("max %.2f µs, exact %.2f µs", got, want)
	}
	var tr Trial
	a.Fill(&tr)
	if !(tr.P50us <= tr.P90us && tr.P90us <= tr.P99us && tr.P99us <= tr.P999us && tr.P999us <= tr.MaxUs) {
		t.Errorf("Fill: %+v", tr)
	}
	if e := NewLatencies(); e.Percentile(50) != 0 || e.Max() != 0 {
		t.Error("an empty histogram reports a latency")
	}
}
