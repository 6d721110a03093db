package main

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/raft"
	raftwal "github.com/hashicorp/raft-wal"
	"github.com/hashicorp/raft-wal/metadb"
	tidwal "github.com/tidwall/wal"
	etcdwal "go.etcd.io/etcd/server/v3/storage/wal"
	"go.etcd.io/raft/v3/raftpb"
	"go.uber.org/zap"
)

// peerLog is one peer, opened. write makes the entries first, first+1, …
// (one per payload) durable with one call of the peer's API before it
// returns: one entry a call in the single modes, a leader's batch in the
// batch modes. Indexes come in order from 1, with no gap.
type peerLog interface {
	write(first uint64, payloads [][]byte) error
	close() error
}

// peers open each peer in an empty directory with its default options
// (durable ones: every write synced). leader says the log is fed by a
// batching leader (batchLeader), which hands etcd's wal a HardState with
// every batch, as raft's Ready does; the others have no HardState.
var peers = map[string]func(dir string, leader bool) (peerLog, error){
	"raft-wal":    openRaftWAL,
	"tidwall-wal": openTidwall,
	"etcd-wal":    openEtcd,
}

// serial hands out consecutive indexes and writes one entry a call under
// one mutex: all three peers need their entries in index order from a
// single writer.
type serial struct {
	mu    sync.Mutex
	p     peerLog
	next  uint64    // guarded by mu
	one   [1][]byte // guarded by mu
	calls atomic.Uint64
}

func (s *serial) append(payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.one[0] = payload
	err := s.p.write(s.next, s.one[:])
	s.one[0] = nil
	if err != nil {
		return fmt.Errorf("write %d: %w", s.next, err)
	}
	s.next++
	s.calls.Add(1)
	return nil
}

// hashicorp/raft-wal: a raft.LogStore; StoreLogs fsyncs the segment file
// before it returns. Its Close leaves the meta store (bbolt, with a file
// lock) open, so the meta store is made here and closed after it.
type raftWAL struct {
	w    *raftwal.WAL
	meta *metadb.BoltMetaDB
	logs []raft.Log  // reused by every call
	ptrs []*raft.Log // into logs
}

func openRaftWAL(dir string, _ bool) (peerLog, error) {
	meta := &metadb.BoltMetaDB{}
	w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta), raftwal.WithLogger(hclog.NewNullLogger()))
	if err != nil {
		meta.Close()
		return nil, err
	}
	return &raftWAL{w: w, meta: meta}, nil
}

func (r *raftWAL) write(first uint64, payloads [][]byte) error {
	for len(r.logs) < len(payloads) {
		r.logs = append(r.logs, raft.Log{})
	}
	r.ptrs = r.ptrs[:0]
	for i, p := range payloads {
		r.logs[i] = raft.Log{Index: first + uint64(i), Term: 1, Type: raft.LogCommand, Data: p}
		r.ptrs = append(r.ptrs, &r.logs[i])
	}
	err := r.w.StoreLogs(r.ptrs)
	clear(r.logs) // the payloads are the writers' again
	return err
}

func (r *raftWAL) close() error {
	err := r.w.Close()
	if merr := r.meta.Close(); err == nil {
		err = merr
	}
	return err
}

// tidwall/wal with NoSync=false: every Write and WriteBatch ends with an
// fsync. One entry goes through Write, more through a Batch and
// WriteBatch.
type tidwall struct {
	l     *tidwal.Log
	batch tidwal.Batch // reused by every batch call
}

func openTidwall(dir string, _ bool) (peerLog, error) {
	opts := *tidwal.DefaultOptions
	opts.NoSync = false
	l, err := tidwal.Open(dir, &opts)
	if err != nil {
		return nil, err
	}
	return &tidwall{l: l}, nil
}

func (t *tidwall) write(first uint64, payloads [][]byte) error {
	if len(payloads) == 1 {
		return t.l.Write(first, payloads[0])
	}
	t.batch.Clear()
	for i, p := range payloads {
		t.batch.Write(first+uint64(i), p) // copies p
	}
	return t.l.WriteBatch(&t.batch)
}

func (t *tidwall) close() error { return t.l.Close() }

// etcd's wal: Save fdatasyncs before it returns when it has entries. Fed
// one entry a call, it is given an empty HardState (none is written); fed
// by a leader, the HardState a raft leader's Ready carries: term 1, its
// vote for itself, and the commit index of every entry acknowledged before
// the batch.
type etcd struct {
	w      *etcdwal.WAL
	leader bool
	ents   []*raftpb.Entry // reused by every call
}

func openEtcd(dir string, leader bool) (peerLog, error) {
	w, err := etcdwal.Create(zap.NewNop(), filepath.Join(dir, "etcd"), nil)
	if err != nil {
		return nil, err
	}
	return &etcd{w: w, leader: leader}, nil
}

func (e *etcd) write(first uint64, payloads [][]byte) error {
	e.ents = e.ents[:0]
	for i, p := range payloads {
		e.ents = append(e.ents, &raftpb.Entry{Term: new(uint64(1)), Index: new(first + uint64(i)), Type: new(raftpb.EntryType_EntryNormal), Data: p})
	}
	st := &raftpb.HardState{}
	if e.leader {
		st = &raftpb.HardState{Term: new(uint64(1)), Vote: new(uint64(1)), Commit: new(first - 1)}
	}
	err := e.w.Save(st, e.ents)
	clear(e.ents)
	return err
}

func (e *etcd) close() error { return e.w.Close() }
