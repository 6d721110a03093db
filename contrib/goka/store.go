package gokastore

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lovoo/goka/storage"
	"github.com/ringstore/ringstore/kv"
)

// Defaults of Options.
const (
	DefaultFlushInterval       = time.Second
	DefaultRecoveryOffsetEvery = 1024
	// The store's own defaults for kv's compaction (kv's are 4, 12 and
	// 64 MiB): goka's tables take updates spread over their whole key
	// space, so every flushed table overlaps every table of L1. Twice the
	// L0 files per compaction into a 4× larger L1 halve the bytes
	// compaction rewrites, and with them the device time cold Gets wait
	// behind (docs/DECISIONS.md).
	DefaultL0CompactionTrigger = 8
	DefaultL0StopWritesTrigger = 24
	DefaultBaseLevelSize       = 256 << 20
	// DefaultBloomBitsPerKey (kv's is 10, about 1% false positives per
	// table): goka's Gets are cold point reads, most of a key's tables
	// say no through their filters, and a false positive costs a device
	// read before the right one. 16 bits cut that to about 0.05% for
	// 6 more bits of filter per key (docs/DECISIONS.md).
	DefaultBloomBitsPerKey = 16
)

// ErrClosed is returned by the methods of a closed Store or Storage.
var ErrClosed = errors.New("gokastore: closed")

// Options configure a Store. The zero value is a store with kv's defaults
// (64 MiB block cache, 64 MiB memtables, io_uring unless RINGSTORE_IO_URING
// says otherwise) but for compaction (DefaultL0CompactionTrigger,
// DefaultL0StopWritesTrigger, DefaultBaseLevelSize), flushed at most once a
// second.
type Options struct {
	// KV configures the shared kv store. DisableWAL is always set: the
	// changelog topic is the log (see the package documentation); ReadOnly
	// and Engine are refused, since the store writes and owns its engine.
	KV kv.Options
	// FlushInterval is the least time between two flushes that SetOffset
	// asks for once a partition is recovered: the most processing a crash
	// makes the next owner replay from the changelog. Default 1s.
	FlushInterval time.Duration
	// RecoveryOffsetEvery is how many SetOffset calls of a recovering
	// partition go by between two writes of its offset record, so that a
	// memtable flushed during recovery carries a recent offset. Default 1024.
	RecoveryOffsetEvery int
	// NoCompactionWait makes MarkRecovered return once the partition is
	// durable, without merging the L0 tables a large restore left
	// (Storage.MarkRecovered). Processing then starts at once, its reads
	// sharing the device with those compactions until they catch up.
	NoCompactionWait bool
}

func (o Options) withDefaults() (Options, error) {
	if o.FlushInterval < 0 {
		return o, fmt.Errorf("gokastore: negative Options.FlushInterval %v", o.FlushInterval)
	}
	if o.RecoveryOffsetEvery < 0 {
		return o, fmt.Errorf("gokastore: negative Options.RecoveryOffsetEvery %d", o.RecoveryOffsetEvery)
	}
	if o.KV.ReadOnly {
		return o, errors.New("gokastore: Options.KV.ReadOnly is not supported: the store writes")
	}
	if o.KV.Engine != nil {
		return o, errors.New("gokastore: Options.KV.Engine is not supported: the store opens its own shared engine")
	}
	if o.FlushInterval == 0 {
		o.FlushInterval = DefaultFlushInterval
	}
	if o.RecoveryOffsetEvery == 0 {
		o.RecoveryOffsetEvery = DefaultRecoveryOffsetEvery
	}
	if o.KV.L0CompactionTrigger == 0 {
		o.KV.L0CompactionTrigger = DefaultL0CompactionTrigger
	}
	if o.KV.L0StopWritesTrigger == 0 {
		o.KV.L0StopWritesTrigger = max(DefaultL0StopWritesTrigger, 3*o.KV.L0CompactionTrigger)
	}
	if o.KV.BaseLevelSize == 0 {
		o.KV.BaseLevelSize = DefaultBaseLevelSize
	}
	if o.KV.BloomBitsPerKey == 0 {
		o.KV.BloomBitsPerKey = DefaultBloomBitsPerKey
	}
	o.KV.DisableWAL = true
	return o, nil
}

// Store is one kv store shared by the partitions of one processor instance
// (and the views and lookup tables it builds with the same Builder): one
// block cache, one ioengine, one set of memtables. It is reference counted:
// Open holds one reference, every Storage built from it another; the kv
// store closes when the last is dropped.
type Store struct {
	dir  string
	opts Options // immutable after Open
	db   *kv.DB  // immutable after Open

	mu     sync.Mutex
	refs   int                 // guarded by mu
	parts  map[string]*Storage // open partitions by prefix; guarded by mu
	closed bool                // guarded by mu; set when refs reached 0
	bgErr  error               // first failed background flush; guarded by mu

	kick     chan struct{} // SetOffset asks the flusher for a flush; cap 1
	stop     chan struct{} // closed by the last Close
	flusherD chan struct{} // closed when the flusher has returned
	closedD  chan struct{} // closed when the last release has closed the kv store
	flushes  atomic.Uint64 // flushes the flusher ran

	ownerClosed atomic.Bool // Close dropped Open's reference
}

// Open opens (or creates) the shared store in dir. The caller holds one
// reference and drops it with Close.
func Open(dir string, opts Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	db, err := kv.Open(dir, o.KV)
	if err != nil {
		return nil, fmt.Errorf("gokastore: open %s: %w", dir, err)
	}
	s := &Store{
		dir:      dir,
		opts:     o,
		db:       db,
		refs:     1,
		parts:    make(map[string]*Storage),
		kick:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
		flusherD: make(chan struct{}),
		closedD:  make(chan struct{}),
	}
	go s.flusher()
	return s, nil
}

