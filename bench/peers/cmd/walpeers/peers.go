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

// peerLog is one peer, opened. write makes the entry at index durable
// before it returns; indexes come one by one from 1.
type peerLog interface {
	write(index uint64, payload []byte) error
	close() error
}

// peers open each peer in an empty directory with its default options
// (durable ones: every write synced).
var peers = map[string]func(dir string) (peerLog, error){
	"raft-wal":    openRaftWAL,
	"tidwall-wal": openTidwall,
	"etcd-wal":    openEtcd,
}

// serial hands out consecutive indexes and writes under one mutex: all
// three peers need their entries in index order from a single writer.
type serial struct {
	mu    sync.Mutex
	p     peerLog
	next  uint64 // guarded by mu
	calls atomic.Uint64
}

func (s *serial) append(payload []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.p.write(s.next, payload); err != nil {
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
	one  [1]*raft.Log
	log  raft.Log
}

func openRaftWAL(dir string) (peerLog, error) {
	meta := &metadb.BoltMetaDB{}
	w, err := raftwal.Open(dir, raftwal.WithMetaStore(meta), raftwal.WithLogger(hclog.NewNullLogger()))
	if err != nil {
		meta.Close()
		return nil, err
	}
	r := &raftWAL{w: w, meta: meta}
	r.one[0] = &r.log
	return r, nil
}

func (r *raftWAL) write(index uint64, payload []byte) error {
	r.log = raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: payload}
	return r.w.StoreLogs(r.one[:])
}

func (r *raftWAL) close() error {
	err := r.w.Close()
	if merr := r.meta.Close(); err == nil {
		err = merr
	}
	return err
}

// tidwall/wal with NoSync=false: every Write ends with an fsync.
type tidwall struct{ l *tidwal.Log }

func openTidwall(dir string) (peerLog, error) {
	opts := *tidwal.DefaultOptions
	opts.NoSync = false
	l, err := tidwal.Open(dir, &opts)
	if err != nil {
		return nil, err
	}
	return &tidwall{l: l}, nil
}

func (t *tidwall) write(index uint64, payload []byte) error { return t.l.Write(index, payload) }
func (t *tidwall) close() error                             { return t.l.Close() }

// etcd's wal: Save with entries fdatasyncs before it returns.
type etcd struct {
	w     *etcdwal.WAL
	state raftpb.HardState
	ents  [1]*raftpb.Entry
}

func openEtcd(dir string) (peerLog, error) {
	w, err := etcdwal.Create(zap.NewNop(), filepath.Join(dir, "etcd"), nil)
	if err != nil {
		return nil, err
	}
	return &etcd{w: w}, nil
}

func (e *etcd) write(index uint64, payload []byte) error {
	e.ents[0] = &raftpb.Entry{Term: new(uint64(1)), Index: new(index), Type: new(raftpb.EntryType_EntryNormal), Data: payload}
	return e.w.Save(&e.state, e.ents[:])
}

func (e *etcd) close() error { return e.w.Close() }
