package kv

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// BenchmarkMultiGet reads batches of 64 random keys from a store about ten
// times its block cache (the cache off: every block from the device), on
// io_uring and on the syscall backend (serial preads). Compare the two with
// benchstat; `ringstore bench kv` is the benchmark of record. cpu-µs/block
// is the process's CPU time (user and system) per block read.
func BenchmarkMultiGet(b *testing.B) {
	const keys = 60000
	dir := testdir.Direct(b)
	key := func(i int) []byte { return []byte(fmt.Sprintf("user%012d", i*2654435761%keys)) }
	{
		db, err := Open(dir, Options{Unsafe: UnsafeOptions{NoSync: true}, Logf: b.Logf, MemtableSize: 4 << 20})
		if err != nil {
			b.Fatal(err)
		}
		var batch Batch
		val := make([]byte, 300)
		for i := 0; i < keys; i++ {
			batch.Put(key(i), val)
			if batch.Len() == 1000 {
				if err := db.Write(&batch); err != nil {
					b.Fatal(err)
				}
				batch.Reset()
			}
		}
		if err := db.Compact(); err != nil {
			b.Fatal(err)
		}
		db.Close()
	}
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		for _, cache := range []bool{false, true} {
			b.Run(fmt.Sprintf("mode=%s/cache=%v", mode, cache), func(b *testing.B) {
				db, err := Open(dir, Options{Engine: testengine.New(b, mode, ioengine.Options{}), Logf: b.Logf,
					NoBlockCache: !cache, CacheSize: 2 << 20})
				if err != nil {
					b.Fatal(err)
				}
				defer db.Close()
				r := rand.New(rand.NewPCG(1, 2))
				batch := make([][]byte, 64)
				b.ResetTimer()
				c0 := cpuTime()
				for i := 0; i < b.N; i++ {
					for j := range batch {
						batch[j] = key(r.IntN(keys))
					}
					if _, found, err := db.MultiGet(batch); err != nil || !found[0] {
						b.Fatal(err, found[0])
					}
				}
				cpu := cpuTime() - c0
				b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "keys/s")
				st := db.Stats()
				b.ReportMetric(float64(st.BlockReads)/float64(b.N*64), "blocks/key")
				b.ReportMetric(float64(cpu.Nanoseconds())/1e3/float64(st.BlockReads), "cpu-µs/block")
			})
		}
	}
}

// BenchmarkPut runs durable Puts of 1 KiB values (every Put on stable
// storage when it returns, as in bench wal) from 1 and 64 goroutines on
// io_uring, into a memtable large enough that no flush runs: the commit
// pipeline alone. The ratio of the two is what group commit through the
// write queue gives; the log's appends/s at 64 writers (wal's
// BenchmarkAppend) is the ceiling. entries/flush is the log's.
func BenchmarkPut(b *testing.B) {
	for _, writers := range []int{1, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			db, err := Open(testdir.Direct(b), Options{Engine: testengine.New(b, ioengine.URing, ioengine.Options{}), Logf: b.Logf, MemtableSize: 1 << 30})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			val := make([]byte, 1024)
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for w := range writers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					key := make([]byte, 0, 32)
					for {
						i := next.Add(1)
						if i > int64(b.N) {
							return
						}
						key = fmt.Appendf(key[:0], "w%02d-%012d", w, i)
						if err := db.Put(key, val); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "puts/s")
			st := db.Stats()
			b.ReportMetric(float64(st.Writes)/float64(max(1, st.LogFlushes)), "entries/flush")
		})
	}
}