// DB returns the shared kv store, for its Stats. Writes to it outside the
// partitions' key ranges are the caller's business; inside them they break
// the partitions' offsets.
func (s *Store) DB() *kv.DB { return s.db }

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Flushes returns how many flushes the background flusher ran.
func (s *Store) Flushes() uint64 { return s.flushes.Load() }

// Close drops the reference Open returned; a second Close fails with
// ErrClosed and changes nothing.
func (s *Store) Close() error {
	if s.ownerClosed.Swap(true) {
		return ErrClosed
	}
	return s.release()
}

// acquire takes a reference, or fails once the store is closed (after the
// kv store has closed, so that its directory is free to open again).
func (s *Store) acquire() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.closedD
		return ErrClosed
	}
	s.refs++
	s.mu.Unlock()
	return nil
}

// release drops a reference; the last one stops the flusher and closes the
// kv store (which flushes its memtable).
func (s *Store) release() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	s.refs--
	if s.refs > 0 {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	defer close(s.closedD)
	close(s.stop)
	<-s.flusherD
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("gokastore: close %s: %w", s.dir, err)
	}
	return nil
}

// Build returns the Storage of one partition of a topic, a Builder's work.
// A partition may be open once at a time.
func (s *Store) Build(topic string, partition int32) (*Storage, error) {
	prefix, err := partitionPrefix(topic, partition)
	if err != nil {
		return nil, err
	}
	if err := s.acquire(); err != nil {
		return nil, err
	}
	st := &Storage{s: s, topic: topic, partition: partition, prefix: prefix, offKey: offsetKey(prefix)}
	if err := st.load(); err != nil {
		s.release()
		return nil, err
	}
	s.mu.Lock()
	if _, open := s.parts[string(prefix)]; open {
		s.mu.Unlock()
		s.release()
		return nil, fmt.Errorf("gokastore: topic %q partition %d is already open in %s", topic, partition, s.dir)
	}
	s.parts[string(prefix)] = st
	s.mu.Unlock()
	return st, nil
}

// Builder returns a goka storage.Builder over this store. Every Storage it
// builds holds a reference; the caller's own reference (from Open) can be
// dropped once the processor is running, or kept for Stats.
func (s *Store) Builder() storage.Builder {
	return func(topic string, partition int32) (storage.Storage, error) {
		return s.Build(topic, partition)
	}
}

// Builder returns a goka storage.Builder whose partitions share one Store in
// dir: the first partition built opens it, the last one closed closes it, and
// a later build opens it again.
//
//	p, err := goka.NewProcessor(brokers, graph,
//		goka.WithStorageBuilder(gokastore.Builder("/var/lib/app/state", gokastore.Options{})))
func Builder(dir string, opts Options) storage.Builder {
	var (
		mu sync.Mutex
		s  *Store // guarded by mu; the store last opened, perhaps closed since
	)
	return func(topic string, partition int32) (storage.Storage, error) {
		mu.Lock()
		defer mu.Unlock()
		if s != nil {
			st, err := s.Build(topic, partition)
			if !errors.Is(err, ErrClosed) {
				return st, err
			}
		}
		ns, err := Open(dir, opts)
		if err != nil {
			return nil, err
		}
		st, err := ns.Build(topic, partition)
		// The partition holds the store open from here; drop Open's reference.
		if cerr := ns.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
		s = ns
		return st, nil
	}
}

// flusher runs the flushes SetOffset asks for, at most one per
// FlushInterval: it writes every open partition's offset record (each at
// most its partition's latest SetOffset, which its values precede in the
// commit order), then flushes the memtable, making both durable together.
func (s *Store) flusher() {
	defer close(s.flusherD)
	var last time.Time
	for {
		select {
		case <-s.stop:
			return
		case <-s.kick:
		}
		if wait := s.opts.FlushInterval - time.Since(last); wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C:
			}
		}
		last = time.Now()
		if err := s.flushOffsets(); err != nil {
			s.mu.Lock()
			if s.bgErr == nil {
				s.bgErr = err
			}
			s.mu.Unlock()
			s.opts.logf("gokastore: background flush of %s: %v", s.dir, err)
		}
		s.flushes.Add(1)
	}
}

// flushOffsets writes the offset record of every open partition, then
// flushes the memtable.
func (s *Store) flushOffsets() error {
	s.mu.Lock()
	parts := make([]*Storage, 0, len(s.parts))
	for _, p := range s.parts {
		parts = append(parts, p)
	}
	s.mu.Unlock()
	for _, p := range parts {
		if err := p.writeOffset(); err != nil {
			return err
		}
	}
	if err := s.db.Flush(); err != nil {
		return fmt.Errorf("gokastore: flush %s: %w", s.dir, err)
	}
	return nil
}

// backgroundErr returns the first failed background flush.
func (s *Store) backgroundErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bgErr
}

func (s *Store) requestFlush() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

func (s *Store) forget(st *Storage) {
	s.mu.Lock()
	if s.parts[string(st.prefix)] == st {
		delete(s.parts, string(st.prefix))
	}
	s.mu.Unlock()
}

func (o Options) logf(format string, args ...any) {
	if o.KV.Logf != nil {
		o.KV.Logf(format, args...)
		return
	}
	logDefault(format, args...)
}
