package bench

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency range and precision of Latencies: 100 ns to 100 s, two
// significant figures (every percentile within 1% of the true sample).
const (
	latencyMinNs  = 100
	latencyMaxNs  = 100e9
	latencyDigits = 2
)

// Latencies is a latency histogram (HDR: every sample counted, none kept,
// a fixed 1% precision from 100 ns to 100 s; longer samples count as 100
// s). Not safe for concurrent use: give each goroutine its own and Merge
// them.
type Latencies struct {
	h *hdrhistogram.Histogram
}

// NewLatencies returns an empty histogram.
func NewLatencies() *Latencies {
	return &Latencies{h: hdrhistogram.New(latencyMinNs, latencyMaxNs, latencyDigits)}
}

// Add records one sample.
func (l *Latencies) Add(d time.Duration) {
	ns := max(latencyMinNs, min(int64(d), latencyMaxNs))
	l.h.RecordValue(ns) //nolint:errcheck // clamped into range
}

// Merge adds o's samples.
func (l *Latencies) Merge(o *Latencies) { l.h.Merge(o.h) }

// Count returns the number of samples.
func (l *Latencies) Count() int64 { return l.h.TotalCount() }

// Percentile returns the p-th percentile (0 < p <= 100) in microseconds, 0
// without samples.
func (l *Latencies) Percentile(p float64) float64 {
	if l.h.TotalCount() == 0 {
		return 0
	}
	return float64(l.h.ValueAtQuantile(p)) / 1e3
}

// Max returns the largest sample in microseconds (within the histogram's
// precision), 0 without samples.
func (l *Latencies) Max() float64 {
	if l.h.TotalCount() == 0 {
		return 0
	}
	return float64(l.h.Max()) / 1e3
}

// Fill sets the trial's latency percentiles from the histogram.
func (l *Latencies) Fill(t *Trial) {
	t.P50us, t.P90us, t.P99us, t.P999us, t.MaxUs = l.Percentile(50), l.Percentile(90), l.Percentile(99), l.Percentile(99.9), l.Max()
}
