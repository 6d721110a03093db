package wal

import (
	"math/bits"
	"sync/atomic"
	"time"
)

// LatencyHistogram counts durations in log-linear buckets: one per
// microsecond below 16 µs, then eight per power of two (a bucket's upper
// bound is at most 12.5% above any duration in it), up to about 4.7 hours
// (longer ones count in the last bucket). It is a value: Stats returns a
// copy, and Sub gives the histogram of an interval between two copies.
type LatencyHistogram struct {
	Counts [histBuckets]uint64
}

const (
	histLinear  = 16 // buckets of 1 µs: 0..15 µs
	histSub     = 8  // buckets per power of two above
	histMaxExp  = 34 // 2^34 µs ≈ 4.7 h
	histBuckets = histLinear + (histMaxExp-3)*histSub
)

// histBucket returns the bucket of d.
func histBucket(d time.Duration) int {
	us := uint64(max(d, 0) / time.Microsecond)
	if us < histLinear {
		return int(us)
	}
	e := bits.Len64(us) - 1 // >= 4
	if e > histMaxExp {
		return histBuckets - 1
	}
	sub := int(us>>(e-3)) & (histSub - 1)
	return min(histLinear+(e-4)*histSub+sub, histBuckets-1)
}

// histUpper returns the upper bound (exclusive) of bucket i.
func histUpper(i int) time.Duration {
	if i < histLinear {
		return time.Duration(i+1) * time.Microsecond
	}
	e, sub := (i-histLinear)/histSub+4, (i-histLinear)%histSub
	lo := uint64(1)<<e + uint64(sub)<<(e-3)
	return time.Duration(lo+uint64(1)<<(e-3)) * time.Microsecond
}

// Count returns how many durations the histogram holds.
func (h *LatencyHistogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Quantile returns the upper bound of the bucket holding the q-quantile
// (0 <= q <= 1; nearest rank), or 0 for an empty histogram.
func (h *LatencyHistogram) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 {
		return 0
	}
	rank := uint64(q*float64(n) + 0.5)
	rank = min(max(rank, 1), n)
	var seen uint64
	for i, c := range h.Counts {
		if seen += c; seen >= rank {
			return histUpper(i)
		}
	}
	return histUpper(histBuckets - 1)
}

// Sub returns the histogram of what h holds beyond an earlier copy prev.
func (h LatencyHistogram) Sub(prev LatencyHistogram) LatencyHistogram {
	for i := range h.Counts {
		h.Counts[i] -= prev.Counts[i]
	}
	return h
}

// latencyRecorder is a LatencyHistogram that many goroutines add to.
type latencyRecorder struct {
	counts [histBuckets]atomic.Uint64
}

func (r *latencyRecorder) record(d time.Duration) { r.counts[histBucket(d)].Add(1) }

func (r *latencyRecorder) snapshot() LatencyHistogram {
	var h LatencyHistogram
	for i := range r.counts {
		h.Counts[i] = r.counts[i].Load()
	}
	return h
}
