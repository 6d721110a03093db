package raftstore

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/hashicorp/raft"

	"github.com/ringstore/ringstore/wal"
)

// ErrKeyNotFound is what Get and GetUint64 return for a key never set.
// Its message is exactly "not found" (not prefixed with the package, as
// the other errors are) because raft recognises a missing key by that text.
var ErrKeyNotFound = errors.New("not found")

// ErrClosed is returned by every method after Close. It wraps wal.ErrClosed.
var ErrClosed = fmt.Errorf("raftstore: %w", wal.ErrClosed)

// Store is a raft.LogStore and raft.StableStore on one directory: the log
// entries in a wal.Log, the stable keys in stable.db beside it. All methods
// are safe for concurrent use.
type Store struct {
	dir string // immutable
	log *wal.Log
	// capacity is the most bytes one AppendBatch may encode to (the log's
	// MaxBatchBytes); immutable.
	capacity int

	// wmu serialises the writers of the log (StoreLogs, DeleteRange), whose
	// checks of FirstSeq/LastSeq must hold until their wal call is made.
	// Readers do not take it: the wal orders them with the writes.
	wmu sync.Mutex

	// smu guards kv, stableErr and closed, and is held across a stable
	// file rewrite.
	smu sync.Mutex
	kv  map[string][]byte
	// stableErr is the first failed write of the stable file; it is
	// permanent: no later Set is tried (an fsync is never retried).
	stableErr error
	closed    bool
}

var (
	_ raft.LogStore          = (*Store)(nil)
	_ raft.StableStore       = (*Store)(nil)
	_ raft.MonotonicLogStore = (*Store)(nil)
)

