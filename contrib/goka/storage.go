package gokastore

import (
	"context"
	"errors"
	"fmt"
	"log"
	"sync"
	"sync/atomic"

	"github.com/lovoo/goka/storage"
	"github.com/ringstore/ringstore/kv"
)

var logDefault = log.Printf

// Storage is one partition of one topic in a shared Store: goka's
// storage.Storage. Any number of goroutines may read it while one writes its
// values; SetOffset may run beside them (goka calls it from the producer's
// callbacks).
type Storage struct {
	s         *Store
	topic     string
	partition int32
	prefix    []byte // immutable: 't' | u16 len | topic | u32 partition
	offKey    []byte // immutable: prefix | 0x00

	// offset is the latest SetOffset (or the stored record at build);
	// meaningful once hasOffset is set, which is stored after it.
	offset    atomic.Int64
	hasOffset atomic.Bool
	sets      atomic.Int64 // SetOffset calls while recovering
	restored  atomic.Int64 // bytes of keys and values Set while recovering
	recovered atomic.Bool  // set by MarkRecovered once its flush returned
	closed    atomic.Bool

	omu        sync.Mutex // serializes writes of the offset record
	written    int64      // the offset record's value on the store; guarded by omu
	hasWritten bool       // guarded by omu
}

var _ storage.Storage = (*Storage)(nil)

// load reads the partition's offset record.
func (st *Storage) load() error {
	v, err := st.s.db.Get(st.offKey)
	if errors.Is(err, kv.ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("gokastore: read offset of topic %q partition %d in %s: %w", st.topic, st.partition, st.s.dir, err)
	}
	off, err := decodeOffset(st.topic, st.partition, v)
	if err != nil {
		return fmt.Errorf("%w (in %s)", err, st.s.dir)
	}
	st.offset.Store(off)
	st.hasOffset.Store(true)
	st.written, st.hasWritten = off, true
	return nil
}

// Topic and Partition name the partition.
func (st *Storage) Topic() string { return st.topic }

// Partition returns the partition number.
func (st *Storage) Partition() int32 { return st.partition }

func (st *Storage) errf(op, key string, err error) error {
	return fmt.Errorf("gokastore: %s key %q of topic %q partition %d: %w", op, key, st.topic, st.partition, err)
}

func (st *Storage) check() error {
	if st.closed.Load() {
		return ErrClosed
	}
	return nil
}

// Open does nothing: the Builder has opened the partition. It fails once the
// Storage is closed.
func (st *Storage) Open() error { return st.check() }

// Has reports whether key has a value.
func (st *Storage) Has(key string) (bool, error) {
	if err := st.check(); err != nil {
		return false, err
	}
	_, err := st.s.db.Get(valueKey(st.prefix, key))
	if errors.Is(err, kv.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, st.errf("has", key, err)
	}
	return true, nil
}

// Get returns key's value, or nil when it has none. The value is the
// caller's.
func (st *Storage) Get(key string) ([]byte, error) {
	if err := st.check(); err != nil {
		return nil, err
	}
	v, err := st.s.db.Get(valueKey(st.prefix, key))
	if errors.Is(err, kv.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, st.errf("get", key, err)
	}
	if v == nil {
		v = []byte{}
	}
	return v, nil
}

// Set stores value under key. A nil value is refused, as goka's own storages
// do; an empty one is kept.
func (st *Storage) Set(key string, value []byte) error {
	if err := st.check(); err != nil {
		return err
	}
	if value == nil {
		return fmt.Errorf("gokastore: set key %q of topic %q partition %d: nil value (use Delete)", key, st.topic, st.partition)
	}
	k := valueKey(st.prefix, key)
	if err := st.s.db.Put(k, value); err != nil {
		return st.errf("set", key, err)
	}
	if !st.recovered.Load() {
		st.restored.Add(int64(len(k) + len(value)))
	}
	return nil
}

// Delete removes key's value.
func (st *Storage) Delete(key string) error {
	if err := st.check(); err != nil {
		return err
	}
	if err := st.s.db.Delete(valueKey(st.prefix, key)); err != nil {
		return st.errf("delete", key, err)
	}
	return nil
}

// GetOffset returns the latest offset set (or stored on disk when the
// partition was built), or def when there is none.
func (st *Storage) GetOffset(def int64) (int64, error) {
	if err := st.check(); err != nil {
		return 0, err
	}
	if !st.hasOffset.Load() {
		return def, nil
	}
	return st.offset.Load(), nil
}

