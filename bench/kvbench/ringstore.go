package kvbench

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

// LoadBatch is the number of keys per write batch when loading.
const LoadBatch = 1000

// ringstoreLoad writes the data set into a new store at c.Dir (Unsafe.NoSync: a
// bulk load), flushes it and compacts until no compaction is needed, and
// closes it, so that every trial starts from the same settled tree of SSTs
// and an empty memtable.
func ringstoreLoad(c ChildConfig) (bench.Trial, error) {
	t0 := time.Now()
	db, err := kv.Open(c.Dir, kv.Options{CacheSize: c.CacheSize, Unsafe: kv.UnsafeOptions{NoSync: true}, Logf: quietLogf})
	if err != nil {
		return bench.Trial{}, err
	}
	b := new(kv.Batch)
	var kbuf, vbuf []byte
	for i := range c.Keys {
		kbuf, vbuf = AppendKey(kbuf[:0], i), AppendValue(vbuf[:0], i)
		b.Put(kbuf, vbuf)
		if b.Len() == LoadBatch || i == c.Keys-1 {
			if err := db.Write(b); err != nil {
				db.Close()
				return bench.Trial{}, fmt.Errorf("write batch ending at key %d: %w", i, err)
			}
			b.Reset()
		}
	}
	if err := db.Flush(); err != nil {
		db.Close()
		return bench.Trial{}, fmt.Errorf("flush: %w", err)
	}
	if err := db.Compact(); err != nil {
		db.Close()
		return bench.Trial{}, fmt.Errorf("compact: %w", err)
	}
	st := db.Stats()
	if err := db.Close(); err != nil {
		return bench.Trial{}, fmt.Errorf("close: %w", err)
	}
	tr := bench.Trial{Ops: int64(c.Keys), Seconds: time.Since(t0).Seconds(), Extra: map[string]float64{XLoadKeys: float64(c.Keys)}}
	if n, err := DirBytes(c.Dir); err == nil {
		tr.Extra[XDiskBytes] = float64(n)
	}
	for l, ls := range st.Levels {
		if ls.Tables > 0 {
			tr.Extra[fmt.Sprintf("level%d_tables", l)] = float64(ls.Tables)
			tr.Extra[fmt.Sprintf("level%d_bytes", l)] = float64(ls.Bytes)
		}
	}
	return tr, nil
}

// quietLogf drops kv's notices except background errors, which go to
// stderr (the parent passes them on).
func quietLogf(format string, args ...any) {
	if s := fmt.Sprintf(format, args...); strings.Contains(s, "error") || strings.Contains(s, "fall") {
		log.Print(s)
	}
}

// ringstoreRead opens the store at c.Dir, cold (a fresh process, an empty
// block cache, O_DIRECT), and measures c.Mode.
func ringstoreRead(c ChildConfig) (bench.Trial, error) {
	mode, err := ioengine.ParseIOMode(c.IOMode)
	if err != nil {
		return bench.Trial{}, err
	}
	want := map[ioengine.IOMode]ioengine.Backend{ioengine.URing: ioengine.BackendURing, ioengine.Syscall: ioengine.BackendSyscall}
	wb, ok := want[mode]
	if !ok {
		return bench.Trial{}, fmt.Errorf("io mode %s: want uring or syscall", mode)
	}
	// The read children write nothing: a small memtable keeps their memory
	// to the block cache and the tables' indexes and filters.
	db, err := kv.Open(c.Dir, kv.Options{CacheSize: c.CacheSize, IOMode: mode, MemtableSize: 1 << 20, Logf: quietLogf})
	if err != nil {
		return bench.Trial{}, err
	}
	defer db.Close()
	if st := db.Stats(); st.Backend != wb {
		return bench.Trial{}, fmt.Errorf("asked for backend %s, the store runs on %s: %s", wb, st.Backend, st.FallbackCause)
	}
	// Block reads are the block cache's own count of bytes loaded from
	// the device, in 4 KiB blocks, differenced over the measured part: exact
	// however many calls overlap. kv's Stats.BlockReads is reported beside
	// it; it adds up per-call differences of the same cache-wide counter,
	// which count a concurrent call's loads too.
	counters := func() map[string]float64 {
		st := db.Stats()
		m := map[string]float64{XKVBlockReads: float64(st.BlockReads), XMultiGets: float64(st.MultiGets), XEngineCalls: float64(st.Engine.Calls)}
		if st.Cache != nil {
			m[XBlockReads] = float64(st.Cache.BytesRead / directio.BlockSize)
			m[XCacheHits], m[XCacheMisses] = float64(st.Cache.Hits), float64(st.Cache.Misses)
		}
		return m
	}
	if c.Mode == ModeMultiGetHot {
		if err := warm(db, c.Keys); err != nil {
			return bench.Trial{}, err
		}
	}
	var read BatchFunc
	switch c.Mode {
	case ModeMultiGet, ModeMultiGetHot:
		read = func(_ int, keys [][]byte, idx []uint64) error {
			vals, found, err := db.MultiGet(keys)
			if err != nil {
				return err
			}
			for i := range keys {
				if err := Check(keys[i], idx[i], vals[i], found[i]); err != nil {
					return err
				}
			}
			return nil
		}
	case ModeGetSerial:
		read = func(_ int, keys [][]byte, idx []uint64) error {
			for i, k := range keys {
				v, err := db.Get(k)
				if err := Check(k, idx[i], v, err == nil); err != nil {
					return err
				}
			}
			return nil
		}
	case ModeGetParallel:
		fanouts := make([]*Fanout, c.Callers)
		for g := range fanouts {
			fanouts[g] = NewFanout(c.Batch, func(_ int, k []byte, idx uint64) error {
				v, err := db.Get(k)
				if err != nil && err != kv.ErrNotFound {
					return err
				}
				return Check(k, idx, v, err == nil)
			})
			defer fanouts[g].Close()
		}
		read = func(g int, keys [][]byte, idx []uint64) error { return fanouts[g].Do(keys, idx) }
	default:
		return bench.Trial{}, fmt.Errorf("unknown ringstore mode %q", c.Mode)
	}
	return Measure(c, read, counters)
}

// HotCacheSize is the block cache of the hot mode: the store's bytes on
// disk and a quarter more (index and filter blocks are not cached, so the
// data blocks fit with room to spare), in whole MiB.
func HotCacheSize(diskBytes int64) int64 {
	return (diskBytes + diskBytes/4 + 1<<20 - 1) &^ (1<<20 - 1)
}

// warm reads every key once, in index order, through MultiGet batches of
// 1024, so that every data block a lookup can need is in the block cache
// before the hot mode measures.
func warm(db *kv.DB, keys uint64) error {
	const batch = 1024
	ks := make([][]byte, 0, batch)
	for lo := uint64(0); lo < keys; lo += batch {
		ks = ks[:0]
		for i := lo; i < min(lo+batch, keys); i++ {
			ks = append(ks, AppendKey(nil, i))
		}
		vals, found, err := db.MultiGet(ks)
		if err != nil {
			return fmt.Errorf("warming the block cache: %w", err)
		}
		for j := range ks {
			if err := Check(ks[j], lo+uint64(j), vals[j], found[j]); err != nil {
				return fmt.Errorf("warming the block cache: %w", err)
			}
		}
	}
	return nil
}

// DirBytes returns the bytes of the regular files under dir.
func DirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	return n, err
}
