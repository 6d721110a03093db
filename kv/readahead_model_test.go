package kv

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/internal/testengine"
	"github.com/ringstore/ringstore/ioengine"
)

// TestReadAheadModel runs read aheads against a map: writes and deletions
// of random keys, flushes (by size and asked for) and compactions happen
// while up to four read aheads are open, as a stream processor's batches
// read ahead do, and each read ahead's MultiGet, made when it is the
// oldest, must return what the map holds then. It checks the rules that
// let a MultiGet take what its read ahead found across flushes and
// compactions (ReadAhead.sinceFlushed, holdsAcross).
func TestReadAheadModel(t *testing.T) {
	for seed := uint64(1); seed <= 3; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { testReadAheadModel(t, seed) })
	}
}

func testReadAheadModel(t *testing.T, seed uint64) {
	eng := testengine.New(t, ioengine.URing, ioengine.Options{})
	if eng.Backend() != ioengine.BackendURing {
		t.Skip("io_uring refused: read aheads do nothing")
	}
	// Small memtables and levels, so that flushes and compactions come
	// between a read ahead and its MultiGet; a cache of 32 frames, so that
	// read aheads read past it.
	db, err := Open(testdir.Direct(t), Options{Engine: eng, Unsafe: UnsafeOptions{NoSync: true}, Logf: t.Logf,
		MemtableSize: 64 << 10, L0CompactionTrigger: 2, L0StopWritesTrigger: 6, BaseLevelSize: 128 << 10,
		TargetFileSize: 64 << 10, LevelMultiplier: 4, CacheSize: 128 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(seed, 7))
	const keySpace = 3000
	model := map[string]string{}
	key := func() []byte { return []byte(fmt.Sprintf("k%06d", rng.IntN(keySpace))) }
	type open struct {
		keys [][]byte
		ra   *ReadAhead
	}
	var opens []open
	defer func() {
		for _, o := range opens {
			o.ra.Done()
		}
	}()
	var taken uint64
	for step := 0; step < 600; step++ {
		var b Batch
		for range 1 + rng.IntN(40) {
			k := key()
			if rng.IntN(8) == 0 {
				b.Delete(k)
				delete(model, string(k))
			} else {
				v := fmt.Sprintf("%s@%d-%0*d", k, step, rng.IntN(200), 0)
				b.Put(k, []byte(v))
				model[string(k)] = v
			}
		}
		if err := db.Write(&b); err != nil {
			t.Fatal(err)
		}
		switch rng.IntN(20) {
		case 0:
			err = db.Flush()
		case 1:
			err = db.Compact()
		}
		if err != nil {
			t.Fatal(err)
		}
		keys := make([][]byte, 1+rng.IntN(60))
		for i := range keys {
			keys[i] = key()
		}
		opens = append(opens, open{keys, db.ReadAhead(keys)})
		if len(opens) < 4 {
			continue
		}
		o := opens[0]
		opens = opens[1:]
		before := db.Stats().ReadAheadLookups
		vals, found, err := db.MultiGetWith(ReadOptions{ReadAhead: o.ra}, o.keys)
		o.ra.Done()
		if err != nil {
			t.Fatal(err)
		}
		taken += db.Stats().ReadAheadLookups - before
		for i, k := range o.keys {
			want, ok := model[string(k)]
			if found[i] != ok || string(vals[i]) != want {
				t.Fatalf("step %d: %s = %.30q (found %v), want %.30q (found %v)", step, k, vals[i], found[i], want, ok)
			}
		}
	}
	st := db.Stats()
	if taken == 0 || st.Flushes == 0 || st.Compactions == 0 {
		t.Fatalf("%d keys taken from read aheads, %d flushes, %d compactions: the test did not exercise them", taken, st.Flushes, st.Compactions)
	}
	t.Logf("%d keys taken from read aheads; %d flushes, %d compactions", taken, st.Flushes, st.Compactions)
}
