package wal

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ringstore/ringstore/ioengine"
)

// BenchmarkAppend measures durable 1 KiB appends from concurrent writers.
// Compare runs with benchstat; `ringstore bench wal` is the side-by-side
// benchmark with fsync per write and the peers.
func BenchmarkAppend(b *testing.B) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		for _, writers := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("mode=%s/writers=%d", mode, writers), func(b *testing.B) {
				l, err := Open(b.TempDir(), Options{IOMode: mode, Logf: b.Logf})
				if err != nil {
					b.Fatal(err)
				}
				defer l.Close()
				payload := make([]byte, 1024)
				// The first append makes the first segment, outside the timing.
				if _, err := l.Append(payload); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(len(payload)))
				var left atomic.Int64
				left.Store(int64(b.N))
				b.ResetTimer()
				var wg sync.WaitGroup
				for range writers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for left.Add(-1) >= 0 {
							if _, err := l.Append(payload); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				b.StopTimer()
				st := l.Stats()
				b.ReportMetric(st.EntriesPerFlush(), "entries/flush")
			})
		}
	}
}
