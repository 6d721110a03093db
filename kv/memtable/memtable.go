// Package memtable is kv's in-memory table: a skiplist of internal keys
// (base.InternalKey, ordered by base.Compare) with their values.
//
//	m := memtable.New()
//	m.Add(7, base.KindSet, k, v)            // one writer at a time
//	v, kind, ok := m.Get(k, 7)                 // any number of readers
//	it := m.NewIterator()
//	for ok := it.SeekGE(k); ok; ok = it.Next() { _ = it.Key(); _ = it.Value() }
//
// # Memory
//
// Add copies the key and value into an arena of byte chunks (64 KiB each;
// a value or key over 16 KiB gets a chunk of its own) and takes its node
// from a slab; a node keeps the first 8 bytes of its key and a tower of up
// to 4 next pointers inline (taller towers come from a slab of their
// own), so a search mostly touches nodes only, and an Add allocates only
// when a chunk or slab fills. Chunks are never reallocated or reused: every
// slice the package returns stays valid, unchanged, for the life of the
// Memtable. Nothing is ever removed; a Memtable is dropped whole once it
// has been flushed.
//
// # Concurrency
//
// Adds must be serialized by the caller (kv holds its write lock). Get,
// ApproximateBytes, Len and iterators may run concurrently with an Add
// and with one another, without locks: a node is fully initialized before
// it is published by atomic stores of the next pointers that reach it,
// level 0 first, so a reader either sees a node whole or not at all. An
// iterator is owned by one goroutine; it may or may not see entries added
// after it was created or positioned.
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
	"sync/atomic"

	"github.com/ringstore/ringstore/kv/internal/base"
)

const (
	maxHeight = 16 // enough for 4^16 entries at p = 1/4
	// chunkSize is the size of an arena chunk; keys and values over
	// bigAlloc get a chunk of their own so a chunk wastes at most bigAlloc.
	chunkSize = 64 << 10
	bigAlloc  = chunkSize / 4
	nodeSlab  = 256  // nodes per node slab
	towerSlab = 1024 // next pointers per tower slab

	// nodeOverhead approximates the bytes a node costs besides its key and
	// value: the node itself (with its inline tower).
	nodeOverhead = 120
)

// node is one entry. All fields but next are immutable once the node is
// published; next[i] is written with atomic stores by the writer only.
type node struct {
	prefix  uint64                 // the key's first 8 bytes, big-endian, zero-padded
	trailer uint64                 // seq<<8 | kind
	key     []byte                 // arena; cap == len
	value   []byte                 // arena; cap == len
	next    []atomic.Pointer[node] // inline, or from a tower slab when taller
	inline  [inlineHeight]atomic.Pointer[node]
}

// inlineHeight is the tallest tower kept in the node itself, next to the
// key prefix it is compared with: with p = 1/4, 99.6% of nodes.
const inlineHeight = 4

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

