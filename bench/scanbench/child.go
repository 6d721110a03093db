package scanbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/ringstore/ringstore/arrowscan"
	"github.com/ringstore/ringstore/arrowscan/events"
	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/ioengine"
)

// Workload is the child workload name.
const Workload = "scan"

func init() { bench.RegisterChild(Workload, child) }

// modeDevice is the child mode that measures the device instead of running
// queries.
const modeDevice = "device"

// modeMemory is the pool mode with a pool that holds all of the data,
// filled by one unmeasured round before the measured ones: the same queries
// and the same decoding with no device read, the CPU's floor under the
// pool's latency.
const modeMemory = "memory"

// modePoolNoCheck is the pool mode without the sidecar checks
// (arrowscan.Options.SkipSidecarCheck): beside pool, it shows what
// checking every read against the files' checksum sidecars costs.
const modePoolNoCheck = "pool-nocheck"

// childConfig is one trial's instructions.
type childConfig struct {
	// Mode is an arrowscan mode (mmap, pread, direct, pool) or "device".
	Mode  string   `json:"mode"`
	Files []string `json:"files"`
	// Queries is one round: the queries started at once, by name.
	Queries []string `json:"queries"`
	Rounds  int      `json:"rounds"`
	// PoolBytes and FrameSize size the pool (pool mode).
	PoolBytes int64 `json:"pool_bytes"`
	FrameSize int   `json:"frame_size"`
	// IOMode is the backend of direct, pool and device: uring or syscall.
	IOMode   string `json:"io_mode"`
	Prefetch int    `json:"prefetch"`
	// NoSidecarCheck skips the sidecar checks in every mode.
	NoSidecarCheck bool `json:"no_sidecar_check,omitempty"`
	// RefPath holds the reference results: the first child to run queries
	// writes it, every later one compares with it.
	RefPath string `json:"ref_path"`
	// Cgroup is the directory of the memory cgroup to join first; "" for
	// none.
	Cgroup string `json:"cgroup,omitempty"`
	// DeviceSeconds is how long the device mode reads.
	DeviceSeconds float64 `json:"device_seconds"`
	// TimeoutSeconds ends a child that runs longer, with its goroutines'
	// stacks on stderr: a hung trial must not hang the benchmark. 0: none.
	TimeoutSeconds float64 `json:"timeout_seconds"`
}

// Keys of bench.Trial.Extra. Those marked "parent" are added by the parent
// after the child exited.
const (
	xMeanMS        = "mean_ms" // query latency, mean over every query of the trial
	xP50MS         = "p50_ms"
	xP95MS         = "p95_ms"
	xMaxMS         = "max_ms"
	xReadBytes     = "read_bytes" // /proc/self/io read_bytes over the measured part: bytes from the device
	xRChar         = "rchar"
	xMajorFaults   = "major_faults"
	xMinorFaults   = "minor_faults"
	xMaxRSS        = "max_rss_bytes" // getrusage ru_maxrss of the child, whole life
	xRowsScanned   = "rows_scanned"
	xOpenMS        = "open_ms"              // opening the files (footers, batch metadata), before the measured part
	xOpenReadBytes = "open_read_bytes"      // read_bytes while opening
	xResidentStart = "resident_start_bytes" // data bytes still in the page cache when the measured part starts (after the child's own drop)
	xEngineBytes   = "engine_bytes"
	xEngineFixed   = "engine_fixed_transfers" // reads issued as READ_FIXED (the pool's arena registered: bufpool.Options.FixedBuffers)
	xPoolRead      = "pool_bytes_read"
	xPoolHits      = "pool_hits"
	xPoolMisses    = "pool_misses"
	xPoolWaits     = "pool_load_waits"
	xPoolEvict     = "pool_evictions"
	xPoolPfHits    = "pool_prefetch_hits"
	xPoolPfDrop    = "pool_prefetch_dropped"
	xPoolStalls    = "pool_stalls"
	xPoolAnnEvict  = "pool_announced_evictions"
	xPoolWinMaps   = "pool_window_maps"
	xPoolWinFails  = "pool_window_failures"
	xPoolWinMoves  = "pool_window_moves"     // of pool_window_maps, those moved from the slot's earlier place
	xDeviceBytes   = "device_bytes"          // device mode: bytes its reads returned
	xCgroupPeak    = "cgroup_peak_bytes"     // parent
	xCgroupHits    = "cgroup_limit_hits"     // parent
	xCgroupOOM     = "cgroup_oom_kills"      // parent
	xResidentPre   = "resident_before_bytes" // parent: data bytes in the page cache after the drop, before the child started
	xQueryMSPrefx  = "query_mean_ms/"        // + query name: mean latency of that query's runs
	xNeedBytes     = "need_bytes"            // memory mode: bytes the pool loaded in the unmeasured round, every frame the queries touch once
)

