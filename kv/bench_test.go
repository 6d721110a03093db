package kv

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
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
// benchstat; `ringstore bench kv` is the benchmark of record.
func BenchmarkMultiGet(b *testing.B) {
	const keys = 60000
	dir := testdir.Direct(b)
	key := func(i int) []byte { return []byte(fmt.Sprintf("user%012d", i*2654435761%keys)) }
	{
		db, err := Open(dir, Options{NoSync: true, Logf: b.Logf, MemtableSize: 4 << 20})
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
				for i := 0; i < b.N; i++ {
					for j := range batch {
						batch[j] = key(r.IntN(keys))
					}
					if _, found, err := db.MultiGet(batch); err != nil || !found[0] {
						b.Fatal(err, found[0])
					}
				}
				b.ReportMetric(float64(b.N*64)/b.Elapsed().Seconds(), "keys/s")
				st := db.Stats()
				b.ReportMetric(float64(st.BlockReads)/float64(b.N*64), "blocks/key")
			})
		}
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
