package sstable

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type kv struct {
	key   InternalKey
	value []byte
}

// genEntries returns sorted entries over n distinct user keys: most keys
// have one to three versions (newest first), one key has 40, about one in
// ten versions is a delete, values are 0..600 bytes and a few are larger
// than a block.
func genEntries(rng *rand.Rand, n int) []kv {
	var out []kv
	seq := uint64(1 << 20)
	for i := range n {
		uk := fmt.Appendf(nil, "user/%08d/%x", i*3, rng.Uint32()&0xfff)
		versions := 1 + rng.IntN(3)
		if i == n/2 {
			versions = 40
		}
		for range versions {
			seq -= 1 + uint64(rng.IntN(5))
			k := InternalKey{UserKey: uk, Seq: seq, Kind: KindSet}
			var v []byte
			switch r := rng.IntN(100); {
			case r < 10:
				k.Kind = KindDelete
			case r < 12:
				v = make([]byte, 5000+rng.IntN(20000))
			default:
				v = make([]byte, rng.IntN(600))
			}
			for j := range v {
				v[j] = byte(rng.Uint32())
			}
			out = append(out, kv{k, v})
		}
	}
	// Seqs fall across keys too; sort by internal key.
	sortEntries(out)
	return out
}

func sortEntries(es []kv) {
	// Insertion order is already by user key; within a user key seqs
	// fall, so the slice is sorted. Check rather than trust.
	for i := 1; i < len(es); i++ {
		if Compare(es[i-1].key, es[i].key) >= 0 {
			panic(fmt.Sprintf("genEntries: %s before %s", es[i-1].key, es[i].key))
		}
	}
}

func writeFile(t testing.TB, path string, es []kv, opts Options) Meta {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := NewWriter(f, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if err := w.Add(e.key, e.value); err != nil {
			t.Fatalf("Add(%s): %v", e.key, err)
		}
	}
	m, err := w.Finish()
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	return m
}

// newest maps each user key to its first (newest) entry.
func newest(es []kv) map[string]kv {
	m := make(map[string]kv)
	for _, e := range es {
		if _, ok := m[string(e.key.UserKey)]; !ok {
			m[string(e.key.UserKey)] = e
		}
	}
	return m
}

func TestRoundTrip(t *testing.T) {
	for _, opts := range []Options{{}, {BlockSize: 16 << 10, BloomBitsPerKey: 16}, {BlockSize: 1000}} {
		t.Run(fmt.Sprintf("BlockSize=%d,Bloom=%d", opts.BlockSize, opts.BloomBitsPerKey), func(t *testing.T) {
			testRoundTrip(t, opts)
		})
	}
}

