package state

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/internal/durable"
	"github.com/ringstore/ringstore/kv"
)

// Options configure a Backend. The zero value is usable.
type Options struct {
	// MaxKeyGroups is the number of key groups, fixed for the life of the
	// state (it places every key) and recorded in it. Default: the
	// recorded number, or 128 for new state; at most 65535. Opening state
	// recorded with another number is an error (ErrIncompatible).
	MaxKeyGroups int
	// KV configures the store; DisableWAL is always set (package doc), and
	// BloomBitsPerKey defaults to DefaultBloomBitsPerKey rather than kv's.
	KV kv.Options
	// Clock tells the time for TTLs. Default time.Now.
	Clock func() time.Time
	// StrictReads makes a Get of an entry its batch neither wanted nor
	// wrote an error (ErrNotWanted) instead of a kv.Get of its own: an
	// operator that declares every read can ask the backend to check it.
	StrictReads bool
}

// DefaultBloomBitsPerKey is the state's bloom filter size, in bits per
// key, unless KV sets one: about 0.05% false positives per table, against
// 1% at kv's 10. A state read is a point lookup, and a false positive of a
// table newer than the key's costs it another round of reads, on io_uring
// a wait of its own; the filters take 60% more memory.
const DefaultBloomBitsPerKey = 16

// Stats are a backend's counters.
type Stats struct {
	MultiGets  uint64 // Load calls that read (one kv.MultiGet each)
	KeysWanted uint64 // Want calls
	KeysRead   uint64 // distinct keys read by Load
	Deduped    uint64 // Want calls for a key the batch already wanted
	CacheHits  uint64 // Gets answered by the batch (loaded or written)
	Unplanned  uint64 // Gets of keys not wanted: one kv.Get each
	Expired    uint64 // entries found expired (and deleted at Commit)
	Commits    uint64 // batches written (one kv.Batch each)
	Writes     uint64 // puts and deletes written
	KV         kv.Stats
}

var (
	// ErrClosed: the backend was closed; every call after Close returns it.
	ErrClosed = errors.New("state: closed")
	// ErrIncompatible: a state registered again with another kind or TTL,
	// or state opened with another number of key groups than it was made
	// with (Flink: incompatible state).
	ErrIncompatible = errors.New("state: incompatible state")
	// ErrNotWanted: with StrictReads, a Get of an entry the batch did not
	// want.
	ErrNotWanted = errors.New("state: read of an entry the batch did not want")
)

// Kind is the kind of a registered state.
type Kind uint8

const (
	kindUnrecorded Kind = iota // a registry record written before kinds were recorded
	KindValue
	KindMap
	KindList
	KindReducing
	KindTimers
)

