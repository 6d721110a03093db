package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/ringstore/ringstore/kv/internal/base"
)

type entry struct {
	key   base.InternalKey
	value []byte
}

// model is a sorted slice of entries, the reference the skiplist is
// checked against.
type model []entry

func (m *model) add(seq uint64, kind base.Kind, key, value []byte) {
	e := entry{base.InternalKey{UserKey: bytes.Clone(key), Seq: seq, Kind: kind}, bytes.Clone(value)}
	i, _ := slices.BinarySearchFunc(*m, e, func(a, b entry) int { return base.Compare(a.key, b.key) })
	*m = slices.Insert(*m, i, e)
}

func (m model) get(key []byte, seq uint64) ([]byte, base.Kind, bool) {
	for _, e := range m {
		if bytes.Equal(e.key.UserKey, key) && e.key.Seq <= seq {
			return e.value, e.key.Kind, true
		}
	}
	return nil, 0, false
}

// seekGE returns the index of the first entry with user key >= k.
func (m model) seekGE(k []byte) int {
	i, _ := slices.BinarySearchFunc(m, k, func(e entry, k []byte) int {
		if bytes.Compare(e.key.UserKey, k) < 0 {
			return -1
		}
		return 1
	})
	return i
}

func checkFrom(t *testing.T, it *Iterator, ok bool, want model) {
	t.Helper()
	for i, e := range want {
		if !ok || !it.Valid() {
			t.Fatalf("iterator ended after %d of %d entries", i, len(want))
		}
		if base.Compare(it.Key(), e.key) != 0 || !bytes.Equal(it.Value(), e.value) {
			t.Fatalf("entry %d: got %v=%q, want %v=%q", i, it.Key(), it.Value(), e.key, e.value)
		}
		ok = it.Next()
	}
	if ok || it.Valid() {
		t.Fatalf("iterator has more than %d entries: %v", len(want), it.Key())
	}
}

func TestEmpty(t *testing.T) {
	m := New()
	defer m.Release()
	if _, _, ok := m.Get(nil, base.MaxSeq); ok {
		t.Fatal("Get found a key in an empty memtable")
	}
	it := m.NewIterator()
	if it.Valid() || it.First() || it.SeekGE(nil) || it.Next() || it.Valid() {
		t.Fatal("iterator over an empty memtable is valid")
	}
	if m.Len() != 0 || m.ApproximateBytes() != 0 {
		t.Fatalf("Len %d ApproximateBytes %d", m.Len(), m.ApproximateBytes())
	}
}

// arenas runs f with memtables of each kind of arena: mapped (where New
// maps) and Go heap (New's elsewhere, and the one whose accesses the race
// detector sees: it does not look into mappings of the process's own).
func arenas(t *testing.T, f func(t *testing.T, newMemtable func() *Memtable)) {
	kinds := []bool{false}
	if offHeap {
		kinds = []bool{true, false}
	}
	for _, mapped := range kinds {
		name := "heap"
		if mapped {
			name = "mapped"
		}
		t.Run(name, func(t *testing.T) { f(t, func() *Memtable { return newMemtable(mapped, DefaultSize) }) })
	}
}

func TestModel(t *testing.T) { arenas(t, testModel) }

func testModel(t *testing.T, newMemtable func() *Memtable) {
	for _, seed := range []uint64{1, 2, 3, 4} {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, seed))
			m := newMemtable()
			defer m.Release()
			var mod model
			nkeys := []int{1, 5, 50, 2000}[seed-1]
			key := func() []byte {
				if r.IntN(20) == 0 {
					return nil // the empty key
				}
				return fmt.Appendf(nil, "k%05d", r.IntN(nkeys))
			}
			seqs := r.Perm(4000) // unique seqs, added out of order
			for i, s := range seqs {
				seq := uint64(s + 1)
				kind := base.KindSet
				var v []byte
				if r.IntN(4) == 0 {
					kind = base.KindDelete
				} else {
					v = fmt.Appendf(nil, "v%d-%s", seq, bytes.Repeat([]byte{'x'}, r.IntN(40)))
				}
				k := key()
				m.Add(seq, kind, k, v)
				mod.add(seq, kind, k, v)
				if i%500 == 0 || i == len(seqs)-1 {
					for range 200 {
						k, seq := key(), uint64(r.IntN(4100))
						gv, gk, gok := m.Get(k, seq)
						wv, wk, wok := mod.get(k, seq)
						if gok != wok || gk != wk || !bytes.Equal(gv, wv) {
							t.Fatalf("Get(%q, %d) = %q,%v,%v; want %q,%v,%v", k, seq, gv, gk, gok, wv, wk, wok)
						}
					}
				}
			}
			if m.Len() != len(mod) {
				t.Fatalf("Len %d, want %d", m.Len(), len(mod))
			}
			it := m.NewIterator()
			checkFrom(t, it, it.First(), mod)
			for range 100 {
				k := key()
				if r.IntN(3) == 0 {
					k = append(k, 0) // between keys
				}
				checkFrom(t, it, it.SeekGE(k), mod[mod.seekGE(k):])
			}
			// Every version of every key, at every seq around it.
			for _, e := range mod {
				for _, s := range []uint64{e.key.Seq - 1, e.key.Seq, e.key.Seq + 1} {
					gv, gk, gok := m.Get(e.key.UserKey, s)
					wv, wk, wok := mod.get(e.key.UserKey, s)
					if gok != wok || gk != wk || !bytes.Equal(gv, wv) {
						t.Fatalf("Get(%q, %d) = %q,%v,%v; want %q,%v,%v", e.key.UserKey, s, gv, gk, gok, wv, wk, wok)
					}
				}
			}
		})
	}
}