// SetOffset records the changelog offset whose value (and every value before
// it) this partition holds. goka calls it after the Set it covers. While
// recovering, the offset record is written every RecoveryOffsetEvery calls
// (the memtable's own flushes make it durable); once recovered, each call
// asks the store's flusher for a flush, run at most once per FlushInterval.
func (st *Storage) SetOffset(offset int64) error {
	if err := st.check(); err != nil {
		return err
	}
	if err := st.s.backgroundErr(); err != nil {
		return err
	}
	st.offset.Store(offset)
	st.hasOffset.Store(true)
	if !st.recovered.Load() {
		if st.sets.Add(1)%int64(st.s.opts.RecoveryOffsetEvery) == 0 {
			return st.writeOffset()
		}
		return nil
	}
	st.s.requestFlush()
	return nil
}

// writeOffset writes the latest offset as the offset record, after every
// value it covers in the commit order: SetOffset(o) follows the Set of o's
// value, which had returned, so the record is committed after it.
func (st *Storage) writeOffset() error {
	if !st.hasOffset.Load() {
		return nil
	}
	st.omu.Lock()
	defer st.omu.Unlock()
	off := st.offset.Load()
	if st.hasWritten && st.written == off {
		return nil
	}
	if err := st.s.db.Put(st.offKey, encodeOffset(off)); err != nil {
		return fmt.Errorf("gokastore: write offset %d of topic %q partition %d in %s: %w", off, st.topic, st.partition, st.s.dir, err)
	}
	st.written, st.hasWritten = off, true
	return nil
}

// MarkRecovered makes the restored partition durable: it writes the offset
// record and flushes the store, so a restart resumes after the last offset
// recovered. A restore that wrote at least a memtable's bytes also left L0
// tables and the compactions they make due; unless Options.NoCompactionWait,
// MarkRecovered then merges L0 into the levels below and waits for it
// (kv.DB.DrainL0), so that the partition's processing does not start
// behind those compactions (its restore takes that much longer).
func (st *Storage) MarkRecovered() error {
	if err := st.check(); err != nil {
		return err
	}
	if err := st.writeOffset(); err != nil {
		return err
	}
	if err := st.s.db.Flush(); err != nil {
		return fmt.Errorf("gokastore: flush at recovery of topic %q partition %d in %s: %w", st.topic, st.partition, st.s.dir, err)
	}
	if !st.s.opts.NoCompactionWait && st.restored.Load() >= st.s.db.Options().MemtableSize {
		if err := st.s.db.DrainL0(context.Background()); err != nil {
			return fmt.Errorf("gokastore: compactions after the recovery of topic %q partition %d in %s: %w", st.topic, st.partition, st.s.dir, err)
		}
	}
	st.recovered.Store(true)
	return nil
}

// Close writes the partition's offset record, makes it durable and drops the
// partition's reference to the shared store; the last reference closes it.
// Iterators of the partition must be released first.
func (st *Storage) Close() error {
	if st.closed.Swap(true) {
		return ErrClosed
	}
	st.s.forget(st)
	err := st.writeOffset()
	if err == nil {
		if ferr := st.s.db.Flush(); ferr != nil {
			err = fmt.Errorf("gokastore: flush at close of topic %q partition %d in %s: %w", st.topic, st.partition, st.s.dir, ferr)
		}
	}
	if rerr := st.s.release(); err == nil {
		err = rerr
	}
	return err
}

// Iterator returns an iterator over a snapshot of the partition's values,
// reading blocks that miss the cache without keeping them (a scan).
func (st *Storage) Iterator() (storage.Iterator, error) {
	if err := st.check(); err != nil {
		return nil, err
	}
	return newIterator(st, valueKeyBytes(st.prefix, nil), valueRangeEnd(st.prefix), true), nil
}

// IteratorWithRange returns an iterator over a snapshot of the values whose
// keys are in [start, limit). An empty limit means every key that starts
// with start, as in goka's LevelDB storage (an empty start too: all keys).
func (st *Storage) IteratorWithRange(start, limit []byte) (storage.Iterator, error) {
	if err := st.check(); err != nil {
		return nil, err
	}
	lo := valueKeyBytes(st.prefix, start)
	var hi []byte
	if len(limit) > 0 {
		hi = valueKeyBytes(st.prefix, limit)
	} else {
		hi = prefixEnd(lo)
	}
	return newIterator(st, lo, hi, false), nil
}
