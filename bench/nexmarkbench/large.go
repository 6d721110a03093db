package nexmarkbench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/nexmark"
)

// The large-state regime: Nexmark's own knobs (in-flight auctions, active
// people) raised so that the state a query reads, not only the state it
// holds, is many times its caches; each stateful query in seven modes.
const (
	modeOn     = "on"        // io_uring, the reads of the next readAheadBatches mini-batches run ahead (RunConfig.ReadAhead)
	modeOnSync = "on-sync"   // io_uring: each worker's Load submits its reads and waits
	modeOff    = "off"       // pread, one after another
	modePool3  = "off-pool3" // pread by 3 goroutines per worker (ForSt's read threads)
	modePool16 = "off-pool16"
	modeCached = "cached" // io_uring, caches bigger than the state: the CPU's floor
	// modeCachedReads is modeCached with the read requests ON makes beyond
	// it made beside its state's (nexmark.BesideReads): what those reads
	// cost these CPUs, measured.
	modeCachedReads = "cached-reads"
	largePrefix     = "large-"
	// readAheadBatches are the mini-batches past the one it processes whose
	// reads an ON worker keeps in flight (nexmark.RunConfig.ReadAheadBatches).
	readAheadBatches = 4
)

// The large-state regime's bars.
const (
	BarVsLimit     = 0.9  // ON ÷ min(all-cached, device floor), every stateful query
	BarVsPool      = 1.0  // ON ÷ the better read pool, events/s (geomean)
	BarCPUVsPool   = 0.7  // ON ÷ the better read pool, CPU per event (geomean)
	BarStatelessLo = 0.97 // stateless ON/OFF geomean, within [lo, hi]
	BarStatelessHi = 1.03
	readBoundShare = 0.40 // the queries the pool bars are over: OFF's time in state reads at least this
	minWSVsCache   = 8.0  // a query whose working set is less than this many caches is not tested
)

// largeModes are the modes of one stateful query; stateless ones run ON
// and OFF.
var largeModes = []struct {
	name, label string
	stateful    bool
}{
	{modeOn, "io_uring, reads run ahead", false},
	{modeOnSync, "io_uring, no read-ahead", true},
	{modeOff, "pread", false},
	{modePool3, "pread, 3 read goroutines", true},
	{modePool16, "pread, 16 read goroutines", true},
	{modeCached, "io_uring, every block cached", true},
	{modeCachedReads, "io_uring, every block cached, ON's further reads beside", true},
}

// statelessEventsFactor: a stateless query runs this many times the large
// regime's events, so that its run lasts long enough to time (it has no
// state, and the regime changes nothing but its events).
const statelessEventsFactor = 10

// statelessRepeat is the trials a stateless query's modes run per round.
// ON and OFF run the same code there (no state to read), so their
// difference is the machine's noise, and the bar on their geomean (within
// BarStatelessLo–BarStatelessHi) is read from medians of 3 × rounds trials
// each. Their trials are short (a second or so).
const statelessRepeat = 3

// referenceRepeat is the trials each mode of the reference regime runs per
// round. The bar "no query slower in every trial" is read over all 22
// queries: with 3 trials each, every ON trial falls below every OFF trial
// by chance once in 20 queries (1 ÷ C(6,3)), so a run of two modes alike
// would fail it more often than not (1 − (19/20)^22 ≈ 0.68); with 6 each,
// once in 924 queries (a run fails by chance about once in 42).
const referenceRepeat = 2

// largeConfig is the child configuration of a large-state mode of a
// stateful query sized s (sizeLarge).
func largeConfig(o Options, q, mode string, s largeSize) (childConfig, string) {
	c := childConfig{Query: q, Events: s.events, Parallelism: o.Parallelism, Batch: o.LargeBatch, Cache: s.cache, Memtable: o.LargeMemtable,
		Dir: o.Dir, InFlightAuctions: o.InFlightAuctions, ActivePeople: o.ActivePeople, CheckpointEvery: o.CheckpointEvery}
	if !isStateful(q) {
		c.Events = o.LargeEvents * statelessEventsFactor
	}
	env := "RINGSTORE_IO_URING=true"
	switch mode {
	case modeOn:
		c.WantURing, c.ReadAhead = true, true
	case modeOnSync:
		c.WantURing = true
	case modeCached:
		c.WantURing, c.Cache = true, cachedCache
	case modeCachedReads:
		c.WantURing, c.Cache, c.BesidePerEvent, c.BesideSize = true, cachedCache, s.beside, s.besideSize
	case modePool3, modePool16:
		c.ReadWorkers = map[string]int{modePool3: 3, modePool16: 16}[mode]
		env = "RINGSTORE_IO_URING=false"
	default:
		env = "RINGSTORE_IO_URING=false"
	}
	return c, env
}

// cachedCache is each worker's cache in the all-cached mode: more than any
// state the large regime builds (its arena is touched only as blocks load).
const cachedCache = 1 << 30

