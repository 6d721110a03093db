package bench

import (
	"slices"
	"time"
)

// Latencies collects latency samples, keeping at most a fixed number (the
// first ones; trials are short enough that this is every sample in
// practice). Not safe for concurrent use: give each goroutine its own and
// Merge them.
type Latencies struct {
	ns  []int64
	max int
}

// NewLatencies returns a collector that keeps up to max samples.
func NewLatencies(max int) *Latencies {
	return &Latencies{ns: make([]int64, 0, min(max, 1<<16)), max: max}
}

// Add records one sample.
func (l *Latencies) Add(d time.Duration) {
	if len(l.ns) < l.max {
		l.ns = append(l.ns, int64(d))
	}
}

// Merge adds o's samples.
func (l *Latencies) Merge(o *Latencies) { l.ns = append(l.ns, o.ns...) }

// Percentile returns the p-th percentile (0 < p <= 100) in microseconds.
func (l *Latencies) Percentile(p float64) float64 {
	if len(l.ns) == 0 {
		return 0
	}
	slices.Sort(l.ns)
	i := int(float64(len(l.ns))*p/100+0.5) - 1
	i = max(0, min(i, len(l.ns)-1))
	return float64(l.ns[i]) / 1e3
}
