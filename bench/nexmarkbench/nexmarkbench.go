// Package nexmarkbench runs Nexmark queries (package nexmark) with
// io_uring ON and OFF, side by side: every trial of every mode in a fresh
// process with RINGSTORE_IO_URING=true or false, modes interleaved, the
// state several times the block caches so its reads go to the device, and
// every trial's output checksum compared with every other's.
package nexmarkbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/nexmark"
)

// Workload is the child workload's name.
const Workload = "nexmark"

func init() { bench.RegisterChild(Workload, child) }

// Options configure a run.
type Options struct {
	Dir         string
	Queries     []string // default: every query of package nexmark
	Events      int64    // default 2,000,000
	Parallelism int      // default nexmark.DefaultParallelism
	Batch       int      // events per mini-batch; default nexmark.DefaultBatch
	Trials      int      // default 3
	Cache       int64    // each worker's block cache; default 256 KiB
	Memtable    int64    // each worker's memtable; default 256 KiB
	// Regime: "default" (the reference's configuration), "large" (the
	// large-state regime) or "both" (the default).
	Regime string
	// The large-state regime: events per trial (default 500,000), the
	// generator's in-flight auctions and active people (default 100,000
	// each), each worker's block cache (default 0: sized per query, a
	// tenth of its working set over all workers), memtable (default 256
	// KiB) and mini-batch (default 1,000 events: the reference regime's,
	// and Flink's async state buffer, execution.async-state.buffer-size).
	LargeEvents      int64
	LargeQueries     []string // default: Queries
	InFlightAuctions int
	ActivePeople     int
	LargeCache       int64
	LargeMemtable    int64
	LargeBatch       int
	// LargeMinSeconds: a stateful query of the large regime whose
	// all-cached run (its fastest mode, timed by the sizing run) would take
	// less than this runs more events, in steps of 100,000 and at most
	// maxLargeEventsFactor × LargeEvents, so that every mode's runs last
	// several checkpoint intervals and the checkpoints are inside each of
	// them (default 2 s; negative: LargeEvents for every query).
	LargeMinSeconds float64
	// CheckpointEvery: a job checkpoint each this much of a run's time, in
	// every mode of both regimes (default 1 s; negative: none).
	CheckpointEvery time.Duration
	// The device's measurement: each trial's time (default 2 s) and the
	// size of the file it reads (default 256 MiB).
	DeviceTime     time.Duration
	DeviceFileSize int64
	Modes          bench.Selection
	JSON           string
	// JSONTo, when set, receives the JSON report instead of the file JSON.
	JSONTo   io.Writer
	Out      io.Writer
	Progress io.Writer
}

// The bars: over the stateful queries the geometric mean of best-of-trials
// ON/OFF ratios at least BarStateful, over all at least BarAll.
const (
	BarStateful = 1.30
	BarAll      = 1.15
)

type childConfig struct {
	Query       string `json:"query"`
	Events      int64  `json:"events"`
	Parallelism int    `json:"parallelism"`
	Batch       int    `json:"batch"`
	Cache       int64  `json:"cache"`
	Memtable    int64  `json:"memtable"`
	Dir         string `json:"dir"`
	WantURing   bool   `json:"want_uring"`
	// The large-state regime's.
	InFlightAuctions int           `json:"in_flight_auctions,omitempty"`
	ActivePeople     int           `json:"active_people,omitempty"`
	ReadAhead        bool          `json:"read_ahead,omitempty"`
	ReadWorkers      int           `json:"read_workers,omitempty"`
	CheckpointEvery  time.Duration `json:"checkpoint_every,omitempty"`
	// Reads beside the state's (nexmark.BesideReads): BesidePerEvent
	// random blocks of BesideFile an event.
	BesideFile     string  `json:"beside_file,omitempty"`
	BesidePerEvent float64 `json:"beside_per_event,omitempty"`
	BesideSize     int     `json:"beside_size,omitempty"`
	// A device measurement instead of a query: batches of DeviceBatch
	// reads of DeviceFile by Parallelism callers.
	DeviceFile  string        `json:"device_file,omitempty"`
	DeviceBatch int           `json:"device_batch,omitempty"`
	DeviceTime  time.Duration `json:"device_time,omitempty"`
}