// LargeQuery is one query's figures in the large-state regime. Rates are
// medians of trials unless named best; a missing mode is 0 in JSON and "–"
// in text.
type LargeQuery struct {
	Query    string               `json:"query"`
	Events   int64                `json:"events"` // per trial (sizeLarge)
	Stateful bool                 `json:"stateful"`
	Tested   bool                 `json:"tested"`
	Why      string               `json:"why,omitempty"` // why not tested
	EPS      map[string]float64   `json:"eps_median"`    // by mode
	EPSBest  map[string]float64   `json:"eps_best"`
	Trials   map[string][]float64 `json:"trial_eps"`
	// CPU per event, µs, by mode (medians of trials), and the CPUs busy
	// on average (CPU time ÷ wall time), both over the span the events/s
	// are measured in.
	CPUus  map[string]float64 `json:"cpu_us_per_event"`
	CPUUse map[string]float64 `json:"cpus_busy"`
	// The same of the whole machine's CPU time (bench.MachineCPUTime):
	// the process's and the interrupts and softirqs that handle its
	// reads' completions, which no process is charged for.
	MachineCPUus  map[string]float64 `json:"machine_cpu_us_per_event,omitempty"`
	MachineCPUUse map[string]float64 `json:"machine_cpus_busy,omitempty"`
	// OFF's time in state reads ÷ its workers' time, and the most any
	// change of the reads could gain: 1 ÷ (1 − share).
	OffLoadShare float64 `json:"off_state_read_share"`
	GainBound    float64 `json:"gain_bound"`
	StateBytes   float64 `json:"state_bytes"`
	// WorkingSet: distinct 4 KiB blocks the query's reads loaded, from the
	// all-cached mode (whose caches never evict), × 4 KiB.
	WorkingSet float64 `json:"working_set_bytes"`
	CacheBytes float64 `json:"cache_bytes"` // the other modes' caches, all workers
	WSVsCache  float64 `json:"working_set_vs_cache"`
	// ON's and OFF's block reads per event; the depth ON's reads kept:
	// the mean number of reads the device had in flight during ON's run,
	// as the device counted them (bench.DeviceCounts), or where that was
	// not measured ON's reads per Load × the workers they were spread over
	// × the mini-batches read ahead (DepthNominal, the most it could
	// keep); the device's IOPS there; the floor it sets for the reads the
	// query needs (floorReads).
	BlockReadsPerEvent    float64 `json:"on_block_reads_per_event"`
	OffBlockReadsPerEvent float64 `json:"off_block_reads_per_event"`
	FloorReadsPerEvent    float64 `json:"floor_block_reads_per_event"`
	Depth                 float64 `json:"on_reads_in_flight"`
	DepthNominal          float64 `json:"on_reads_in_flight_nominal"`
	DeviceIOPS            float64 `json:"device_iops_at_depth"`
	DeviceFloor           float64 `json:"device_floor_eps"`
	Limit                 float64 `json:"limit_eps"` // min(all-cached, device floor)
	OnVsLimit             float64 `json:"on_vs_limit"`
	// Over ON's run: its block reads a second; the share of the run the
	// device had any request in flight, and what it wrote a second (the
	// store's flushes, compactions and checkpoints, beside the reads), as
	// the device counted them (bench.DeviceCounts). DeviceBusyAtDepth is
	// the share the floor's random reads kept it busy at ON's depth
	// (LargeReport.DeviceBusy, interpolated): ON leaving the device idle
	// longer reads less than the floor.
	DeviceReadRate    float64 `json:"on_device_reads_per_s,omitempty"`
	DeviceBusy        float64 `json:"on_device_busy,omitempty"`
	WrittenMBps       float64 `json:"on_device_written_mb_per_s,omitempty"`
	DeviceBusyAtDepth float64 `json:"device_busy_at_depth,omitempty"`
	// ReadsPerCall is ON's block reads per engine call that read blocks;
	// ReadCPUus the device modes' CPU per read at that many reads per call
	// (the machine's where measured), interpolated between their batches.
	ReadsPerCall float64 `json:"on_block_reads_per_call"`
	ReadCPUus    float64 `json:"cpu_us_per_read_at_on_batch"`
	// CPUCeiling is the most events/s any mode that reads the query's
	// blocks, in calls of ON's size, could reach on the run's CPUs: the
	// all-cached mode's CPUs busy ÷ (its CPU per event + ReadCPUus × the
	// block reads the query needs beyond the all-cached mode's), or ÷ ON's
	// own CPU per event where that is less (a model ON beat is no bound).
	// Where it is under BarVsLimit × Limit, the limit bar cannot be met.
	CPUCeiling        float64 `json:"cpu_ceiling_eps"`
	CPUCeilingVsLimit float64 `json:"cpu_ceiling_vs_limit"`
	// OnCPUBound is what ON would make at its own CPU per event with the
	// CPUs as busy as the all-cached mode kept them (the machine's CPU
	// where measured). Where it is under BarVsLimit × Limit, ON's cost per
	// event keeps it under the bar, however well its reads overlap its
	// work: the CPU a read costs it beyond the device modes' is the gap
	// between this and CPUCeiling.
	OnCPUBound        float64 `json:"on_cpu_bound_eps,omitempty"`
	OnCPUBoundVsLimit float64 `json:"on_cpu_bound_vs_limit,omitempty"`
	// ReadsCeiling is the events/s (median) of modeCachedReads: the
	// all-cached mode making, beside its state's, BesidePerEvent random
	// reads an event, as many as ON made beyond the all-cached mode in the
	// sizing run and of their mean size (sizeLarge; BesidePerEvent is
	// what the mode made, for each event its workers processed).
	// It is what the all-cached work and those reads make on these CPUs,
	// measured rather than modelled as CPUCeiling is: where it is under
	// BarVsLimit × Limit, those reads' own price on these CPUs is more
	// than the bar allows. OnVsReadsCeiling is ON ÷ it.
	ReadsCeiling        float64 `json:"reads_ceiling_eps,omitempty"`
	ReadsCeilingVsLimit float64 `json:"reads_ceiling_vs_limit,omitempty"`
	OnVsReadsCeiling    float64 `json:"on_vs_reads_ceiling,omitempty"`
	BesidePerEvent      float64 `json:"beside_reads_per_event,omitempty"`
	// ReadRequestsPerEvent is ON's read requests an event (a read of
	// adjacent blocks is one): fewer than its block reads where its reads
	// coalesce.
	ReadRequestsPerEvent float64 `json:"on_read_requests_per_event,omitempty"`
	OnVsOff              float64 `json:"on_vs_off"`
	OnVsOffBest          float64 `json:"on_vs_off_best"`
	BestPool             string  `json:"best_pool"`
	OnVsPool             float64 `json:"on_vs_best_pool"`
	CPUVsPool            float64 `json:"on_cpu_vs_best_pool"`
	AllOnSlower          bool    `json:"all_on_slower"`
	ChecksumEqual        bool    `json:"checksum_equal"`
}

