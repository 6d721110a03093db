package wal

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal/internal/format"
)

// ReadAt returns a copy of the payload of entry seq. Entries are readable
// once durable, while appends go on. It returns an error wrapping
// ErrNotFound when seq is outside [FirstSeq, LastSeq], and a *CorruptError
// when the entry is damaged.
func (l *Log) ReadAt(seq uint64) ([]byte, error) {
	return l.read(seq, nil)
}

// Locate returns the segment file that holds entry seq and the entry's
// offset in it (its header's first byte), for messages that must say
// where an entry is. It returns an error wrapping ErrNotFound when seq is
// outside [FirstSeq, LastSeq].
func (l *Log) Locate(seq uint64) (path string, off int64, err error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	s, err := l.segmentOfLocked(seq)
	if err != nil {
		return "", 0, err
	}
	off, _ = s.entryBounds(seq)
	return s.path, off, nil
}

// segmentOfLocked returns the segment of durable entry seq.
func (l *Log) segmentOfLocked(seq uint64) (*segment, error) {
	if l.closed {
		return nil, ErrClosed
	}
	if seq < l.first || seq > l.last {
		return nil, fmt.Errorf("%w: seq %d (the log holds %d to %d)", ErrNotFound, seq, l.first, l.last)
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].base > seq }) - 1
	if i < 0 || seq > l.segs[i].last {
		return nil, fmt.Errorf("%w: seq %d has no segment", ErrNotFound, seq)
	}
	return l.segs[i], nil
}

// read appends the payload of entry seq to dst.
func (l *Log) read(seq uint64, dst []byte) ([]byte, error) {
	l.segMu.RLock()
	defer l.segMu.RUnlock()
	s, err := l.segmentOfLocked(seq)
	if err != nil {
		return nil, err
	}
	if s.sealed {
		if err := s.load(); err != nil {
			return nil, err
		}
		off, n := s.entryBounds(seq)
		return decodeAt(s.path, s.data[off:off+n], off, seq, dst, false)
	}
	off, n := s.entryBounds(seq)
	buf := make([]byte, n)
	req := [1]ioengine.Request{{Op: ioengine.OpRead, File: s.f, Buf: buf, Off: off}}
	if err := l.eng.Do(req[:]); err != nil {
		return nil, fmt.Errorf("wal: read seq %d from %s at offset %d: %w", seq, s.path, off, err)
	}
	if dst == nil {
		// buf is the caller's already: hand out the payload inside it
		// rather than copy it once more.
		return decodeAt(s.path, buf, off, seq, nil, true)
	}
	return decodeAt(s.path, buf, off, seq, dst, false)
}

// decodeAt decodes entry seq from b, read at off of path, and appends its
// payload to dst, or returns it in place when alias (b is not shared).
func decodeAt(path string, b []byte, off int64, seq uint64, dst []byte, alias bool) ([]byte, error) {
	got, payload, _, err := format.DecodeEntry(b, len(b))
	if err == nil && got != seq {
		err = fmt.Errorf("%w: entry seq %d where %d was expected", ErrCorrupt, got, seq)
	}
	if err != nil {
		return nil, &CorruptError{Path: path, Offset: off, LastSeq: seq - 1, Err: err}
	}
	if alias {
		return payload, nil
	}
	return append(dst, payload...), nil
}

// Iterator reads entries in order from a starting sequence number. It is
// not safe for concurrent use; many iterators may run at once.
//
//	it := l.Iterator(from)
//	for it.Next() {
//		use(it.Seq(), it.Payload())
//	}
//	if err := it.Err(); err != nil { ... }
type Iterator struct {
	l       *Log
	next    uint64
	seq     uint64
	payload []byte
	err     error
}

// Iterator returns an iterator over the durable entries from seq on (from
// the first entry when seq is before it). It sees the entries that are
// durable when Next is called, so it also reads appends made after it was
// created.
func (l *Log) Iterator(seq uint64) *Iterator {
	return &Iterator{l: l, next: max(seq, l.FirstSeq())}
}

// Next moves to the next entry. It returns false at the last durable entry
// or on an error (see Err).
func (it *Iterator) Next() bool {
	if it.err != nil {
		return false
	}
	if it.next > it.l.LastSeq() {
		return false
	}
	p, err := it.l.read(it.next, it.payload[:0])
	if err != nil {
		if errors.Is(err, ErrNotFound) && it.next < it.l.FirstSeq() {
			err = fmt.Errorf("wal: iterator at seq %d: the entry was removed by TruncateFront: %w", it.next, err)
		}
		it.err = err
		return false
	}
	it.seq, it.payload = it.next, p
	it.next++
	return true
}

// Seq returns the current entry's sequence number.
func (it *Iterator) Seq() uint64 { return it.seq }

// Payload returns the current entry's payload, valid until the next call of
// Next.
func (it *Iterator) Payload() []byte { return it.payload }

// Err returns the error that stopped the iteration, or nil at the end.
func (it *Iterator) Err() error { return it.err }

// Follow calls fn for every entry from seq on, in order, waiting for new
// entries to become durable (tail following), until ctx is done (it
// returns ctx.Err()), fn returns an error (returned), or the log is closed
// (ErrClosed). The payload is valid only during the call.
func (l *Log) Follow(ctx context.Context, seq uint64, fn func(seq uint64, payload []byte) error) error {
	it := l.Iterator(seq)
	for {
		for it.Next() {
			if err := fn(it.Seq(), it.Payload()); err != nil {
				return err
			}
		}
		if err := it.Err(); err != nil {
			return err
		}
		l.segMu.RLock()
		closed, notify, last := l.closed, l.notify, l.last
		l.segMu.RUnlock()
		if closed {
			return ErrClosed
		}
		if last >= it.next {
			continue // appended between Next and the check
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-notify:
		}
	}
}