func testRoundTrip(t *testing.T, opts Options) {
	rng := rand.New(rand.NewPCG(1, uint64(opts.BlockSize)))
	es := genEntries(rng, 3000)
	path := filepath.Join(t.TempDir(), "000001.sst")
	m := writeFile(t, path, es, opts)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m.Size != uint64(st.Size()) {
		t.Fatalf("Meta.Size %d, file is %d bytes", m.Size, st.Size())
	}
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()

	var deletes, maxSeq uint64
	for _, e := range es {
		if e.key.Kind == KindDelete {
			deletes++
		}
		maxSeq = max(maxSeq, e.key.Seq)
	}
	p := r.Properties()
	if p.Entries != uint64(len(es)) || p.Deletes != deletes || p.MaxSeq != maxSeq ||
		Compare(p.Smallest, es[0].key) != 0 || Compare(p.Largest, es[len(es)-1].key) != 0 ||
		p.DataBlocks != uint64(r.NumBlocks()) {
		t.Fatalf("properties %+v; want %d entries, %d deletes, max seq %d, %s..%s", p, len(es), deletes, maxSeq, es[0].key, es[len(es)-1].key)
	}
	if r.NumBlocks() < 100 {
		t.Fatalf("only %d data blocks; the test wants many", r.NumBlocks())
	}

	// Every handle is O_DIRECT-exact; blocks are contiguous from 0.
	var next uint64
	large := 0
	for i := range r.NumBlocks() {
		h := r.Block(i)
		if h.Offset%Alignment != 0 || h.Len%Alignment != 0 || h.Len == 0 || h.Offset != next {
			t.Fatalf("block %d handle %+v: not aligned or not contiguous (want offset %d)", i, h, next)
		}
		if h.Len > Alignment {
			large++
		}
		next = h.Offset + h.Len
	}
	if large == 0 {
		t.Fatal("no block larger than 4096 bytes: large values were not exercised")
	}
	// With 4 KiB blocks, a block larger than 4 KiB holds one entry only.
	if opts.BlockSize == 0 {
		for i := range r.NumBlocks() {
			b, _, err := r.readBlock(i, nil)
			if err != nil {
				t.Fatal(err)
			}
			if h := r.Block(i); h.Len > Alignment && b.Len() != 1 {
				t.Fatalf("block %d of %d bytes holds %d entries; want a large entry alone", i, h.Len, b.Len())
			}
		}
	}

	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for uk, want := range newest(es) {
		key := []byte(uk)
		if !r.MayContain(key) {
			t.Fatalf("MayContain(%q) = false for a present key", uk)
		}
		h, ok := r.BlockFor(key)
		if !ok {
			t.Fatalf("BlockFor(%q): no block", uk)
		}
		buf := make([]byte, h.Len)
		if _, err := f.ReadAt(buf, int64(h.Offset)); err != nil {
			t.Fatal(err)
		}
		b, err := r.DecodeBlock(h, buf)
		if err != nil {
			t.Fatalf("DecodeBlock(%+v): %v", h, err)
		}
		v, kind, seq, found := b.Get(key)
		if !found || kind != want.key.Kind || seq != want.key.Seq || !bytes.Equal(v, want.value) {
			t.Fatalf("Block.Get(%q) = %d bytes, %s, %d, %v; want %s with %d bytes", uk, len(v), kind, seq, found, want.key, len(want.value))
		}
		v, kind, seq, found, err = r.Get(key)
		if err != nil || !found || kind != want.key.Kind || seq != want.key.Seq || !bytes.Equal(v, want.value) {
			t.Fatalf("Reader.Get(%q) = %d bytes, %s, %d, %v, %v; want %s", uk, len(v), kind, seq, found, err, want.key)
		}
	}

	// Absent keys: between, before and after the present ones.
	fp, absent := 0, 0
	for i := range 20000 {
		var key []byte
		switch i % 4 {
		case 0:
			key = fmt.Appendf(nil, "user/%08d/%x", (i/4)*3+1, i) // between two present keys
		case 1:
			key = fmt.Appendf(nil, "absent-%d", i) // before every key
		case 2:
			key = fmt.Appendf(nil, "zzz-%d", i) // after every key
		case 3:
			key = fmt.Appendf(nil, "user/%08d", (i/4)*3) // a present key's strict prefix
		}
		absent++
		if r.MayContain(key) {
			fp++
		}
		if _, _, _, found, err := r.Get(key); err != nil || found {
			t.Fatalf("Get(%q) of an absent key: found=%v err=%v", key, found, err)
		}
		if h, ok := r.BlockFor(key); ok {
			buf := make([]byte, h.Len)
			if _, err := f.ReadAt(buf, int64(h.Offset)); err != nil {
				t.Fatal(err)
			}
			b, err := r.DecodeBlock(h, buf)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, _, found := b.Get(key); found {
				t.Fatalf("Block.Get(%q) found an absent key", key)
			}
		}
	}
	rate := float64(fp) / float64(absent)
	t.Logf("bloom: %d bits/key, %d false positives of %d absent keys (%.2f%%), %d data blocks, %d bytes",
		max(opts.BloomBitsPerKey, DefaultBloomBitsPerKey), fp, absent, 100*rate, r.NumBlocks(), m.Size)
	if limit := 0.03; opts.BloomBitsPerKey >= DefaultBloomBitsPerKey || opts.BloomBitsPerKey == 0 {
		if rate > limit {
			t.Fatalf("bloom false-positive rate %.2f%% over %.0f%%", 100*rate, 100*limit)
		}
	}

	// The iterator yields every entry, in order.
	it := r.NewIterator()
	i := 0
	for it.Next() {
		if i >= len(es) {
			t.Fatalf("iterator yields more than %d entries", len(es))
		}
		if Compare(it.Key(), es[i].key) != 0 || !bytes.Equal(it.Value(), es[i].value) {
			t.Fatalf("iterator entry %d is %s (%d bytes), want %s (%d bytes)", i, it.Key(), len(it.Value()), es[i].key, len(es[i].value))
		}
		i++
	}
	if it.Err() != nil || i != len(es) {
		t.Fatalf("iterator stopped after %d of %d entries: %v", i, len(es), it.Err())
	}
}