// LargeReport is the large-state regime's part of the report.
type LargeReport struct {
	Events int64 `json:"events"`
	// MinSeconds: a stateful query runs more events where its all-cached
	// run would take less (Options.LargeMinSeconds); 0: none does.
	MinSeconds  float64         `json:"min_seconds,omitempty"`
	Auctions    int             `json:"in_flight_auctions"`
	People      int             `json:"active_people"`
	Batch       int             `json:"batch"`
	Parallelism int             `json:"parallelism"`
	DeviceIOPS  map[int]float64 `json:"device_iops_by_depth"`
	// DeviceDepth is, by the depth the device modes submit (callers ×
	// batch), the mean number of reads the device had in flight as it
	// counted them: the depth the floor's curve is drawn against.
	DeviceDepth map[int]float64 `json:"device_reads_in_flight_by_depth,omitempty"`
	// DeviceBusy is, by depth, the share of the device modes' runs the
	// device had any request in flight.
	DeviceBusy map[int]float64 `json:"device_busy_by_depth,omitempty"`
	// DeviceCPUus is the CPU per read, µs, of the device's modes (the
	// process's user and system time ÷ reads), by depth.
	DeviceCPUus map[int]float64 `json:"device_cpu_us_per_read_by_depth"`
	// DeviceMachineCPUus is the machine's CPU per read (interrupts and
	// softirqs in), by depth.
	DeviceMachineCPUus map[int]float64 `json:"device_machine_cpu_us_per_read_by_depth,omitempty"`
	Queries            []LargeQuery    `json:"queries"`
	GeomeanBest        float64         `json:"geomean_on_off_best"`
	GeomeanMedian      float64         `json:"geomean_on_off_median"`
	Bars               []bench.Bar     `json:"bars"`
}