func TestSeekGE(t *testing.T) {
	m := New()
	defer m.Release()
	m.Add(1, base.KindSet, []byte("b"), []byte("b1"))
	m.Add(3, base.KindDelete, []byte("b"), nil)
	m.Add(2, base.KindSet, []byte("b"), []byte("b2"))
	m.Add(4, base.KindSet, []byte("d"), []byte("d4"))
	m.Add(5, base.KindSet, nil, []byte("empty"))
	ik := func(k string, seq uint64, kind base.Kind) string {
		return base.InternalKey{UserKey: []byte(k), Seq: seq, Kind: kind}.String()
	}
	for _, tc := range []struct {
		seek string
		want []string
	}{
		{"", []string{ik("", 5, 1), ik("b", 3, 0), ik("b", 2, 1), ik("b", 1, 1), ik("d", 4, 1)}},
		{"\x00", []string{ik("b", 3, 0), ik("b", 2, 1), ik("b", 1, 1), ik("d", 4, 1)}},
		{"b", []string{ik("b", 3, 0), ik("b", 2, 1), ik("b", 1, 1), ik("d", 4, 1)}},
		{"b\x00", []string{ik("d", 4, 1)}},
		{"c", []string{ik("d", 4, 1)}},
		{"d", []string{ik("d", 4, 1)}},
		{"d\x00", nil},
		{"z", nil},
	} {
		it := m.NewIterator()
		var got []string
		for ok := it.SeekGE([]byte(tc.seek)); ok; ok = it.Next() {
			got = append(got, it.Key().String())
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("SeekGE(%q): got %v, want %v", tc.seek, got, tc.want)
		}
	}
	for _, tc := range []struct {
		key   string
		seq   uint64
		value string
		kind  base.Kind
		found bool
	}{
		{"b", 0, "", 0, false},
		{"b", 1, "b1", base.KindSet, true},
		{"b", 2, "b2", base.KindSet, true},
		{"b", 3, "", base.KindDelete, true},
		{"b", base.MaxSeq, "", base.KindDelete, true},
		{"b", 1 << 63, "", base.KindDelete, true},
		{"", 4, "", 0, false},
		{"", 5, "empty", base.KindSet, true},
		{"c", 100, "", 0, false},
	} {
		v, kind, found := m.Get([]byte(tc.key), tc.seq)
		if string(v) != tc.value || kind != tc.kind || found != tc.found {
			t.Errorf("Get(%q, %d) = %q,%v,%v; want %q,%v,%v", tc.key, tc.seq, v, kind, found, tc.value, tc.kind, tc.found)
		}
	}
}

func TestDuplicate(t *testing.T) {
	m := New()
	defer m.Release()
	m.Add(7, base.KindSet, []byte("k"), []byte("first"))
	m.Add(7, base.KindSet, []byte("k"), []byte("second"))
	if v, _, _ := m.Get([]byte("k"), 7); string(v) != "second" {
		t.Fatalf("Get after a duplicate Add = %q, want the later value", v)
	}
	it := m.NewIterator()
	var got []string
	for ok := it.First(); ok; ok = it.Next() {
		got = append(got, string(it.Value()))
	}
	if !slices.Equal(got, []string{"second", "first"}) {
		t.Fatalf("iteration after a duplicate Add: %q", got)
	}
}

