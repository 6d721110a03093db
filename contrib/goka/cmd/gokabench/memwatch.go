package main

import (
	"bytes"
	"fmt"
	"os"

	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	gokastore "github.com/ringstore/ringstore/contrib/goka"
	"github.com/ringstore/ringstore/kv/memtable"
)

// restoreMemEnv names a directory where each child writes, for its restore
// phase, SYSTEM-PID-restore.txt (every 500 ms: RSS, the Go heap's live bytes,
// the runtime's mapped total and, for ringstore, its tables and memtables,
// and the memtables' memory off the Go heap, in use and free)
// and SYSTEM-PID-restore-heap.pprof, the heap profile (inuse_space) taken
// when the heap's live bytes were largest.
const restoreMemEnv = "GOKABENCH_RESTORE_MEMPROFILE"

// memWatch samples a child's memory until stop.
type memWatch struct {
	dir, name string
	store     *gokastore.Store
	stopc     chan struct{}
	done      sync.WaitGroup
	log       strings.Builder
	peakLive  uint64
	peakProf  bytes.Buffer
	peakRSS   int64
	err       error
}

func startMemWatch(dir, name string, store *gokastore.Store) *memWatch {
	w := &memWatch{dir: dir, name: name, store: store, stopc: make(chan struct{})}
	w.done.Add(1)
	go w.run()
	return w
}

func (w *memWatch) run() {
	defer w.done.Done()
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/goal:bytes"},
		{Name: "/memory/classes/total:bytes"},
	}
	start := time.Now()
	fmt.Fprintf(&w.log, "sec\trss_mib\theap_live_mib\theap_goal_mib\tgo_total_mib\ttables\ttable_mib\tmemtables\tmemtable_mib\tarena_mib\tarena_free_mib\n")
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		metrics.Read(samples)
		live := samples[0].Value.Uint64()
		rss := rssNow()
		w.peakRSS = max(w.peakRSS, rss)
		tables, tableBytes, mems, memBytes := 0, int64(0), 0, int64(0)
		if w.store != nil {
			st := w.store.DB().Stats()
			for _, l := range st.Levels {
				tables += l.Tables
				tableBytes += l.Bytes
			}
			mems, memBytes = st.Memtables, st.MemtableBytes
		}
		arena := memtable.ReadMemoryStats()
		const mib = 1 << 20
		fmt.Fprintf(&w.log, "%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%.0f\t%d\t%.1f\t%.1f\t%.1f\n", time.Since(start).Seconds(),
			float64(rss)/mib, float64(live)/mib, float64(samples[1].Value.Uint64())/mib,
			float64(samples[2].Value.Uint64())/mib, tables, float64(tableBytes)/mib, mems, float64(memBytes)/mib,
			float64(arena.InUse)/mib, float64(arena.Free)/mib)
		if live > w.peakLive+w.peakLive/20 {
			w.peakLive = live
			w.peakProf.Reset()
			if err := pprof.Lookup("heap").WriteTo(&w.peakProf, 0); err != nil && w.err == nil {
				w.err = err
			}
		}
		select {
		case <-w.stopc:
			return
		case <-tick.C:
		}
	}
}

// stop ends the sampling and writes the files.
func (w *memWatch) stop() error {
	close(w.stopc)
	w.done.Wait()
	if w.err != nil {
		return w.err
	}
	base := fmt.Sprintf("%s/%s-%d-restore", w.dir, w.name, os.Getpid())
	fmt.Fprintf(&w.log, "peak heap live %.1f MiB, peak sampled RSS %.1f MiB\n", float64(w.peakLive)/(1<<20), float64(w.peakRSS)/(1<<20))
	if err := os.WriteFile(base+".txt", []byte(w.log.String()), 0o644); err != nil {
		return err
	}
	return os.WriteFile(base+"-heap.pprof", w.peakProf.Bytes(), 0o644)
}

// rssNow is the process's resident set now (statm), 0 if unreadable.
func rssNow() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}
