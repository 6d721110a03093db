package state

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

func openTest(t *testing.T, dir string, mode ioengine.IOMode, clock func() time.Time) *Backend {
	t.Helper()
	b, err := Open(dir, Options{KV: kv.Options{IOMode: mode, MemtableSize: 256 << 10, CacheSize: 256 << 10, Logf: t.Logf}, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestKeyGroupIsStable: key groups place state on disk; they must not change
// between versions. The values are FNV-1a (32 bits) mod the group count,
// computed apart from this package.
func TestKeyGroupIsStable(t *testing.T) {
	for _, c := range []struct {
		key  string
		max  int
		want int
	}{{"", 128, 69}, {"auction-1000", 128, 28}, {"person-7", 128, 32}, {"auction-1000", 7, 5}} {
		if got := KeyGroup([]byte(c.key), c.max); got != c.want {
			t.Errorf("KeyGroup(%q, %d) = %d, want %d", c.key, c.max, got, c.want)
		}
	}
}

func TestKeyLayoutRoundTrip(t *testing.T) {
	k := appendPrefix(nil, 7, 99, []byte("auction-1"), []byte("window-3"))
	k = append(k, "user"...)
	d, err := DecodeKey(k)
	if err != nil || d.ID != 7 || d.Group != 99 || string(d.Key) != "auction-1" || string(d.NS) != "window-3" || string(d.UserKey) != "user" {
		t.Fatalf("%+v, %v", d, err)
	}
	// A key that is a prefix of another key cannot be confused with it.
	a, b := appendPrefix(nil, 1, 0, []byte("ab"), nil), appendPrefix(nil, 1, 0, []byte("a"), []byte("b"))
	if bytes.HasPrefix(a, b) || bytes.HasPrefix(b, a) {
		t.Fatalf("%x and %x are prefixes of each other", a, b)
	}
	// prefixLen sizes the key exactly, across the varint lengths' steps.
	for _, n := range []int{0, 1, 127, 128, 16383, 16384, 1 << 21} {
		key, ns := make([]byte, n), make([]byte, n/2)
		if got, want := prefixLen(key, ns), len(appendPrefix(nil, 1, 2, key, ns)); got != want {
			t.Errorf("prefixLen of a %d-byte key and %d-byte namespace: %d, want %d", n, n/2, got, want)
		}
	}
}

func FuzzDecodeKey(f *testing.F) {
	f.Add(appendPrefix(nil, 1, 2, []byte("k"), []byte("ns")))
	f.Add([]byte{0, 1, 0, 2, 0xff, 0xff, 0xff})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		k, err := DecodeKey(b)
		if err != nil {
			return
		}
		again := append(appendPrefix(nil, k.ID, k.Group, k.Key, k.NS), k.UserKey...)
		if !bytes.Equal(again, b) && len(b) > 0 {
			// A non-canonical uvarint decodes but encodes shorter: the
			// decoded fields must still describe a key with the same parts.
			k2, err := DecodeKey(again)
			if err != nil || k2.ID != k.ID || k2.Group != k.Group || !bytes.Equal(k2.Key, k.Key) || !bytes.Equal(k2.NS, k.NS) || !bytes.Equal(k2.UserKey, k.UserKey) {
				t.Fatalf("%x decodes to %+v, which encodes to %x", b, k, again)
			}
		}
	})
}

// FuzzDecodeValue: any stored value either is refused (shorter than its
// header) or splits into an expiry and payload that encode back to it.
func FuzzDecodeValue(f *testing.F) {
	f.Add(encodeValue(0, []byte("v")))
	f.Add(encodeValue(-1, nil))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		expires, payload, err := decodeValue(b)
		if err != nil {
			if len(b) >= valueHeader {
				t.Fatalf("%x of %d bytes refused: %v", b, len(b), err)
			}
			return
		}
		if again := encodeValue(expires, payload); !bytes.Equal(again, b) {
			t.Fatalf("%x decodes to (%d, %x), which encodes to %x", b, expires, payload, again)
		}
	})
}