// Keys of bench.Trial.Extra.
const (
	xLoadSeconds  = "load_seconds"
	xStateBytes   = "state_bytes"
	xCacheBytes   = "cache_bytes"
	xCacheHits    = "cache_hits"
	xCacheMisses  = "cache_misses"
	xBlockReads   = "block_reads"
	xMultiGets    = "multi_gets"
	xReadCalls    = "read_calls"
	xReadAhead    = "read_ahead_blocks"
	xAheadPaused  = "read_ahead_paused_batches"
	xReading      = "reading_workers"
	xBesideReads  = "beside_reads"
	xWorkerEvents = "worker_events"
	xReadRequests = "read_requests"
	xReadBytes    = "read_bytes"
	xRows         = "rows"
	xSumHi        = "sum_hi"
	xSumLo        = "sum_lo"
	xXorHi        = "xor_hi"
	xXorLo        = "xor_lo"
)

func child(raw json.RawMessage) (bench.Trial, error) {
	var c childConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return bench.Trial{}, err
	}
	if c.DeviceFile != "" {
		return deviceChild(c)
	}
	dir, err := os.MkdirTemp(c.Dir, "ringstore-nexmark-")
	if err != nil {
		return bench.Trial{}, err
	}
	defer os.RemoveAll(dir)
	// CPU time is counted over the span the events/s are, not the opening
	// and closing of the stores (an all-cached mode's gigabyte of frames).
	// Over the span events/s are measured in: the machine's CPU (the
	// interrupts and softirqs of the reads are in no process's time) and
	// the device's reads in flight.
	var machineCPU float64
	var dev bench.DeviceSpan
	span := func() func() {
		m0 := bench.MachineCPUTime()
		dev.Start(dir)
		return func() {
			machineCPU = bench.MachineCPUTime() - m0
			dev.End()
		}
	}
	res, err := nexmark.Run(nexmark.RunConfig{Query: c.Query, Events: c.Events, Parallelism: c.Parallelism, Batch: c.Batch,
		Dir: dir, Cache: c.Cache, Memtable: c.Memtable, IOMode: ioengine.Auto, ReadAhead: c.ReadAhead, ReadAheadBatches: readAheadBatches, ReadWorkers: c.ReadWorkers,
		CheckpointEvery: c.CheckpointEvery, Gen: nexmark.GenConfig{InFlightAuctions: c.InFlightAuctions, ActivePeople: c.ActivePeople}, CPUTime: bench.CPUTime, MeasureSpan: span,
		BesideReads: nexmark.BesideReads{File: c.BesideFile, PerEvent: c.BesidePerEvent, Size: c.BesideSize}})
	if err != nil {
		return bench.Trial{}, err
	}
	if isStateful(c.Query) && (res.Backend == ioengine.BackendURing) != c.WantURing {
		return bench.Trial{}, fmt.Errorf("the state ran on %s, not what RINGSTORE_IO_URING asked for", res.Backend)
	}
	split := func(v uint64) (float64, float64) { return float64(v >> 32), float64(v & 0xffffffff) }
	sh, sl := split(res.Sink.Sum)
	xh, xl := split(res.Sink.Xor)
	return bench.Trial{Ops: res.Events, Seconds: res.Seconds, CPUSeconds: res.CPUSeconds, MachineCPUSeconds: machineCPU, Extra: map[string]float64{
		xLoadSeconds: res.LoadSeconds, xStateBytes: float64(res.StateBytes), xCacheBytes: float64(res.CacheBytes),
		xCacheHits: float64(res.CacheHits), xCacheMisses: float64(res.CacheMisses), xBlockReads: float64(res.BlockReads),
		bench.ExtraDeviceReadsInFlight: dev.Depth(res.Seconds), bench.ExtraDeviceBusy: dev.Busy(res.Seconds), bench.ExtraDeviceWrittenBytes: dev.WrittenBytes(), xMultiGets: float64(res.MultiGets), xReadCalls: float64(res.ReadCalls), xReadAhead: float64(res.ReadAheadBlocks), xAheadPaused: float64(res.ReadAheadPaused), xReading: res.ReadingWorkers, xBesideReads: float64(res.BesideReads), xWorkerEvents: float64(res.WorkerEvents),
		xReadRequests: float64(res.ReadRequests), xReadBytes: float64(res.ReadBytes),
		xRows: float64(res.Sink.Rows), xSumHi: sh, xSumLo: sl, xXorHi: xh, xXorLo: xl,
	}}, nil
}