// child runs one trial in this process.
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
	if c.TimeoutSeconds > 0 {
		d := time.Duration(c.TimeoutSeconds * float64(time.Second))
		time.AfterFunc(d, func() {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, true)]
			fmt.Fprintf(os.Stderr, "mode %s: timed out after %s; goroutines (first %d KiB):\n%s\n", c.Mode, d, len(buf)>>10, buf)
			os.Exit(1)
		})
	}
	ioMode, err := ioengine.ParseIOMode(c.IOMode)
	if err != nil {
		return bench.Trial{}, err
	}
	if c.Mode == modeDevice {
		return deviceChild(c, ioMode)
	}
	return scanChild(c, ioMode)
}

func deviceChild(c childConfig, ioMode ioengine.IOMode) (bench.Trial, error) {
	cpu0 := bench.CPUTime()
	r, err := measureDevice(c.Files, DeviceOptions{Duration: time.Duration(c.DeviceSeconds * float64(time.Second)), IOMode: ioMode})
	if err != nil {
		return bench.Trial{}, err
	}
	if err := checkBackend(ioMode, r.Backend); err != nil {
		return bench.Trial{}, err
	}
	u, err := readUsage()
	if err != nil {
		return bench.Trial{}, err
	}
	return bench.Trial{Ops: r.Bytes >> 20, Seconds: r.Seconds, CPUSeconds: bench.CPUTime() - cpu0, Extra: map[string]float64{
		xDeviceBytes: float64(r.Bytes), xReadBytes: float64(r.ReadBytes), xMaxRSS: float64(u.MaxRSSBytes),
	}}, nil
}

// checkBackend fails a trial that did not get the backend it asked for:
// a silent fallback would compare the wrong things.
func checkBackend(want ioengine.IOMode, got ioengine.Backend) error {
	if want == ioengine.URing && got != ioengine.BackendURing || want == ioengine.Syscall && got != ioengine.BackendSyscall {
		return fmt.Errorf("asked for I/O mode %s, the engine runs on %s", want, got)
	}
	return nil
}

// run is one query's run in a trial.
type run struct {
	round, slot int
	query       string
	latency     time.Duration
	result      *events.Result
	err         error
}

