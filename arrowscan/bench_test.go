package arrowscan

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"os"
	"testing"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// benchPath writes the benchmark's file into a directory that lives as
// long as the calling top-level benchmark (its sub-benchmarks share it).
func benchPath(b *testing.B) (string, int64) {
	b.Helper()
	path := writeTestFile(b, testdir.Direct(b), "bench.arrow", genOptions{batches: 24, rows: 32 << 10, seed: 99})
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return path, st.Size()
}

// BenchmarkScan scans the whole file once per iteration in every mode,
// narrow (one int64 column) and wide (every column), with a cold page
// cache (a fresh File, then fadvise DONTNEED, before each iteration; the
// pool keeps what it holds across iterations, so it is a quarter of the
// file). SetBytes is the file size, so MB/s is comparable across
// projections only as "file bytes per second".
func BenchmarkScan(b *testing.B) {
	path, size := benchPath(b)
	for _, cols := range []struct {
		name string
		cols []string
	}{{"narrow", []string{"id"}}, {"strings", []string{"name", "country"}}, {"wide", nil}} {
		for _, m := range []string{"mmap", "pread", "direct", "pool"} {
			b.Run(fmt.Sprintf("cols=%s/mode=%s", cols.name, m), func(b *testing.B) {
				mode, _ := ParseMode(m)
				opts := Options{Mode: mode, IOMode: ioengine.Auto}
				if mode == ModePool {
					pool, err := bufpool.New(bufpool.Options{Budget: max(16<<20, size/4)})
					if err != nil {
						b.Fatal(err)
					}
					defer pool.Close()
					opts.Pool = pool
				}
				b.SetBytes(size)
				rows := int64(0)
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					// A fresh File each time (a mapping keeps its pages), then
					// a cold page cache.
					b.StopTimer()
					f, err := Open(path, opts)
					if err != nil {
						b.Fatal(err)
					}
					dropCache(b, path)
					b.StartTimer()
					s, err := f.Scan(cols.cols)
					if err != nil {
						b.Fatal(err)
					}
					for s.Next() {
						rows += s.Record().NumRows()
						for _, c := range s.Record().Columns() {
							sink += touch(c.Data())
						}
					}
					if err := s.Err(); err != nil {
						b.Fatal(err)
					}
					s.Close()
					b.StopTimer()
					if err := f.Close(); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				b.ReportMetric(float64(rows)/float64(b.N), "rows/op")
				if opts.Pool != nil {
					b.ReportMetric(float64(opts.Pool.Stats().BytesRead)/float64(b.N), "poolreadB/op")
				}
			})
		}
	}
}

var sink byte

// touch reads a byte of every 512 of every buffer of d and its children,
// as a query would read the values: with mmap that is what faults the
// pages in.
func touch(d arrow.ArrayData) byte {
	var x byte
	for _, buf := range d.Buffers() {
		if buf == nil {
			continue
		}
		bs := buf.Bytes()
		for i := 0; i < len(bs); i += 512 {
			x ^= bs[i]
		}
	}
	for _, c := range d.Children() {
		x ^= touch(c)
	}
	if dict, ok := d.Dictionary().(*array.Data); ok && dict != nil {
		x ^= touch(dict)
	}
	return x
}

// BenchmarkPoolBody compares the pool's zero-copy bodies with copying
// them out, on a warm pool (every frame resident), where the body is all
// that differs: a batch's 256 KiB column in one 4 MiB frame, the same
// column over four 64 KiB frames shown as one range (windows), and copied
// out of 64 KiB frames.
func BenchmarkPoolBody(b *testing.B) {
	path, size := benchPath(b)
	cases := []struct {
		name     string
		frame    int
		windows  bool
		zeroCopy bool
	}{
		{"one-frame", 4 << 20, false, true},
		{"windows", 64 << 10, true, true},
		{"copy", 64 << 10, false, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			pool, err := bufpool.New(bufpool.Options{FrameSize: c.frame, Budget: size + 64<<20, Windows: c.windows})
			if err != nil {
				b.Fatal(err)
			}
			defer pool.Close()
			f, err := Open(path, Options{Mode: ModePool, Pool: pool})
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			old := poolZeroCopy
			poolZeroCopy = c.zeroCopy
			defer func() { poolZeroCopy = old }()
			scan := func() {
				s, err := f.Scan([]string{"id"}) // 256 KiB per batch
				if err != nil {
					b.Fatal(err)
				}
				for s.Next() {
					sink += touch(s.Record().Column(0).Data())
				}
				if err := s.Err(); err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
			scan() // warm the pool
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				scan()
			}
		})
	}
}