func (n *node) internalKey() base.InternalKey {
	return base.InternalKey{UserKey: n.key, Seq: n.trailer >> 8, Kind: base.Kind(n.trailer & 0xff)}
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
	if c := bytes.Compare(n.key, key); c != 0 {
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
// documentation for what may run concurrently.
type Memtable struct {
	head   *node        // immutable; a tower of maxHeight, no key
	height atomic.Int32 // levels in use, 1..maxHeight; written by the writer
	len    atomic.Int64
	bytes  atomic.Int64 // arena bytes handed out plus node overhead

	// Owned by the writer (the goroutine calling Add).
	chunk  []byte                 // the current arena chunk's free space
	nodes  []node                 // free nodes of the current slab
	towers []atomic.Pointer[node] // free pointers of the current slab
	rnd    uint64                 // xorshift state for tower heights
	prev   [maxHeight]*node       // splice scratch
}

// New returns an empty Memtable.
func New() *Memtable {
	m := &Memtable{rnd: 0x9e3779b97f4a7c15}
	m.head = &node{next: make([]atomic.Pointer[node], maxHeight)}
	m.height.Store(1)
	return m
}

// Len returns the number of entries added. Safe concurrently with Add.
func (m *Memtable) Len() int { return int(m.len.Load()) }

// ApproximateBytes returns the memory the entries take: the arena bytes
// of their keys and values plus an estimate of the node and pointer
// overhead. Safe concurrently with Add.
func (m *Memtable) ApproximateBytes() int64 { return m.bytes.Load() }

// alloc returns a copy of b in the arena, capped so appends cannot spill
// into a neighbour.
func (m *Memtable) alloc(b []byte) []byte {
	n := len(b)
	if n == 0 {
		return empty
	}
	var dst []byte
	if n > bigAlloc {
		dst = make([]byte, n)
	} else {
		if len(m.chunk) < n {
			m.chunk = make([]byte, chunkSize)
		}
		dst = m.chunk[:n:n]
		m.chunk = m.chunk[n:]
	}
	copy(dst, b)
	return dst
}

var empty = []byte{}

func (m *Memtable) newNode(height int) *node {
	if len(m.nodes) == 0 {
		m.nodes = make([]node, nodeSlab)
	}
	nd := &m.nodes[0]
	m.nodes = m.nodes[1:]
	if height <= inlineHeight {
		nd.next = nd.inline[:height:height]
		return nd
	}
	if len(m.towers) < height {
		m.towers = make([]atomic.Pointer[node], towerSlab)
	}
	nd.next = m.towers[:height:height]
	m.towers = m.towers[height:]
	return nd
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

// Add inserts one version of key: its value (or a tombstone when kind is
// KindDelete) at seq. key and value are copied. Adds must not run
// concurrently with one another. Add panics on a kind other than
// KindSet and KindDelete or a seq over base.MaxSeq.
func (m *Memtable) Add(seq uint64, kind base.Kind, key, value []byte) {
	if kind != base.KindSet && kind != base.KindDelete {
		panic(fmt.Sprintf("memtable: Add with %v", kind))
	}
	if seq > base.MaxSeq {
		panic(fmt.Sprintf("memtable: Add with seq %d over base.MaxSeq", seq))
	}
	trailer := seq<<8 | uint64(kind)
	prefix := keyPrefix(key)

	// Find, at every level, the last node before (key, trailer); an
	// existing equal key goes after the new one (see Duplicates).
	height := int(m.height.Load())
	x := m.head
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

	h := m.randomHeight()
	nd := m.newNode(h)
	nd.key = m.alloc(key)
	nd.value = m.alloc(value)
	nd.trailer = trailer
	nd.prefix = prefix
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
	m.bytes.Add(int64(len(key)+len(value)) + nodeOverhead)
}

// seekGE returns the first node at or after (key, trailer), or nil.
func (m *Memtable) seekGE(key []byte, trailer uint64) *node {
	prefix := keyPrefix(key)
	x := m.head
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

// Get returns the newest version of key with a seq at most seq: its value
// and kind (a tombstone is found too, with kind KindDelete). found is
// false when the memtable holds no such version. The value is the
// memtable's (valid for its life, not to be modified).
func (m *Memtable) Get(key []byte, seq uint64) (value []byte, kind base.Kind, found bool) {
	if seq > base.MaxSeq {
		seq = base.MaxSeq
	}
	// KindSet is the largest kind: (key, seq, KindSet) is the first
	// internal key of key with a seq at most seq.
	nd := m.seekGE(key, seq<<8|uint64(base.KindSet))
	if nd == nil || !bytes.Equal(nd.key, key) {
		return nil, 0, false
	}
	return nd.value, base.Kind(nd.trailer & 0xff), true
}

// NewIterator returns an unpositioned iterator over the memtable's
// entries in internal-key order.
func (m *Memtable) NewIterator() *Iterator { return &Iterator{m: m} }

// Iterator walks a Memtable in base.Compare order. It is owned by one
// goroutine. The keys and values it returns stay valid for the life of
// the Memtable.
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
// memtable's, not to be modified. Key must be called only when Valid.
func (it *Iterator) Key() base.InternalKey { return it.nd.internalKey() }

// Value returns the current entry's value (empty for most tombstones);
// it is the memtable's, not to be modified. Value must be called only
// when Valid.
func (it *Iterator) Value() []byte { return it.nd.value }
