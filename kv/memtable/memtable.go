// Package memtable is kv's in-memory table: a skiplist of internal keys
// (base.InternalKey, ordered by base.Compare) with their values.
//
//	m := memtable.New()
//	m.Add(7, base.KindSet, k, v)            // one writer at a time
//	v, kind, ok := m.Get(k, 7)                 // any number of readers
//	it := m.NewIterator()
//	for ok := it.SeekGE(k); ok; ok = it.Next() { _ = it.Key(); _ = it.Value() }
//	m.Release()                                // once nothing reads it any more
//
// # Memory
//
// Add copies the key and value into an arena and carves the entry's node
// from it too: one allocation per entry, the node, its tower of next
// pointers (exactly as tall as the node) and the key and value bytes side
// by side.
//
//	Memtable (Go heap)          chunk (256 KiB; off the Go heap on Linux)
//	┌────────────────────┐      ┌──────────────────────────────────────────────────────┐
//	│ head: tower[16] ───┼─────▶│ node │ tower[h] │ key │ value │pad│ node │ tower │ ...  │
//	│ chunks, big ───────┼──┐   └──────────────────────────────────────────────────────┘
//	│ len, bytes, height │  └──▶ an allocation of its own (key and value over 32 KiB):
//	└────────────────────┘       key │ value, its node in a chunk
//
//	node: prefix u64 │ trailer u64 │ data *byte │ keyLen u32 │ valLen u32 │ tower: h × *node
//
// prefix is the key's first 8 bytes, so a search mostly compares nodes
// only; data points at the key, which the value follows. Entries are
// 8-byte aligned; a chunk's tail too short for the next entry is left
// unused (at most an entry, and an entry in a chunk is at most 32 KiB plus
// its node). Nothing is ever removed; ApproximateBytes counts the chunk
// and allocation bytes the entries took.
//
// On Linux the chunks and the allocations of their own are anonymous
// mappings, memory the garbage collector neither manages nor scans: a
// memtable's bytes do not count toward the collector's heap goal, which
// would otherwise let the heap grow to about twice the live memtables
// before a collection. Elsewhere, or when a mapping is refused, they come
// from the Go heap, kept reachable by the Memtable (the collector does not
// look inside them either).
//
// Two rules make memory the collector does not scan safe to hold pointers:
//   - arena memory points only into arena memory (next pointers at nodes,
//     a node's data at its bytes), never at anything the collector
//     manages, whose only reference it would otherwise hide; the head's
//     tower, on the Go heap, points into the arena, which the collector
//     ignores;
//   - a reused chunk holds its previous memtable's bytes, and a pointer
//     store's write barrier reads the slot's old value as a pointer: a
//     node's pointer words are cleared with plain stores before its
//     pointer fields are written.
//
// # Lifetime
//
// Every slice the package returns (Get's value, an Iterator's key and
// value) and every Iterator is valid until Release, and not after: Release
// gives the memory back at once, and from then on the bytes may belong to
// another memtable or to nobody (a read faults). Release must be called
// once nothing can read the Memtable any more — its owner counts its
// readers (kv counts the read sets that hold a memtable and the store's
// own lists). A Memtable that is never released keeps its chunks mapped
// for the life of the process: the collector does not free them.
//
// The release is explicit, not a cleanup run when the Memtable becomes
// unreachable (runtime.AddCleanup): a slice Get returned points into the
// arena without keeping the Memtable reachable, so a cleanup could give
// back bytes a caller still reads; a count of the readers is exact, and
// gives the memory back as soon as the last reader is done, for the next
// memtable to reuse, instead of when the collector next runs.
//
// Release gives the chunks to a process-wide free list that New's
// memtables take their chunks from first; the list keeps at most 8 MiB
// (32 chunks) plus what Reserve added, and the rest, with the allocations
// of their own, is unmapped (on a goroutine of its own, so that a release
// never waits for the kernel). ReadMemoryStats reports what is in use and
// what is free.
//
// # Key filter
//
// A memtable keeps a Bloom filter of its user keys, one 64-bit word a key
// with three bits set in it, sized when it is made (SizedNew: a bit per 2
// bytes of the size it is made for, 512 bytes to 4 MiB, on the Go heap). A
// Get whose key's bits are not all set returns "not found" without
// searching the skiplist: one hash and one load instead of a search of
// O(log n) nodes, most of them cache misses. Iterators do not use it.
//
// # Concurrency
//
// Adds must be serialized by the caller (kv holds its write lock). Get,
// ApproximateBytes, Len and iterators may run concurrently with an Add
// and with one another, without locks: a node is fully initialized before
// it is published by atomic stores of the next pointers that reach it,
// level 0 first, so a reader either sees a node whole or not at all; the
// key's filter bits are set (atomically) before those stores, so a reader
// that could reach the node is not turned away by the filter. An
// iterator is owned by one goroutine; it may or may not see entries added
// after it was created or positioned. Release must not run concurrently
// with anything but Len and ApproximateBytes. (The race detector does not
// see accesses to mapped memory: the package's tests run their concurrency
// checks on Go-heap arenas too.)
//
// # Duplicates
//
// Sequence numbers are unique in kv, so one internal key (user key, seq,
// kind) is never added twice. If it is, both entries are kept: the later
// Add sorts first, so Get returns its value and an iterator yields it
// before the earlier one.
package memtable

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync/atomic"
	"unsafe"

	"github.com/ringstore/ringstore/kv/internal/base"
)