func (k Kind) String() string {
	switch k {
	case KindValue:
		return "value"
	case KindMap:
		return "map"
	case KindList:
		return "list"
	case KindReducing:
		return "reducing"
	case KindTimers:
		return "timers"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// registration is a state name's registry record: its id, kind and TTL.
type registration struct {
	id   uint16
	kind Kind
	ttl  time.Duration
}

// The registry record's value: id (2 bytes), kind (1), TTL in ns (8), big
// endian. A record of 2 bytes (the id alone) was written before kinds were
// recorded; the first registration of the name records them.
func (r registration) encode() []byte {
	v := binary.BigEndian.AppendUint16(nil, r.id)
	v = append(v, byte(r.kind))
	return binary.BigEndian.AppendUint64(v, uint64(r.ttl))
}

func decodeRegistration(v []byte) (registration, bool) {
	switch len(v) {
	case 2:
		return registration{id: binary.BigEndian.Uint16(v)}, true
	case 11:
		r := registration{id: binary.BigEndian.Uint16(v), kind: Kind(v[2]), ttl: time.Duration(binary.BigEndian.Uint64(v[3:]))}
		return r, r.kind >= KindValue && r.kind <= KindTimers && r.ttl >= 0
	}
	return registration{}, false
}

// Backend is the keyed state of one subtask.
type Backend struct {
	db      *kv.DB
	opts    Options
	dir     string
	closeMu sync.Mutex // serializes Close
	closed  atomic.Bool
	mu      sync.Mutex
	names   map[string]registration // guarded by mu: the registry
	next    uint16                  // guarded by mu: the next free id
	timers  []*TimerService         // guarded by mu: the services, flushed at each checkpoint

	multiGets, wanted, read, deduped, hits, unplanned, expired, commits, writes atomic.Uint64
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxKeyGroups < 0 || o.MaxKeyGroups > 0xFFFF {
		return o, fmt.Errorf("state: MaxKeyGroups %d is not in 1..65535", o.MaxKeyGroups)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	o.KV.DisableWAL = true
	if o.KV.BloomBitsPerKey == 0 {
		o.KV.BloomBitsPerKey = DefaultBloomBitsPerKey
	}
	return o, nil
}

// registryKey is the record of a state name; metaKey the last
// checkpoint's metadata.
func registryKey(name string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, internalID), append([]byte("name/"), name...)...)
}

var metaKey = append(binary.BigEndian.AppendUint16(nil, internalID), "checkpoint-meta"...)

// keyGroupsKey records MaxKeyGroups (2 bytes, big endian).
var keyGroupsKey = append(binary.BigEndian.AppendUint16(nil, internalID), "max-key-groups"...)

// Open opens (creating it if needed) the state in dir.
func Open(dir string, opts Options) (*Backend, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	db, err := kv.Open(dir, opts.KV)
	if err != nil {
		return nil, fmt.Errorf("state: %w", err)
	}
	b := &Backend{db: db, opts: opts, dir: dir, names: map[string]registration{}}
	if err := b.open(); err != nil {
		db.Close()
		return nil, err
	}
	return b, nil
}

// open reads the registry and settles the number of key groups.
func (b *Backend) open() error {
	prefix := registryKey("")
	it := b.db.NewIterator(prefix, append(binary.BigEndian.AppendUint16(nil, internalID), "name0"...))
	for it.Next() {
		name := string(it.Key()[len(prefix):])
		r, ok := decodeRegistration(it.Value())
		if !ok {
			it.Close()
			return fmt.Errorf("state: %w", &ringstore.CorruptError{Path: b.dir, Offset: -1, What: fmt.Sprintf("the registry record of %q is damaged (%d bytes: %x)", name, len(it.Value()), it.Value())})
		}
		b.names[name] = r
		b.next = max(b.next, r.id+1)
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		return fmt.Errorf("state: %s: reading the registry: %w", b.dir, err)
	}
	v, err := b.db.Get(keyGroupsKey)
	switch {
	case err == nil && len(v) == 2:
		recorded := int(binary.BigEndian.Uint16(v))
		if b.opts.MaxKeyGroups != 0 && b.opts.MaxKeyGroups != recorded {
			return fmt.Errorf("%w: %s was made with %d key groups, opened with MaxKeyGroups %d", ErrIncompatible, b.dir, recorded, b.opts.MaxKeyGroups)
		}
		b.opts.MaxKeyGroups = recorded
	case err == nil:
		return fmt.Errorf("state: %w", &ringstore.CorruptError{Path: b.dir, Offset: -1, What: fmt.Sprintf("the record of the key-group count is damaged (%d bytes: %x)", len(v), v)})
	case !errors.Is(err, kv.ErrNotFound):
		return fmt.Errorf("state: %s: reading the key-group count: %w", b.dir, err)
	default:
		if b.opts.MaxKeyGroups == 0 {
			b.opts.MaxKeyGroups = 128
		}
		if !b.opts.KV.ReadOnly {
			if err := b.db.Put(keyGroupsKey, binary.BigEndian.AppendUint16(nil, uint16(b.opts.MaxKeyGroups))); err != nil {
				return fmt.Errorf("state: %s: recording the key-group count: %w", b.dir, err)
			}
		}
	}
	return nil
}

// MaxKeyGroups is the number of key groups the state was made with.
func (b *Backend) MaxKeyGroups() int { return b.opts.MaxKeyGroups }

// Close flushes the state (the store has no log) and closes it. Every
// call after it returns ErrClosed.
func (b *Backend) Close() error {
	b.closeMu.Lock()
	defer b.closeMu.Unlock()
	if b.closed.Load() {
		return ErrClosed
	}
	err := b.flushTimers()
	b.closed.Store(true)
	return errors.Join(err, b.db.Close())
}

// DB returns the store under the backend, for its statistics.
func (b *Backend) DB() *kv.DB { return b.db }

// Stats returns the backend's counters.
func (b *Backend) Stats() Stats {
	return Stats{MultiGets: b.multiGets.Load(), KeysWanted: b.wanted.Load(), KeysRead: b.read.Load(), Deduped: b.deduped.Load(),
		CacheHits: b.hits.Load(), Unplanned: b.unplanned.Load(), Expired: b.expired.Load(), Commits: b.commits.Load(),
		Writes: b.writes.Load(), KV: b.db.Stats()}
}

// register returns the id of the state name, assigning (and recording) one
// with its kind and TTL the first time; a name registered before with
// another kind or TTL is ErrIncompatible.
func (b *Backend) register(name string, kind Kind, ttl time.Duration) (uint16, error) {
	if b.closed.Load() {
		return 0, ErrClosed
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	r, ok := b.names[name]
	if ok && r.kind != kindUnrecorded {
		if r.kind != kind || r.ttl != ttl {
			return 0, fmt.Errorf("%w: %q is a %s state with TTL %s, registered again as a %s state with TTL %s", ErrIncompatible, name, r.kind, r.ttl, kind, ttl)
		}
		return r.id, nil
	}
	if !ok {
		if b.next == internalID {
			return 0, fmt.Errorf("state: too many states (%d)", internalID)
		}
		r.id = b.next
	}
	r.kind, r.ttl = kind, ttl
	if err := b.db.Put(registryKey(name), r.encode()); err != nil {
		return 0, fmt.Errorf("state: registering %q: %w", name, b.wrapClosed(err))
	}
	b.names[name] = r
	if !ok {
		b.next = r.id + 1
	}
	return r.id, nil
}

// flushTimers writes the timer services' changes into the store.
func (b *Backend) flushTimers() error {
	b.mu.Lock()
	services := b.timers
	b.mu.Unlock()
	for _, s := range services {
		if err := s.flush(); err != nil {
			return err
		}
	}
	return nil
}

// wrapClosed returns ErrClosed for a store closed under a call.
func (b *Backend) wrapClosed(err error) error {
	if errors.Is(err, kv.ErrClosed) {
		return errors.Join(ErrClosed, err)
	}
	return err
}

// Checkpoint writes a checkpoint of the state to dir, which must not
// exist, with meta (the operator's input position) recorded in it: every
// batch committed before the call, and the tables unchanged since the last
// checkpoint hard-linked, not copied. The checkpoint is built beside dir
// under a hidden name (PartialCheckpoint) and renamed to dir when it is
// whole and synced, so dir is a complete checkpoint or is not there; a
// crash leaves at most the hidden one, which the next Checkpoint to dir
// replaces.
//
// ctx bounds the waits of the store's writes and flush behind a write
// stall (kv.DB.WriteContext, kv.DB.Checkpoint): when it is done Checkpoint
// returns ctx.Err() (wrapped), and dir is not there.
func (b *Backend) Checkpoint(ctx context.Context, dir string, meta []byte) error {
	if b.closed.Load() {
		return ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("state: checkpoint: %w", err)
	}
	if _, err := os.Lstat(dir); err == nil {
		return fmt.Errorf("state: checkpoint: %s already exists", dir)
	}
	partial := PartialCheckpoint(dir)
	if err := os.RemoveAll(partial); err != nil {
		return fmt.Errorf("state: checkpoint: removing what a crash left: %w", err)
	}
	if err := b.flushTimers(); err != nil {
		return fmt.Errorf("state: checkpoint: the timers: %w", err)
	}
	var mb kv.Batch
	mb.Put(metaKey, meta)
	if err := b.db.WriteContext(ctx, &mb); err != nil {
		return fmt.Errorf("state: checkpoint: %w", b.wrapClosed(err))
	}
	if err := b.db.Checkpoint(ctx, partial); err != nil {
		return fmt.Errorf("state: checkpoint: %w", b.wrapClosed(err))
	}
	if err := os.Rename(partial, dir); err != nil {
		return fmt.Errorf("state: checkpoint: %w", err)
	}
	if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		return fmt.Errorf("state: checkpoint: %w", err)
	}
	return nil
}

// PartialCheckpoint is where Checkpoint builds the checkpoint it renames
// to dir: a hidden sibling of dir. Only a crash during a Checkpoint leaves
// one.
func PartialCheckpoint(dir string) string {
	return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".partial")
}

// IsCheckpoint says whether dir holds a whole checkpoint (its store's
// manifest is written last).
func IsCheckpoint(dir string) bool { return kv.IsCheckpoint(dir) }

// Restore makes dir (which must not exist) a copy of the checkpoint in
// checkpointDir — its files hard-linked — opens it, and returns it with the
// meta the checkpoint recorded.
func Restore(checkpointDir, dir string, opts Options) (*Backend, []byte, error) {
	if err := kv.CloneCheckpoint(checkpointDir, dir); err != nil {
		return nil, nil, fmt.Errorf("state: restore: %w", err)
	}
	b, err := Open(dir, opts)
	if err != nil {
		return nil, nil, err
	}
	meta, err := b.db.Get(metaKey)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		b.Close()
		return nil, nil, fmt.Errorf("state: restore: the checkpoint's meta: %w", err)
	}
	return b, meta, nil
}
