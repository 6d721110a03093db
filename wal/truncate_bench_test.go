package wal

import (
	"testing"
	"time"
)

// BenchmarkTruncateFront times TruncateFront on a log that grows by 200
// appends of 1 KiB between cuts, keeping its newest 100 entries, with 1 MiB
// segments (so a cut often removes a segment): what a raft log's compaction
// or kv's flush asks of the committer.
func BenchmarkTruncateFront(b *testing.B) {
	dir := b.TempDir()
	l, err := Open(dir, Options{SegmentSize: 1 << 20})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	payload := make([]byte, 1024)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		for j := 0; j < 200; j++ {
			if _, err := l.Append(payload); err != nil {
				b.Fatal(err)
			}
		}
		t := time.Now()
		if err := l.TruncateFront(l.LastSeq() - 100); err != nil {
			b.Fatal(err)
		}
		total += time.Since(t)
	}
	b.ReportMetric(float64(total.Microseconds())/float64(b.N), "µs/truncate")
}