const (
	maxHeight = 16 // enough for 4^16 entries at p = 1/4
	// chunkSize is the size of an arena chunk; an entry whose key and
	// value take over bigAlloc bytes has them in an allocation of its own,
	// so a chunk's unused tail is at most an eighth of it.
	chunkSize = 256 << 10
	bigAlloc  = chunkSize / 8
)

// node is one entry, carved from the arena with a tower of its own height:
// only next[:height] exist (the arena leaves room for the whole type after
// every node, so the conversion to *node never reaches past a chunk). All
// fields but next are immutable once the node is published; next[i] is
// written with atomic stores by the writer only.
type node struct {
	prefix  uint64 // the key's first 8 bytes, big-endian, zero-padded
	trailer uint64 // seq<<8 | kind
	data    *byte  // keyLen bytes of key, then valLen of value (arena)
	keyLen  uint32
	valLen  uint32
	next    [maxHeight]atomic.Pointer[node]
}

const (
	nodeHeader = int(unsafe.Offsetof(node{}.next))
	ptrSize    = int(unsafe.Sizeof(uintptr(0)))
)

// nodeSize is the bytes a node of height h takes.
func nodeSize(h int) int { return nodeHeader + h*ptrSize }

// keyPrefix returns the first 8 bytes of key as a big-endian number,
// zero-padded: prefixes order as the keys do, except that equal prefixes
// say nothing (a short key and its zero-padded extension share one).
func keyPrefix(key []byte) uint64 {
	if len(key) >= 8 {
		return binary.BigEndian.Uint64(key)
	}
	var b [8]byte
	copy(b[:], key)
	return binary.BigEndian.Uint64(b[:])
}

// empty is every empty key and value: a node's data may point at the end
// of its chunk, which no slice should hold.
var empty = []byte{}

// key returns the node's key (arena; cap == len).
func (n *node) key() []byte {
	if n.keyLen == 0 {
		return empty
	}
	return unsafe.Slice(n.data, n.keyLen)
}

// value returns the node's value (arena; cap == len).
func (n *node) value() []byte {
	if n.valLen == 0 {
		return empty
	}
	return unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(n.data), n.keyLen)), n.valLen)
}

func (n *node) internalKey() base.InternalKey {
	return base.InternalKey{UserKey: n.key(), Seq: n.trailer >> 8, Kind: base.Kind(n.trailer & 0xff)}
}

// compare orders n's key against (key, trailer) as base.Compare does;
// prefix is keyPrefix(key).
func (n *node) compare(key []byte, prefix, trailer uint64) int {
	if n.prefix != prefix {
		if n.prefix < prefix {
			return -1
		}
		return +1
	}
	if c := bytes.Compare(n.key(), key); c != 0 {
		return c
	}
	switch {
	case n.trailer > trailer:
		return -1
	case n.trailer < trailer:
		return +1
	}
	return 0
}

// Memtable is a skiplist of internal keys and values. See the package
// documentation for what may run concurrently and for how long what it
// returns stays valid.
type Memtable struct {
	head   node         // no key; its tower is all maxHeight levels
	height atomic.Int32 // levels in use, 1..maxHeight; written by the writer
	len    atomic.Int64
	bytes  atomic.Int64 // arena bytes the entries took
	filter keyFilter    // sized once; its bits are set by the writer

	// Owned by the writer (the goroutine calling Add), then by Release.
	arena arena
	rnd   uint64           // xorshift state for tower heights
	prev  [maxHeight]*node // splice scratch
}

// DefaultSize is the bytes New sizes a memtable's key filter for.
const DefaultSize = 4 << 20

