// Package kvpeers holds the peers of `ringstore bench kv`: Pebble, loaded
// and read with the same keys, values, cache size, batches and callers as
// ringstore's kv (the loop is kvbench.Measure), and go-ycsb bindings for
// both stores so that YCSB workloads A–F run against them.
//
// It lives in the bench/peers module so that ringstore's own module never
// depends on Pebble or go-ycsb.
package kvpeers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/bench/kvbench"
)

// quietLogger drops Pebble's informational lines; errors go to stderr
// through the default logger.
type quietLogger struct{}

func (quietLogger) Infof(string, ...any)              {}
func (quietLogger) Errorf(format string, args ...any) { pebble.DefaultLogger.Errorf(format, args...) }
func (quietLogger) Fatalf(format string, args ...any) { pebble.DefaultLogger.Fatalf(format, args...) }

// PebbleOptions returns the options the benchmark opens Pebble with: a
// block cache of cacheSize bytes, 4 KiB blocks, bloom filters of 10 bits
// per key on every level (ringstore's default) and no compression (the
// values are incompressible past their first fields, and ringstore does not
// compress). The caller owns one reference to the returned cache and
// drops it (Unref) once the store is open.
func PebbleOptions(cacheSize int64, readOnly bool) *pebble.Options {
	o := &pebble.Options{
		Cache:        pebble.NewCache(cacheSize),
		Logger:       quietLogger{},
		MemTableSize: 64 << 20,
		ReadOnly:     readOnly,
	}
	for i := range o.Levels {
		o.Levels[i].BlockSize = 4096
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
		o.Levels[i].Compression = func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	return o
}

// OpenPebble opens the store at dir with PebbleOptions.
func OpenPebble(dir string, cacheSize int64, readOnly bool) (*pebble.DB, error) {
	o := PebbleOptions(cacheSize, readOnly)
	db, err := pebble.Open(dir, o)
	o.Cache.Unref()
	return db, err
}

// RunTrial is the peers' child: it loads or reads Pebble as the config
// says.
func RunTrial(raw json.RawMessage) (bench.Trial, error) {
	c, err := kvbench.ParseConfig(raw)
	if err != nil {
		return bench.Trial{}, err
	}
	if c.System != kvbench.SystemPebble {
		return bench.Trial{}, fmt.Errorf("unknown peer %q", c.System)
	}
	if err := kvbench.StartChild(c); err != nil {
		return bench.Trial{}, err
	}
	if c.Mode == kvbench.ModeLoad {
		return Load(c)
	}
	return Read(c)
}

// Load writes the data set into a new Pebble store at c.Dir in batches of
// kvbench.LoadBatch without syncing, then flushes and compacts the whole
// key range, and closes it.
func Load(c kvbench.ChildConfig) (bench.Trial, error) {
	t0 := time.Now()
	db, err := OpenPebble(c.Dir, c.CacheSize, false)
	if err != nil {
		return bench.Trial{}, err
	}
	b := db.NewBatch()
	var kbuf, vbuf []byte
	for i := range c.Keys {
		kbuf, vbuf = kvbench.AppendKey(kbuf[:0], i), kvbench.AppendValue(vbuf[:0], i)
		if err := b.Set(kbuf, vbuf, nil); err != nil {
			db.Close()
			return bench.Trial{}, err
		}
		if int(b.Count()) == kvbench.LoadBatch || i == c.Keys-1 {
			if err := b.Commit(pebble.NoSync); err != nil {
				db.Close()
				return bench.Trial{}, fmt.Errorf("commit batch ending at key %d: %w", i, err)
			}
			b.Close()
			b = db.NewBatch()
		}
	}
	b.Close()
	if err := db.Flush(); err != nil {
		db.Close()
		return bench.Trial{}, fmt.Errorf("flush: %w", err)
	}
	if err := db.Compact(context.Background(), []byte("user"), []byte("user\xff"), true); err != nil {
		db.Close()
		return bench.Trial{}, fmt.Errorf("compact: %w", err)
	}
	m := db.Metrics()
	if err := db.Close(); err != nil {
		return bench.Trial{}, fmt.Errorf("close: %w", err)
	}
	tr := bench.Trial{Ops: int64(c.Keys), Seconds: time.Since(t0).Seconds(), Extra: map[string]float64{kvbench.XLoadKeys: float64(c.Keys)}}
	if n, err := kvbench.DirBytes(c.Dir); err == nil {
		tr.Extra[kvbench.XDiskBytes] = float64(n)
	}
	for l := range m.Levels {
		if n := m.Levels[l].TablesCount; n > 0 {
			tr.Extra[fmt.Sprintf("level%d_tables", l)] = float64(n)
			tr.Extra[fmt.Sprintf("level%d_bytes", l)] = float64(m.Levels[l].TablesSize)
		}
	}
	return tr, nil
}

// Read opens the store at c.Dir read-only, in this fresh process with an
// empty block cache (the parent dropped the page cache before it started),
// and measures c.Mode: a serial Get loop over each batch, or the batch's
// Gets on as many goroutines as keys.
func Read(c kvbench.ChildConfig) (bench.Trial, error) {
	db, err := OpenPebble(c.Dir, c.CacheSize, true)
	if err != nil {
		return bench.Trial{}, err
	}
	defer db.Close()
	get := func(k []byte, idx uint64) error {
		v, closer, err := db.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return kvbench.Check(k, idx, nil, false)
		}
		if err != nil {
			return err
		}
		err = kvbench.Check(k, idx, v, true)
		closer.Close()
		return err
	}
	counters := func() map[string]float64 {
		m := db.Metrics()
		return map[string]float64{kvbench.XCacheHits: float64(m.BlockCache.Hits), kvbench.XCacheMisses: float64(m.BlockCache.Misses)}
	}
	var read kvbench.BatchFunc
	switch c.Mode {
	case kvbench.ModeGetSerial:
		read = func(_ int, keys [][]byte, idx []uint64) error {
			for i, k := range keys {
				if err := get(k, idx[i]); err != nil {
					return err
				}
			}
			return nil
		}
	case kvbench.ModeGetParallel:
		fanouts := make([]*kvbench.Fanout, c.Callers)
		for g := range fanouts {
			fanouts[g] = kvbench.NewFanout(c.Batch, func(_ int, k []byte, idx uint64) error { return get(k, idx) })
			defer fanouts[g].Close()
		}
		read = func(g int, keys [][]byte, idx []uint64) error { return fanouts[g].Do(keys, idx) }
	default:
		return bench.Trial{}, fmt.Errorf("unknown pebble mode %q", c.Mode)
	}
	return kvbench.Measure(c, read, counters)
}