// summarizeLarge computes the large-state regime's figures and bars.
func summarizeLarge(o Options, results []bench.ModeResult) (*LargeReport, error) {
	lr := &LargeReport{Events: o.LargeEvents, MinSeconds: max(0, o.LargeMinSeconds), Auctions: o.InFlightAuctions, People: o.ActivePeople, Batch: o.LargeBatch, Parallelism: o.Parallelism,
		DeviceIOPS: map[int]float64{}, DeviceCPUus: map[int]float64{}, DeviceDepth: map[int]float64{}, DeviceBusy: map[int]float64{}, DeviceMachineCPUus: map[int]float64{}}
	// The device modes' curves: IOPS by the depth submitted and by the
	// depth the device counted; CPU per read, µs, by batch (reads per
	// call), the process's and the machine's; and the least of each. Each
	// point is the depth's best trial: a stall of the device (a trial of
	// this VM's has read 500 blocks a second at depth 256) only lowers a
	// trial, and a floor must not be lowered by one.
	var submitted, counted, busyByDepth, readCost, readMachineCost []curvePoint
	readCPU, readMachineCPU := 0.0, 0.0
	for _, b := range deviceBatches {
		r := bench.Find(results, deviceMode(b))
		if r == nil || len(r.Trials) == 0 {
			continue
		}
		top := r.BestTrial()
		d := b * o.Parallelism
		lr.DeviceIOPS[d] = top.Rate()
		submitted = append(submitted, curvePoint{float64(d), top.Rate()})
		if dd := top.Extra[bench.ExtraDeviceReadsInFlight]; dd > 0 {
			lr.DeviceDepth[d] = dd
			counted = append(counted, curvePoint{dd, top.Rate()})
		}
		if b, dd := top.Extra[bench.ExtraDeviceBusy], top.Extra[bench.ExtraDeviceReadsInFlight]; b > 0 && dd > 0 {
			lr.DeviceBusy[d] = b
			busyByDepth = append(busyByDepth, curvePoint{dd, b})
		}
		perRead := func(seconds float64, byDepth map[int]float64, cost *[]curvePoint, least *float64) {
			if top.Ops == 0 || seconds <= 0 {
				return
			}
			c := 1e6 * seconds / float64(top.Ops)
			byDepth[d] = c
			*cost = append(*cost, curvePoint{float64(b), c})
			if *least == 0 || c < *least {
				*least = c
			}
		}
		perRead(top.CPUSeconds, lr.DeviceCPUus, &readCost, &readCPU)
		perRead(top.MachineCPUSeconds, lr.DeviceMachineCPUus, &readMachineCost, &readMachineCPU)
	}
	// A curve is used only where every device mode has its point.
	curveMeasured := len(submitted) > 0 && len(counted) == len(submitted)
	curve := submitted
	if curveMeasured {
		curve = counted
	}
	if len(busyByDepth) != len(counted) {
		busyByDepth = nil // a depth without its busy share: none
	}
	if len(readMachineCost) != len(readCost) {
		readMachineCost, readMachineCPU = nil, 0
	}
	var runErr error
	var best, median, stateless, vsLimit, vsPool, cpuVsPool []float64
	var slower []string
	allEqual := true
	for _, q := range o.LargeQueries {
		qr := LargeQuery{Query: q, Stateful: isStateful(q), EPS: map[string]float64{}, EPSBest: map[string]float64{}, Trials: map[string][]float64{}, CPUus: map[string]float64{}, CPUUse: map[string]float64{},
			MachineCPUus: map[string]float64{}, MachineCPUUse: map[string]float64{}, ChecksumEqual: true}
		var sum string
		for _, m := range largeModes {
			r := bench.Find(results, largePrefix+q+"-"+m.name)
			if r == nil || len(r.Trials) == 0 {
				continue
			}
			med := r.Median()
			qr.EPS[m.name], qr.EPSBest[m.name], qr.Trials[m.name] = med.Rate(), r.Best(), r.Rates()
			qr.Events = med.Ops
			if med.Ops > 0 {
				qr.CPUus[m.name] = 1e6 * med.CPUSeconds / float64(med.Ops)
			}
			if med.Seconds > 0 {
				qr.CPUUse[m.name] = med.CPUSeconds / med.Seconds
			}
			if med.Ops > 0 && med.Seconds > 0 && med.MachineCPUSeconds > 0 {
				qr.MachineCPUus[m.name] = 1e6 * med.MachineCPUSeconds / float64(med.Ops)
				qr.MachineCPUUse[m.name] = med.MachineCPUSeconds / med.Seconds
			}
			for _, t := range r.Trials {
				if sum == "" {
					sum = checksum(t)
				} else if checksum(t) != sum {
					qr.ChecksumEqual, allEqual = false, false
					runErr = fmt.Errorf("bench nexmark: large-state %s: output %s in mode %s, %s in another", q, checksum(t), m.name, sum)
				}
			}
		}
		on, off := bench.Find(results, largePrefix+q+"-"+modeOn), bench.Find(results, largePrefix+q+"-"+modeOff)
		if on == nil || off == nil || len(on.Trials) == 0 || len(off.Trials) == 0 {
			continue
		}
		qr.OnVsOff, qr.OnVsOffBest = qr.EPS[modeOn]/qr.EPS[modeOff], qr.EPSBest[modeOn]/qr.EPSBest[modeOff]
		if len(on.Trials) >= 3 && len(off.Trials) >= 3 {
			qr.AllOnSlower = on.Max() < off.Min()
		}
		om, onm := off.Median(), on.Median()
		// Here a stateful query is judged by the state it reads (its
		// working set against its caches, below), not by what it holds.
		qr.Tested, qr.Why = tested(om.Seconds, 0)
		if qr.Stateful {
			qr.OffLoadShare = om.Extra[xLoadSeconds] / (om.Seconds * float64(o.Parallelism))
			if qr.OffLoadShare < 1 {
				qr.GainBound = 1 / (1 - qr.OffLoadShare)
			}
			qr.StateBytes, qr.CacheBytes = om.Extra[xStateBytes], om.Extra[xCacheBytes]
			if c := bench.Find(results, largePrefix+q+"-"+modeCached); c != nil && len(c.Trials) > 0 {
				qr.WorkingSet = c.Median().Extra[xCacheMisses] * 4096
			}
			if qr.CacheBytes > 0 {
				qr.WSVsCache = qr.WorkingSet / qr.CacheBytes
			}
			if qr.Tested && qr.WSVsCache < minWSVsCache {
				qr.Tested, qr.Why = false, fmt.Sprintf("working set %.1f MiB is %.1f× the caches, under %.0f×", qr.WorkingSet/(1<<20), qr.WSVsCache, minWSVsCache)
			}
			if onm.Ops > 0 {
				qr.BlockReadsPerEvent = onm.Extra[xBlockReads] / float64(onm.Ops)
				qr.ReadRequestsPerEvent = onm.Extra[xReadRequests] / float64(onm.Ops)
			}
			if om.Ops > 0 {
				qr.OffBlockReadsPerEvent = om.Extra[xBlockReads] / float64(om.Ops)
			}
			if loads := onm.Extra[xMultiGets]; loads > 0 {
				// Each worker keeps the reads of the mini-batches it reads
				// ahead in flight together; the workers that read overlap.
				workers := onm.Extra[xReading]
				if workers == 0 {
					workers = float64(o.Parallelism)
				}
				qr.DepthNominal = min(256, max(1, onm.Extra[xBlockReads]/loads*workers*readAheadBatches))
			}
			qr.Depth = qr.DepthNominal
			if dd := onm.Extra[bench.ExtraDeviceReadsInFlight]; curveMeasured && dd > 0 {
				qr.Depth = dd
				qr.DeviceBusyAtDepth = interpolateLog(busyByDepth, dd)
			}
			qr.DeviceIOPS = interpolateLog(curve, qr.Depth)
			if onm.Seconds > 0 {
				qr.DeviceReadRate = onm.Extra[xBlockReads] / onm.Seconds
				qr.DeviceBusy = onm.Extra[bench.ExtraDeviceBusy]
				qr.WrittenMBps = onm.Extra[bench.ExtraDeviceWrittenBytes] / onm.Seconds / 1e6
			}
			qr.FloorReadsPerEvent = floorReads(qr.BlockReadsPerEvent, qr.OffBlockReadsPerEvent)
			if qr.FloorReadsPerEvent > 0 && qr.DeviceIOPS > 0 {
				qr.DeviceFloor = qr.DeviceIOPS / qr.FloorReadsPerEvent
			}
			qr.Limit = qr.EPS[modeCached]
			if qr.DeviceFloor > 0 && (qr.Limit == 0 || qr.DeviceFloor < qr.Limit) {
				qr.Limit = qr.DeviceFloor
			}
			if qr.Limit > 0 {
				qr.OnVsLimit = qr.EPS[modeOn] / qr.Limit
			}
			if calls := onm.Extra[xReadCalls]; calls > 0 {
				qr.ReadsPerCall = onm.Extra[xBlockReads] / calls
			}
			if c := bench.Find(results, largePrefix+q+"-"+modeCached); c != nil && len(c.Trials) > 0 && readCPU > 0 && qr.CPUus[modeCached] > 0 {
				cm := c.Median()
				extra := max(0, qr.FloorReadsPerEvent-cm.Extra[xBlockReads]/float64(cm.Ops))
				// On the machine's CPU where it was measured: a read's
				// completion is handled in softirqs no process pays for.
				machine := readMachineCPU > 0 && qr.MachineCPUus[modeCached] > 0
				qr.ReadCPUus = readCPU
				if machine {
					qr.ReadCPUus = readMachineCPU
				}
				if qr.ReadsPerCall > 0 {
					cost := readCost
					if machine {
						cost = readMachineCost
					}
					qr.ReadCPUus = interpolateLog(cost, qr.ReadsPerCall)
				}
				busy, perEvent, onPerEvent := qr.CPUUse[modeCached], qr.CPUus[modeCached], qr.CPUus[modeOn]
				if machine {
					busy, perEvent, onPerEvent = qr.MachineCPUUse[modeCached], qr.MachineCPUus[modeCached], qr.MachineCPUus[modeOn]
				}
				perEvent += extra * qr.ReadCPUus
				if onPerEvent > 0 && onPerEvent < perEvent {
					// ON itself did with less: the model does not hold
					// there, and the ceiling is drawn from what ON did.
					perEvent = onPerEvent
				}
				qr.CPUCeiling = 1e6 * busy / perEvent
				if onPerEvent > 0 {
					qr.OnCPUBound = 1e6 * busy / onPerEvent
				}
				if qr.Limit > 0 {
					qr.CPUCeilingVsLimit = qr.CPUCeiling / qr.Limit
					qr.OnCPUBoundVsLimit = qr.OnCPUBound / qr.Limit
				}
			}
			if c := bench.Find(results, largePrefix+q+"-"+modeCachedReads); c != nil && len(c.Trials) > 0 && qr.Limit > 0 {
				cm := c.Median()
				qr.ReadsCeiling = qr.EPS[modeCachedReads]
				qr.ReadsCeilingVsLimit = qr.ReadsCeiling / qr.Limit
				qr.OnVsReadsCeiling = qr.EPS[modeOn] / qr.ReadsCeiling
				if we := cm.Extra[xWorkerEvents]; we > 0 {
					qr.BesidePerEvent = cm.Extra[xBesideReads] / we
				}
			}
			for _, p := range []string{modePool3, modePool16} {
				if qr.EPS[p] > 0 && (qr.BestPool == "" || qr.EPS[p] > qr.EPS[qr.BestPool]) {
					qr.BestPool = p
				}
			}
			if qr.BestPool != "" {
				qr.OnVsPool = qr.EPS[modeOn] / qr.EPS[qr.BestPool]
				if c := qr.CPUus[qr.BestPool]; c > 0 {
					qr.CPUVsPool = qr.CPUus[modeOn] / c
				}
			}
		}
		lr.Queries = append(lr.Queries, qr)
		if !qr.Tested {
			continue
		}
		if qr.AllOnSlower {
			slower = append(slower, q)
		}
		best, median = append(best, qr.OnVsOffBest), append(median, qr.OnVsOff)
		switch {
		case !qr.Stateful:
			stateless = append(stateless, qr.OnVsOff)
		default:
			if qr.OnVsLimit > 0 {
				vsLimit = append(vsLimit, qr.OnVsLimit)
			}
			if qr.OffLoadShare >= readBoundShare && qr.OnVsPool > 0 && qr.CPUVsPool > 0 {
				vsPool, cpuVsPool = append(vsPool, qr.OnVsPool), append(cpuVsPool, qr.CPUVsPool)
			}
		}
	}
	lr.GeomeanBest, lr.GeomeanMedian = geomean(best), geomean(median)
	least := 0.0
	if len(vsLimit) > 0 {
		least = slices.Min(vsLimit)
	}
	sg := geomean(stateless)
	limitNote := ""
	if under := lr.ReadsCeilingUnderBar(); len(under) > 0 {
		limitNote = fmt.Sprintf("the all-cached mode with ON's further reads beside it made under %.1f× the limit in %s: there those reads' own price on these CPUs is more than the bar allows", BarVsLimit, strings.Join(under, ", "))
	}
	lr.Bars = []bench.Bar{
		bench.NewBar("large state: the least ON ÷ its limit (the lesser of all-cached and the device floor) over the stateful queries", least, BarVsLimit, false, len(vsLimit) > 0, limitNote),
		bench.NewBar(fmt.Sprintf("large state: ON ÷ the better read pool, events/s, geomean over the queries where OFF spends ≥ %.0f%% in state reads", 100*readBoundShare), geomean(vsPool), BarVsPool, false, len(vsPool) > 0, ""),
		bench.NewBar("large state: ON ÷ the better read pool, CPU per event, geomean over the same queries", geomean(cpuVsPool), BarCPUVsPool, true, len(cpuVsPool) > 0, ""),
		bench.NewBar("large state: stateless queries' ON/OFF geomean, at least", sg, BarStatelessLo, false, len(stateless) > 0, ""),
		bench.NewBar("large state: stateless queries' ON/OFF geomean, at most", sg, BarStatelessHi, true, len(stateless) > 0, ""),
		bench.NewBar("large state: queries where every ON trial is slower than every OFF trial", float64(len(slower)), 0, true, len(lr.Queries) > 0 && o.Trials >= 3, strings.Join(slower, ", ")),
		bench.NewBar("large state: queries whose output differs between trials or modes", float64(boolCount(!allEqual)), 0, true, len(lr.Queries) > 0, ""),
	}
	return lr, runErr
}