// New returns an empty Memtable whose key filter is sized for DefaultSize
// bytes of entries. It takes no memory from the arena until its first Add.
func New() *Memtable { return SizedNew(DefaultSize) }

// SizedNew returns an empty Memtable whose key filter is sized for about
// size bytes of entries (ApproximateBytes): one bit per 2 bytes, from 512
// bytes to 4 MiB. It may hold more; its filter then lets more keys
// through to the search. It takes no memory from the arena until its
// first Add.
func SizedNew(size int64) *Memtable { return newMemtable(offHeap, size) }

// newMemtable returns an empty Memtable whose arena is off the Go heap
// when mapped is set, its filter sized for size bytes.
func newMemtable(mapped bool, size int64) *Memtable {
	m := &Memtable{rnd: 0x9e3779b97f4a7c15, filter: newKeyFilter(size)}
	m.arena.mapped = mapped
	m.height.Store(1)
	return m
}

// Len returns the number of entries added. Safe concurrently with Add.
func (m *Memtable) Len() int { return int(m.len.Load()) }

// ApproximateBytes returns the memory the entries take: the arena bytes
// of their nodes, keys and values (with alignment, chunk tails left
// unused and allocations of their own rounded to pages). Safe
// concurrently with Add and after Release.
func (m *Memtable) ApproximateBytes() int64 { return m.bytes.Load() }

// Release gives the Memtable's memory back (see the package
// documentation): every slice it returned and every Iterator over it is
// invalid afterwards, and only Len and ApproximateBytes may still be
// called. It must not run concurrently with any other method but those
// two. A second Release does nothing.
func (m *Memtable) Release() {
	// No pointer into the arena survives on the Go heap: the collector
	// would otherwise scan addresses that may be unmapped and reused.
	for i := range m.head.next {
		m.head.next[i].Store(nil)
	}
	clear(m.prev[:])
	m.height.Store(1)
	m.filter = keyFilter{}
	m.arena.release()
}

func (m *Memtable) randomHeight() int {
	// xorshift64; each level with probability 1/4.
	x := m.rnd
	x ^= x << 13
	x ^= x >> 7
	x ^= x << 17
	m.rnd = x
	h := 1
	for h < maxHeight && x&3 == 0 {
		h++
		x >>= 2
	}
	return h
}

// newNode carves a node of height h for key and value from the arena,
// with their bytes copied, and every field but the tower set.
func (m *Memtable) newNode(h int, key, value []byte, prefix, trailer uint64) *node {
	size := nodeSize(h)
	n := len(key) + len(value)
	small := n <= bigAlloc
	if small {
		size += n
	}
	p, took := m.arena.alloc(size)
	// The node's pointer words may hold a previous memtable's bytes: clear
	// them with plain stores before the pointer stores below read them
	// (whole words: alloc rounds the entry up to 8 bytes).
	clear(unsafe.Slice((*uint64)(p), (nodeSize(h)+7)/8))
	nd := (*node)(p)
	var data []byte
	if small {
		data = unsafe.Slice((*byte)(unsafe.Add(p, nodeSize(h))), n)
	} else {
		var big int64
		data, big = m.arena.allocBig(n)
		took += big
	}
	copy(data, key)
	copy(data[len(key):], value)
	if n > 0 {
		nd.data = unsafe.SliceData(data)
	}
	nd.keyLen, nd.valLen = uint32(len(key)), uint32(len(value))
	nd.prefix, nd.trailer = prefix, trailer
	m.bytes.Add(took)
	return nd
}

// Add inserts one version of key: its value (or a tombstone when kind is
// KindDelete) at seq. key and value are copied. Adds must not run
// concurrently with one another. Add panics on a kind other than
// KindSet and KindDelete, a seq over base.MaxSeq, or a key or value of
// 4 GiB or more.
func (m *Memtable) Add(seq uint64, kind base.Kind, key, value []byte) {
	if kind != base.KindSet && kind != base.KindDelete {
		panic(fmt.Sprintf("memtable: Add with %v", kind))
	}
	if seq > base.MaxSeq {
		panic(fmt.Sprintf("memtable: Add with seq %d over base.MaxSeq", seq))
	}
	if uint64(len(key)) > math.MaxUint32 || uint64(len(value)) > math.MaxUint32 {
		panic(fmt.Sprintf("memtable: Add of a %d-byte key and a %d-byte value", len(key), len(value)))
	}
	trailer := seq<<8 | uint64(kind)
	prefix := keyPrefix(key)

	// Find, at every level, the last node before (key, trailer); an
	// existing equal key goes after the new one (see Duplicates).
	height := int(m.height.Load())
	x := &m.head
	for level := maxHeight - 1; level >= 0; level-- {
		if level < height {
			for {
				next := x.next[level].Load()
				if next == nil || next.compare(key, prefix, trailer) >= 0 {
					break
				}
				x = next
			}
		}
		m.prev[level] = x // head above the current height
	}

	// The key's filter bits are set before the node is published: a reader
	// that can reach the node sees them.
	m.filter.add(key)
	h := m.randomHeight()
	nd := m.newNode(h, key, value, prefix, trailer)
	for i := range h {
		nd.next[i].Store(m.prev[i].next[i].Load())
	}
	if h > height {
		m.height.Store(int32(h))
	}
	// Publish, level 0 first: once a reader can reach nd at any level it
	// is linked below, and its fields were written before.
	for i := range h {
		m.prev[i].next[i].Store(nd)
	}
	m.len.Add(1)
}