func TestCopiesAndBigValues(t *testing.T) { arenas(t, testCopiesAndBigValues) }

func testCopiesAndBigValues(t *testing.T, newMemtable func() *Memtable) {
	m := newMemtable()
	defer m.Release()
	key := []byte("key")
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB, over bigAlloc
	m.Add(1, base.KindSet, key, big)
	m.Add(2, base.KindSet, []byte("mid"), big[:bigAlloc])
	m.Add(3, base.KindSet, []byte("chunk"), big[:chunkSize])
	for i := range 100 { // fill several chunks
		m.Add(uint64(10+i), base.KindSet, fmt.Appendf(nil, "small%03d", i), big[:1000])
	}
	key[0] = 'X'
	want := bytes.Clone(big)
	big[0] = 'X'
	v, _, ok := m.Get([]byte("key"), 1)
	if !ok || !bytes.Equal(v, want) {
		t.Fatal("big value not found or not copied")
	}
	if v, _, _ := m.Get([]byte("chunk"), 3); !bytes.Equal(v, want[:chunkSize]) {
		t.Fatal("chunk-sized value wrong")
	}
	if cap(v) != len(v) {
		t.Fatalf("value cap %d > len %d: an append would spill into the arena", cap(v), len(v))
	}
	if got, min := m.ApproximateBytes(), int64(len(want)+bigAlloc+chunkSize+100*1000); got < min {
		t.Fatalf("ApproximateBytes %d < %d", got, min)
	}
	it := m.NewIterator()
	for ok := it.First(); ok; ok = it.Next() {
		if k := it.Key(); cap(k.UserKey) != len(k.UserKey) {
			t.Fatalf("key %v cap %d", k, cap(k.UserKey))
		}
	}
}

func TestAddPanics(t *testing.T) {
	for _, tc := range []struct {
		seq  uint64
		kind base.Kind
	}{{1, 2}, {base.MaxSeq + 1, base.KindSet}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Add(%d, %v) did not panic", tc.seq, tc.kind)
				}
			}()
			New().Add(tc.seq, tc.kind, []byte("k"), nil)
		}()
	}
}

// TestConcurrent runs readers against one writer (run it with -race).
// Seqs are added in increasing order, so a reader that saw seq s through
// the published count must find every version up to s.
func TestConcurrent(t *testing.T) { arenas(t, testConcurrent) }

func testConcurrent(t *testing.T, newMemtable func() *Memtable) {
	const n, nkeys = 20000, 300
	m := newMemtable()
	defer m.Release()
	value := func(seq uint64) []byte { return fmt.Appendf(nil, "v%d", seq) }
	keyOf := func(seq uint64) []byte { return fmt.Appendf(nil, "k%04d", seq*7919%nkeys) }
	readWhileAdding(t, n, func(rnd *rand.Rand, top uint64) error {
		seq := 1 + rnd.Uint64N(top)
		if v, kind, ok := m.Get(keyOf(seq), seq); !ok || kind != base.KindSet || !bytes.Equal(v, value(seq)) {
			return fmt.Errorf("Get(%q, %d) = %q,%v,%v", keyOf(seq), seq, v, kind, ok)
		}
		// An iteration is sorted and holds at least what was published.
		it := m.NewIterator()
		cnt := uint64(0)
		var prev base.InternalKey
		for ok := it.SeekGE(keyOf(seq)); ok; ok = it.Next() {
			k := it.Key()
			if cnt > 0 && base.Compare(prev, k) >= 0 {
				return fmt.Errorf("iterator out of order: %v then %v", prev, k)
			}
			prev = k
			cnt++
			if cnt > 50 {
				break
			}
		}
		if cnt == 0 {
			return fmt.Errorf("SeekGE(%q) found nothing", keyOf(seq))
		}
		_ = m.ApproximateBytes() + int64(m.Len())
		return nil
	}, func(seq uint64) { m.Add(seq, base.KindSet, keyOf(seq), value(seq)) })
	if m.Len() != n {
		t.Fatalf("Len %d", m.Len())
	}
}