func TestAddOutOfOrder(t *testing.T) {
	k := func(u string, seq uint64, kind Kind) InternalKey {
		return InternalKey{UserKey: []byte(u), Seq: seq, Kind: kind}
	}
	cases := []struct{ first, second InternalKey }{
		{k("b", 5, KindSet), k("a", 9, KindSet)},    // smaller user key
		{k("b", 5, KindSet), k("b", 5, KindSet)},    // equal key
		{k("b", 5, KindSet), k("b", 6, KindSet)},    // newer version after older
		{k("b", 5, KindDelete), k("b", 5, KindSet)}, // same seq: set sorts first
	}
	for _, c := range cases {
		w, err := NewWriter(&bytes.Buffer{}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Add(c.first, nil); err != nil {
			t.Fatal(err)
		}
		err = w.Add(c.second, nil)
		if !errors.Is(err, ErrOutOfOrder) || !strings.Contains(err.Error(), c.first.String()) || !strings.Contains(err.Error(), c.second.String()) {
			t.Errorf("Add(%s) after %s: %v; want ErrOutOfOrder naming both", c.second, c.first, err)
		}
		// The rejected key changed nothing: a good key still goes in.
		if err := w.Add(k("c", 1, KindSet), []byte("v")); err != nil {
			t.Errorf("Add after a rejected key: %v", err)
		}
	}
}

func TestAddRejects(t *testing.T) {
	w, err := NewWriter(&bytes.Buffer{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		key   InternalKey
		value []byte
		want  error
	}{
		{InternalKey{UserKey: []byte("a"), Seq: 1, Kind: 7}, nil, nil},
		{InternalKey{UserKey: []byte("a"), Seq: MaxSeq + 1, Kind: KindSet}, nil, nil},
		{InternalKey{UserKey: []byte("a"), Seq: 1, Kind: KindDelete}, []byte("x"), nil},
		{InternalKey{UserKey: make([]byte, MaxKeyLen+1), Seq: 1, Kind: KindSet}, nil, ErrTooLarge},
	}
	for _, c := range bad {
		err := w.Add(c.key, c.value)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) || !strings.HasPrefix(err.Error(), "sstable: ") {
			t.Errorf("Add(%.40s, %d bytes) = %v", c.key, len(c.value), err)
		}
	}
	for _, o := range []Options{{BlockSize: -1}, {BlockSize: MaxBlockSize + 1}, {BloomBitsPerKey: -3}, {BloomBitsPerKey: MaxBloomBitsPerKey + 1}} {
		if _, err := NewWriter(&bytes.Buffer{}, o); !errors.Is(err, ErrBadOptions) {
			t.Errorf("NewWriter(%s) = %v; want ErrBadOptions", o, err)
		}
	}
	if _, err := w.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := w.Add(InternalKey{UserKey: []byte("z"), Seq: 1, Kind: KindSet}, nil); !errors.Is(err, ErrFinished) {
		t.Errorf("Add after Finish = %v; want ErrFinished", err)
	}
	if _, err := w.Finish(); !errors.Is(err, ErrFinished) {
		t.Errorf("Finish twice = %v; want ErrFinished", err)
	}
}

type failWriter struct{ left int }

func (f *failWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n := f.left
		f.left = 0
		return n, errors.New("disk full")
	}
	f.left -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	w, err := NewWriter(&failWriter{left: 3 * Alignment}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var werr error
	for i := 0; werr == nil && i < 10000; i++ {
		werr = w.Add(InternalKey{UserKey: fmt.Appendf(nil, "k%06d", i), Seq: 1, Kind: KindSet}, make([]byte, 100))
	}
	if werr == nil || !strings.Contains(werr.Error(), "disk full") {
		t.Fatalf("Add on a failing writer: %v", werr)
	}
	if _, err := w.Finish(); err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Finish after a failed write: %v", err)
	}
}

func TestEmptyFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.sst")
	m := writeFile(t, path, nil, Options{})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if m.Entries != 0 || r.NumBlocks() != 0 || r.Properties().Entries != 0 {
		t.Fatalf("empty file: meta %+v, %d blocks", m, r.NumBlocks())
	}
	if _, ok := r.BlockFor([]byte("a")); ok {
		t.Fatal("BlockFor found a block in an empty file")
	}
	if _, _, _, found, err := r.Get([]byte("a")); found || err != nil {
		t.Fatalf("Get in an empty file: %v %v", found, err)
	}
	if it := r.NewIterator(); it.Next() || it.Err() != nil {
		t.Fatalf("iterator over an empty file: %v", it.Err())
	}
}

func TestDecodeBlockBadHandle(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	path := filepath.Join(t.TempDir(), "h.sst")
	writeFile(t, path, genEntries(rng, 200), Options{})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h := r.Block(1)
	for _, c := range []struct {
		h   BlockHandle
		buf int
	}{
		{BlockHandle{Offset: h.Offset + Alignment, Len: h.Len}, int(h.Len)}, // not a block start (or wrong length)
		{BlockHandle{Offset: h.Offset, Len: h.Len + Alignment}, int(h.Len + Alignment)},
		{h, int(h.Len) - 1},
		{BlockHandle{Offset: 1 << 40, Len: Alignment}, Alignment},
	} {
		if _, err := r.DecodeBlock(c.h, make([]byte, c.buf)); !errors.Is(err, ErrBadHandle) {
			t.Errorf("DecodeBlock(%+v, %d bytes) = %v; want ErrBadHandle", c.h, c.buf, err)
		}
	}
	// A well-formed block decoded under another block's handle is caught
	// by the index cross-check.
	a, b := r.Block(0), r.Block(2)
	if a.Len == b.Len {
		buf := make([]byte, a.Len)
		f, _ := os.Open(path)
		defer f.Close()
		if _, err := f.ReadAt(buf, int64(a.Offset)); err != nil {
			t.Fatal(err)
		}
		var ce *CorruptError
		if _, err := r.DecodeBlock(b, buf); !errors.As(err, &ce) || ce.Offset < int64(b.Offset) || ce.Offset >= int64(b.Offset+b.Len) {
			t.Errorf("block 0 decoded as block 2: %v", err)
		}
	}
}