// BenchmarkMultiGetCached reads batches of 64 random keys with every block
// of the store in the block cache (filled by an unmeasured pass over every
// key) on io_uring: no I/O, so ns/key is the CPU a MultiGet spends per key
// (`ringstore bench kv`'s hot mode measures the same in its own process).
func BenchmarkMultiGetCached(b *testing.B) {
	const keys = 20000
	key := func(i int) []byte { return []byte(fmt.Sprintf("user%012d", i*2654435761%keys)) }
	db, err := Open(testdir.Direct(b), Options{Unsafe: UnsafeOptions{NoSync: true}, Logf: b.Logf, MemtableSize: 1 << 20, CacheSize: 32 << 20,
		Engine: testengine.New(b, ioengine.URing, ioengine.Options{})})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var batch Batch
	val := make([]byte, 300)
	for i := 0; i < keys; i++ {
		batch.Put(key(i), val)
		if batch.Len() == 1000 {
			if err := db.Write(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
		}
	}
	if err := db.Compact(); err != nil {
		b.Fatal(err)
	}
	all := make([][]byte, 0, 64)
	for i := 0; i < keys; i++ {
		if all = append(all, key(i)); len(all) == cap(all) || i == keys-1 {
			if _, _, err := db.MultiGet(all); err != nil {
				b.Fatal(err)
			}
			all = all[:0]
		}
	}
	before := db.Stats().BlockReads
	r := rand.New(rand.NewPCG(1, 2))
	batches := make([][][]byte, 1024)
	for i := range batches {
		batches[i] = make([][]byte, 64)
		for j := range batches[i] {
			batches[i][j] = key(r.IntN(keys))
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, found, err := db.MultiGet(batches[i%len(batches)]); err != nil || !found[0] {
			b.Fatal(err, found[0])
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*64), "ns/key")
	if reads := db.Stats().BlockReads - before; reads != 0 {
		b.Fatalf("%d block reads with every block cached", reads)
	}
}

// BenchmarkCompaction times one L0→L1 compaction of tables=N overlapping L0
// tables, each a flush of keys=K random 16-byte keys (drawn from 4K, so
// versions collide) with 100-byte values, into a store without a log. The
// flushes are not timed. It reports MB/s of input table bytes and the CPU
// seconds the process spent per GB of input (rusage, user+system: the
// compaction's merge, encoding, checksums and system calls).
func BenchmarkCompaction(b *testing.B) {
	for _, tables := range []int{4} {
		for _, keys := range []int{200000} {
			b.Run(fmt.Sprintf("tables=%d/keys=%d", tables, keys), func(b *testing.B) {
				benchCompaction(b, tables, keys)
			})
		}
	}
}

func benchCompaction(b *testing.B, tables, keys int) {
	r := rand.New(rand.NewPCG(3, 4))
	val := make([]byte, 100)
	fill := make([]byte, 104)
	var inBytes uint64
	var cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := testdir.Direct(b)
		db, err := Open(dir, Options{DisableWAL: true, DisableAutoCompaction: true, MemtableSize: 256 << 20,
			Logf: func(string, ...any) {}})
		if err != nil {
			b.Fatal(err)
		}
		var batch Batch
		key := make([]byte, 16)
		for t := 0; t < tables; t++ {
			for k := 0; k < keys; k++ {
				binary.BigEndian.PutUint64(key, r.Uint64N(uint64(4*keys)))
				binary.BigEndian.PutUint64(key[8:], 0x9e3779b97f4a7c15)
				for j := 0; j < len(fill); j += 8 {
					binary.LittleEndian.PutUint64(fill[j:], r.Uint64())
				}
				copy(val, fill)
				batch.Put(key, val)
				if batch.Len() == 1000 {
					if err := db.Write(&batch); err != nil {
						b.Fatal(err)
					}
					batch.Reset()
				}
			}
			if err := db.Write(&batch); err != nil {
				b.Fatal(err)
			}
			batch.Reset()
			if err := db.Flush(); err != nil {
				b.Fatal(err)
			}
		}
		before := db.Stats().CompactedIn
		c0 := cpuTime()
		b.StartTimer()
		if err := db.Compact(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime() - c0
		st := db.Stats()
		if st.Compactions == 0 {
			b.Fatalf("no compaction ran: %+v", st)
		}
		inBytes += st.CompactedIn - before
		if err := db.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(inBytes)/1e6/b.Elapsed().Seconds(), "MB/s")
	b.ReportMetric(cpu.Seconds()/(float64(inBytes)/1e9), "cpu-s/GB")
}

// cpuTime is the user and system CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
