package state

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ringstore/ringstore/kv"
)

// Options configure a Backend. The zero value is usable.
type Options struct {
	// MaxKeyGroups is the number of key groups, fixed for the life of the
	// state (it places every key). Default 128, at most 65535.
	MaxKeyGroups int
	// KV configures the store; DisableWAL is always set (package doc).
	KV kv.Options
	// Clock tells the time for TTLs. Default time.Now.
	Clock func() time.Time
}

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

// ErrClosed: the backend was closed.
var ErrClosed = errors.New("state: closed")

// Backend is the keyed state of one subtask.
type Backend struct {
	db    *kv.DB
	opts  Options
	mu    sync.Mutex
	names map[string]uint16 // guarded by mu: the registry
	next  uint16            // guarded by mu: the next free id

	multiGets, wanted, read, deduped, hits, unplanned, expired, commits, writes atomic.Uint64
}

func (o Options) withDefaults() (Options, error) {
	if o.MaxKeyGroups == 0 {
		o.MaxKeyGroups = 128
	}
	if o.MaxKeyGroups < 1 || o.MaxKeyGroups > 0xFFFF {
		return o, fmt.Errorf("state: MaxKeyGroups %d is not in 1..65535", o.MaxKeyGroups)
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	o.KV.DisableWAL = true
	return o, nil
}

// registryKey is the record of a state name; metaKey the last
// checkpoint's metadata.
func registryKey(name string) []byte {
	return append(binary.BigEndian.AppendUint16(nil, internalID), append([]byte("name/"), name...)...)
}

var metaKey = append(binary.BigEndian.AppendUint16(nil, internalID), "checkpoint-meta"...)

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
	b := &Backend{db: db, opts: opts, names: map[string]uint16{}}
	prefix := registryKey("")
	it := db.NewIterator(prefix, append(binary.BigEndian.AppendUint16(nil, internalID), "name0"...))
	for it.Next() {
		if len(it.Value()) != 2 {
			it.Close()
			db.Close()
			return nil, fmt.Errorf("state: %s: the registry record of %q is damaged", dir, it.Key()[len(prefix):])
		}
		id := binary.BigEndian.Uint16(it.Value())
		b.names[string(it.Key()[len(prefix):])] = id
		b.next = max(b.next, id+1)
	}
	if err := errors.Join(it.Err(), it.Close()); err != nil {
		db.Close()
		return nil, fmt.Errorf("state: reading the registry: %w", err)
	}
	return b, nil
}

// Close flushes the state (the store has no log) and closes it.
func (b *Backend) Close() error { return b.db.Close() }

// DB returns the store under the backend, for its statistics.
func (b *Backend) DB() *kv.DB { return b.db }

// Stats returns the backend's counters.
func (b *Backend) Stats() Stats {
	return Stats{MultiGets: b.multiGets.Load(), KeysWanted: b.wanted.Load(), KeysRead: b.read.Load(), Deduped: b.deduped.Load(),
		CacheHits: b.hits.Load(), Unplanned: b.unplanned.Load(), Expired: b.expired.Load(), Commits: b.commits.Load(),
		Writes: b.writes.Load(), KV: b.db.Stats()}
}

// register returns the id of the state name, assigning (and recording) one
// the first time.
func (b *Backend) register(name string) (uint16, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if id, ok := b.names[name]; ok {
		return id, nil
	}
	if b.next == internalID {
		return 0, fmt.Errorf("state: too many states (%d)", internalID)
	}
	id := b.next
	if err := b.db.Put(registryKey(name), binary.BigEndian.AppendUint16(nil, id)); err != nil {
		return 0, fmt.Errorf("state: registering %q: %w", name, err)
	}
	b.names[name], b.next = id, id+1
	return id, nil
}

// Checkpoint writes a checkpoint of the state to dir, which must not
// exist, with meta (the operator's input position) recorded in it: every
// batch committed before the call, and the tables unchanged since the last
// checkpoint hard-linked, not copied.
func (b *Backend) Checkpoint(dir string, meta []byte) error {
	if err := b.db.Put(metaKey, meta); err != nil {
		return fmt.Errorf("state: checkpoint: %w", err)
	}
	if err := b.db.Checkpoint(dir); err != nil {
		return fmt.Errorf("state: checkpoint: %w", err)
	}
	return nil
}

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
