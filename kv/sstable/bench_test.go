package sstable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// benchFile writes n entries with valueLen-byte values and 4 KiB blocks.
func benchFile(b *testing.B, n, valueLen int) (string, []kv) {
	b.Helper()
	es := make([]kv, n)
	v := bytes.Repeat([]byte("v"), valueLen)
	for i := range es {
		es[i] = kv{InternalKey{UserKey: fmt.Appendf(nil, "user/%010d", i), Seq: uint64(i + 1), Kind: KindSet}, v}
	}
	path := filepath.Join(b.TempDir(), "bench.sst")
	writeFile(b, path, es, Options{})
	return path, es
}

// middleBlock opens the table at path and returns its middle data block:
// its number, its bytes, and its user keys in order. The reader is closed
// when the benchmark ends.
func middleBlock(b *testing.B, path string) (r *Reader, i int, buf []byte, keys [][]byte) {
	b.Helper()
	r, err := Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { r.Close() })
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	i = r.NumBlocks() / 2
	h := r.Block(i)
	buf = data[h.Offset : h.Offset+h.Len]
	blk, err := r.DecodeBlock(h, buf)
	if err != nil {
		b.Fatal(err)
	}
	for it := blk.Iter(); it.Next(); {
		keys = append(keys, append([]byte{}, it.Key().UserKey...))
	}
	return r, i, buf, keys
}

func BenchmarkWriter(b *testing.B) {
	es := make([]kv, 10000)
	v := bytes.Repeat([]byte("v"), 200)
	size := 0
	for i := range es {
		es[i] = kv{InternalKey{UserKey: fmt.Appendf(nil, "user/%010d", i), Seq: uint64(i + 1), Kind: KindSet}, v}
		size += len(es[i].key.UserKey) + len(v)
	}
	b.SetBytes(int64(size))
	for b.Loop() {
		w, _ := NewWriter(discard{}, Options{})
		for _, e := range es {
			if err := w.Add(e.key, e.value); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := w.Finish(); err != nil {
			b.Fatal(err)
		}
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

func BenchmarkBlock(b *testing.B) {
	path, es := benchFile(b, 20000, 200)
	r, i, buf, keys := middleBlock(b, path)
	h := r.Block(i)
	blk, err := r.DecodeBlock(h, buf)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("op=DecodeBlock", func(b *testing.B) {
		b.SetBytes(int64(h.Len))
		for b.Loop() {
			if _, err := r.DecodeBlock(h, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("op=BlockGet", func(b *testing.B) {
		i := 0
		for b.Loop() {
			if _, _, _, found := blk.Get(keys[i%len(keys)]); !found {
				b.Fatal("not found")
			}
			i++
		}
	})
	rng := rand.New(rand.NewPCG(1, 1))
	b.Run("op=BlockFor", func(b *testing.B) {
		for b.Loop() {
			if _, ok := r.BlockFor(es[rng.IntN(len(es))].key.UserKey); !ok {
				b.Fatal("no block")
			}
		}
	})
	b.Run("op=MayContain", func(b *testing.B) {
		for b.Loop() {
			r.MayContain(es[rng.IntN(len(es))].key.UserKey)
		}
	})
	b.Run("op=ReaderGet", func(b *testing.B) {
		for b.Loop() {
			if _, _, _, found, err := r.Get(es[rng.IntN(len(es))].key.UserKey); !found || err != nil {
				b.Fatal(found, err)
			}
		}
	})
}

// BenchmarkWriteFile writes a 10000-entry SST (about 2.3 MB) to a file,
// without the fsync.
func BenchmarkWriteFile(b *testing.B) {
	es := make([]kv, 10000)
	v := bytes.Repeat([]byte("v"), 200)
	for i := range es {
		es[i] = kv{InternalKey{UserKey: fmt.Appendf(nil, "user/%010d", i), Seq: uint64(i + 1), Kind: KindSet}, v}
	}
	path := filepath.Join(b.TempDir(), "w.sst")
	for b.Loop() {
		f, err := os.Create(path)
		if err != nil {
			b.Fatal(err)
		}
		w, _ := NewWriter(f, Options{})
		for _, e := range es {
			if err := w.Add(e.key, e.value); err != nil {
				b.Fatal(err)
			}
		}
		m, err := w.Finish()
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(m.Size))
		f.Close()
	}
}

// BenchmarkGetInBlock is the point-read path of kv's MultiGet on one data
// block: a lookup that checks the whole block (its first after a load) and
// one in a block already checked, for every key of the block in turn, with
// values of valueLen bytes (16: over a hundred entries a block, many
// restart intervals; 200: about seventeen).
func BenchmarkGetInBlock(b *testing.B) {
	for _, valueLen := range []int{16, 200} {
		path, _ := benchFile(b, 20000, valueLen)
		r, i, buf, keys := middleBlock(b, path)
		for _, verified := range []bool{false, true} {
			get := r.GetInBlock
			if verified {
				get = r.GetInVerifiedBlock
			}
			b.Run(fmt.Sprintf("value=%d/verified=%t", valueLen, verified), func(b *testing.B) {
				n := 0
				for b.Loop() {
					got, err := get(i, buf, keys[n%len(keys)], MaxSeq)
					if err != nil || !got.Found {
						b.Fatal(got, err)
					}
					n++
				}
			})
		}
	}
}