// readWhileAdding calls add for seqs 1 to n on this goroutine while four
// readers call read, each with a rand of its own and the last seq whose add
// returned (at least 1), until the adds are done or a read fails.
func readWhileAdding(t *testing.T, n uint64, read func(rnd *rand.Rand, top uint64) error, add func(seq uint64)) {
	t.Helper()
	var published atomic.Uint64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rnd := rand.New(rand.NewPCG(uint64(r), 0))
			for {
				select {
				case <-stop:
					return
				default:
				}
				if top := published.Load(); top > 0 {
					if err := read(rnd, top); err != nil {
						errs <- err
						return
					}
				}
			}
		}()
	}
	for seq := uint64(1); seq <= n; seq++ {
		add(seq)
		published.Store(seq)
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func BenchmarkAdd(b *testing.B) {
	for _, vlen := range []int{16, 256} {
		b.Run(fmt.Sprintf("value=%d", vlen), func(b *testing.B) {
			v := make([]byte, vlen)
			keys := make([][]byte, 1<<16)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "key%016x", rand.Uint64())
			}
			b.SetBytes(int64(len(keys[0]) + vlen))
			b.ReportAllocs()
			m := New()
			for i := 0; b.Loop(); i++ {
				if i%len(keys) == 0 && i > 0 && m.Len() >= 1<<20 {
					m.Release()
					m = New()
				}
				m.Add(uint64(i+1), base.KindSet, keys[i%len(keys)], v)
			}
			m.Release()
		})
	}
}

func BenchmarkGet(b *testing.B) {
	for _, n := range []int{1 << 10, 1 << 18} {
		b.Run(fmt.Sprintf("entries=%d", n), func(b *testing.B) {
			m := New()
			keys := make([][]byte, n)
			for i := range keys {
				keys[i] = fmt.Appendf(nil, "key%016x", rand.Uint64())
				m.Add(uint64(i+1), base.KindSet, keys[i], []byte("value"))
			}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, _, ok := m.Get(keys[i%n], base.MaxSeq); !ok {
					b.Fatal("not found")
				}
			}
			m.Release()
		})
	}
}

// TestPrefixKeys orders keys whose zero-padded 8-byte prefixes are equal
// or differ only past a short key's end.
func TestPrefixKeys(t *testing.T) {
	keys := []string{"", "\x00", "\x00\x00", "a", "a\x00", "a\x00\x00\x00\x00\x00\x00\x00", "a\x00\x00\x00\x00\x00\x00\x00\x00",
		"a\x01", "abcdefgh", "abcdefgh\x00", "abcdefghi", "abcdefg\xff", "\xff\xff\xff\xff\xff\xff\xff\xff", "\xff\xff\xff\xff\xff\xff\xff\xff\xff"}
	r := rand.New(rand.NewPCG(9, 9))
	m := New()
	defer m.Release()
	var mod model
	for i, j := range r.Perm(len(keys) * 3) {
		k := []byte(keys[j%len(keys)])
		m.Add(uint64(i+1), base.KindSet, k, k)
		mod.add(uint64(i+1), base.KindSet, k, k)
	}
	it := m.NewIterator()
	checkFrom(t, it, it.First(), mod)
	for _, k := range keys {
		checkFrom(t, it, it.SeekGE([]byte(k)), mod[mod.seekGE([]byte(k)):])
		if v, _, ok := m.Get([]byte(k), base.MaxSeq); !ok || string(v) != k {
			t.Fatalf("Get(%q) = %q, %v", k, v, ok)
		}
	}
}

// TestGetAtSeqWhileNewerVersionsArrive: a reader asking for a key at seq 10
// must get version 5 while a writer links version 11 of the key just before
// it (between the previous user key and version 5). Many fresh memtables, so
// that the one Add that can race meets a reader in the middle of a seek.
func TestGetAtSeqWhileNewerVersionsArrive(t *testing.T) {
	arenas(t, testGetAtSeqWhileNewerVersionsArrive)
}

func testGetAtSeqWhileNewerVersionsArrive(t *testing.T, newMemtable func() *Memtable) {
	key := []byte("k")
	for round := 0; round < 3000; round++ {
		m := newMemtable()
		for _, k := range [][]byte{[]byte("a"), []byte("j"), []byte("l")} {
			m.Add(1, base.KindSet, k, []byte("other"))
		}
		m.Add(5, base.KindSet, key, []byte("v5"))
		start := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			<-start
			m.Add(11, base.KindSet, key, []byte("v11"))
		}()
		close(start)
		for stop := false; !stop; {
			select {
			case <-done:
				stop = true
			default:
			}
			v, _, ok := m.Get(key, 10)
			if !ok || string(v) != "v5" {
				t.Fatalf("round %d: Get(k, 10) = %q, %v while version 11 was added; want v5", round, v, ok)
			}
		}
		m.Release()
	}
}
