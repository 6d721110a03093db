package state

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

// BenchmarkMiniBatch compares a mini-batch of 256 lookups read with one
// Load (one kv.MultiGet) against the same lookups as 256 Gets, cold: 100,000
// keys of 100-byte state, 20× the 512 KiB block cache, on io_uring and on
// syscalls. ns/op is per batch.
func BenchmarkMiniBatch(b *testing.B) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		dir := testdir.Direct(b)
		be, err := Open(dir, Options{KV: kv.Options{IOMode: mode, CacheSize: 512 << 10, Logf: func(string, ...any) {}}})
		if err != nil {
			b.Fatal(err)
		}
		v, _ := be.Value("v", 0)
		const keys = 100_000
		mb := be.NewMiniBatch()
		for i := range keys {
			v.Put(mb, []byte(fmt.Sprintf("key%07d", i)), nil, make([]byte, 100))
			if i%1000 == 999 {
				if err := mb.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		}
		if err := be.DB().Compact(); err != nil {
			b.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, 1))
		batch := func() [][]byte {
			ks := make([][]byte, 256)
			for i := range ks {
				ks[i] = []byte(fmt.Sprintf("key%07d", rng.IntN(keys)))
			}
			return ks
		}
		b.Run("io="+mode.String()+"/read=load", func(b *testing.B) {
			for range b.N {
				mb := be.NewMiniBatch()
				ks := batch()
				for _, k := range ks {
					v.Want(mb, k, nil)
				}
				if err := mb.Load(); err != nil {
					b.Fatal(err)
				}
				for _, k := range ks {
					if _, ok, err := v.Get(mb, k, nil); !ok || err != nil {
						b.Fatal(k, err)
					}
				}
			}
		})
		b.Run("io="+mode.String()+"/read=gets", func(b *testing.B) {
			for range b.N {
				mb := be.NewMiniBatch()
				for _, k := range batch() {
					if _, ok, err := v.Get(mb, k, nil); !ok || err != nil {
						b.Fatal(k, err)
					}
				}
			}
		})
		be.Close()
	}
}
