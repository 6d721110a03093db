package memtable

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/ringstore/ringstore/kv/internal/base"
)

// fill adds n entries to m, keys key%06d at seqs from seq, values of
// vlen bytes of fill, and returns their model.
func fill(m *Memtable, seq uint64, n, vlen int, fill byte) model {
	var mod model
	for i := range n {
		k := fmt.Appendf(nil, "key%06d", i)
		v := bytes.Repeat([]byte{fill}, vlen)
		m.Add(seq+uint64(i), base.KindSet, k, v)
		mod.add(seq+uint64(i), base.KindSet, k, v)
	}
	return mod
}

// chunkStarts returns the first byte's address of each of m's mapped
// chunks.
func chunkStarts(m *Memtable) []uintptr {
	var s []uintptr
	for _, c := range m.arena.chunks {
		s = append(s, uintptr(unsafe.Pointer(unsafe.SliceData(c))))
	}
	return s
}

// TestReleaseReusesChunks: a released memtable's chunks go to the free
// list, the next memtable takes them (the last released first), and what
// the previous memtable left in them shows nowhere in the new one.
func TestReleaseReusesChunks(t *testing.T) {
	if !offHeap {
		t.Skip("memtables take Go memory here")
	}
	unmapping.Wait()
	before := ReadMemoryStats()
	if before.Free+3*chunkSize > maxFreeChunks*chunkSize {
		t.Skipf("the free list holds %d bytes already", before.Free)
	}
	m := New()
	fill(m, 1, 3*chunkSize/300, 200, 'a') // about three chunks
	old := chunkStarts(m)
	if len(old) < 2 {
		t.Fatalf("%d chunks", len(old))
	}
	if got := ReadMemoryStats().InUse - before.InUse; got != int64(len(old))*chunkSize {
		t.Fatalf("InUse grew by %d with %d chunks", got, len(old))
	}
	m.Release()
	if m.Len() != 3*chunkSize/300 || m.ApproximateBytes() == 0 {
		t.Fatalf("after Release: Len %d ApproximateBytes %d", m.Len(), m.ApproximateBytes())
	}
	after := ReadMemoryStats()
	if after.InUse != before.InUse || after.Free != before.Free+int64(len(old))*chunkSize {
		t.Fatalf("after Release: %+v, before %+v, %d chunks", after, before, len(old))
	}

	m2 := New()
	defer m2.Release()
	mod := fill(m2, 1000, 50, 30, 'b')
	mod = append(mod, fill(m2, 2000, 2, 100, 'c')...)
	slices.SortFunc(mod, func(a, b entry) int { return base.Compare(a.key, b.key) })
	if got := chunkStarts(m2); len(got) != 1 || got[0] != old[len(old)-1] {
		t.Fatalf("new memtable's chunks %x; want the last released, %x", got, old[len(old)-1])
	}
	it := m2.NewIterator()
	checkFrom(t, it, it.First(), mod)
	if v, _, ok := m2.Get([]byte("key000049"), base.MaxSeq); !ok || !bytes.Equal(v, bytes.Repeat([]byte{'b'}, 30)) {
		t.Fatalf("Get in a reused chunk = %q, %v", v, ok)
	}
}

// TestReleaseClearsPointers: a released Memtable keeps no pointer into its
// arena where the collector would scan it, and an empty one takes no chunk.
func TestReleaseClearsPointers(t *testing.T) {
	arenas(t, func(t *testing.T, newMemtable func() *Memtable) {
		m := newMemtable()
		if len(m.arena.chunks)+len(m.arena.heap) != 0 {
			t.Fatal("an empty memtable took a chunk")
		}
		fill(m, 1, 1000, 10, 'z')
		m.Release()
		for i := range m.head.next {
			if m.head.next[i].Load() != nil {
				t.Fatalf("head level %d still points into the arena", i)
			}
		}
		for _, p := range m.prev {
			if p != nil {
				t.Fatal("splice scratch still points into the arena")
			}
		}
		if m.arena.cur != nil || m.arena.chunks != nil || m.arena.bigs != nil || m.arena.heap != nil {
			t.Fatal("arena not emptied")
		}
		m.Release() // a second does nothing
	})
}

// TestNodeLayout: entries are carved 8-byte aligned, each node's tower as
// tall as the node, its key and value right after it, and
// ApproximateBytes counts what the arena gave.
func TestNodeLayout(t *testing.T) {
	arenas(t, func(t *testing.T, newMemtable func() *Memtable) {
		m := newMemtable()
		defer m.Release()
		r := rand.New(rand.NewPCG(5, 5))
		var want int64
		for i := range 2000 {
			k := fmt.Appendf(nil, "k%d", r.IntN(1e6))
			v := make([]byte, r.IntN(100))
			m.Add(uint64(i+1), base.KindSet, k, v)
		}
		for nd := m.head.next[0].Load(); nd != nil; nd = nd.next[0].Load() {
			if uintptr(unsafe.Pointer(nd))%8 != 0 {
				t.Fatalf("node at %p not aligned", nd)
			}
			n := int(nd.keyLen + nd.valLen)
			if n > 0 {
				// The data follows the tower: its distance from the node is
				// a whole tower.
				off := int(uintptr(unsafe.Pointer(nd.data)) - uintptr(unsafe.Pointer(nd)))
				if off < nodeSize(1) || off > nodeSize(maxHeight) || (off-nodeHeader)%ptrSize != 0 {
					t.Fatalf("data at +%d from its node", off)
				}
				want += int64((off + n + 7) &^ 7)
			} else {
				want += int64(nodeSize(1)) // a lower bound: the tower's height is not recorded
			}
		}
		if got := m.ApproximateBytes(); got < want || got > want+chunkSize {
			t.Fatalf("ApproximateBytes %d, entries took at least %d", got, want)
		}
	})
}

// FuzzMemtable adds the entries data describes and checks Get and an
// iteration against the model, in both kinds of arena, with a released
// memtable's chunks under the mapped one.
func FuzzMemtable(f *testing.F) {
	f.Add([]byte("\x01k\x02v\x00\x03key\x00\x01k\x05value"))
	f.Add(bytes.Repeat([]byte("\x02ab\x40"), 100))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, mapped := range []bool{offHeap, false} {
			junk := newMemtable(mapped, DefaultSize)
			fill(junk, 1, 200, 50, 0xc0)
			junk.Release()
			m := newMemtable(mapped, DefaultSize)
			var mod model
			seq := uint64(1)
			for len(data) >= 2 {
				kl, vl := int(data[0]%16), int(data[1])
				data = data[2:]
				k := data[:min(kl, len(data))]
				data = data[len(k):]
				kind := base.KindSet
				v := bytes.Repeat([]byte{byte(seq)}, vl)
				if vl == 0 {
					kind, v = base.KindDelete, nil
				}
				if vl == 255 {
					v = bytes.Repeat([]byte{byte(seq)}, bigAlloc+1)
				}
				m.Add(seq, kind, k, v)
				mod.add(seq, kind, k, v)
				seq++
			}
			it := m.NewIterator()
			checkFrom(t, it, it.First(), mod)
			for _, e := range mod {
				gv, gk, gok := m.Get(e.key.UserKey, base.MaxSeq)
				wv, wk, wok := mod.get(e.key.UserKey, base.MaxSeq)
				if gok != wok || gk != wk || !bytes.Equal(gv, wv) {
					t.Fatalf("Get(%q) = %q,%v,%v; want %q,%v,%v", e.key.UserKey, gv, gk, gok, wv, wk, wok)
				}
			}
			m.Release()
		}
	})
}