func checksum(t bench.Trial) string {
	return fmt.Sprintf("%.0f:%08x%08x:%08x%08x", t.Extra[xRows], uint64(t.Extra[xSumHi]), uint64(t.Extra[xSumLo]), uint64(t.Extra[xXorHi]), uint64(t.Extra[xXorLo]))
}

// QueryResult is one query's figures.
type QueryResult struct {
	Query        string    `json:"query"`
	Stateful     bool      `json:"stateful"`
	OffEPS       []float64 `json:"off_eps"`
	OnEPS        []float64 `json:"on_eps"`
	OffBest      float64   `json:"off_best_eps"`
	OnBest       float64   `json:"on_best_eps"`
	OffMedian    float64   `json:"off_median_eps"`
	OnMedian     float64   `json:"on_median_eps"`
	RatioBest    float64   `json:"ratio_best"`
	RatioMedian  float64   `json:"ratio_median"`
	OnPerCore    float64   `json:"on_eps_per_core"`
	OffLoadShare float64   `json:"off_state_read_share"` // OFF's time in state reads ÷ its workers' time
	StateBytes   float64   `json:"state_bytes"`
	CacheBytes   float64   `json:"cache_bytes"`
	StateVsCache float64   `json:"state_vs_cache"`
	// Tested: the run was big enough for its ratios to mean something
	// (Why says why not); untested queries are left out of the geomeans.
	Tested bool   `json:"tested"`
	Why    string `json:"why,omitempty"`
	// OFF's block caches: the share of block lookups that hit, and the 4
	// KiB blocks read from the device per event.
	CacheHitShare      float64 `json:"off_cache_hit_share"`
	BlockReadsPerEvent float64 `json:"off_block_reads_per_event"`
	AllOnFaster        bool    `json:"all_on_faster"`
	AllOnSlower        bool    `json:"all_on_slower"`
	ChecksumEqual      bool    `json:"checksum_equal"`
	Checksum           string  `json:"checksum"`
}

type report struct {
	bench.Report
	GeomeanBest   float64       `json:"geomean_best"`
	GeomeanMedian float64       `json:"geomean_median"`
	GeomeanBestSt float64       `json:"geomean_best_stateful"`
	MedianBest    float64       `json:"median_best"`
	Faster        int           `json:"faster"`
	Slower        int           `json:"slower"`
	AllOnSlower   []string      `json:"all_on_slower"`
	AllOnFaster   []string      `json:"all_on_faster"`
	Queries       []QueryResult `json:"queries"`
	Bars          []bench.Bar   `json:"bars"`
	Large         *LargeReport  `json:"large_state,omitempty"`
}