// FuzzDecodeList: any list payload is refused with an error or gives items
// that encode back to a payload decoding to the same items; no input
// panics or reads past its end.
func FuzzDecodeList(f *testing.F) {
	f.Add(appendListItem(appendListItem(nil, []byte("a")), nil))
	f.Add([]byte{0x80})
	f.Add([]byte{0x05, 'a'})
	f.Fuzz(func(t *testing.T, b []byte) {
		items, err := decodeList(b)
		if err != nil {
			return
		}
		var again []byte
		for _, it := range items {
			again = appendListItem(again, it)
		}
		items2, err := decodeList(again)
		if err != nil || len(items2) != len(items) {
			t.Fatalf("%x: %d items re-encode to %x: %d items, %v", b, len(items), again, len(items2), err)
		}
		for i := range items {
			if !bytes.Equal(items[i], items2[i]) {
				t.Fatalf("%x: item %d is %x, re-encoded %x", b, i, items[i], items2[i])
			}
		}
		// A canonical payload encodes back to itself.
		if len(again) == len(b) && !bytes.Equal(again, b) {
			t.Fatalf("%x re-encodes to %x", b, again)
		}
	})
}

// TestMiniBatch: the reads of a batch go to kv in one MultiGet, each
// distinct key once; reads see the batch's own writes; Commit writes once.
func TestMiniBatch(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(mode.String(), func(t *testing.T) {
			b := openTest(t, testdir.Direct(t), mode, nil)
			defer b.Close()
			counts, err := b.Value("counts", 0)
			if err != nil {
				t.Fatal(err)
			}
			// 3 batches of 1000 events over 50 keys (hot keys).
			want := map[string]int{}
			for round := range 3 {
				mb := b.NewMiniBatch()
				before := b.Stats()
				var events []string
				for i := range 1000 {
					events = append(events, fmt.Sprintf("key-%d", (i*7+round)%50))
				}
				for _, e := range events {
					counts.Want(mb, []byte(e), nil)
				}
				if err := mb.Load(); err != nil {
					t.Fatal(err)
				}
				for _, e := range events {
					v, ok, err := counts.Get(mb, []byte(e), nil)
					if err != nil {
						t.Fatal(err)
					}
					n := 0
					if ok {
						n = int(binary.BigEndian.Uint64(v))
					}
					counts.Put(mb, []byte(e), nil, binary.BigEndian.AppendUint64(nil, uint64(n+1)))
					want[e]++
				}
				if err := mb.Commit(); err != nil {
					t.Fatal(err)
				}
				st := b.Stats()
				if st.MultiGets-before.MultiGets != 1 || st.KeysRead-before.KeysRead != 50 || st.Deduped-before.Deduped != 950 ||
					st.Unplanned != 0 || st.Commits-before.Commits != 1 || st.KV.MultiGets-before.KV.MultiGets != 1 {
					t.Fatalf("round %d: %+v (before %+v): want one MultiGet of 50 keys, 950 deduplicated, one commit", round, st, before)
				}
			}
			mb := b.NewMiniBatch()
			for k, n := range want {
				v, ok, err := counts.Get(mb, []byte(k), nil)
				if err != nil || !ok || binary.BigEndian.Uint64(v) != uint64(n) {
					t.Fatalf("%s: %x %v %v, want %d", k, v, ok, err, n)
				}
			}
			if b.Stats().Unplanned != uint64(len(want)) {
				t.Errorf("unwanted Gets not counted as unplanned: %+v", b.Stats())
			}
		})
	}
}