// seekGE returns the first node at or after (key, trailer), or nil.
func (m *Memtable) seekGE(key []byte, trailer uint64) *node {
	prefix := keyPrefix(key)
	x := &m.head
	var found *node
	for level := int(m.height.Load()) - 1; level >= 0; level-- {
		for {
			next := x.next[level].Load()
			if next == nil {
				found = nil
				break
			}
			c := next.compare(key, prefix, trailer)
			if c == 0 {
				return next
			}
			if c > 0 {
				found = next
				break
			}
			x = next
		}
	}
	// The node that compared at or after the target on level 0, not a fresh
	// load of x.next[0]: an Add meanwhile may have linked a node between x
	// and it that sorts before the target (a newer version of the key).
	return found
}

// MayContain reports whether the memtable may hold a version of key: false
// only if it holds none, at any seq. It asks the key filter only, never
// the skiplist, so it costs a hash and one word whatever the answer.
func (m *Memtable) MayContain(key []byte) bool { return m.filter.mayContain(key) }

// Get returns the newest version of key with a seq at most seq: its value
// and kind (a tombstone is found too, with kind KindDelete). found is
// false when the memtable holds no such version. The value is the
// memtable's: valid until Release, not to be modified.
func (m *Memtable) Get(key []byte, seq uint64) (value []byte, kind base.Kind, found bool) {
	if !m.filter.mayContain(key) {
		return nil, 0, false
	}
	if seq > base.MaxSeq {
		seq = base.MaxSeq
	}
	// KindSet is the largest kind: (key, seq, KindSet) is the first
	// internal key of key with a seq at most seq.
	nd := m.seekGE(key, seq<<8|uint64(base.KindSet))
	if nd == nil || !bytes.Equal(nd.key(), key) {
		return nil, 0, false
	}
	return nd.value(), base.Kind(nd.trailer & 0xff), true
}

// NewIterator returns an unpositioned iterator over the memtable's
// entries in internal-key order.
func (m *Memtable) NewIterator() *Iterator { return &Iterator{m: m} }

// Iterator walks a Memtable in base.Compare order. It is owned by one
// goroutine. It and the keys and values it returns are valid until the
// Memtable's Release.
type Iterator struct {
	m  *Memtable
	nd *node // current entry; nil when not valid
}

// First moves to the first entry and reports whether there is one.
func (it *Iterator) First() bool {
	it.nd = it.m.head.next[0].Load()
	return it.nd != nil
}

// SeekGE moves to the first entry whose user key is at least userKey (the
// newest version of that user key) and reports whether there is one.
func (it *Iterator) SeekGE(userKey []byte) bool {
	it.nd = it.m.seekGE(userKey, base.MaxSeq<<8|uint64(base.KindSet))
	return it.nd != nil
}

// Next moves to the next entry and reports whether there is one. Next on
// an iterator that is not valid stays not valid.
func (it *Iterator) Next() bool {
	if it.nd == nil {
		return false
	}
	it.nd = it.nd.next[0].Load()
	return it.nd != nil
}

// Valid reports whether the iterator is at an entry.
func (it *Iterator) Valid() bool { return it.nd != nil }

// Key returns the current entry's internal key; its UserKey is the
// memtable's (until Release), not to be modified. Key must be called
// only when Valid.
func (it *Iterator) Key() base.InternalKey { return it.nd.internalKey() }

// Value returns the current entry's value (empty for most tombstones);
// it is the memtable's (until Release), not to be modified. Value must be
// called only when Valid.
func (it *Iterator) Value() []byte { return it.nd.value() }
