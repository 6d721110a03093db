package kv

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// config is one store configuration the model tests run.
type config struct {
	name string
	mode ioengine.IOMode
	opts Options
}

func configs() []config {
	tiny := Options{MemtableSize: 64 << 10, L0CompactionTrigger: 2, L0StopWritesTrigger: 6,
		BaseLevelSize: 128 << 10, TargetFileSize: 64 << 10, LevelMultiplier: 4, CacheSize: 256 << 10, Unsafe: UnsafeOptions{NoSync: true}}
	nocache := tiny
	nocache.NoBlockCache = true
	buffered := tiny
	buffered.BufferedIO = true
	return []config{
		{"uring-cache", ioengine.URing, tiny},
		{"uring-nocache", ioengine.URing, nocache},
		{"syscall-cache", ioengine.Syscall, tiny},
		{"syscall-nocache", ioengine.Syscall, nocache},
		{"uring-buffered", ioengine.URing, buffered},
		{"uring-large", ioengine.URing, Options{Unsafe: UnsafeOptions{NoSync: true}, CacheSize: 1 << 20}}, // default memtable and levels: the tables come only from Flush
	}
}

func openTest(t testing.TB, dir string, c config) *DB {
	t.Helper()
	opts := c.opts
	if opts.Engine == nil {
		opts.Engine = testengine.New(t, c.mode, ioengine.Options{})
	}
	opts.Logf = t.Logf
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	return db
}

// crashOptions are the crash test's store options (in the child and in the
// parent's reopen) and the checkpoint test's: a small memtable and levels so that flushes and compactions run
// while the child is killed.
func crashOptions() Options {
	return Options{MemtableSize: 128 << 10, L0CompactionTrigger: 2, L0StopWritesTrigger: 8,
		BaseLevelSize: 256 << 10, TargetFileSize: 64 << 10, LevelMultiplier: 4, CacheSize: 256 << 10}
}

// model is the map the store must agree with.
type model map[string][]byte

func (m model) clone() model {
	c := make(model, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func keyOf(i int) []byte { return []byte(fmt.Sprintf("key%06d", i)) }

func valueOf(r *rand.Rand) []byte {
	v := make([]byte, r.IntN(300))
	for i := range v {
		v[i] = byte(r.Uint32())
	}
	return v
}

// checkAgainst compares every read path with m: Get per key, MultiGet of
// random batches (equal to the Get loop) and a full iteration.
func checkAgainst(t *testing.T, db *DB, m model, r *rand.Rand, ro ReadOptions, nkeys int) {
	t.Helper()
	batch := make([][]byte, 0, 64)
	for i := 0; i < 64; i++ {
		batch = append(batch, keyOf(r.IntN(nkeys)))
	}
	vals, found, err := db.MultiGetWith(ro, batch)
	if err != nil {
		t.Fatalf("MultiGet: %v", err)
	}
	for i, k := range batch {
		want, ok := m[string(k)]
		if found[i] != ok || !bytes.Equal(vals[i], want) {
			t.Fatalf("MultiGet %s: found=%v %x, model found=%v %x", k, found[i], vals[i], ok, want)
		}
		if i%4 != 0 {
			continue // Get a quarter of the batch: MultiGet is the path under test
		}
		got, err := db.GetWith(ro, k)
		if ok != (err == nil) || (err != nil && !errors.Is(err, ErrNotFound)) || !bytes.Equal(got, want) {
			t.Fatalf("Get %s: %x, %v; model found=%v %x", k, got, err, ok, want)
		}
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	lo := keyOf(r.IntN(nkeys))
	hi := keyOf(r.IntN(nkeys))
	if bytes.Compare(lo, hi) > 0 {
		lo, hi = hi, lo
	}
	if r.IntN(4) == 0 {
		lo, hi = nil, nil
	}
	it := db.NewIteratorWith(ro, lo, hi)
	i := sort.SearchStrings(keys, string(lo))
	for n := 0; n < 300 && it.Next(); n++ {
		if i >= len(keys) || (hi != nil && keys[i] >= string(hi)) {
			t.Fatalf("iterator [%s,%s): extra key %s", lo, hi, it.Key())
		}
		if string(it.Key()) != keys[i] || !bytes.Equal(it.Value(), m[keys[i]]) {
			t.Fatalf("iterator [%s,%s): got %s=%x, want %s=%x", lo, hi, it.Key(), it.Value(), keys[i], m[keys[i]])
		}
		i++
	}
	if err := it.Close(); err != nil {
		t.Fatalf("iterator: %v", err)
	}
	if n := i - sort.SearchStrings(keys, string(lo)); n < 300 && i < len(keys) && (hi == nil || keys[i] < string(hi)) {
		t.Fatalf("iterator [%s,%s): stopped before %s", lo, hi, keys[i])
	}
}

func TestModel(t *testing.T) {
	for _, c := range configs() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := testdir.Direct(t)
			r := rand.New(rand.NewPCG(1, uint64(len(c.name))))
			db := openTest(t, dir, c)
			m := model{}
			const nkeys = 2000
			type snap struct {
				s *Snapshot
				m model
			}
			var snaps []snap
			var flushes, compactions uint64
			steps := 1500
			if testing.Short() {
				steps = 1500
			}
			for step := 0; step < steps; step++ {
				switch op := r.IntN(100); {
				case op < 55:
					var b Batch
					for n := 1 + r.IntN(8); n > 0; n-- {
						k := keyOf(r.IntN(nkeys))
						if r.IntN(5) == 0 {
							b.Delete(k)
							delete(m, string(k))
						} else {
							v := valueOf(r)
							b.Put(k, v)
							m[string(k)] = v
						}
					}
					if err := db.Write(&b); err != nil {
						t.Fatal(err)
					}
				case op < 75:
					checkAgainst(t, db, m, r, ReadOptions{NoFillCache: r.IntN(3) == 0}, nkeys)
				case op < 83:
					snaps = append(snaps, snap{db.NewSnapshot(), m.clone()})
				case op < 88 && len(snaps) > 0:
					i := r.IntN(len(snaps))
					checkAgainst(t, db, snaps[i].m, r, ReadOptions{Snapshot: snaps[i].s}, nkeys)
					if r.IntN(2) == 0 {
						snaps[i].s.Close()
						snaps = append(snaps[:i], snaps[i+1:]...)
					}
				case op < 90:
					if err := db.Flush(); err != nil {
						t.Fatal(err)
					}
				case op < 91:
					if err := db.Compact(); err != nil {
						t.Fatal(err)
					}
				case op < 92:
					for _, s := range snaps {
						s.s.Close()
					}
					snaps = nil
					st := db.Stats()
					flushes += st.Flushes
					compactions += st.Compactions + st.TrivialMoves
					if err := db.Close(); err != nil {
						t.Fatal(err)
					}
					db = openTest(t, dir, c)
				}
			}
			for _, s := range snaps {
				checkAgainst(t, db, s.m, r, ReadOptions{Snapshot: s.s}, nkeys)
				s.s.Close()
			}
			checkAgainst(t, db, m, r, ReadOptions{}, nkeys)
			st := db.Stats()
			t.Logf("%s", st)
			flushes += st.Flushes
			compactions += st.Compactions + st.TrivialMoves
			if c.opts.MemtableSize != 0 && (flushes == 0 || compactions == 0) {
				t.Errorf("the tiny configuration flushed %d times and compacted %d: the test did not reach the tables", flushes, compactions)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