// Open opens (or creates) the store in dir. opts configure the wal; its
// zero value is safe. Only one Store may have a directory open at a time.
func Open(dir string, opts wal.Options) (*Store, error) {
	l, err := wal.Open(dir, opts) // takes the directory's lock
	if err != nil {
		return nil, fmt.Errorf("raftstore: %w", err)
	}
	kv, err := readStable(dir)
	if err != nil {
		l.Close()
		return nil, err
	}
	return &Store{
		dir:      dir,
		log:      l,
		capacity: l.MaxBatchBytes(),
		kv:       kv,
	}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Log returns the underlying wal, for statistics. Writing to it directly
// breaks the store.
func (s *Store) Log() *wal.Log { return s.log }

// Close closes the log. Later calls of any method fail with ErrClosed.
func (s *Store) Close() error {
	s.smu.Lock()
	if s.closed {
		s.smu.Unlock()
		return nil
	}
	s.closed = true
	s.smu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if err := s.log.Close(); err != nil {
		return fmt.Errorf("raftstore: %w", err)
	}
	return nil
}

func (s *Store) isClosed() bool {
	s.smu.Lock()
	defer s.smu.Unlock()
	return s.closed
}

// IsMonotonic reports true: the log cannot hold a gap between indexes, so
// raft removes all old logs after installing a snapshot instead of leaving
// a gap (raft.MonotonicLogStore).
func (s *Store) IsMonotonic() bool { return true }

// FirstIndex returns the index of the first entry, or 0 when the log is
// empty.
func (s *Store) FirstIndex() (uint64, error) {
	if s.isClosed() {
		return 0, ErrClosed
	}
	first, last := s.log.FirstSeq(), s.log.LastSeq()
	if last < first {
		return 0, nil
	}
	return first, nil
}

// LastIndex returns the index of the last entry, or 0 when the log is
// empty.
func (s *Store) LastIndex() (uint64, error) {
	if s.isClosed() {
		return 0, ErrClosed
	}
	first, last := s.log.FirstSeq(), s.log.LastSeq()
	if last < first {
		return 0, nil
	}
	return last, nil
}

// GetLog reads entry index into out. It returns raft.ErrLogNotFound when
// the log does not hold index.
func (s *Store) GetLog(index uint64, out *raft.Log) error {
	p, err := s.log.ReadAt(index)
	if errors.Is(err, wal.ErrNotFound) {
		return raft.ErrLogNotFound
	}
	if errors.Is(err, wal.ErrClosed) {
		return ErrClosed
	}
	if err != nil {
		return fmt.Errorf("raftstore: read index %d: %w", index, err)
	}
	return decodeLog(p, index, out)
}

// StoreLog appends one entry; see StoreLogs.
func (s *Store) StoreLog(l *raft.Log) error {
	return s.StoreLogs([]*raft.Log{l})
}

// StoreLogs appends logs, whose indexes must be consecutive and follow the
// last entry. Into an empty log the first may have any index from
// FirstSeq on (raft writes snapshotIndex+1 after a snapshot). All are
// durable when it returns; after a crash before it returns, any prefix of
// them may be present.
func (s *Store) StoreLogs(logs []*raft.Log) error {
	if len(logs) == 0 {
		return nil
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	first, last := s.log.FirstSeq(), s.log.LastSeq()
	start := logs[0].Index
	if last < first && start > first {
		// Empty log: move its start to the first index raft writes.
		if err := s.log.TruncateFront(start); err != nil {
			return fmt.Errorf("raftstore: start the empty log at index %d: %w", start, err)
		}
		last = start - 1
	}
	for i, l := range logs {
		if want := last + 1 + uint64(i); l.Index != want {
			if last < first && i == 0 {
				return fmt.Errorf("raftstore: StoreLogs: expected index %d or higher (the log is empty and starts at %d), got %d", want, want, l.Index)
			}
			return fmt.Errorf("raftstore: StoreLogs: expected index %d, got %d (entry %d of %d)", want, l.Index, i, len(logs))
		}
	}
	// Append in chunks the log takes in one AppendBatch (MaxBatchBytes).
	payloads := make([][]byte, 0, len(logs))
	size := 0
	flush := func() error {
		if len(payloads) == 0 {
			return nil
		}
		if err := s.appendBatch(payloads, last+1); err != nil {
			return err
		}
		last += uint64(len(payloads))
		payloads, size = payloads[:0], 0
		return nil
	}
	for _, l := range logs {
		n := wal.EncodedLen(encodedLen(l))
		if size+n > s.capacity {
			if err := flush(); err != nil {
				return err
			}
		}
		payloads = append(payloads, encodeLog(make([]byte, 0, encodedLen(l)), l))
		size += n
	}
	return flush()
}

// appendBatch appends payloads, which encode to at most s.capacity bytes,
// as the entries from index want on.
func (s *Store) appendBatch(payloads [][]byte, want uint64) error {
	got, err := s.log.AppendBatch(payloads)
	if err != nil {
		return fmt.Errorf("raftstore: store indexes %d to %d: %w", want, want+uint64(len(payloads))-1, err)
	}
	if got != want {
		return fmt.Errorf("raftstore: the log gave index %d to the entry of index %d", got, want)
	}
	return nil
}

// DeleteRange removes the entries min to max, inclusive: a range at the
// front (min at or before the first entry) or at the back (max at or after
// the last). A range wholly outside the log removes nothing; one in the
// middle is an error. Removing every entry leaves an empty log that accepts
// any index from its old first on.
func (s *Store) DeleteRange(min, max uint64) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	if s.isClosed() {
		return ErrClosed
	}
	first, last := s.log.FirstSeq(), s.log.LastSeq()
	switch {
	case min > max || last < first || max < first || min > last:
		return nil // nothing held in the range
	case min <= first && max >= last:
		// Everything: cut from the back so the log may restart at any
		// index from first on (TruncateFront only moves forward).
		if err := s.log.TruncateBack(first - 1); err != nil {
			return fmt.Errorf("raftstore: DeleteRange(%d, %d) of all entries %d to %d: %w", min, max, first, last, err)
		}
	case min <= first:
		if err := s.log.TruncateFront(max + 1); err != nil {
			return fmt.Errorf("raftstore: DeleteRange(%d, %d) from the front: %w", min, max, err)
		}
	case max >= last:
		if err := s.log.TruncateBack(min - 1); err != nil {
			return fmt.Errorf("raftstore: DeleteRange(%d, %d) from the back: %w", min, max, err)
		}
	default:
		return fmt.Errorf("raftstore: DeleteRange(%d, %d): the log holds %d to %d and can only lose entries at its front or back", min, max, first, last)
	}
	return nil
}

// Set stores val under key, durably: the whole stable file is rewritten
// and flushed before it returns. After a failed write every later Set
// fails with the same error.
func (s *Store) Set(key, val []byte) error {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.closed {
		return ErrClosed
	}
	if s.stableErr != nil {
		return s.stableErr
	}
	if old, ok := s.kv[string(key)]; ok && bytes.Equal(old, val) {
		return nil
	}
	m := make(map[string][]byte, len(s.kv)+1)
	for k, v := range s.kv {
		m[k] = v
	}
	v := bytes.Clone(val)
	if v == nil {
		v = []byte{}
	}
	m[string(key)] = v
	if err := writeStable(s.dir, m); err != nil {
		s.stableErr = fmt.Errorf("raftstore: stable store failed, no more writes: %w", err)
		return s.stableErr
	}
	s.kv = m
	return nil
}

// Get returns a copy of the value of key, or nil and ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, error) {
	s.smu.Lock()
	defer s.smu.Unlock()
	if s.closed {
		return nil, ErrClosed
	}
	v, ok := s.kv[string(key)]
	if !ok {
		return nil, ErrKeyNotFound
	}
	return bytes.Clone(v), nil
}

// SetUint64 stores val under key as 8 bytes, big-endian (as raft-boltdb
// does).
func (s *Store) SetUint64(key []byte, val uint64) error {
	return s.Set(key, binary.BigEndian.AppendUint64(nil, val))
}

// GetUint64 returns the value of key set by SetUint64, or 0 and
// ErrKeyNotFound.
func (s *Store) GetUint64(key []byte) (uint64, error) {
	v, err := s.Get(key)
	if err != nil {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("raftstore: key %q holds %d bytes, not a uint64 (8)", key, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}
