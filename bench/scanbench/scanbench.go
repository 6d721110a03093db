package scanbench

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ringstore/ringstore/arrowscan/events"
	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// Defaults, sized for a 2-vCPU VM with ~1 GB/s sequential reads: data 2.5×
// the memory limit, the pool a little over half of it. The 12 queries
// together read every column of every batch, so the pool reads the same
// bytes whatever its frame size; frames of 1 MiB (bufpool's default is 256
// KiB) make a quarter of the loads and window moves for them
// (docs/DECISIONS.md).
const (
	DefaultDataBytes    = 1280 << 20
	DefaultMemLimit     = 512 << 20
	DefaultPoolBytes    = 288 << 20
	DefaultFrameSize    = 1 << 20
	DefaultTrials       = 3
	DefaultQueries      = 12
	DefaultRounds       = 2
	DefaultDeviceTime   = 3 * time.Second
	DefaultCompression  = "none"
	DefaultChildTimeout = 10 * time.Minute
)

// Options configure a run. The zero value of every field but Dir means its
// default.
type Options struct {
	Dir       string // where the data set is kept; must accept O_DIRECT
	DataBytes int64  // size of the data set
	// MemLimit is the memory cgroup limit of every child, page cache
	// included. NoMemLimit runs the children without one.
	MemLimit   int64
	NoMemLimit bool
	PoolBytes  int64 // the pool's budget in pool mode
	FrameSize  int   // the pool's frame size
	Trials     int
	Queries    int // queries started at once in each round
	Rounds     int // rounds per trial
	// DeviceTime is how long each trial of the device measurement reads.
	DeviceTime time.Duration
	// ChildTimeout ends a child (one mode, one trial) that runs longer,
	// failing that mode with its goroutines' stacks. Default 10 minutes.
	ChildTimeout time.Duration
	Compression  string // of the data set: none, lz4 or zstd
	// NoFio skips the device measurement by fio (run beside ours when fio
	// is on PATH).
	NoFio bool
	// NoSidecarCheck skips the checks of every read against the files'
	// checksum sidecars in every mode (arrowscan.Options.SkipSidecarCheck);
	// pool-nocheck always skips them, to show their cost beside pool.
	NoSidecarCheck bool
	// Keep keeps a data set this run generated, for the next run to reuse;
	// without it the data set is removed at the end. A data set that was
	// there already is always kept.
	Keep bool
	JSON string // also write the JSON report here
	// JSONTo, when set, receives the JSON report instead of the file JSON.
	JSONTo   io.Writer
	Out      io.Writer // the report
	Progress io.Writer

	// detectCgroups replaces bench.DetectMemCgroups in tests.
	detectCgroups func() (*bench.MemCgroups, error)
	// Modes selects the modes to run (all when empty).
	Modes bench.Selection
}

func (o *Options) String() string {
	limit := fmt.Sprintf("%d MiB", o.MemLimit>>20)
	if o.NoMemLimit {
		limit = "none"
	}
	return fmt.Sprintf("scanbench.Options{Dir: %s, DataBytes: %d MiB, MemLimit: %s, PoolBytes: %d MiB, FrameSize: %d KiB, Trials: %d, Queries: %d, Rounds: %d, DeviceTime: %s, ChildTimeout: %s, Compression: %s, NoSidecarCheck: %v, Keep: %v}",
		o.Dir, o.DataBytes>>20, limit, o.PoolBytes>>20, o.FrameSize>>10, o.Trials, o.Queries, o.Rounds, o.DeviceTime, o.ChildTimeout, o.Compression, o.NoSidecarCheck, o.Keep)
}

