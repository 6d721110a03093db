package kvpeers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/magiconair/properties"
	"github.com/pingcap/go-ycsb/pkg/util"
	"github.com/pingcap/go-ycsb/pkg/ycsb"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

// YCSBModule is go-ycsb's module.
const YCSBModule = "github.com/pingcap/go-ycsb"

// Properties of the bindings (besides go-ycsb's own).
const (
	PropDir     = "kv.dir"            // the store's directory
	PropCacheMB = "kv.cache_mb"       // block cache MiB (default 64)
	PropIOMode  = "ringstore.io_mode" // ringstore's backend: auto, uring or syscall (default auto)
	PropSync    = "kv.sync"           // make every write durable (default false: both stores write without syncing)
)

// Names the bindings are registered under with go-ycsb.
const (
	DBRingstore = "ringstore"
	DBPebble    = "pebble"
)

func init() {
	ycsb.RegisterDBCreator(DBRingstore, ringstoreCreator{})
	ycsb.RegisterDBCreator(DBPebble, pebbleCreator{})
}

// Counter is implemented by both bindings: the keys their operations
// touched (a scan counts one, a batch one per key), and the operations that
// failed (a key that is not there included), which go-ycsb only prints.
type Counter interface {
	Ops() int64
	Errors() int64
}

func rowKey(table, key string) []byte { return []byte(table + ":" + key) }

// merge returns the fields of an existing row (nil when there is none) with
// values written over them: a YCSB update changes some fields of a record.
func merge(codec *util.RowCodec, old []byte, values map[string][]byte) ([]byte, error) {
	row := map[string][]byte{}
	if old != nil {
		m, err := codec.Decode(old, nil)
		if err != nil {
			return nil, err
		}
		row = m
	}
	maps.Copy(row, values)
	return codec.Encode(nil, row)
}

// ---- ringstore ----

type ringstoreCreator struct{}

func (ringstoreCreator) Create(p *properties.Properties) (ycsb.DB, error) {
	dir := p.GetString(PropDir, "")
	if dir == "" {
		return nil, fmt.Errorf("ringstore: property %s is not set", PropDir)
	}
	mode, err := ioengine.ParseIOMode(p.GetString(PropIOMode, "auto"))
	if err != nil {
		return nil, err
	}
	db, err := kv.Open(dir, kv.Options{CacheSize: p.GetInt64(PropCacheMB, 64) << 20, IOMode: mode, Unsafe: kv.UnsafeOptions{NoSync: !p.GetBool(PropSync, false)}, Logf: func(string, ...any) {}})
	if err != nil {
		return nil, err
	}
	return &ringstoreDB{db: db, codec: util.NewRowCodec(p)}, nil
}

// ringstoreDB is a ycsb.DB and ycsb.BatchDB over kv; BatchRead is one
// MultiGet.
type ringstoreDB struct {
	ops   atomic.Int64
	db    *kv.DB
	codec *util.RowCodec
	errs  atomic.Int64
}

func (d *ringstoreDB) count(err error) error {
	if err != nil {
		d.errs.Add(1)
	}
	return err
}

func (d *ringstoreDB) Errors() int64 { return d.errs.Load() }
func (d *ringstoreDB) Ops() int64    { return d.ops.Load() }
func (d *ringstoreDB) Close() error  { return d.db.Close() }
func (d *ringstoreDB) InitThread(ctx context.Context, _, _ int) context.Context {
	return ctx
}
func (d *ringstoreDB) CleanupThread(context.Context) {}

func (d *ringstoreDB) Read(_ context.Context, table, key string, fields []string) (map[string][]byte, error) {
	d.ops.Add(1)
	v, err := d.db.Get(rowKey(table, key))
	if err != nil {
		return nil, d.count(err)
	}
	m, err := d.codec.Decode(v, fields)
	return m, d.count(err)
}

func (d *ringstoreDB) Scan(_ context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	d.ops.Add(1)
	it := d.db.NewIterator(rowKey(table, startKey), []byte(table+";")) // ';' follows ':'
	var rows []map[string][]byte
	for len(rows) < count && it.Next() {
		m, err := d.codec.Decode(append([]byte(nil), it.Value()...), fields)
		if err != nil {
			it.Close()
			return nil, d.count(err)
		}
		rows = append(rows, m)
	}
	err := errors.Join(it.Err(), it.Close())
	return rows, d.count(err)
}