// Run runs the benchmark and writes its report.
func Run(o Options) error {
	if o.Events == 0 {
		o.Events = 2_000_000
	}
	if o.Parallelism == 0 {
		o.Parallelism = nexmark.DefaultParallelism
	}
	if o.Batch == 0 {
		o.Batch = nexmark.DefaultBatch
	}
	if o.Trials == 0 {
		o.Trials = 3
	}
	if o.Cache == 0 {
		o.Cache = 256 << 10
	}
	if o.Memtable == 0 {
		o.Memtable = 256 << 10
	}
	if len(o.Queries) == 0 {
		o.Queries = nexmark.QueryNames()
	}
	if o.Regime == "" {
		o.Regime = "both"
	}
	if o.LargeEvents == 0 {
		o.LargeEvents = 500_000
	}
	if o.InFlightAuctions == 0 {
		o.InFlightAuctions = 100_000
	}
	if o.ActivePeople == 0 {
		o.ActivePeople = 100_000
	}
	if o.LargeMemtable == 0 {
		o.LargeMemtable = 256 << 10
	}
	if o.LargeBatch == 0 {
		o.LargeBatch = 1000
	}
	if o.LargeMinSeconds == 0 {
		o.LargeMinSeconds = 2
	}
	switch {
	case o.CheckpointEvery == 0:
		o.CheckpointEvery = time.Second
	case o.CheckpointEvery < 0:
		o.CheckpointEvery = 0
	}
	if o.DeviceTime <= 0 {
		o.DeviceTime = defaultDeviceTime
	}
	if o.DeviceFileSize <= 0 {
		o.DeviceFileSize = defaultDeviceFileSize
	}
	if o.Regime != "default" && o.Regime != "large" && o.Regime != "both" {
		return fmt.Errorf("bench nexmark: regime %q: want default, large or both", o.Regime)
	}
	defaultRegime, largeRegime := o.Regime != "large", o.Regime != "default"
	if len(o.LargeQueries) == 0 {
		o.LargeQueries = o.Queries
	}
	for _, q := range append(slices.Clone(o.Queries), o.LargeQueries...) {
		if _, ok := nexmark.Lookup(q); !ok {
			return fmt.Errorf("bench nexmark: unknown query %q (known: %s)", q, strings.Join(nexmark.QueryNames(), ", "))
		}
	}
	if err := bench.CheckDir("bench nexmark", o.Dir, true); err != nil {
		return err
	}
	var notes []string
	uringOK, why := ioengine.ProbeKernel().Usable()
	sides := []bool{true, false}
	if !uringOK {
		sides = []bool{false}
		notes = append(notes, "io_uring unavailable ("+why+"): only the OFF modes ran, and there is no ON/OFF comparison")
		fmt.Fprintf(o.Progress, "io_uring unavailable (%s): only the OFF modes run\n", why)
	}
	var modes []bench.Mode
	for _, q := range o.Queries {
		if !defaultRegime {
			break
		}
		for _, on := range sides {
			name, env := q+"-off", "RINGSTORE_IO_URING=false"
			if on {
				name, env = q+"-on", "RINGSTORE_IO_URING=true"
			}
			cfg := childConfig{Query: q, Events: o.Events, Parallelism: o.Parallelism, Batch: o.Batch, Cache: o.Cache, Memtable: o.Memtable, Dir: o.Dir, WantURing: on,
				CheckpointEvery: o.CheckpointEvery}
			modes = append(modes, bench.Mode{Name: name, Label: name, Repeat: referenceRepeat, Exec: bench.ChildExec(Workload, cfg, env)})
		}
	}
	var deviceFile string
	if largeRegime && uringOK {
		sizes, err := sizeLarge(o)
		if err != nil {
			return err
		}
		modes = append(modes, largeBenchModes(o, sizes, &deviceFile)...)
	} else if largeRegime {
		notes = append(notes, "io_uring unavailable: the large-state regime, whose floors are measured on io_uring, did not run")
		largeRegime = false
	}
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = m.Name
	}
	if err := bench.CheckListed("nexmark", names, ModeNames(o)); err != nil {
		return err
	}
	modes, err := o.Modes.Select("nexmark", modes)
	if err != nil {
		return err
	}
	for _, m := range modes {
		if strings.HasPrefix(m.Name, largePrefix+"device-") || strings.HasSuffix(m.Name, "-"+modeCachedReads) {
			// The device modes and the reads beside the all-cached
			// mode's read a file of the run's own, made once.
			if deviceFile, err = writeDeviceFile(o.Dir, o.DeviceFileSize); err != nil {
				return err
			}
			defer os.Remove(deviceFile)
			break
		}
	}
	w := bench.Workload{Name: "nexmark", Dir: o.Dir, Trials: o.Trials, Modes: modes, Progress: o.Progress, Out: o.Out, JSON: o.JSON, JSONTo: o.JSONTo,
		Plan: fmt.Sprintf(" (%d queries; regime %s), %d events (large state: %d), %d workers", len(o.Queries), o.Regime, o.Events, o.LargeEvents, o.Parallelism)}
	w.Summarize = func(results []bench.ModeResult, machine bench.Machine) (bench.Summary, error) {
		rep, err := summarize(o, results, machine, notes)
		if largeRegime {
			lr, lerr := summarizeLarge(o, results)
			rep.Large, err = lr, errors.Join(err, lerr)
			rep.Bars = append(rep.Bars, lr.Bars...)
		}
		return bench.Summary{Heading: "nexmark — io_uring ON vs OFF", Body: func(w io.Writer) { writeBody(w, rep) }, Bars: rep.Bars, Notes: rep.Notes, Report: rep}, err
	}
	return w.Run()
}

