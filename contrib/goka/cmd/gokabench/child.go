package main

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lovoo/goka/storage"
	"github.com/ringstore/ringstore/bench"
	gokastore "github.com/ringstore/ringstore/contrib/goka"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
)

// Systems a child runs.
const (
	sysURing   = "ringstore-uring"
	sysSyscall = "ringstore-syscall"
	sysLevelDB = "leveldb"
)

// Keys of Trial.Extra.
const (
	xRestoreSeconds = "restore_seconds"
	xRestoreRecords = "restore_records"
	xRestoreHWM     = "restore_rss_hwm_bytes"
	xHWM            = "rss_hwm_bytes"
	xCgroupPeak     = "cgroup_peak_bytes"
	xCgroupHits     = "cgroup_limit_hits"
	xReqPerEnter    = "requests_per_enter"
	xResidentAfter  = "resident_before_process_bytes"
	xStateBytes     = "state_bytes"
	xEvents         = "events"
	xCompactSeconds = "compaction_seconds_during_process"
	xFlushSeconds   = "flush_seconds_during_process"
	xSettleSeconds  = "settle_seconds"
	// Compaction's written bytes per event (restore: per record) and per
	// byte flushed, in each phase: the store's write amplification.
	xRestoreCompactPerRec   = "restore_compaction_written_bytes_per_record"
	xRestoreCompactPerFlush = "restore_compaction_written_per_flushed_byte"
	xCompactPerEvent        = "compaction_written_bytes_per_event"
	xCompactPerFlush        = "compaction_written_per_flushed_byte"
	// The device's floor, measured by the io_uring child once its store is
	// closed: random 4 KiB O_DIRECT reads of the store's own tables, one at
	// a time by as many callers as partitions (the depth the partitions'
	// Gets keep); and the store's block reads per event while processing.
	xDeviceIOPS    = "device_iops"
	xDeviceP99     = "device_p99_us"
	xReadsPerEvent = "block_reads_per_event"
)

// deviceTime is how long the device floor is measured.
const deviceTime = 2 * time.Second

// compactionDelta prints the flushes and compactions between two Stats, by
// output level.
func compactionDelta(before, after kv.Stats) string {
	var b strings.Builder
	fmt.Fprintf(&b, "flushes %d (%d bytes)\n", after.Flushes-before.Flushes, after.FlushedBytes-before.FlushedBytes)
	for l := range after.Compacted {
		a, o := after.Compacted[l], before.Compacted[l]
		if a.Count > o.Count {
			fmt.Fprintf(&b, "into L%d: %d compactions, %d bytes read, %d written\n", l, a.Count-o.Count, a.Read-o.Read, a.Written-o.Written)
		}
	}
	return b.String()
}

// writeAmp returns compaction's written bytes between two Stats per op and
// per flushed byte (0 where there is nothing to divide by).
func writeAmp(before, after kv.Stats, ops int64) (perOp, perFlushed float64) {
	written := float64(after.CompactedOut - before.CompactedOut)
	if ops > 0 {
		perOp = written / float64(ops)
	}
	if f := after.FlushedBytes - before.FlushedBytes; f > 0 {
		perFlushed = written / float64(f)
	}
	return perOp, perFlushed
}

// childConfig is one trial's work, sent to the child as JSON.
type childConfig struct {
	System     string  `json:"system"`
	Dir        string  `json:"dir"`
	Cgroup     string  `json:"cgroup,omitempty"`
	Partitions int     `json:"partitions"`
	Keys       int64   `json:"keys"`    // distinct (bidder, auction) keys; the restore writes each once
	Restore    int64   `json:"restore"` // changelog records restored
	Seconds    float64 `json:"seconds"` // processing time measured
	Warmup     float64 `json:"warmup"`  // processing time before it, not counted
	CacheBytes int64   `json:"cache_bytes"`
	MemBytes   int64   `json:"memtable_bytes"`
	Seed       int64   `json:"seed"`
	// Settle, for ringstore only, runs kv's compactions to the end after the
	// restore (Store.DB().Compact), so processing meets no compaction debt.
	// goka's Storage API has no such call, so LevelDB is never settled.
	Settle bool `json:"settle,omitempty"`
}

func init() { bench.RegisterChild("goka", child) }