// withDefaults fills in the defaults and checks the options, in one place.
func (o Options) withDefaults() (Options, error) {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.DataBytes, DefaultDataBytes)
	if o.NoMemLimit {
		o.MemLimit = 0
	} else {
		def(&o.MemLimit, DefaultMemLimit)
	}
	def(&o.PoolBytes, DefaultPoolBytes)
	if o.FrameSize == 0 {
		o.FrameSize = DefaultFrameSize
	}
	if o.Trials == 0 {
		o.Trials = DefaultTrials
	}
	if o.Queries == 0 {
		o.Queries = DefaultQueries
	}
	if o.Rounds == 0 {
		o.Rounds = DefaultRounds
	}
	if o.DeviceTime == 0 {
		o.DeviceTime = DefaultDeviceTime
	}
	if o.ChildTimeout == 0 {
		o.ChildTimeout = DefaultChildTimeout
	}
	if o.Compression == "" {
		o.Compression = DefaultCompression
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.detectCgroups == nil {
		o.detectCgroups = bench.DetectMemCgroups
	}
	bad := func(format string, args ...any) (Options, error) {
		return o, fmt.Errorf("bench scan: "+format, args...)
	}
	switch {
	case o.Dir == "":
		return bad("no directory for the data set")
	case o.DataBytes < 1<<20:
		return bad("data size %d bytes is too small: at least 1 MiB", o.DataBytes)
	case o.MemLimit < 0:
		return bad("memory limit %d is negative", o.MemLimit)
	case o.PoolBytes < 0 || o.FrameSize < 0:
		return bad("pool budget %d and frame size %d must be positive", o.PoolBytes, o.FrameSize)
	case o.FrameSize%directio.BlockSize != 0:
		return bad("frame size %d is not a multiple of %d", o.FrameSize, directio.BlockSize)
	case o.PoolBytes/int64(o.FrameSize) < 8:
		return bad("pool budget %d bytes holds fewer than 8 frames of %d bytes", o.PoolBytes, o.FrameSize)
	case !o.NoMemLimit && o.PoolBytes >= o.MemLimit:
		return bad("pool budget %d MiB does not fit in the memory limit %d MiB", o.PoolBytes>>20, o.MemLimit>>20)
	case o.Trials < 1 || o.Queries < 1 || o.Rounds < 1:
		return bad("trials (%d), queries (%d) and rounds (%d) must be at least 1", o.Trials, o.Queries, o.Rounds)
	case o.DeviceTime < 0 || o.ChildTimeout < 0:
		return bad("device measurement time %s and child timeout %s must not be negative", o.DeviceTime, o.ChildTimeout)
	}
	switch strings.ToLower(o.Compression) {
	case "none", "lz4", "zstd":
		o.Compression = strings.ToLower(o.Compression)
	default:
		return bad("unknown compression %q (none, lz4 or zstd)", o.Compression)
	}
	return o, nil
}