// summarize makes the report of a run's results.
func summarize(o Options, results []bench.ModeResult, machine bench.Machine, notes []string) (*report, error) {
	var runErr error
	rep := &report{Report: bench.Report{Benchmark: "nexmark", Machine: machine,
		Config: map[string]any{"events": o.Events, "parallelism": o.Parallelism, "batch": o.Batch, "trials": o.Trials, "trials_per_mode": o.Trials * referenceRepeat, "cache_bytes_per_worker": o.Cache, "large_min_seconds": o.LargeMinSeconds,
			"memtable_bytes_per_worker": o.Memtable, "queries": o.Queries}}}
	cores := float64(min(o.Parallelism, runtime.NumCPU()))
	var ratiosBest, ratiosMedian, ratiosBestSt []float64
	for _, q := range o.Queries {
		on, off := bench.Find(results, q+"-on"), bench.Find(results, q+"-off")
		if on == nil || off == nil || len(on.Trials) == 0 || len(off.Trials) == 0 {
			continue
		}
		qr := QueryResult{Query: q, Stateful: isStateful(q), OnEPS: on.Rates(), OffEPS: off.Rates(), OnBest: on.Best(), OffBest: off.Best(),
			OnMedian: on.Median().Rate(), OffMedian: off.Median().Rate(), ChecksumEqual: true}
		qr.RatioBest, qr.RatioMedian = qr.OnBest/qr.OffBest, qr.OnMedian/qr.OffMedian
		qr.OnPerCore = qr.OnMedian / cores
		if len(on.Trials) >= 3 && len(off.Trials) >= 3 { // fewer say nothing about every trial
			qr.AllOnFaster, qr.AllOnSlower = on.Min() > off.Max(), on.Max() < off.Min()
		}
		om := off.Median()
		qr.OffLoadShare = om.Extra[xLoadSeconds] / (om.Seconds * float64(o.Parallelism))
		qr.StateBytes, qr.CacheBytes = om.Extra[xStateBytes], om.Extra[xCacheBytes]
		if qr.CacheBytes > 0 {
			qr.StateVsCache = qr.StateBytes / qr.CacheBytes
		}
		if lookups := om.Extra[xCacheHits] + om.Extra[xCacheMisses]; lookups > 0 {
			qr.CacheHitShare = om.Extra[xCacheHits] / lookups
		}
		qr.BlockReadsPerEvent = om.Extra[xBlockReads] / float64(om.Ops)
		qr.Checksum = checksum(on.Trials[0])
		for _, t := range append(slices.Clone(on.Trials), off.Trials...) {
			if checksum(t) != qr.Checksum {
				qr.ChecksumEqual = false
				runErr = fmt.Errorf("bench nexmark: %s: output %s in one trial, %s in another", q, checksum(t), qr.Checksum)
			}
		}
		qr.Tested, qr.Why = tested(om.Seconds, om.Extra[xStateBytes])
		rep.Queries = append(rep.Queries, qr)
		if !qr.Tested {
			continue
		}
		ratiosBest, ratiosMedian = append(ratiosBest, qr.RatioBest), append(ratiosMedian, qr.RatioMedian)
		if qr.Stateful {
			ratiosBestSt = append(ratiosBestSt, qr.RatioBest)
		}
		switch {
		case qr.RatioMedian > 1:
			rep.Faster++
		case qr.RatioMedian < 1:
			rep.Slower++
		}
		if qr.AllOnSlower {
			rep.AllOnSlower = append(rep.AllOnSlower, q)
		}
		if qr.AllOnFaster {
			rep.AllOnFaster = append(rep.AllOnFaster, q)
		}
	}
	rep.GeomeanBest, rep.GeomeanMedian, rep.GeomeanBestSt = geomean(ratiosBest), geomean(ratiosMedian), geomean(ratiosBestSt)
	rep.MedianBest = bench.Median(ratiosBest)
	type row struct {
		Mode      string    `json:"mode"`
		Label     string    `json:"label"`
		EPS       float64   `json:"eps_median"`
		EPSBest   float64   `json:"eps_best"`
		TrialEPS  []float64 `json:"trial_eps"`
		CPUSecond float64   `json:"cpu_seconds_median"`
	}
	var rows []row
	for _, r := range results {
		if len(r.Trials) > 0 {
			rows = append(rows, row{Mode: r.Mode.Name, Label: r.Mode.Label, EPS: r.Median().Rate(), EPSBest: r.Best(), TrialEPS: r.Rates(), CPUSecond: r.Median().CPUSeconds})
		}
	}
	rep.Results = rows
	allEqual := true
	for _, q := range rep.Queries {
		allEqual = allEqual && q.ChecksumEqual
	}
	valid := len(ratiosBest) > 0
	if !o.defaultRegime() {
		return rep, runErr
	}
	rep.Bars = []bench.Bar{
		bench.NewBar("geometric mean of best-of ON/OFF over the stateful queries", rep.GeomeanBestSt, BarStateful, false, len(ratiosBestSt) > 0, ""),
		bench.NewBar("geometric mean of best-of ON/OFF over every query", rep.GeomeanBest, BarAll, false, valid, ""),
		bench.NewBar("queries where every ON trial is slower than every OFF trial", float64(len(rep.AllOnSlower)), 0, true, len(rep.Queries) > 0 && o.Trials*referenceRepeat >= 3, strings.Join(rep.AllOnSlower, ", ")),
		bench.NewBar("queries whose output differs between trials or modes", float64(boolCount(!allEqual)), 0, true, len(rep.Queries) > 0, ""),
	}
	rep.Notes = append(notes,
		fmt.Sprintf("Events: package nexmark's generator (the reference's rules: the 1:3:46 mix, hot auctions, bidders and sellers in batches of 100, 100 auctions in flight, 1,000 active people), %d events; %d workers (events routed by the query's key), mini-batches of %d events whose state reads are one kv.MultiGet per worker; each worker's state in its own store without a log, with a %d KiB block cache and a %d KiB memtable, so the state of the stateful queries lies mostly in tables several times the caches (state_vs_cache).", o.Events, o.Parallelism, o.Batch, o.Cache>>10, o.Memtable>>10),
		fmt.Sprintf("ON: RINGSTORE_IO_URING=true, each worker's store on an inline io_uring engine of its own (each Load's reads submitted and waited for on the worker's thread); OFF: RINGSTORE_IO_URING=false, pread. Each trial in a fresh process and a fresh directory; each mode runs %d trials per round, a query's ON and OFF taking turns, so that \"every ON trial slower than every OFF trial\" is not chance (with 3 against 3 it is, for one query in 20); events/s counts every generated event (the source's generation is in both modes alike).", referenceRepeat),
		"The queries package nexmark implements: 22 of the suite (every one but q6): q0, q1, q2, q10, q13, q14, q21, q22 stateless; q3, q4, q5, q7, q8, q9, q11, q12, q15–q20 on state.",
		fmt.Sprintf("Every run takes a job checkpoint each %v of its time (flush, hard links, manifest), inside the measurement. A query whose OFF run took under %.2f s, or built under %d KiB of state, is not tested: its ratio is not shown and it is left out of the geomeans and the bars.", o.CheckpointEvery, minSeconds, minStateBytes>>10),
	)
	if o.Regime != "default" {
		rep.Notes = append(rep.Notes, fmt.Sprintf("Large state: the generator with %d in-flight auctions and %d active people, %d events (%s), mini-batches of %d, a %d KiB memtable per worker, and caches %s. Modes: ON (io_uring on an engine inline on each worker's thread; while a worker processes a mini-batch the reads of its next %d are in flight: kv.DB.ReadAhead, submitted from the worker's thread, the blocks its cache lacks read past the cache and put in the cache when its Load is done; the read-ahead pauses while the job's block reads come at fewer than %.0f per second of the process's CPU and resumes over 1.5 times that, nexmark.RunConfig.ReadAheadPauseBelow), ON without read-ahead (each Load submits its reads and waits), OFF (pread, one read after another), OFF with 3 and 16 read goroutines per worker splitting each Load's reads (ForSt's read pool), every block cached (io_uring, 1 GiB caches: the CPU's floor), and every block cached with ON's further reads beside (the all-cached mode, each worker also reading as many random reads of the device's file, of their mean size in whole blocks, for each event it processes as a sizing run of ON made read requests beyond the all-cached mode's (a coalesced read of adjacent blocks is one request), O_DIRECT on its own inline engine, submitted as it starts a mini-batch's Load and waited for and checksummed as it starts the next: the all-cached work and those reads on these CPUs, nothing else; its rate ÷ the limit is the reads ceiling, and where that is under %.1f× the limit those reads' own price on these CPUs is more than the limit bar allows). The device's floor: its IOPS (random 4 KiB O_DIRECT reads on io_uring, %d callers, at %d depths, the best trial at each: a stall of the device only lowers a trial) at the depth ON kept in flight, ÷ the block reads per event the query needs; both depths are the device's own count of the reads it had in flight, the mean over the run (its stat file's read time ÷ the run's time; where it cannot be read, the depth submitted: the workers ON's reads were spread over × block reads per Load × the %d mini-batches read ahead): the fewer of ON's and OFF's (a block ON reads ahead and its cache evicts before the Load that wanted it is read twice; that is ON's waste, and a floor for it would be lower). A query's limit is the lesser of the all-cached rate and the device floor. Its CPU ceiling is the all-cached mode's CPUs busy ÷ (that mode's CPU per event + the device modes' CPU per read at as many reads per engine call as ON made, interpolated between their batches, × the block reads per event the query needs beyond the all-cached mode's), or ÷ ON's own CPU per event where that is less; all of them the machine's CPU time where it was measured (a read's completion is handled in interrupts and softirqs that no process's CPU time has): the most events/s a mode that reads those blocks could reach on these CPUs, paying only the kernel's and the engine's cost of each read; where it is under %.1f× the limit, the limit bar cannot be met. ON's own CPU bound is that mode's CPUs busy ÷ ON's own CPU per event: where it is under %.1f× the limit, ON's cost per event keeps it under the bar however its reads overlap its work, and the gap between it and the ceiling is what a read costs ON beyond the device modes' price. Working set: the distinct blocks the all-cached mode loaded; a query whose working set is under %.0f× its caches is not tested. CPU per event is the process's CPU time from the first event to the last output, ÷ the events (the opening and closing of the stores are not in it, as they are not in events/s); the JSON's cpus_busy is that CPU time ÷ the wall time. Ratios in the bars are of medians of trials. A stateless query runs %d trials per round in each mode (its trials are short, and ON and OFF run the same code).",
			o.InFlightAuctions, o.ActivePeople, o.LargeEvents, eventsNote(o), o.LargeBatch, o.LargeMemtable>>10, cacheNote(o), readAheadBatches, float64(nexmark.DefaultReadAheadPauseBelow), BarVsLimit, o.Parallelism, len(deviceBatches), readAheadBatches, BarVsLimit, BarVsLimit, minWSVsCache, statelessRepeat))
	}
	return rep, runErr
}