// processProfileEnv names a directory where each child writes a CPU profile
// of its processing phase only, as SYSTEM-PID.pprof.
const processProfileEnv = "GOKABENCH_PROCESS_CPUPROFILE"

// statsEnv names a directory where each ringstore child writes its kv.Stats
// at the end of processing (DIR/SYSTEM-PID.txt).
const statsEnv = "GOKABENCH_KV_STATS"

// bid is the value of a (bidder, auction) key: Nexmark query 18 keeps the
// last bid of each bidder on each auction.
type bid struct {
	Bidder, Auction uint64
	Price           uint64
	Time            int64
	Extra           [24]byte // random bytes: the strings of a Nexmark bid, incompressible
}

const bidSize = 8*4 + 24

func (b *bid) encode(dst []byte) []byte {
	dst = binary.BigEndian.AppendUint64(dst, b.Bidder)
	dst = binary.BigEndian.AppendUint64(dst, b.Auction)
	dst = binary.BigEndian.AppendUint64(dst, b.Price)
	dst = binary.BigEndian.AppendUint64(dst, uint64(b.Time))
	return append(dst, b.Extra[:]...)
}

func decodeBid(v []byte) (bid, error) {
	if len(v) != bidSize {
		return bid{}, fmt.Errorf("bid of %d bytes, want %d", len(v), bidSize)
	}
	var b bid
	b.Bidder = binary.BigEndian.Uint64(v)
	b.Auction = binary.BigEndian.Uint64(v[8:])
	b.Price = binary.BigEndian.Uint64(v[16:])
	b.Time = int64(binary.BigEndian.Uint64(v[24:]))
	copy(b.Extra[:], v[32:])
	return b, nil
}

// keyOf is the key of key number k: bidder k/1000, auction k%1000. Key k
// belongs to partition k % partitions.
func keyOf(k int64) string {
	return "b" + strconv.FormatInt(k/1000, 10) + "/a" + strconv.FormatInt(k%1000, 10)
}

func (c childConfig) builder() (storage.Builder, *gokastore.Store, error) {
	switch c.System {
	case sysURing, sysSyscall:
		mode := ioengine.URing
		if c.System == sysSyscall {
			mode = ioengine.Syscall
		}
		s, err := gokastore.Open(c.Dir, gokastore.Options{KV: kv.Options{
			CacheSize: c.CacheBytes, MemtableSize: c.MemBytes, IOMode: mode,
		}})
		if err != nil {
			return nil, nil, err
		}
		return s.Builder(), s, nil
	case sysLevelDB:
		return storage.DefaultBuilder(c.Dir), nil, nil
	}
	return nil, nil, fmt.Errorf("unknown system %q", c.System)
}