func TestNotAnSST(t *testing.T) {
	path := filepath.Join(t.TempDir(), "random")
	data := make([]byte, 100000)
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range data {
		data[i] = byte(rng.Uint32())
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path)
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Path != path || ce.Offset != int64(len(data)-8) || !strings.Contains(ce.What, "magic") {
		t.Fatalf("Open of random bytes: %v; want a magic mismatch at offset %d", err, len(data)-8)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open of a missing file: %v", err)
	}
	if _, err := NewReader(bytes.NewReader(nil), -1, "neg"); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("NewReader with size -1: %v", err)
	}
}

func TestZeroValues(t *testing.T) {
	var b Block
	if _, _, _, found := b.Get([]byte("a")); found || b.Iter().Next() || b.Len() != 0 {
		t.Fatal("the zero Block is not empty")
	}
	var it Iterator
	if it.Key().UserKey != nil || it.Value() != nil {
		t.Fatal("the zero Iterator has a key")
	}
}

// TestConcurrentReads shares one Reader among goroutines doing Get,
// BlockFor+DecodeBlock and full iterations (run with -race).
func TestConcurrentReads(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	es := genEntries(rng, 500)
	path := filepath.Join(t.TempDir(), "c.sst")
	writeFile(t, path, es, Options{})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	want := newest(es)
	errc := make(chan error, 4)
	for g := range 4 {
		go func() {
			errc <- func() error {
				if g == 0 {
					it := r.NewIterator()
					n := 0
					for it.Next() {
						n++
					}
					if it.Err() != nil || n != len(es) {
						return fmt.Errorf("iterator: %d of %d entries, %v", n, len(es), it.Err())
					}
					return nil
				}
				for i := g; i < len(es); i += 3 {
					k := es[i].key.UserKey
					v, kind, seq, found, err := r.Get(k)
					w := want[string(k)]
					if err != nil || !found || kind != w.key.Kind || seq != w.key.Seq || !bytes.Equal(v, w.value) {
						return fmt.Errorf("Get(%q) = %v %s %d %v", k, found, kind, seq, err)
					}
				}
				return nil
			}()
		}()
	}
	for range 4 {
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}
}

// TestMetaBytesPerBlock checks that the decoded index costs its blocks' last
// user keys and at most 32 bytes per block besides (about 22 for the
// arrays of entries, 8 for the search words), and that MetaBytes
// counts it: a cache that budgets Readers by MetaBytes holds all of a
// store's metadata only if it is this small.
func TestMetaBytesPerBlock(t *testing.T) {
	var es []kv
	for i := range 20000 {
		k := InternalKey{UserKey: fmt.Appendf(nil, "t\x00\x05topic\x00\x00\x00\x03\x01b%06d/a%03d", i/1000, i%1000), Seq: uint64(100000 - i), Kind: KindSet}
		es = append(es, kv{k, bytes.Repeat([]byte{byte(i)}, 56)})
	}
	path := filepath.Join(t.TempDir(), "meta.sst")
	writeFile(t, path, es, Options{})
	r, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	n := r.NumBlocks()
	if n < 100 {
		t.Fatalf("%d blocks; the test wants many", n)
	}
	keyBytes := int64(len(r.index.keys))
	perBlock := float64(r.index.bytes()-keyBytes) / float64(n)
	if perBlock > 32 {
		t.Errorf("index takes %.1f bytes per block besides its keys, want at most 32", perBlock)
	}
	if keyBytes > int64(n)*int64(len(es[0].key.UserKey)) {
		t.Errorf("index keeps %d key bytes for %d blocks of %d-byte keys", keyBytes, n, len(es[0].key.UserKey))
	}
	filter := 8 * int64(len(r.filter.bits))
	if got, want := r.MetaBytes(), r.index.bytes()+filter; got < want || got > want+1024 {
		t.Errorf("MetaBytes = %d, want the index's %d and the filter's %d bytes and little else", got, r.index.bytes(), filter)
	}
}
