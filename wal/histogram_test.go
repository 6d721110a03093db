package wal

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestLatencyHistogram: every duration falls in a bucket whose upper bound
// is above it and at most 12.5% (or 1 µs) beyond; bucket bounds rise; and
// quantiles are the true nearest-rank quantiles rounded up to their bucket.
func TestLatencyHistogram(t *testing.T) {
	prev := time.Duration(0)
	for i := range histBuckets {
		u := histUpper(i)
		if u <= prev {
			t.Fatalf("bucket %d: upper bound %v not above bucket %d's %v", i, u, i-1, prev)
		}
		prev = u
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var r latencyRecorder
	var ds []time.Duration
	for range 20000 {
		d := time.Duration(rng.ExpFloat64() * float64(300*time.Microsecond))
		ds = append(ds, d)
		r.record(d)
		i := histBucket(d)
		u := histUpper(i)
		lo := time.Duration(0)
		if i > 0 {
			lo = histUpper(i - 1)
		}
		if d >= u || d < lo-time.Microsecond {
			t.Fatalf("%v in bucket %d [%v, %v)", d, i, lo, u)
		}
		if u > d+d/8+time.Microsecond {
			t.Fatalf("%v in bucket %d with upper bound %v: more than 12.5%% above", d, i, u)
		}
	}
	for _, d := range []time.Duration{-time.Second, 0, 999 * time.Nanosecond, 100 * time.Hour} {
		if i := histBucket(d); i < 0 || i >= histBuckets {
			t.Fatalf("%v: bucket %d out of range", d, i)
		}
	}
	h := r.snapshot()
	if h.Count() != uint64(len(ds)) {
		t.Fatalf("count %d, want %d", h.Count(), len(ds))
	}
	slices.Sort(ds)
	for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
		rank := int(q*float64(len(ds)) + 0.5)
		want := ds[max(rank, 1)-1]
		got := h.Quantile(q)
		if got <= want || got > want+want/8+time.Microsecond {
			t.Errorf("q%.2f: %v, the true quantile is %v", q, got, want)
		}
	}
	half := h
	for range 100 {
		r.record(5 * time.Millisecond)
	}
	if d := r.snapshot().Sub(half); d.Count() != 100 || d.Quantile(0.5) < 5*time.Millisecond || d.Quantile(0.5) > 5625*time.Microsecond {
		t.Errorf("Sub: %d durations, median %v; want 100 at 5 ms", d.Count(), d.Quantile(0.5))
	}
	var empty LatencyHistogram
	if empty.Quantile(0.5) != 0 {
		t.Error("an empty histogram has a median")
	}
}