// floorReads is the block reads per event a query's device floor is
// taken for: the fewer of ON's and OFF's (0 when neither read). OFF reads
// a block only when a Load misses it; ON also reads ahead, and a block
// its cache evicts before the Load that wanted it is read again. Those
// reads are ON's waste, not the query's: a floor taken for them would be
// lower, and ON's ratio to it higher, the more ON wasted.
func floorReads(on, off float64) float64 {
	switch {
	case on <= 0:
		return off
	case off <= 0:
		return on
	}
	return min(on, off)
}

// tested says whether a query's run is big enough for its ratios to mean
// something: its OFF trial ran at least minSeconds and, when stateBytes is
// not 0, built at least minStateBytes of state.
func tested(seconds, stateBytes float64) (bool, string) {
	switch {
	case seconds < minSeconds:
		return false, fmt.Sprintf("its run took %.2f s, under %.2f s", seconds, minSeconds)
	case stateBytes > 0 && stateBytes < minStateBytes:
		return false, fmt.Sprintf("its state is %.0f KiB, under %d KiB", stateBytes/1024, minStateBytes>>10)
	}
	return true, ""
}

const (
	minSeconds    = 0.25
	minStateBytes = 1 << 20
)

func dash(v float64, format string) string {
	if v == 0 || math.IsNaN(v) {
		return "–"
	}
	return fmt.Sprintf(format, v)
}