// Result is one row of the JSON report: a scan mode, or the device.
type Result struct {
	Mode  string `json:"mode"`
	Label string `json:"label"`
	// Medians of the trials' figures.
	MeanMS      float64 `json:"mean_ms"` // mean query latency
	P50MS       float64 `json:"p50_ms"`
	P95MS       float64 `json:"p95_ms"`
	MaxMS       float64 `json:"max_ms"`
	GBps        float64 `json:"gbps"`         // bytes from the device (read_bytes) per second of the measured part, in 10^9
	DeviceBytes float64 `json:"device_bytes"` // read_bytes per trial
	VsDevice    float64 `json:"vs_device"`    // GBps ÷ the device's sequential GB/s of this run
	QueriesPerS float64 `json:"queries_per_s"`
	MajorFaults float64 `json:"major_faults"`
	MinorFaults float64 `json:"minor_faults"`
	MaxRSS      float64 `json:"max_rss_bytes"`
	CgroupPeak  float64 `json:"cgroup_peak_bytes,omitempty"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	// Per trial, in trial order.
	TrialMeanMS []float64 `json:"trial_mean_ms,omitempty"`
	TrialP95MS  []float64 `json:"trial_p95_ms,omitempty"`
	TrialGBps   []float64 `json:"trial_gbps"`
	// QueryMeanMS is each query's mean latency (median of trials).
	QueryMeanMS map[string]float64 `json:"query_mean_ms,omitempty"`
	// TrialQueryMeanMS is each query's mean latency per trial, in trial order.
	TrialQueryMeanMS map[string][]float64 `json:"trial_query_mean_ms,omitempty"`
	// Extra is every figure the children reported, median of trials.
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Device is the device's sequential O_DIRECT read bandwidth measured in
// the run: medians of its trials.
type Device struct {
	Label       string    `json:"label"`
	GBps        float64   `json:"gbps"`
	TrialGBps   []float64 `json:"trial_gbps"`
	Bytes       float64   `json:"bytes"`      // bytes the reads returned, per trial
	ReadBytes   float64   `json:"read_bytes"` // /proc/self/io read_bytes over the same time: equal to Bytes for O_DIRECT
	Seconds     float64   `json:"seconds"`
	MaxRSS      float64   `json:"max_rss_bytes"`
	CgroupPeak  float64   `json:"cgroup_peak_bytes,omitempty"`
	CPUSeconds  float64   `json:"cpu_seconds"` // the reads' CPU (user and system) over Seconds
	Measurement string    `json:"measurement"`
}

// CPUPerByte returns the CPU-seconds the device's reads took per byte they
// returned (0 when unknown).
func (d *Device) CPUPerByte() float64 {
	if d == nil || d.Bytes <= 0 {
		return 0
	}
	return d.CPUSeconds / d.Bytes
}

// LatencyRatio compares a figure of two modes measured in the same run:
// the ratio of their medians and the range of the ratios of the trials run
// in the same round.
type LatencyRatio struct {
	A      string  `json:"a"`
	B      string  `json:"b"`
	Metric string  `json:"metric"` // mean_ms, p95_ms or gbps
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

// Bar is one of the targets, checked against this run's figures
// (Valid is false without a memory limit or with data smaller than twice
// the limit).
type Bar = bench.Bar

// Floors are the two limits under the pool's mean latency, both measured
// in the same run: the CPU's (the memory mode's mean: the same queries and
// decoding with every frame resident) and the device's (the bytes a round
// of the queries needs, read once, at the device's sequential bandwidth).
type Floors struct {
	MemoryMeanMS float64 `json:"memory_mean_ms"`
	NeedBytes    float64 `json:"need_bytes"` // distinct bytes of a round's projections, as the memory mode's pool loaded them
	DeviceMS     float64 `json:"device_ms"`  // NeedBytes ÷ the device's sequential bandwidth
	FloorMS      float64 `json:"floor_ms"`   // the larger of the two
	Bound        string  `json:"bound"`      // "cpu" or "device"
	PoolMeanMS   float64 `json:"pool_mean_ms"`
	PoolVsFloor  float64 `json:"pool_vs_floor"`
	// The pool's CPU floor: the memory mode's CPU per trial plus the
	// device mode's CPU for the bytes the pool read in a trial (the reads
	// alone, without checks, pool or decoding); 0 when a mode is missing.
	PoolCPUSeconds    float64 `json:"pool_cpu_seconds"`
	ReadCPUSeconds    float64 `json:"read_cpu_seconds"`
	PoolCPUFloor      float64 `json:"pool_cpu_floor_seconds"`
	PoolCPUFloorRatio float64 `json:"pool_cpu_floor_vs_memory"`
}

// MemoryLimit says whether the children ran under a memory limit.
type MemoryLimit = bench.MemoryLimit

// report is the JSON report.
type report struct {
	bench.Report
	MemoryLimit   MemoryLimit    `json:"memory_limit"`
	CacheDrop     string         `json:"cache_drop"`
	ResidentMax   int64          `json:"resident_after_drop_max_bytes"`
	Device        *Device        `json:"device,omitempty"`
	DeviceFio     *Device        `json:"device_fio,omitempty"` // the same reads by fio
	Floors        *Floors        `json:"floors,omitempty"`
	LatencyRatios []LatencyRatio `json:"latency_ratios"`
	Bars          []Bar          `json:"bars"`
	Data          *dataSet       `json:"data"`
}

// mode is one column of the comparison.
type mode struct {
	name, label string
}

var scanModes = []mode{
	{"mmap", "mmap (read-only mapping)"},
	{"pread", "pread (page cache)"},
	{"direct", "direct (O_DIRECT, no cache)"},
	{"pool", "pool (O_DIRECT + bufpool)"},
	{modePoolNoCheck, "pool without sidecar checks"},
	{modeMemory, "memory: pool holding all data (CPU floor)"},
}

// memoryPoolBytes sizes the memory mode's pool: every byte of the data and
// an eighth more (a frame holds one file's bytes only, so the files' last
// frames are part full), in whole frames.
func memoryPoolBytes(dataBytes int64, frameSize int) int64 {
	fs := int64(frameSize)
	return (dataBytes + dataBytes/8 + fs - 1) / fs * fs
}

// Run runs the benchmark and writes the report.
func Run(opts Options) (err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if err := bench.CheckDir("bench scan", o.Dir, true); err != nil {
		return err
	}
	var notes []string

	// The I/O backend of direct, pool and the device measurement.
	ioMode := "uring"
	if ok, why := ioengine.ProbeKernel().Usable(); !ok {
		ioMode = "syscall"
		notes = append(notes, "io_uring unavailable ("+why+"): direct, pool and the device measurement ran on the syscall backend")
	}

	// The memory limit.
	ml, cgroups := bench.SetUpMemoryLimit(o.detectCgroups, o.MemLimit, o.NoMemLimit, "no memory limit asked for (--mem-limit none)", o.Progress)
	if ml.Applied {
		fmt.Fprintf(o.Progress, "memory limit: %d MiB per child, cgroup %s under %s\n", o.MemLimit>>20, ml.Cgroup, ml.Parent)
	} else {
		fmt.Fprintf(o.Progress, "memory limit: NONE — %s\n", ml.Reason)
	}

	data, err := prepareData(o.Dir, o.DataBytes, o.Compression, o.Progress)
	if err != nil {
		return err
	}
	if !o.Keep && !data.Reused {
		defer func() {
			if rerr := data.remove(); rerr != nil {
				err = errors.Join(err, fmt.Errorf("bench scan: remove the data set: %w", rerr))
			}
		}()
	}
	files := data.Paths()

	runDir, err := os.MkdirTemp(o.Dir, "ringstore-bench-scan-run-")
	if err != nil {
		return fmt.Errorf("bench scan: %w", err)
	}
	defer os.RemoveAll(runDir)

	mix := queryMix(o.Queries)
	base := childConfig{Files: files, Queries: mix, Rounds: o.Rounds, PoolBytes: o.PoolBytes, FrameSize: o.FrameSize,
		IOMode: ioMode, NoSidecarCheck: o.NoSidecarCheck, RefPath: filepath.Join(runDir, "reference.json"), DeviceSeconds: o.DeviceTime.Seconds(), TimeoutSeconds: o.ChildTimeout.Seconds()}
	var residentMax int64
	run := func(m string) func() (bench.Trial, error) {
		return func() (bench.Trial, error) {
			cfg := base
			cfg.Mode = m
			if m == modeMemory {
				cfg.PoolBytes = memoryPoolBytes(data.Bytes, o.FrameSize)
			}
			resident, err := dropCaches(files)
			if err != nil {
				return bench.Trial{}, err
			}
			residentMax = max(residentMax, resident)
			var cg *bench.MemCgroup
			if cgroups != nil && m != modeMemory {
				if cg, err = cgroups.New(o.MemLimit); err != nil {
					return bench.Trial{}, err
				}
				cfg.Cgroup = cg.Path
			}
			tr, err := bench.ChildExec(Workload, cfg)()
			if tr.Extra == nil {
				tr.Extra = map[string]float64{}
			}
			tr.Extra[xResidentPre] = float64(resident)
			if cg != nil {
				u, uerr := cg.Usage()
				if uerr == nil {
					tr.Extra[xCgroupPeak], tr.Extra[xCgroupHits], tr.Extra[xCgroupOOM] = float64(u.PeakBytes), float64(u.LimitHits), float64(u.OOMKills)
					if err != nil && u.OOMKills > 0 {
						err = fmt.Errorf("killed for want of memory under the %d MiB limit (cgroup %s: %d OOM kills, peak %d MiB): %w", o.MemLimit>>20, cg.Path, u.OOMKills, u.PeakBytes>>20, err)
					}
				}
				err = errors.Join(err, uerr, cg.Remove())
			}
			if err == nil {
				progressLine(o.Progress, m, tr)
			}
			return tr, err
		}
	}
	modes := make([]bench.Mode, 0, len(scanModes)+1)
	for _, m := range scanModes {
		modes = append(modes, bench.Mode{Name: m.name, Label: m.label, Exec: run(m.name)})
	}
	modes = append(modes, bench.Mode{Name: modeDevice, Label: "device: sequential O_DIRECT reads", Exec: run(modeDevice)})
	fioLabel := ""
	if !o.NoFio {
		if path, err := exec.LookPath("fio"); err == nil {
			fioLabel = "device: fio, the same reads"
			if v := fioVersion(path); v != "" {
				fioLabel = "device: " + v + ", the same reads"
			}
			modes = append(modes, bench.Mode{Name: modeFio, Label: fioLabel, Exec: fioExec(path, files, DeviceOptions{Duration: o.DeviceTime, IOMode: ioModeOf(ioMode)})})
		} else {
			notes = append(notes, "fio is not installed: the device was measured by ringstore's reads alone")
		}
	}

	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = m.Name
	}
	if err = bench.CheckListed("scan", names, ModeNames(o)); err != nil {
		return err
	}
	if modes, err = o.Modes.Select("scan", modes); err != nil {
		return err
	}
	w := bench.Workload{Name: "scan", Dir: o.Dir, Trials: o.Trials, Modes: modes, Progress: o.Progress, Out: o.Out, JSON: o.JSON, JSONTo: o.JSONTo,
		Plan: fmt.Sprintf(" (each with the data's page cache dropped), %d queries at once × %d rounds per trial", o.Queries, o.Rounds)}
	w.Summarize = func(results []bench.ModeResult, machine bench.Machine) (bench.Summary, error) {
		rep := buildReport(o, results, data, ml, ioMode, residentMax)
		rep.Machine = machine
		rep.Notes = append(notes, rep.Notes...)
		rep.Config = map[string]any{
			"dir": o.Dir, "data_bytes": data.Bytes, "data_target_bytes": o.DataBytes, "files": len(files), "rows": data.Rows,
			"compression": o.Compression, "mem_limit_bytes": o.MemLimit, "no_mem_limit": o.NoMemLimit, "pool_bytes": o.PoolBytes,
			"frame_size": o.FrameSize, "trials": o.Trials, "queries": o.Queries, "rounds": o.Rounds, "query_mix": mix,
			"device_seconds": o.DeviceTime.Seconds(), "io_mode": ioMode, "data_reused": data.Reused, "keep": o.Keep, "no_sidecar_check": o.NoSidecarCheck, "fio": fioLabel != "",
		}
		return bench.Summary{Heading: heading(rep), Body: func(w io.Writer) { writeBody(w, rep, results) }, Bars: rep.Bars, Notes: rep.Notes, Report: rep}, nil
	}
	return w.Run()
}

// probeCgroup makes and removes one cgroup, so that a run whose cgroups
// cannot be made falls back at the start instead of failing every trial.
// dropCaches drops the data files from the page cache and returns the
// bytes still resident.
func dropCaches(files []string) (int64, error) {
	var resident int64
	for _, f := range files {
		n, err := dropPageCache(f)
		if err != nil {
			return 0, fmt.Errorf("bench scan: cold start: %w", err)
		}
		resident += n
	}
	return resident, nil
}

// queryMix returns n query names: the events queries in their order,
// repeated.
func queryMix(n int) []string {
	qs := events.Queries()
	mix := make([]string, n)
	for i := range mix {
		mix[i] = qs[i%len(qs)].Name
	}
	return mix
}

// median returns the median of vs (the mean of the middle two for an even
// count).
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// progressLine prints what a trial measured, beside bench.Run's own line.
func progressLine(w io.Writer, m string, t bench.Trial) {
	peak := ""
	if p, ok := t.Extra[xCgroupPeak]; ok && p >= 0 {
		peak = fmt.Sprintf(", cgroup peak %.0f MiB", p/(1<<20))
	}
	if m == modeDevice {
		fmt.Fprintf(w, "    %s: %.2f GB/s%s\n", m, gbps(t), peak)
		return
	}
	fmt.Fprintf(w, "    %s: mean %.0f ms, p95 %.0f ms, %.2f GB/s from the device, %.0f major faults, open %.0f ms (%.0f MiB read)%s\n",
		m, t.Extra[xMeanMS], t.Extra[xP95MS], gbps(t), t.Extra[xMajorFaults], t.Extra[xOpenMS], t.Extra[xOpenReadBytes]/(1<<20), peak)
}