func (d *ringstoreDB) Update(_ context.Context, table, key string, values map[string][]byte) error {
	d.ops.Add(1)
	k := rowKey(table, key)
	old, err := d.db.Get(k)
	if err != nil && !errors.Is(err, kv.ErrNotFound) {
		return d.count(err)
	}
	row, err := merge(d.codec, old, values)
	if err != nil {
		return d.count(err)
	}
	return d.count(d.db.Put(k, row))
}

func (d *ringstoreDB) Insert(_ context.Context, table, key string, values map[string][]byte) error {
	d.ops.Add(1)
	row, err := d.codec.Encode(nil, values)
	if err != nil {
		return d.count(err)
	}
	return d.count(d.db.Put(rowKey(table, key), row))
}

func (d *ringstoreDB) Delete(_ context.Context, table, key string) error {
	d.ops.Add(1)
	return d.count(d.db.Delete(rowKey(table, key)))
}

func (d *ringstoreDB) BatchRead(_ context.Context, table string, keys []string, fields []string) ([]map[string][]byte, error) {
	d.ops.Add(int64(len(keys)))
	ks := make([][]byte, len(keys))
	for i, k := range keys {
		ks[i] = rowKey(table, k)
	}
	vals, found, err := d.db.MultiGet(ks)
	if err != nil {
		return nil, d.count(err)
	}
	rows := make([]map[string][]byte, len(keys))
	for i := range keys {
		if !found[i] {
			d.errs.Add(1)
			continue
		}
		if rows[i], err = d.codec.Decode(vals[i], fields); err != nil {
			return nil, d.count(err)
		}
	}
	return rows, nil
}

func (d *ringstoreDB) BatchInsert(_ context.Context, table string, keys []string, values []map[string][]byte) error {
	d.ops.Add(int64(len(keys)))
	var b kv.Batch
	for i, k := range keys {
		row, err := d.codec.Encode(nil, values[i])
		if err != nil {
			return d.count(err)
		}
		b.Put(rowKey(table, k), row)
	}
	return d.count(d.db.Write(&b))
}

func (d *ringstoreDB) BatchUpdate(_ context.Context, table string, keys []string, values []map[string][]byte) error {
	d.ops.Add(int64(len(keys)))
	ks := make([][]byte, len(keys))
	for i, k := range keys {
		ks[i] = rowKey(table, k)
	}
	old, found, err := d.db.MultiGet(ks)
	if err != nil {
		return d.count(err)
	}
	var b kv.Batch
	for i := range keys {
		var o []byte
		if found[i] {
			o = old[i]
		}
		row, err := merge(d.codec, o, values[i])
		if err != nil {
			return d.count(err)
		}
		b.Put(ks[i], row)
	}
	return d.count(d.db.Write(&b))
}

func (d *ringstoreDB) BatchDelete(_ context.Context, table string, keys []string) error {
	d.ops.Add(int64(len(keys)))
	var b kv.Batch
	for _, k := range keys {
		b.Delete(rowKey(table, k))
	}
	return d.count(d.db.Write(&b))
}

// ---- Pebble ----

type pebbleCreator struct{}

func (pebbleCreator) Create(p *properties.Properties) (ycsb.DB, error) {
	dir := p.GetString(PropDir, "")
	if dir == "" {
		return nil, fmt.Errorf("pebble: property %s is not set", PropDir)
	}
	db, err := OpenPebble(dir, p.GetInt64(PropCacheMB, 64)<<20, false)
	if err != nil {
		return nil, err
	}
	wo := pebble.NoSync
	if p.GetBool(PropSync, false) {
		wo = pebble.Sync
	}
	return &pebbleDB{db: db, wo: wo, codec: util.NewRowCodec(p)}, nil
}

// pebbleDB is a ycsb.DB and ycsb.BatchDB over Pebble, which has no batched
// read: BatchRead is a loop of Get.
type pebbleDB struct {
	ops   atomic.Int64
	db    *pebble.DB
	wo    *pebble.WriteOptions
	codec *util.RowCodec
	errs  atomic.Int64
}

func (d *pebbleDB) count(err error) error {
	if err != nil {
		d.errs.Add(1)
	}
	return err
}

func (d *pebbleDB) Errors() int64 { return d.errs.Load() }
func (d *pebbleDB) Ops() int64    { return d.ops.Load() }
func (d *pebbleDB) Close() error  { return d.db.Close() }
func (d *pebbleDB) InitThread(ctx context.Context, _, _ int) context.Context {
	return ctx
}
func (d *pebbleDB) CleanupThread(context.Context) {}