func scanChild(c childConfig, ioMode ioengine.IOMode) (bench.Trial, error) {
	memory := c.Mode == modeMemory
	mode := arrowscan.ModePool
	if !memory && c.Mode != modePoolNoCheck {
		var err error
		if mode, err = arrowscan.ParseMode(c.Mode); err != nil {
			return bench.Trial{}, err
		}
	}
	if len(c.Files) == 0 || len(c.Queries) == 0 || c.Rounds < 1 {
		return bench.Trial{}, fmt.Errorf("bad child config: %d files, %d queries, %d rounds", len(c.Files), len(c.Queries), c.Rounds)
	}
	opts := arrowscan.Options{Mode: mode, IOMode: ioMode, Prefetch: c.Prefetch, SkipSidecarCheck: c.NoSidecarCheck || c.Mode == modePoolNoCheck}
	var eng *ioengine.Engine
	var pool *bufpool.Pool
	var err error
	if mode == arrowscan.ModeDirect || mode == arrowscan.ModePool {
		if eng, err = ioengine.New(ioengine.Options{Mode: ioMode}); err != nil {
			return bench.Trial{}, err
		}
		defer eng.Close()
		if err := checkBackend(ioMode, eng.Backend()); err != nil {
			return bench.Trial{}, err
		}
		opts.Engine = eng
	}
	if mode == arrowscan.ModePool {
		if pool, err = bufpool.New(arrowscan.PoolOptions(bufpool.Options{FrameSize: c.FrameSize, Budget: c.PoolBytes, Engine: eng})); err != nil {
			return bench.Trial{}, err
		}
		defer pool.Close()
		opts.Pool = pool
	}

	ioOpen, err := readProcIO()
	if err != nil {
		return bench.Trial{}, err
	}
	t0 := time.Now()
	files := make([]*arrowscan.File, 0, len(c.Files))
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	schemas := make([]*arrow.Schema, 0, len(c.Files))
	for _, p := range c.Files {
		f, err := arrowscan.Open(p, opts)
		if err != nil {
			return bench.Trial{}, err
		}
		files = append(files, f)
		schemas = append(schemas, f.Schema())
	}
	params, err := events.ParamsOf(c.Files, schemas)
	if err != nil {
		return bench.Trial{}, err
	}
	openMS := float64(time.Since(t0)) / 1e6
	// Opening reads every record batch's metadata, and a read through the
	// page cache (a fault on the mapping above all) brings the device's
	// whole readahead window along: with read_ahead_kb 8192 that is most
	// of the data. Drop it again, so that every mode's queries start cold.
	var resident int64
	for _, p := range c.Files {
		n, err := dropPageCache(p)
		if err != nil {
			return bench.Trial{}, err
		}
		resident += n
	}

	ref, err := loadReference(c.RefPath)
	if err != nil {
		return bench.Trial{}, err
	}
	var needBytes uint64
	if memory {
		// One round, unmeasured, fills the pool with every frame the
		// queries touch.
		var wg sync.WaitGroup
		errs := make([]error, len(c.Queries))
		for i, q := range c.Queries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = runQuery(files, q, params)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return bench.Trial{}, fmt.Errorf("memory mode, filling the pool: %w", err)
		}
		st := pool.Stats()
		if st.Evictions > 0 {
			return bench.Trial{}, fmt.Errorf("memory mode: the %d MiB pool evicted %d frames while filling: it does not hold the data", c.PoolBytes>>20, st.Evictions)
		}
		needBytes = st.BytesRead
	}
	io0, err := readProcIO()
	if err != nil {
		return bench.Trial{}, err
	}
	u0, err := readUsage()
	if err != nil {
		return bench.Trial{}, err
	}
	var ps0 bufpool.Stats
	var es0 ioengine.Stats
	if pool != nil {
		ps0 = pool.Stats()
	}
	if eng != nil {
		es0 = eng.Stats()
	}
	start := time.Now()
	var runs []run
	for r := range c.Rounds {
		round := make([]run, len(c.Queries))
		var wg sync.WaitGroup
		for i, q := range c.Queries {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t := time.Now()
				res, err := runQuery(files, q, params)
				round[i] = run{round: r, slot: i, query: q, latency: time.Since(t), result: res, err: err}
			}()
		}
		wg.Wait()
		runs = append(runs, round...)
	}
	secs := time.Since(start).Seconds()
	io1, err := readProcIO()
	if err != nil {
		return bench.Trial{}, err
	}
	u1, err := readUsage()
	if err != nil {
		return bench.Trial{}, err
	}

	// Every run must have succeeded and agree with the reference: the first
	// mode's results, or this child's own first run of each query when it
	// is the first.
	var errs []error
	for _, r := range runs {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("round %d, query %d (%s): %w", r.round+1, r.slot+1, r.query, r.err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return bench.Trial{}, err
	}
	mine := map[string]refResult{}
	for _, r := range runs {
		want, ok := ref[r.query]
		if !ok {
			if want, ok = mine[r.query]; !ok {
				mine[r.query] = refResult{c.Mode, r.result}
				continue
			}
		}
		if err := want.Equal(r.result); err != nil {
			errs = append(errs, fmt.Errorf("mode %s, round %d, query %d (%s): result differs from the reference (mode %s's): %w", c.Mode, r.round+1, r.slot+1, r.query, want.mode, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return bench.Trial{}, err
	}
	if len(mine) > 0 {
		if err := saveReference(c.RefPath, ref, mine); err != nil {
			return bench.Trial{}, err
		}
	}

	lat := make([]float64, len(runs))
	perQuery := map[string][]float64{}
	var scanned int64
	for i, r := range runs {
		lat[i] = float64(r.latency) / 1e6
		perQuery[r.query] = append(perQuery[r.query], lat[i])
		scanned += r.result.RowsScanned
	}
	st := latencyStats(lat)
	tr := bench.Trial{
		Ops: int64(len(runs)), Seconds: secs, P50us: st.p50 * 1e3, P99us: percentile(lat, 99) * 1e3, CPUSeconds: u1.CPUSeconds - u0.CPUSeconds,
		Extra: map[string]float64{
			xMeanMS: st.mean, xP50MS: st.p50, xP95MS: st.p95, xMaxMS: st.max,
			xReadBytes: float64(io1.ReadBytes - io0.ReadBytes), xRChar: float64(io1.RChar - io0.RChar),
			xMajorFaults: float64(u1.MajorFaults - u0.MajorFaults), xMinorFaults: float64(u1.MinorFaults - u0.MinorFaults),
			xMaxRSS: float64(u1.MaxRSSBytes), xRowsScanned: float64(scanned), xOpenMS: openMS,
			xOpenReadBytes: float64(io0.ReadBytes - ioOpen.ReadBytes), xResidentStart: float64(resident),
		},
	}
	for q, ls := range perQuery {
		tr.Extra[xQueryMSPrefx+q] = latencyStats(ls).mean
	}
	if eng != nil {
		es := eng.Stats()
		tr.Extra[xEngineBytes] = float64(es.Bytes - es0.Bytes)
		tr.Extra[xEngineFixed] = float64(es.FixedTransfers - es0.FixedTransfers)
	}
	if memory {
		tr.Extra[xNeedBytes] = float64(needBytes)
	}
	if pool != nil {
		ps := pool.Stats()
		for k, v := range map[string]uint64{
			xPoolRead: ps.BytesRead - ps0.BytesRead, xPoolHits: ps.Hits - ps0.Hits, xPoolMisses: ps.Misses - ps0.Misses,
			xPoolWaits: ps.LoadWaits - ps0.LoadWaits, xPoolEvict: ps.Evictions - ps0.Evictions, xPoolPfHits: ps.PrefetchHits - ps0.PrefetchHits,
			xPoolPfDrop: ps.PrefetchDropped - ps0.PrefetchDropped, xPoolStalls: ps.Stalls - ps0.Stalls,
			xPoolAnnEvict: ps.AnnouncedEvictions - ps0.AnnouncedEvictions,
			xPoolWinMaps:  ps.WindowMaps - ps0.WindowMaps, xPoolWinFails: ps.WindowFailures - ps0.WindowFailures,
			xPoolWinMoves: ps.WindowMoves - ps0.WindowMoves,
		} {
			tr.Extra[k] = float64(v)
		}
	}
	return tr, nil
}

// runQuery runs the named query over the files in order, each scanned with
// the query's projection.
func runQuery(files []*arrowscan.File, name string, p events.Params) (*events.Result, error) {
	e, err := events.NewExecution(name, p)
	if err != nil {
		return nil, err
	}
	cols := e.Query().Columns
	for _, f := range files {
		s, err := f.Scan(cols)
		if err != nil {
			return nil, err
		}
		err = e.AddBatches(f.Path(), s)
		if cerr := s.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("%s: close scanner: %w", f.Path(), cerr)
		}
		if err != nil {
			return nil, err
		}
	}
	return e.Result(), nil
}

type latStats struct{ mean, p50, p95, max float64 }

func latencyStats(ms []float64) latStats {
	if len(ms) == 0 {
		return latStats{}
	}
	var sum float64
	for _, v := range ms {
		sum += v
	}
	return latStats{mean: sum / float64(len(ms)), p50: percentile(ms, 50), p95: percentile(ms, 95), max: slices.Max(ms)}
}

// percentile is the nearest-rank percentile (0 < p ≤ 100) of vs.
func percentile(vs []float64, p float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	i := int(math.Ceil(float64(len(s))*p/100)) - 1
	return s[max(0, min(i, len(s)-1))]
}

// loadReference reads the reference results, or returns none when the file
// does not exist yet.
func loadReference(path string) (map[string]refResult, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]refResult{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reference results: %w", err)
	}
	return decodeResults(data)
}

// saveReference adds mine to the reference file (ref is what it held).
func saveReference(path string, ref, mine map[string]refResult) error {
	all := map[string]refResult{}
	for k, v := range ref {
		all[k] = v
	}
	for k, v := range mine {
		all[k] = v
	}
	data, err := encodeResults(all)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("reference results: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("reference results: %w", err)
	}
	return nil
}