// TestStateKinds: namespaces are apart; Map iteration merges the batch's
// writes and never sees a neighbouring key's entries; List and Reducing
// accumulate; Clear removes.
func TestStateKinds(t *testing.T) {
	b := openTest(t, testdir.Direct(t), ioengine.URing, nil)
	defer b.Close()
	v, _ := b.Value("v", 0)
	m, _ := b.Map("m", 0)
	l, _ := b.List("l", 0)
	r, _ := b.Reducing("r", 0, func(acc, x []byte) []byte { return append(acc, x...) })
	mb := b.NewMiniBatch()
	v.Put(mb, []byte("k"), []byte("w1"), []byte("a"))
	v.Put(mb, []byte("k"), []byte("w2"), []byte("b"))
	for _, uk := range []string{"c", "a", "b"} {
		m.Put(mb, []byte("k"), nil, []byte(uk), []byte("v"+uk))
	}
	m.Put(mb, []byte("k2"), nil, []byte("x"), []byte("neighbour"))
	m.Put(mb, []byte("kk"), nil, []byte("y"), []byte("neighbour"))
	for _, it := range []string{"1", "2", "3"} {
		if err := l.Add(mb, []byte("k"), nil, []byte(it)); err != nil {
			t.Fatal(err)
		}
		if err := r.Add(mb, []byte("k"), nil, []byte(it)); err != nil {
			t.Fatal(err)
		}
	}
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	mb = b.NewMiniBatch()
	m.Delete(mb, []byte("k"), nil, []byte("b"))
	m.Put(mb, []byte("k"), nil, []byte("d"), []byte("vd"))
	var seen []string
	if err := m.Iterate(mb, []byte("k"), nil, func(uk, val []byte) bool {
		seen = append(seen, string(uk)+"="+string(val))
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "a=va,c=vc,d=vd" {
		t.Errorf("map iteration: %v", seen)
	}
	for ns, want := range map[string]string{"w1": "a", "w2": "b"} {
		if got, ok, _ := v.Get(mb, []byte("k"), []byte(ns)); !ok || string(got) != want {
			t.Errorf("value in %s: %q", ns, got)
		}
	}
	items, err := l.Get(mb, []byte("k"), nil)
	if err != nil || len(items) != 3 || string(items[0]) != "1" || string(items[2]) != "3" {
		t.Errorf("list: %q, %v", items, err)
	}
	if got, ok, _ := r.Get(mb, []byte("k"), nil); !ok || string(got) != "123" {
		t.Errorf("reducing: %q", got)
	}
	if err := m.Clear(mb, []byte("k"), nil); err != nil {
		t.Fatal(err)
	}
	l.Clear(mb, []byte("k"), nil)
	v.Clear(mb, []byte("k"), []byte("w1"))
	if err := mb.Commit(); err != nil {
		t.Fatal(err)
	}
	mb = b.NewMiniBatch()
	n := 0
	m.Iterate(mb, []byte("k"), nil, func(uk, val []byte) bool { n++; return true })
	if items, _ := l.Get(mb, []byte("k"), nil); n != 0 || items != nil {
		t.Errorf("after Clear: %d map entries, list %q", n, items)
	}
	if _, ok, _ := v.Get(mb, []byte("k"), []byte("w1")); ok {
		t.Error("cleared value still there")
	}
	if got, ok, _ := v.Get(mb, []byte("k"), []byte("w2")); !ok || string(got) != "b" {
		t.Error("clearing one namespace removed another")
	}
	if got, _, _ := m.Get(mb, []byte("k2"), nil, []byte("x")); string(got) != "neighbour" {
		t.Error("clearing a map removed a neighbouring key's entry")
	}
}

// TestTTL: an entry expires TTL after its last write: reads find nothing,
// and the batch deletes it from the store.
func TestTTL(t *testing.T) {
	now := time.Unix(1000, 0)
	clock := func() time.Time { return now }
	b := openTest(t, testdir.Direct(t), ioengine.Syscall, clock)
	defer b.Close()
	v, _ := b.Value("windows", 10*time.Second)
	mb := b.NewMiniBatch()
	v.Put(mb, []byte("k"), nil, []byte("open"))
	mb.Commit()
	now = now.Add(9 * time.Second)
	mb = b.NewMiniBatch()
	if _, ok, _ := v.Get(mb, []byte("k"), nil); !ok {
		t.Fatal("expired early")
	}
	now = now.Add(2 * time.Second)
	mb = b.NewMiniBatch()
	if _, ok, _ := v.Get(mb, []byte("k"), nil); ok {
		t.Fatal("not expired after its TTL")
	}
	mb.Commit()
	if _, err := b.DB().Get(v.key([]byte("k"), nil)); err != kv.ErrNotFound {
		t.Errorf("the expired entry is still stored: %v", err)
	}
	if b.Stats().Expired != 1 {
		t.Errorf("stats %+v", b.Stats())
	}
}

// TestCheckpointRestore: a restored checkpoint holds the state committed
// before it and the meta given; state written after is not in it; the
// second checkpoint shares the unchanged tables of the first (hard links);
// names map to the same states.
func TestCheckpointRestore(t *testing.T) {
	root := testdir.Direct(t)
	b := openTest(t, filepath.Join(root, "live"), ioengine.URing, nil)
	defer b.Close()
	v, _ := b.Value("v", 0)
	put := func(from, to int, val string) {
		mb := b.NewMiniBatch()
		for i := from; i < to; i++ {
			v.Put(mb, []byte(fmt.Sprintf("k%05d", i)), nil, []byte(val))
		}
		if err := mb.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	put(0, 5000, "one")
	if err := b.Checkpoint(context.Background(), filepath.Join(root, "ck1"), []byte("offset=5000")); err != nil {
		t.Fatal(err)
	}
	put(5000, 6000, "two")
	if err := b.Checkpoint(context.Background(), filepath.Join(root, "ck2"), []byte("offset=6000")); err != nil {
		t.Fatal(err)
	}
	put(0, 10, "after")
	shared := 0
	ents, _ := os.ReadDir(filepath.Join(root, "ck1"))
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".sst") {
			continue
		}
		a, _ := os.Stat(filepath.Join(root, "ck1", e.Name()))
		c, err := os.Stat(filepath.Join(root, "ck2", e.Name()))
		if err == nil && os.SameFile(a, c) {
			shared++
			if a.Sys().(*syscall.Stat_t).Nlink < 2 {
				t.Errorf("%s: not a hard link", e.Name())
			}
		}
	}
	if shared == 0 {
		t.Error("the second checkpoint shares no table with the first: not incremental")
	}
	r, meta, err := Restore(filepath.Join(root, "ck2"), filepath.Join(root, "restored"), Options{KV: kv.Options{Logf: t.Logf}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if string(meta) != "offset=6000" {
		t.Errorf("meta %q", meta)
	}
	rv, _ := r.Value("v", 0)
	if rv.id != v.id {
		t.Errorf("the name maps to id %d after the restore, %d before", rv.id, v.id)
	}
	mb := r.NewMiniBatch()
	for _, c := range []struct {
		i    int
		want string
	}{{0, "one"}, {4999, "one"}, {5000, "two"}, {5999, "two"}} {
		if got, ok, _ := rv.Get(mb, []byte(fmt.Sprintf("k%05d", c.i)), nil); !ok || string(got) != c.want {
			t.Errorf("k%05d: %q, want %q", c.i, got, c.want)
		}
	}
}

// TestModel: random batches of puts, deletes and list appends over a few
// states and keys, checked against a map after every batch, with a
// checkpoint, a restore from it and a close and reopen on the way.
func TestModel(t *testing.T) {
	for _, mode := range []ioengine.IOMode{ioengine.URing, ioengine.Syscall} {
		t.Run(mode.String(), func(t *testing.T) {
			root := testdir.Direct(t)
			rng := rand.New(rand.NewPCG(7, 8))
			b := openTest(t, filepath.Join(root, "s"), mode, nil)
			model := map[string]string{}
			var ckModel map[string]string
			check := func(b *Backend, model map[string]string) {
				t.Helper()
				v, _ := b.Value("v", 0)
				mb := b.NewMiniBatch()
				for i := range 200 {
					k := fmt.Sprintf("key%03d", i)
					v.Want(mb, []byte(k), []byte("ns"))
				}
				if err := mb.Load(); err != nil {
					t.Fatal(err)
				}
				for i := range 200 {
					k := fmt.Sprintf("key%03d", i)
					got, ok, err := v.Get(mb, []byte(k), []byte("ns"))
					want, wok := model[k]
					if err != nil || ok != wok || string(got) != want {
						t.Fatalf("%s: %q %v %v, want %q %v", k, got, ok, err, want, wok)
					}
				}
			}
			for round := range 60 {
				v, _ := b.Value("v", 0)
				mb := b.NewMiniBatch()
				keys := make([]string, 50)
				for i := range keys {
					keys[i] = fmt.Sprintf("key%03d", rng.IntN(200))
					v.Want(mb, []byte(keys[i]), []byte("ns"))
				}
				if err := mb.Load(); err != nil {
					t.Fatal(err)
				}
				for _, k := range keys {
					if rng.IntN(4) == 0 {
						v.Clear(mb, []byte(k), []byte("ns"))
						delete(model, k)
					} else {
						val := fmt.Sprintf("%s@%d", k, round)
						v.Put(mb, []byte(k), []byte("ns"), []byte(val))
						model[k] = val
					}
				}
				if err := mb.Commit(); err != nil {
					t.Fatal(err)
				}
				check(b, model)
				switch round {
				case 20:
					if err := b.Checkpoint(context.Background(), filepath.Join(root, "ck"), []byte("20")); err != nil {
						t.Fatal(err)
					}
					ckModel = maps(model)
				case 40:
					if err := b.Close(); err != nil {
						t.Fatal(err)
					}
					b = openTest(t, filepath.Join(root, "s"), mode, nil)
					check(b, model)
				}
			}
			b.Close()
			r, meta, err := Restore(filepath.Join(root, "ck"), filepath.Join(root, "r"), Options{KV: kv.Options{IOMode: mode, Logf: t.Logf}})
			if err != nil || string(meta) != "20" {
				t.Fatalf("restore: %q, %v", meta, err)
			}
			defer r.Close()
			check(r, ckModel)
		})
	}
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}
