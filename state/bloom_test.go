package state

import (
	"fmt"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/kv"
)

// TestStateBloomFilters: the state's tables get DefaultBloomBitsPerKey bits per key
// unless KV sets its own, so a batch reading keys the state does not hold,
// between keys it does, reads far fewer blocks (the filters' false
// positives) than at kv's 10 bits.
func TestStateBloomFilters(t *testing.T) {
	key := func(i int) []byte { return fmt.Appendf(nil, "key-%08d", i) }
	falseReads := func(bits int) uint64 {
		b, err := Open(testdir.Direct(t), Options{KV: kv.Options{BloomBitsPerKey: bits, CacheSize: 1 << 20, Logf: t.Logf}})
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		want := bits
		if bits == 0 {
			want = DefaultBloomBitsPerKey
		}
		if got := b.opts.KV.BloomBitsPerKey; got != want {
			t.Errorf("BloomBitsPerKey %d asked: the store has %d, want %d", bits, got, want)
		}
		v, err := b.Value("v", 0)
		if err != nil {
			t.Fatal(err)
		}
		mb := b.NewMiniBatch()
		for i := 0; i < 40000; i += 2 {
			if err := v.Put(mb, key(i), nil, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		if err := mb.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := b.DB().Flush(); err != nil {
			t.Fatal(err)
		}
		before := b.Stats().KV.BlockReads
		for i := 1; i < 40000; i += 2 {
			v.Want(mb, key(i), nil)
		}
		if err := mb.Load(); err != nil {
			t.Fatal(err)
		}
		return b.Stats().KV.BlockReads - before
	}
	at10, byDefault := falseReads(10), falseReads(0)
	t.Logf("20,000 absent keys: %d blocks read at 10 bits per key, %d at the state's %d", at10, byDefault, DefaultBloomBitsPerKey)
	if at10 < 50 || byDefault*4 > at10 {
		t.Errorf("20,000 absent keys read %d blocks at 10 bits per key and %d by default: want the default's under a quarter", at10, byDefault)
	}
}