func child(raw json.RawMessage) (bench.Trial, error) {
	var c childConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return bench.Trial{}, fmt.Errorf("bad child config: %w", err)
	}
	if c.Cgroup != "" {
		if err := bench.JoinMemCgroup(c.Cgroup); err != nil {
			return bench.Trial{}, err
		}
	}
	tr := bench.Trial{Extra: map[string]float64{}}

	// Restore: each partition's goroutine writes its changelog the way
	// goka's PartitionTable recovery does (Set, then SetOffset, per
	// record; MarkRecovered at the end), without Kafka.
	b, store, err := c.builder()
	if err != nil {
		return tr, err
	}
	sts, err := openAll(b, c.Partitions)
	if err != nil {
		return tr, err
	}
	var watch *memWatch
	if dir := os.Getenv(restoreMemEnv); dir != "" {
		watch = startMemWatch(dir, c.System, store)
	}
	start := time.Now()
	err = parallel(c.Partitions, func(p int) error {
		st := sts[p]
		var buf []byte
		var off int64
		rng := rand.New(rand.NewSource(c.Seed + int64(p)))
		for k := int64(p); k < c.Restore; k += int64(c.Partitions) {
			key := k % c.Keys
			bd := bid{Bidder: uint64(key / 1000), Auction: uint64(key % 1000), Price: uint64(rng.Intn(1e6)), Time: k}
			rng.Read(bd.Extra[:])
			buf = bd.encode(buf[:0])
			if err := st.Set(keyOf(key), buf); err != nil {
				return err
			}
			if err := st.SetOffset(off); err != nil {
				return err
			}
			off++
		}
		return st.MarkRecovered()
	})
	elapsed := time.Since(start)
	if watch != nil {
		if werr := watch.stop(); werr != nil && err == nil {
			err = fmt.Errorf("restore memory profile: %w", werr)
		}
	}
	if err != nil {
		return tr, fmt.Errorf("restore: %w", err)
	}
	tr.Extra[xRestoreSeconds] = elapsed.Seconds()
	tr.Extra[xRestoreRecords] = float64(c.Restore)
	if store != nil {
		tr.Extra[xRestoreCompactPerRec], tr.Extra[xRestoreCompactPerFlush] = writeAmp(kv.Stats{}, store.DB().Stats(), c.Restore)
	}
	hwm, err := rssHWM()
	if err != nil {
		return tr, err
	}
	tr.Extra[xRestoreHWM] = float64(hwm)

	if c.Settle && store != nil {
		t := time.Now()
		if err := store.DB().Compact(); err != nil {
			return tr, fmt.Errorf("settle: %w", err)
		}
		tr.Extra[xSettleSeconds] = time.Since(t).Seconds()
	}

	// Cold start for processing: close, drop the benchmark's own files from
	// the page cache, reopen.
	if err := closeAll(sts, store); err != nil {
		return tr, err
	}
	size, resident, err := dropDir(c.Dir)
	if err != nil {
		return tr, err
	}
	tr.Extra[xStateBytes] = float64(size)
	tr.Extra[xResidentAfter] = float64(resident)
	if b, store, err = c.builder(); err != nil {
		return tr, err
	}
	if sts, err = openAll(b, c.Partitions); err != nil {
		return tr, err
	}
	for _, st := range sts {
		if err := st.MarkRecovered(); err != nil {
			return tr, err
		}
	}

	// Processing: each partition's goroutine runs q18's callback on its
	// own bids, as goka's partition processor does: Get the key's state
	// (timed), keep the newer bid, Set it, SetOffset.
	var (
		mu       sync.Mutex
		lat      = bench.NewLatencies()
		events   int64
		measured = make(chan struct{})
		stop     = make(chan struct{})
	)
	var before ioengine.Stats
	var kvBefore kv.Stats
	go func() {
		time.Sleep(time.Duration(c.Warmup * float64(time.Second)))
		close(measured)
		time.Sleep(time.Duration(c.Seconds * float64(time.Second)))
		close(stop)
	}()
	cpu0 := 0.0
	var t0 time.Time
	if path := os.Getenv(processProfileEnv); path != "" {
		f, err := os.Create(fmt.Sprintf("%s/%s-%d.pprof", path, c.System, os.Getpid()))
		if err != nil {
			return tr, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return tr, err
		}
		defer pprof.StopCPUProfile()
	}
	// The measured seconds' counters are read when they start; began is
	// closed once they are.
	began := make(chan struct{})
	go func() {
		<-measured
		cpu0 = bench.CPUTime()
		t0 = time.Now()
		if store != nil {
			kvBefore = store.DB().Stats()
			before = kvBefore.Engine
		}
		close(began)
	}()
	err = parallel(c.Partitions, func(p int) error {
		st := sts[p]
		l := bench.NewLatencies()
		rng := rand.New(rand.NewSource(c.Seed*31 + int64(p)))
		var buf []byte
		off := c.Restore
		var n int64
		counting := false
		for {
			select {
			case <-stop:
				mu.Lock()
				lat.Merge(l)
				events += n
				mu.Unlock()
				return nil
			case <-measured:
				counting = true
			default:
			}
			k := rng.Int63n(c.Keys/int64(c.Partitions))*int64(c.Partitions) + int64(p)
			key := keyOf(k)
			g0 := time.Now()
			v, err := st.Get(key)
			d := time.Since(g0)
			if err != nil {
				return err
			}
			nb := bid{Bidder: uint64(k / 1000), Auction: uint64(k % 1000), Price: uint64(rng.Intn(1e6)), Time: time.Now().UnixNano()}
			rng.Read(nb.Extra[:])
			if v != nil {
				old, err := decodeBid(v)
				if err != nil {
					return fmt.Errorf("partition %d key %s: %w", p, key, err)
				}
				if old.Time > nb.Time {
					nb = old
				}
			}
			buf = nb.encode(buf[:0])
			if err := st.Set(key, buf); err != nil {
				return err
			}
			if err := st.SetOffset(off); err != nil {
				return err
			}
			off++
			if counting {
				l.Add(d)
				n++
			}
		}
	})
	if err != nil {
		return tr, fmt.Errorf("process: %w", err)
	}
	<-began
	tr.Seconds = time.Since(t0).Seconds()
	tr.CPUSeconds = bench.CPUTime() - cpu0
	tr.Ops = events
	tr.Extra[xEvents] = float64(events)
	lat.Fill(&tr)
	if store != nil {
		kvAfter := store.DB().Stats()
		after := kvAfter.Engine
		tr.Extra[xCompactSeconds] = (kvAfter.CompactionTime - kvBefore.CompactionTime).Seconds()
		tr.Extra[xFlushSeconds] = (kvAfter.FlushTime - kvBefore.FlushTime).Seconds()
		tr.Extra[xCompactPerEvent], tr.Extra[xCompactPerFlush] = writeAmp(kvBefore, kvAfter, events)
		if events > 0 {
			tr.Extra[xReadsPerEvent] = float64(kvAfter.BlockReads-kvBefore.BlockReads) / float64(events)
		}
		if dir := os.Getenv(statsEnv); dir != "" {
			text := fmt.Sprintf("%s\nsince the measured seconds began:\n%s", kvAfter, compactionDelta(kvBefore, kvAfter))
			if err := os.WriteFile(fmt.Sprintf("%s/%s-%d.txt", dir, c.System, os.Getpid()), []byte(text), 0o644); err != nil {
				return tr, err
			}
		}
		if e := after.Enters - before.Enters; e > 0 {
			tr.Extra[xReqPerEnter] = float64(after.Requests-before.Requests) / float64(e)
		}
	}
	if err := closeAll(sts, store); err != nil {
		return tr, err
	}
	if hwm, err = rssHWM(); err != nil {
		return tr, err
	}
	tr.Extra[xHWM] = float64(hwm)
	if ok, _ := ioengine.ProbeKernel().Usable(); ok && c.System == sysURing {
		dt, err := deviceFloor(c.Dir, c.Partitions, uint64(c.Seed))
		if err != nil {
			return tr, fmt.Errorf("device floor: %w", err)
		}
		tr.Extra[xDeviceIOPS], tr.Extra[xDeviceP99] = dt.Rate(), dt.P99us
	}
	return tr, nil
}

