package kv

import (
	"sort"
	"sync/atomic"
)

// Snapshot is a consistent view of the store as of the moment it was taken:
// reads through ReadOptions.Snapshot (or its own methods) see every write
// committed before it and none after. Compactions keep the versions a live
// snapshot needs. Close it when done; it is safe for concurrent use.
type Snapshot struct {
	db     *DB
	seq    uint64
	closed atomic.Bool // set under db.mu; read without it
}

// NewSnapshot takes a snapshot of the store.
func (db *DB) NewSnapshot() *Snapshot {
	db.mu.Lock()
	defer db.mu.Unlock()
	s := &Snapshot{db: db, seq: db.visible.Load()}
	if db.closed {
		s.closed.Store(true)
		return s
	}
	db.snapshots.add(s.seq)
	return s
}

// Seq returns the sequence number the snapshot reads at.
func (s *Snapshot) Seq() uint64 { return s.seq }

// Get is DB.GetWith at this snapshot.
func (s *Snapshot) Get(key []byte) ([]byte, error) {
	return s.db.GetWith(ReadOptions{Snapshot: s}, key)
}

// MultiGet is DB.MultiGetWith at this snapshot.
func (s *Snapshot) MultiGet(keys [][]byte) ([][]byte, []bool, error) {
	return s.db.MultiGetWith(ReadOptions{Snapshot: s}, keys)
}

// NewIterator is DB.NewIteratorWith at this snapshot.
func (s *Snapshot) NewIterator(lower, upper []byte) *Iterator {
	return s.db.NewIteratorWith(ReadOptions{Snapshot: s}, lower, upper)
}

// Close releases the snapshot; reads through it fail afterwards.
func (s *Snapshot) Close() {
	s.db.mu.Lock()
	defer s.db.mu.Unlock()
	if s.closed.Swap(true) {
		return
	}
	s.db.snapshots.remove(s.seq)
}

// snapshotList is the multiset of live snapshot seqs, sorted (guarded by
// DB.mu).
type snapshotList struct{ seqs []uint64 }

func (l *snapshotList) add(seq uint64) {
	i := sort.Search(len(l.seqs), func(i int) bool { return l.seqs[i] > seq })
	l.seqs = append(l.seqs, 0)
	copy(l.seqs[i+1:], l.seqs[i:])
	l.seqs[i] = seq
}

func (l *snapshotList) remove(seq uint64) {
	i := sort.Search(len(l.seqs), func(i int) bool { return l.seqs[i] >= seq })
	if i < len(l.seqs) && l.seqs[i] == seq {
		l.seqs = append(l.seqs[:i], l.seqs[i+1:]...)
	}
}

// oldest returns the smallest live snapshot seq, or 0 when there is none.
func (l *snapshotList) oldest() uint64 {
	if len(l.seqs) == 0 {
		return 0
	}
	return l.seqs[0]
}

func (l *snapshotList) empty() bool { return len(l.seqs) == 0 }
func (l *snapshotList) len() int    { return len(l.seqs) }
