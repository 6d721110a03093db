package gokastore

import (
	"bytes"

	"github.com/ringstore/ringstore/kv"
)

// iterator walks one partition's values in [lo, hi) as of one kv snapshot;
// Seek starts a new kv iterator on the same snapshot. Owned by one goroutine.
type iterator struct {
	st     *Storage
	snap   *kv.Snapshot // nil once released
	it     *kv.Iterator // nil once exhausted or released
	lo, hi []byte       // immutable: the range, partition prefix included
	ro     kv.ReadOptions
	plen   int // len(prefix)+1: what Key strips
	valid  bool
	err    error
}

func newIterator(st *Storage, lo, hi []byte, noFill bool) *iterator {
	snap := st.s.db.NewSnapshot()
	i := &iterator{st: st, snap: snap, lo: lo, hi: hi, plen: len(st.prefix) + 1,
		ro: kv.ReadOptions{Snapshot: snap, NoFillCache: noFill}}
	if bytes.Compare(lo, hi) < 0 {
		i.it = st.s.db.NewIteratorWith(i.ro, lo, hi)
	}
	return i
}

// Next moves to the next value and reports whether there is one.
func (i *iterator) Next() bool {
	if i.it == nil {
		i.valid = false
		return false
	}
	if i.it.Next() {
		i.valid = true
		return true
	}
	i.valid = false
	i.closeIter()
	return false
}

func (i *iterator) closeIter() {
	if i.it == nil {
		return
	}
	if err := i.it.Close(); err != nil && i.err == nil {
		i.err = i.st.errf("iterate at", string(i.lo[i.plen:]), err)
	}
	i.it = nil
}

// Err returns the error that ended the iteration.
func (i *iterator) Err() error { return i.err }

// Key returns the current key without the partition's prefix, or nil when
// the iterator is not on a value. Valid until the next Next or Seek.
func (i *iterator) Key() []byte {
	if !i.valid {
		return nil
	}
	return i.it.Key()[i.plen:]
}

// Value returns the current value, or nil when the iterator is not on one.
// Valid until the next Next or Seek.
func (i *iterator) Value() ([]byte, error) {
	if !i.valid {
		return nil, nil
	}
	v := i.it.Value()
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// Release frees the iterator and its snapshot; it is exhausted afterwards.
// Releasing twice is harmless.
func (i *iterator) Release() {
	i.valid = false
	i.closeIter()
	if i.snap != nil {
		i.snap.Close()
		i.snap = nil
	}
}

// Seek moves onto the first value whose key is at or after key (and in the
// range), as goka's LevelDB iterator does: Key and Value show it at once,
// and Next moves past it. It reports whether there is one.
func (i *iterator) Seek(key []byte) bool {
	if i.snap == nil {
		return false
	}
	i.closeIter()
	lo := valueKeyBytes(i.st.prefix, key)
	if bytes.Compare(lo, i.lo) < 0 {
		lo = i.lo
	}
	if bytes.Compare(lo, i.hi) >= 0 {
		i.valid = false
		return false
	}
	i.it = i.st.s.db.NewIteratorWith(i.ro, lo, i.hi)
	return i.Next()
}