func writeLarge(w io.Writer, lr *LargeReport) {
	more := ""
	if lr.MinSeconds > 0 {
		more = fmt.Sprintf(" (a stateful query more, so that its fastest mode runs %.1f s: the events column)", lr.MinSeconds)
	}
	fmt.Fprintf(w, "\n### large state: %d in-flight auctions, %d active people, %d events%s, mini-batches of %d\n\n",
		lr.Auctions, lr.People, lr.Events, more, lr.Batch)
	var ds []int
	for d := range lr.DeviceIOPS {
		ds = append(ds, d)
	}
	slices.Sort(ds)
	var dv []string
	for _, d := range ds {
		cpu := ""
		if c := lr.DeviceCPUus[d]; c > 0 {
			cpu = fmt.Sprintf(" (%.1f µs CPU per read)", c)
		}
		if c := lr.DeviceMachineCPUus[d]; c > 0 {
			cpu = fmt.Sprintf(" (%.1f µs CPU per read, %.1f µs of the machine's)", lr.DeviceCPUus[d], c)
		}
		depth := ""
		if dd := lr.DeviceDepth[d]; dd > 0 {
			busy := ""
			if b := lr.DeviceBusy[d]; b > 0 {
				busy = fmt.Sprintf(", busy %.0f%% of the run", 100*b)
			}
			depth = fmt.Sprintf(" (%.1f in flight at the device%s)", dd, busy)
		}
		dv = append(dv, fmt.Sprintf("%.0f at depth %d%s%s", lr.DeviceIOPS[d], d, depth, cpu))
	}
	fmt.Fprintf(w, "device (random 4 KiB O_DIRECT reads, IOPS): %s\n\n", strings.Join(dv, ", "))
	t := bench.Table{Header: []string{"query", "events", "ON", "ON, no read-ahead", "OFF", "OFF, 3 readers", "OFF, 16 readers", "all cached", "all cached, reads beside", "ON's depth", "device floor",
		"ON ÷ limit", "reads ceiling ÷ limit", "ON ÷ reads ceiling", "CPU ceiling ÷ limit", "ON/OFF", "ON ÷ best pool", "CPU µs/event ON", "CPU µs/event pool", "OFF in state reads (bound)", "state MiB", "working set MiB", "cache KiB/worker", "× cache", "output"}}
	for _, q := range lr.Queries {
		out := "equal"
		if !q.ChecksumEqual {
			out = "DIFFERS"
		}
		ratio := fmt.Sprintf("%.2f×", q.OnVsOff)
		if !q.Tested {
			ratio = "not tested: " + q.Why
		}
		share := "–"
		if q.Stateful {
			share = fmt.Sprintf("%.0f%% (%.2f×)", 100*q.OffLoadShare, q.GainBound)
		}
		t.Add(q.Query, dash(float64(q.Events), "%.0f"), dash(q.EPS[modeOn], "%.0f"), dash(q.EPS[modeOnSync], "%.0f"), dash(q.EPS[modeOff], "%.0f"), dash(q.EPS[modePool3], "%.0f"), dash(q.EPS[modePool16], "%.0f"),
			dash(q.EPS[modeCached], "%.0f"), dash(q.EPS[modeCachedReads], "%.0f"), dash(q.Depth, "%.1f"), dash(q.DeviceFloor, "%.0f"), dash(q.OnVsLimit, "%.2f"),
			dash(q.ReadsCeilingVsLimit, "%.2f"), dash(q.OnVsReadsCeiling, "%.2f"), dash(q.CPUCeilingVsLimit, "%.2f"), ratio, dash(q.OnVsPool, "%.2f×"),
			dash(q.CPUus[modeOn], "%.1f"), dash(q.CPUus[q.BestPool], "%.1f"), share, dash(q.StateBytes/(1<<20), "%.1f"), dash(q.WorkingSet/(1<<20), "%.1f"), dash(q.CacheBytes/float64(lr.Parallelism)/1024, "%.0f"), dash(q.WSVsCache, "%.1f"), out)
	}
	t.Write(w)
	fmt.Fprintf(w, "\nlarge state, geometric mean ON/OFF over the tested queries: best-of %.3f×, median-of %.3f×\n", lr.GeomeanBest, lr.GeomeanMedian)
	if under := lr.ReadsCeilingUnderBar(); len(under) > 0 {
		fmt.Fprintf(w, "the all-cached mode with ON's further reads beside it under %.1f× the limit, so those reads' own price on these CPUs is more than the limit bar allows: %s\n", BarVsLimit, strings.Join(under, ", "))
	}
	if under := lr.CeilingUnderBar(); len(under) > 0 {
		fmt.Fprintf(w, "CPU ceiling under %.1f× the limit, so the limit bar cannot be met there: %s\n", BarVsLimit, strings.Join(under, ", "))
	}
	if under := lr.OwnCPUUnderBar(); len(under) > 0 {
		fmt.Fprintf(w, "ON at its own CPU per event, the CPUs as busy as all-cached kept them, under %.1f× the limit (there its cost per event, not only the overlap of its reads and its work, keeps it under the bar): %s\n", BarVsLimit, strings.Join(under, ", "))
	}
	if lines := lr.DeviceUse(); len(lines) > 0 {
		fmt.Fprintf(w, "the device where its floor is the limit: %s\n", strings.Join(lines, "; "))
	}
}