// deviceFloor reads the tables under dir at random, 4 KiB at a time with
// O_DIRECT on io_uring, one read in flight per caller.
func deviceFloor(dir string, callers int, seed uint64) (bench.Trial, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && strings.HasSuffix(p, ".sst") {
			paths = append(paths, p)
		}
		return err
	})
	if err != nil {
		return bench.Trial{}, err
	}
	if len(paths) == 0 {
		return bench.Trial{}, fmt.Errorf("no table under %s", dir)
	}
	return bench.RandomReads{Paths: paths, Batch: 1, Callers: callers, Seed: seed, Mode: ioengine.URing}.Run(deviceTime, 0.1)
}

func openAll(b storage.Builder, parts int) ([]storage.Storage, error) {
	var sts []storage.Storage
	for p := 0; p < parts; p++ {
		st, err := b("q18-table", int32(p))
		if err != nil {
			return nil, err
		}
		if err := st.Open(); err != nil {
			return nil, err
		}
		sts = append(sts, st)
	}
	return sts, nil
}

func closeAll(sts []storage.Storage, store *gokastore.Store) error {
	var errs []error
	for _, st := range sts {
		errs = append(errs, st.Close())
	}
	if store != nil {
		errs = append(errs, store.Close())
	}
	return errors.Join(errs...)
}

func parallel(n int, f func(p int) error) error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	for p := 0; p < n; p++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[p] = f(p) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// rssHWM is the process's resident set high-water mark (VmHWM).
func rssHWM() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/self/status: VmHWM %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("/proc/self/status: no VmHWM line")
}

// dropDir drops every file under dir from the page cache; it returns their
// total size and how much of it was resident before.
func dropDir(dir string) (size, resident int64, err error) {
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			return err
		}
		size += st.Size()
		r, err := bench.ResidentBytes(f)
		if err != nil {
			return err
		}
		resident += r
		return dropFile(f)
	})
	return size, resident, err
}