func eventsNote(o Options) string {
	if o.LargeMinSeconds <= 0 {
		return "every stateful query"
	}
	return fmt.Sprintf("a stateful query whose all-cached run, its fastest mode, would take under %.1f s runs more, in steps of 100,000 and at most %d× as many, so that each mode's runs hold several of the checkpoints below: the events column", o.LargeMinSeconds, maxLargeEventsFactor)
}

func cacheNote(o Options) string {
	if o.LargeCache > 0 {
		return fmt.Sprintf("of %d KiB per worker", o.LargeCache>>10)
	}
	return fmt.Sprintf("sized per stateful query so that its working set is %.0f× the caches together (measured by a run in the all-cached mode before the trials; 32 KiB per worker at least); a stateless query runs %d× the events", sizingRatio, statelessEventsFactor)
}

func (o Options) defaultRegime() bool { return o.Regime != "large" }

func boolCount(b bool) int {
	if b {
		return 1
	}
	return 0
}

func geomean(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := 0.0
	for _, x := range v {
		s += math.Log(x)
	}
	return math.Exp(s / float64(len(v)))
}

func writeBody(w io.Writer, rep *report) {
	if len(rep.Queries) > 0 {
		writeDefault(w, rep)
	}
	if rep.Large != nil {
		writeLarge(w, rep.Large)
	}
}