// DeviceUse says, for each tested stateful query whose limit is its device
// floor, what the device did over ON's run against the floor's random
// reads at ON's depth: the reads a second of each, the share of its run
// each kept the device busy and so the reads a second of busy time, and
// what the store wrote beside ON's reads.
func (lr *LargeReport) DeviceUse() []string {
	var lines []string
	for _, q := range lr.Queries {
		if !q.Tested || !q.Stateful || q.DeviceFloor == 0 || q.DeviceFloor != q.Limit || q.DeviceReadRate == 0 || q.DeviceBusy == 0 || q.DeviceBusyAtDepth == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: ON %.0f reads/s, the device busy %.0f%% of the run (%.0f per busy second), the store writing %.1f MB/s beside them; the random reads at its depth %.0f/s, busy %.0f%% (%.0f per busy second)",
			q.Query, q.DeviceReadRate, 100*q.DeviceBusy, q.DeviceReadRate/q.DeviceBusy, q.WrittenMBps, q.DeviceIOPS, 100*q.DeviceBusyAtDepth, q.DeviceIOPS/q.DeviceBusyAtDepth))
	}
	return lines
}

// CeilingUnderBar lists the tested stateful queries whose CPU ceiling is
// under BarVsLimit × their limit, each with the ratio.
func (lr *LargeReport) CeilingUnderBar() []string {
	return lr.underBar(func(q *LargeQuery) float64 { return q.CPUCeilingVsLimit })
}

// ReadsCeilingUnderBar lists the tested stateful queries whose measured
// reads ceiling (LargeQuery.ReadsCeiling) is under BarVsLimit × the limit,
// each with its ratio.
func (lr *LargeReport) ReadsCeilingUnderBar() []string {
	return lr.underBar(func(q *LargeQuery) float64 { return q.ReadsCeilingVsLimit })
}

// OwnCPUUnderBar lists the tested stateful queries where ON's own CPU
// per event bounds it under BarVsLimit × their limit, each with the ratio.
func (lr *LargeReport) OwnCPUUnderBar() []string {
	return lr.underBar(func(q *LargeQuery) float64 { return q.OnCPUBoundVsLimit })
}

// underBar lists the tested stateful queries whose ratio to their limit,
// where there is one, is under BarVsLimit, each with the ratio.
func (lr *LargeReport) underBar(vsLimit func(*LargeQuery) float64) []string {
	var under []string
	for i := range lr.Queries {
		q := &lr.Queries[i]
		if r := vsLimit(q); q.Tested && q.Stateful && r > 0 && r < BarVsLimit {
			under = append(under, fmt.Sprintf("%s (%.2f)", q.Query, r))
		}
	}
	return under
}

func deviceMode(batch int) string { return fmt.Sprintf("%sdevice-b%d", largePrefix, batch) }

// largeBenchModes are the large regime's modes: each query's, then the
// device's. The device modes and modeCachedReads read the file *deviceFile
// names when they run.
func largeBenchModes(o Options, sizes map[string]largeSize, deviceFile *string) []bench.Mode {
	var modes []bench.Mode
	for _, q := range o.LargeQueries {
		st := isStateful(q)
		for _, m := range largeModes {
			if m.stateful && !st {
				continue
			}
			c, env := largeConfig(o, q, m.name, sizes[q])
			name := largePrefix + q + "-" + m.name
			mode := bench.Mode{Name: name, Label: "large state, " + q + ", " + m.label, Exec: bench.ChildExec(Workload, c, env)}
			if m.name == modeCachedReads {
				mode.Exec = func() (bench.Trial, error) {
					c := c
					c.BesideFile = *deviceFile
					return bench.ChildExec(Workload, c, env)()
				}
			}
			if !st {
				mode.Repeat = statelessRepeat
			}
			modes = append(modes, mode)
		}
	}
	for _, b := range deviceBatches {
		modes = append(modes, bench.Mode{Name: deviceMode(b), Label: fmt.Sprintf("device, %d × %d reads in flight", o.Parallelism, b), Batch: b,
			Exec: func() (bench.Trial, error) {
				return bench.ChildExec(Workload, childConfig{DeviceFile: *deviceFile, DeviceBatch: b, DeviceTime: o.DeviceTime, Parallelism: o.Parallelism})()
			}})
	}
	return modes
}

