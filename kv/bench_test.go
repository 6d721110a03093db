package kv

import (
	"fmt"
	"math/rand/v2"
	"testing"

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