func writeDefault(w io.Writer, rep *report) {
	fmt.Fprintln(w)
	t := bench.Table{Header: []string{"query", "ON events/s (median)", "OFF events/s (median)", "ON/OFF best", "ON/OFF median", "ON trials", "OFF trials", "OFF time in state reads", "state MiB", "× cache", "OFF block cache hits", "OFF device reads / 1k events", "ON events/s per core", "output"}}
	for _, q := range rep.Queries {
		out := "equal"
		if !q.ChecksumEqual {
			out = "DIFFERS"
		}
		share, ratio, hits, reads := "-", "-", "-", "-"
		if q.Stateful {
			share, ratio = fmt.Sprintf("%.0f%%", 100*q.OffLoadShare), fmt.Sprintf("%.1f", q.StateVsCache)
			hits, reads = fmt.Sprintf("%.1f%%", 100*q.CacheHitShare), fmt.Sprintf("%.1f", 1000*q.BlockReadsPerEvent)
		}
		best, median := fmt.Sprintf("%.2f×", q.RatioBest), fmt.Sprintf("%.2f×", q.RatioMedian)
		if !q.Tested {
			best, median = "not tested", q.Why
		}
		t.Add(q.Query, fmt.Sprintf("%.0f", q.OnMedian), fmt.Sprintf("%.0f", q.OffMedian), best, median,
			bench.Whole(q.OnEPS), bench.Whole(q.OffEPS), share, fmt.Sprintf("%.1f", q.StateBytes/(1<<20)), ratio, hits, reads, fmt.Sprintf("%.0f", q.OnPerCore), out)
	}
	t.Write(w)
	fmt.Fprintf(w, "\ngeometric mean ON/OFF: best-of %.3f×, median-of %.3f× (stateful queries: best-of %.3f×); median of best-of ratios %.3f×; %d faster, %d slower\n",
		rep.GeomeanBest, rep.GeomeanMedian, rep.GeomeanBestSt, rep.MedianBest, rep.Faster, rep.Slower)
	if trials, _ := rep.Config.(map[string]any)["trials_per_mode"].(int); trials < 3 {
		fmt.Fprintf(w, "every ON trial faster or slower than every OFF trial: %d %s, too few to say\n", trials, map[bool]string{true: "trial", false: "trials"}[trials == 1])
	} else {
		fmt.Fprintf(w, "every ON trial faster than every OFF trial: %v; every ON trial slower: %v\n", rep.AllOnFaster, rep.AllOnSlower)
	}
}

func isStateful(query string) bool {
	q, _ := nexmark.Lookup(query)
	return q.Stateful
}