// largeSize is a stateful query's configuration in the large regime:
// each worker's cache and the events per trial.
type largeSize struct {
	cache, events int64
	// The reads modeCachedReads makes beside its state's: an event its
	// workers process, and each one's bytes (nexmark.BesideReads).
	beside     float64
	besideSize int
}

// sizeLarge sizes each stateful query of the large regime. Its events:
// o.LargeEvents, or more where a run of the all-cached mode (its fastest)
// took under o.LargeMinSeconds (largeEvents). Its caches: with
// o.LargeCache set, that; otherwise the all-cached run at its events
// measures the working set (the distinct blocks its reads load), and each
// worker's cache is sized so that the working set is sizingRatio times the
// caches together (at least 32 KiB each). A query whose events grew is
// run again at its events for the working set, which grows with them.
// Then, where modeCachedReads is among the selected modes, a run of ON at
// those caches and events measures the read requests it makes beyond the
// all-cached run's (besideReads): modeCachedReads makes as many beside
// its state's. With o.LargeCache set, no o.LargeMinSeconds and no
// modeCachedReads, nothing is run.
func sizeLarge(o Options) (map[string]largeSize, error) {
	sizes := map[string]largeSize{}
	for _, q := range o.LargeQueries {
		if !isStateful(q) {
			continue
		}
		s := largeSize{cache: o.LargeCache, events: o.LargeEvents}
		beside := o.Modes.Keep(largePrefix + q + "-" + modeCachedReads)
		if o.LargeCache > 0 && o.LargeMinSeconds <= 0 && !beside {
			sizes[q] = s // nothing to measure
			continue
		}
		run := func(mode string, what string) (bench.Trial, error) {
			c, env := largeConfig(o, q, mode, s)
			t, err := bench.ChildExec(Workload, c, env)()
			if err != nil {
				return t, fmt.Errorf("bench nexmark: sizing %s of %s: %w", what, q, err)
			}
			return t, nil
		}
		t, err := run(modeCached, "the caches")
		if err != nil {
			return nil, err
		}
		if n := largeEvents(o.LargeEvents, t.Seconds, o.LargeMinSeconds); n != s.events {
			fmt.Fprintf(o.Progress, "large state, %s: its all-cached run took %.2f s, so %d events\n", q, t.Seconds, n)
			s.events = n
			if o.LargeCache == 0 || beside {
				// Its working set and its reads grow with the events.
				if t, err = run(modeCached, "the caches"); err != nil {
					return nil, err
				}
			}
		}
		if o.LargeCache == 0 {
			ws := t.Extra[xCacheMisses] * 4096
			per := int64(ws/sizingRatio/float64(o.Parallelism)) &^ 4095
			s.cache = max(per, 32<<10)
			fmt.Fprintf(o.Progress, "large state, %s: working set %.1f MiB, so %d KiB of cache per worker\n", q, ws/(1<<20), s.cache>>10)
		}
		if !beside {
			sizes[q] = s
			continue
		}
		// The reads beside modeCachedReads' state: the read requests ON
		// makes beyond the all-cached mode's, for each event its workers
		// processed (a query takes some of the stream's events only), of
		// their mean size, from a run of ON at its caches. A request is
		// what the engine and the device pay for; ON's reads of adjacent
		// blocks go as one.
		on, err := run(modeOn, "the reads beside the all-cached mode")
		if err != nil {
			return nil, err
		}
		s.beside, s.besideSize = besideReads(on, t)
		fmt.Fprintf(o.Progress, "large state, %s: ON made %.4f reads of %.1f KiB more than all-cached for each event its workers processed, so as many beside the all-cached state\n", q, s.beside, float64(s.besideSize)/1024)
		sizes[q] = s
	}
	return sizes, nil
}

// largeEvents is the events of a stateful query whose run of base events
// took seconds in its fastest mode: base, or where that is under
// minSeconds (and minSeconds is positive) as many more as make up
// minSeconds at the same rate, rounded up to 100,000 and at most
// maxLargeEventsFactor × base. A checkpoint is taken each second of a
// run's time: a run under a second takes none.
func largeEvents(base int64, seconds, minSeconds float64) int64 {
	if minSeconds <= 0 || seconds >= minSeconds || seconds <= 0 {
		return base
	}
	const step = 100_000
	n := int64(math.Ceil(float64(base)*minSeconds/seconds/step)) * step
	return max(base, min(n, maxLargeEventsFactor*base))
}

// besideReads is what modeCachedReads reads beside its state's, from a
// run of ON and one of the all-cached mode: the read requests an event the
// workers processed that ON made beyond the all-cached mode's, and their
// mean size in whole blocks (at least one, at most nexmark.MaxBesideSize).
func besideReads(on, cached bench.Trial) (perEvent float64, size int) {
	we, wc := on.Extra[xWorkerEvents], cached.Extra[xWorkerEvents]
	if we <= 0 || wc <= 0 {
		return 0, 0
	}
	perEvent = min(nexmark.MaxBesidePerEvent, max(0, on.Extra[xReadRequests]/we-cached.Extra[xReadRequests]/wc))
	if perEvent == 0 {
		return 0, 0
	}
	bytes := max(0, on.Extra[xReadBytes]/we-cached.Extra[xReadBytes]/wc) / perEvent
	blocks := min(nexmark.MaxBesideSize/4096, max(1, int(math.Round(bytes/4096))))
	return perEvent, blocks * 4096
}

// maxLargeEventsFactor bounds largeEvents: a query's slowest modes (pread,
// one read at a time) run several times longer than its all-cached one.
const maxLargeEventsFactor = 8

// sizingRatio is the working set ÷ the caches that sizeLarge aims for,
// above minWSVsCache so that a run's spread keeps it there.
const sizingRatio = 10.0