// get returns a copy of the value of k, or nil and pebble.ErrNotFound.
func (d *pebbleDB) get(k []byte) ([]byte, error) {
	v, closer, err := d.db.Get(k)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	return out, closer.Close()
}

func (d *pebbleDB) Read(_ context.Context, table, key string, fields []string) (map[string][]byte, error) {
	d.ops.Add(1)
	v, err := d.get(rowKey(table, key))
	if err != nil {
		return nil, d.count(err)
	}
	m, err := d.codec.Decode(v, fields)
	return m, d.count(err)
}

func (d *pebbleDB) Scan(_ context.Context, table, startKey string, count int, fields []string) ([]map[string][]byte, error) {
	d.ops.Add(1)
	it, err := d.db.NewIter(&pebble.IterOptions{LowerBound: rowKey(table, startKey), UpperBound: []byte(table + ";")})
	if err != nil {
		return nil, d.count(err)
	}
	var rows []map[string][]byte
	for ok := it.First(); ok && len(rows) < count; ok = it.Next() {
		m, err := d.codec.Decode(append([]byte(nil), it.Value()...), fields)
		if err != nil {
			it.Close()
			return nil, d.count(err)
		}
		rows = append(rows, m)
	}
	err = errors.Join(it.Error(), it.Close())
	return rows, d.count(err)
}

func (d *pebbleDB) Update(_ context.Context, table, key string, values map[string][]byte) error {
	d.ops.Add(1)
	k := rowKey(table, key)
	old, err := d.get(k)
	if err != nil && !errors.Is(err, pebble.ErrNotFound) {
		return d.count(err)
	}
	row, err := merge(d.codec, old, values)
	if err != nil {
		return d.count(err)
	}
	return d.count(d.db.Set(k, row, d.wo))
}

func (d *pebbleDB) Insert(_ context.Context, table, key string, values map[string][]byte) error {
	d.ops.Add(1)
	row, err := d.codec.Encode(nil, values)
	if err != nil {
		return d.count(err)
	}
	return d.count(d.db.Set(rowKey(table, key), row, d.wo))
}

func (d *pebbleDB) Delete(_ context.Context, table, key string) error {
	d.ops.Add(1)
	return d.count(d.db.Delete(rowKey(table, key), d.wo))
}

func (d *pebbleDB) BatchRead(_ context.Context, table string, keys []string, fields []string) ([]map[string][]byte, error) {
	d.ops.Add(int64(len(keys)))
	rows := make([]map[string][]byte, len(keys))
	for i, k := range keys {
		v, err := d.get(rowKey(table, k))
		if errors.Is(err, pebble.ErrNotFound) {
			d.errs.Add(1)
			continue
		}
		if err != nil {
			return nil, d.count(err)
		}
		if rows[i], err = d.codec.Decode(v, fields); err != nil {
			return nil, d.count(err)
		}
	}
	return rows, nil
}

func (d *pebbleDB) BatchInsert(_ context.Context, table string, keys []string, values []map[string][]byte) error {
	d.ops.Add(int64(len(keys)))
	b := d.db.NewBatch()
	defer b.Close()
	for i, k := range keys {
		row, err := d.codec.Encode(nil, values[i])
		if err != nil {
			return d.count(err)
		}
		if err := b.Set(rowKey(table, k), row, nil); err != nil {
			return d.count(err)
		}
	}
	return d.count(b.Commit(d.wo))
}

func (d *pebbleDB) BatchUpdate(_ context.Context, table string, keys []string, values []map[string][]byte) error {
	d.ops.Add(int64(len(keys)))
	b := d.db.NewBatch()
	defer b.Close()
	for i, k := range keys {
		rk := rowKey(table, k)
		old, err := d.get(rk)
		if err != nil && !errors.Is(err, pebble.ErrNotFound) {
			return d.count(err)
		}
		row, err := merge(d.codec, old, values[i])
		if err != nil {
			return d.count(err)
		}
		if err := b.Set(rk, row, nil); err != nil {
			return d.count(err)
		}
	}
	return d.count(b.Commit(d.wo))
}

func (d *pebbleDB) BatchDelete(_ context.Context, table string, keys []string) error {
	d.ops.Add(int64(len(keys)))
	b := d.db.NewBatch()
	defer b.Close()
	for _, k := range keys {
		if err := b.Delete(rowKey(table, k), nil); err != nil {
			return d.count(err)
		}
	}
	return d.count(b.Commit(d.wo))
}
