package kvbench

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
)

// Defaults of Options: a data set of about 5× the block cache, and a whole
// run of about two minutes on a 2-vCPU VM (loading both stores included).
const (
	DefaultKeys         = 1_000_000
	DefaultCacheSize    = 64 << 20
	DefaultBatch        = 64
	DefaultCallers      = 4
	DefaultTrials       = 3
	DefaultDuration     = 2 * time.Second
	DefaultMemHeadroom  = 96 << 20 // the memory limit is the cache plus this
	DefaultChildTimeout = 5 * time.Minute
)

// Options configure a run. The zero value of a field takes its default.
type Options struct {
	Dir       string // where the run makes its directory (removed afterwards)
	Keys      uint64
	CacheSize int64 // block cache of every system, bytes
	Batch     int   // keys per batch
	Callers   int   // concurrent callers, each with its own batches
	Trials    int
	Duration  time.Duration // measured time per mode and trial
	Dist      string        // uniform (default) or zipfian
	// MemLimit is the memory cgroup limit of every read child, page cache
	// included; default CacheSize + DefaultMemHeadroom. NoMemLimit runs
	// them without one.
	MemLimit     int64
	NoMemLimit   bool
	Peers        bool   // build and run Pebble from bench/peers
	PeersSrc     string // bench/peers; empty: found from the working directory
	ChildTimeout time.Duration
	// DropCaches also empties the whole machine's page cache before every
	// trial (sync, then 3 written to /proc/sys/vm/drop_caches; root only):
	// every process's cached files, dentries and inodes, not only the
	// benchmark's. Off, only the benchmark's own files are dropped
	// (fadvise DONTNEED, checked with mincore), as bench scan does.
	DropCaches bool
	JSON       string
	// JSONTo, when set, receives the JSON report instead of the file JSON.
	JSONTo   io.Writer
	Out      io.Writer // report
	Progress io.Writer

	// detectCgroups replaces bench.DetectMemCgroups in tests.
	detectCgroups func() (*bench.MemCgroups, error)
	// dropSystem replaces dropSystemCache in tests: the one function that
	// writes /proc/sys/vm/drop_caches.
	dropSystem func() error
	// Modes selects the modes to run (all when empty).
	Modes bench.Selection
}

func (o Options) withDefaults() (Options, error) {
	if o.Keys == 0 {
		o.Keys = DefaultKeys
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.Batch == 0 {
		o.Batch = DefaultBatch
	}
	if o.Callers == 0 {
		o.Callers = DefaultCallers
	}
	if o.Trials == 0 {
		o.Trials = DefaultTrials
	}
	if o.Duration == 0 {
		o.Duration = DefaultDuration
	}
	if o.Dist == "" {
		o.Dist = Uniform
	}
	if o.MemLimit == 0 {
		o.MemLimit = o.CacheSize + DefaultMemHeadroom
	}
	if o.ChildTimeout == 0 {
		o.ChildTimeout = DefaultChildTimeout
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
	if o.dropSystem == nil {
		o.dropSystem = dropSystemCache
	}
	bad := func(format string, args ...any) (Options, error) {
		return o, fmt.Errorf("bench kv: "+format, args...)
	}
	switch {
	case o.Dir == "":
		return bad("no directory")
	case o.Keys < uint64(o.Batch) || o.Keys > MaxKeys:
		return bad("--keys %d must be between the batch (%d) and 2^48", o.Keys, o.Batch)
	case o.CacheSize < 1<<20:
		return bad("--cache %d bytes is too small: at least 1 MiB", o.CacheSize)
	case o.Batch < 1 || o.Batch > 4096:
		return bad("--batch %d must be 1 to 4096", o.Batch)
	case o.Callers < 1 || o.Callers > 1024:
		return bad("--callers %d must be 1 to 1024", o.Callers)
	case o.Trials < 1:
		return bad("--trials %d must be at least 1", o.Trials)
	case o.Duration <= 0:
		return bad("--duration %s must be positive", o.Duration)
	case !o.NoMemLimit && o.MemLimit <= o.CacheSize:
		return bad("memory limit %d MiB must be above the cache (%d MiB)", o.MemLimit>>20, o.CacheSize>>20)
	}
	if _, err := NewChooser(o.Dist, 1, 0); err != nil {
		return bad("%v", err)
	}
	return o, nil
}

// Result is one row of the JSON report.
type Result struct {
	System    string `json:"system"`
	Mode      string `json:"mode"` // the mode's name in this report
	Label     string `json:"label"`
	Access    string `json:"access"` // multiget, multiget-hot, get-serial, get-parallel, random-reads
	IOBackend string `json:"io_backend,omitempty"`
	Batch     int    `json:"batch"`
	Callers   int    `json:"callers"`
	// MaxInFlight is the most device reads the mode keeps in flight at once
	// (maxInFlight); 0 for the hot mode.
	MaxInFlight int `json:"max_in_flight"`
	// KeysPerS is keys read per second, median of trials. For the device
	// it is its floor in keys: its IOPS ÷ the blocks MultiGet on io_uring
	// read per key in this run (BlocksPerKey), with its IOPS in
	// BlockReadsPerS; 0 when that MultiGet did not run.
	KeysPerS     float64 `json:"keys_per_s"`
	KeysPerSBest float64 `json:"keys_per_s_best"`
	KeysPerSMin  float64 `json:"keys_per_s_min"`
	KeysPerSMax  float64 `json:"keys_per_s_max"`
	// The percentiles are of one batch, in the median trial.
	P50us  float64 `json:"p50_us"`
	P90us  float64 `json:"p90_us"`
	P99us  float64 `json:"p99_us"`
	P999us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
	// BlockReadsPerS is 4 KiB blocks read from the device per second by
	// the store's own count (ringstore); BlocksPerKey the same per key.
	BlockReadsPerS float64 `json:"block_reads_per_s,omitempty"`
	// KVBlockReadsPerS is kv Stats.BlockReads per second, for comparison.
	KVBlockReadsPerS float64 `json:"kv_stats_block_reads_per_s,omitempty"`
	BlocksPerKey     float64 `json:"blocks_per_key,omitempty"`
	CacheHitRate     float64 `json:"cache_hit_rate,omitempty"`
	// DeviceMBps is /proc/self/io read_bytes of the child over the measured
	// part per second, in 10^6 bytes: what every system fetched from the
	// device, whatever the path.
	DeviceMBps    float64   `json:"device_read_mb_per_s"`
	CPUusPerKey   float64   `json:"cpu_us_per_key"`
	MaxRSS        float64   `json:"max_rss_bytes,omitempty"`
	CgroupPeak    float64   `json:"cgroup_peak_bytes,omitempty"`
	ResidentStart float64   `json:"resident_before_bytes"`
	TrialKeysPerS []float64 `json:"trial_keys_per_s"`
	TrialP99us    []float64 `json:"trial_p99_us"`
	Version       string    `json:"version,omitempty"` // a peer's module version
}

// setUpCacheDrop says in cold how each trial's page cache is dropped and
// returns whether the machine's whole cache is (only with DropCaches, and
// where the first drop works); the benchmark's own files are always
// dropped, one by one.
func (o *Options) setUpCacheDrop(cold *Cold) bool {
	if !o.DropCaches {
		cold.CacheDrop = dropCacheFiles + ", checked with mincore (the machine's page cache is left alone: --drop-caches drops it too)"
		return false
	}
	if derr := o.dropSystem(); derr != nil {
		cold.CacheDrop = dropCacheFiles + ", checked with mincore"
		cold.CacheDropNote = "--drop-caches: the machine's page cache could not be dropped (" + derr.Error() + "); only the database's files were"
		return false
	}
	cold.CacheDrop = dropCacheSystem + ", then " + dropCacheFiles + " (checked with mincore)"
	return true
}

// Device is the device's IOPS measured in the run at the depth MultiGet on
// io_uring keeps in flight.
type Device struct {
	IOPS      float64   `json:"iops"` // median of trials
	IOPSBest  float64   `json:"iops_best"`
	TrialIOPS []float64 `json:"trial_iops"`
	// MaxInFlight is the most reads in flight (Callers × Batch, up to the
	// engine's limit): the depth the IOPS were measured at.
	MaxInFlight int `json:"max_in_flight"`
	Callers     int `json:"callers"`
	Batch       int `json:"batch"`
	// KeysPerS is IOPS ÷ BlocksPerKey, the blocks MultiGet on io_uring read
	// per key in the run: the device's floor in keys/s; 0 when that
	// MultiGet did not run.
	KeysPerS     float64 `json:"keys_per_s"`
	BlocksPerKey float64 `json:"blocks_per_key,omitempty"`
	P50us        float64 `json:"p50_us"` // per batch of one caller
	P99us        float64 `json:"p99_us"`
	Measurement  string  `json:"measurement"`
}

// Bar is one of the targets, checked against this run's figures.
type Bar = bench.Bar

// MemoryLimit says whether the read children ran under a memory limit.
type MemoryLimit = bench.MemoryLimit

// Cold says how every trial was made cold.
type Cold struct {
	Ringstore     string      `json:"ringstore"`
	Pebble        string      `json:"pebble"`
	CacheDrop     string      `json:"page_cache_drop"`
	CacheDropNote string      `json:"page_cache_drop_note,omitempty"`
	ResidentMax   int64       `json:"resident_after_drop_max_bytes"`
	MemoryLimit   MemoryLimit `json:"memory_limit"`
	Achieved      bool        `json:"achieved"` // for every system: page cache dropped and a memory limit applied
	Why           string      `json:"why,omitempty"`
}

// Load is how a store was loaded.
type Load struct {
	System    string             `json:"system"`
	Seconds   float64            `json:"seconds"`
	Keys      uint64             `json:"keys"`
	DiskBytes float64            `json:"disk_bytes"`
	Shape     map[string]float64 `json:"shape,omitempty"`
}

type report struct {
	bench.Report
	DataBytes    int64             `json:"data_bytes"` // keys + values as loaded
	CacheBytes   int64             `json:"cache_bytes"`
	DataVsCache  float64           `json:"data_vs_cache"`
	Device       *Device           `json:"device,omitempty"`
	Limits       *Limits           `json:"limits,omitempty"`
	Bars         []Bar             `json:"bars"`
	Cold         Cold              `json:"cold"`
	Loads        []Load            `json:"loads"`
	PeerVersions map[string]string `json:"peer_versions,omitempty"`
}

// Limits are the two rates the cold MultiGet on io_uring is read against,
// both measured in the same run: what the device allows (its IOPS at the
// MultiGet's depth ÷ the blocks the cold MultiGet read per key) and what the CPU allows (the
// same MultiGet with every block already cached).
type Limits struct {
	DeviceBoundKeysPerS float64 `json:"device_bound_keys_per_s"`
	BlocksPerKey        float64 `json:"blocks_per_key"`
	CPUBoundKeysPerS    float64 `json:"cpu_bound_keys_per_s"`
	HotCacheHitRate     float64 `json:"hot_cache_hit_rate"`
	HotCPUusPerKey      float64 `json:"hot_cpu_us_per_key"`
	ColdKeysPerS        float64 `json:"cold_keys_per_s"`
	// ColdVsLimit is ColdKeysPerS ÷ min(DeviceBound, CPUBound).
	ColdVsLimit float64 `json:"cold_vs_limit"`
	Bound       string  `json:"bound"` // "device" or "cpu": the lower of the two
}

// mode is a bench.Mode with what the report needs to know of it.
type mode struct {
	bench.Mode
	system, access, backend, dbDir, version string
	peer                                    bool
	// depth is the most device reads the mode keeps in flight
	// (maxInFlight).
	depth int
	// hot: the mode measures the CPU's limit with every block cached, so
	// it runs with a cache as large as the data and outside the memory
	// cgroup that keeps the cold modes cold.
	hot bool
}

// Mode names.
const (
	nameMultiGetURing   = "ringstore-multiget-uring"
	nameMultiGetHot     = "ringstore-multiget-uring-hot"
	nameMultiGetSyscall = "ringstore-multiget-syscall"
	nameGet64URing      = "ringstore-get-parallel-uring"
	nameDevice          = "device-multiget-depth"
	namePebbleSerial    = "pebble-get-serial"
	namePebbleParallel  = "pebble-get-parallel"
)

// Run runs the benchmark and writes the report.
func Run(opts Options) (err error) {
	o, err := opts.withDefaults()
	if err != nil {
		return err
	}
	if err := bench.CheckDir("bench kv", o.Dir, true); err != nil {
		return err
	}
	runDir, err := os.MkdirTemp(o.Dir, "ringstore-bench-kv-")
	if err != nil {
		return fmt.Errorf("bench kv: %w", err)
	}
	defer func() {
		if rerr := os.RemoveAll(runDir); rerr != nil {
			err = errors.Join(err, fmt.Errorf("bench kv: remove %s: %w", runDir, rerr))
		}
	}()
	ringDir, pebbleDir := filepath.Join(runDir, "ringstore"), filepath.Join(runDir, "pebble")
	var notes []string

	uringOK, why := ioengine.ProbeKernel().Usable()
	if !uringOK {
		notes = append(notes, "io_uring unavailable ("+why+"): the io_uring modes and the device's measurement were skipped, and the bars cannot be tested")
	}

	// Cold: the page cache drop, and the memory limit.
	cold := Cold{
		Ringstore: fmt.Sprintf("O_DIRECT reads; the store reopened in a fresh process for every trial, so its %d MiB block cache starts empty; its files also dropped from the page cache before each trial", o.CacheSize>>20),
		Pebble:    fmt.Sprintf("reads through the page cache: its files dropped from the page cache before every trial, the store reopened in a fresh process (its %d MiB block cache empty), under the memory limit below", o.CacheSize>>20),
	}
	systemDrop := o.setUpCacheDrop(&cold)
	ml, cgroups := bench.SetUpMemoryLimit(o.detectCgroups, o.MemLimit, o.NoMemLimit, "no memory limit asked for", o.Progress)
	cold.MemoryLimit = ml
	if ml.Applied {
		fmt.Fprintf(o.Progress, "memory limit: %d MiB per read child, page cache included (cgroup %s under %s)\n", o.MemLimit>>20, ml.Cgroup, ml.Parent)
	} else {
		fmt.Fprintf(o.Progress, "memory limit: NONE — %s\n", ml.Reason)
	}

	base := ChildConfig{Keys: o.Keys, Batch: o.Batch, Callers: o.Callers, CacheSize: o.CacheSize, Dist: o.Dist,
		Duration: o.Duration, TimeoutSeconds: o.ChildTimeout.Seconds()}
	dataBytes := DataBytes(o.Keys)

	// Load ringstore.
	var loads []Load
	fmt.Fprintf(o.Progress, "loading %d keys (%.0f MiB of keys and values) into ringstore...\n", o.Keys, float64(dataBytes)/(1<<20))
	lc := base
	lc.System, lc.Mode, lc.Dir = SystemRingstore, ModeLoad, ringDir
	lt, err := bench.ChildExec(Workload, lc)()
	if err != nil {
		return fmt.Errorf("bench kv: load ringstore: %w", err)
	}
	loads = append(loads, loadOf(SystemRingstore, lt))
	fmt.Fprintf(o.Progress, "  ringstore: %.1f s, %.0f MiB on disk\n", lt.Seconds, lt.Extra[XDiskBytes]/(1<<20))

	// Build and load the peer.
	var peerBin string
	var versions map[string]string
	if o.Peers {
		tmp, err := os.MkdirTemp("", "ringstore-kvpeers-")
		if err != nil {
			return fmt.Errorf("bench kv: %w", err)
		}
		defer os.RemoveAll(tmp)
		bin, v, perr := buildPeers(o, tmp)
		if perr == nil {
			fmt.Fprintf(o.Progress, "loading the same keys into Pebble...\n")
			pc := base
			pc.System, pc.Mode, pc.Dir = SystemPebble, ModeLoad, pebbleDir
			var pt bench.Trial
			if pt, perr = bench.BinaryExec(bin, PeerWorkload, pc)(); perr == nil {
				loads = append(loads, loadOf(SystemPebble, pt))
				fmt.Fprintf(o.Progress, "  pebble: %.1f s, %.0f MiB on disk\n", pt.Seconds, pt.Extra[XDiskBytes]/(1<<20))
				peerBin, versions = bin, v
			}
		}
		if perr != nil {
			notes = append(notes, "Pebble skipped: "+perr.Error())
			fmt.Fprintf(o.Progress, "Pebble skipped: %v\n", perr)
		}
	} else {
		notes = append(notes, "Pebble skipped: --no-peers")
	}

	// The modes.
	var residentMax int64
	exec := func(m *mode, cfg ChildConfig) func() (bench.Trial, error) {
		return func() (bench.Trial, error) {
			if systemDrop {
				if err := o.dropSystem(); err != nil {
					return bench.Trial{}, fmt.Errorf("cold start: %w", err)
				}
			}
			resident, err := dropFiles(m.dbDir)
			if err != nil {
				return bench.Trial{}, fmt.Errorf("cold start: %w", err)
			}
			residentMax = max(residentMax, resident)
			var cg *bench.MemCgroup
			if cgroups != nil && !m.hot {
				if cg, err = cgroups.New(o.MemLimit); err != nil {
					return bench.Trial{}, err
				}
				cfg.Cgroup = cg.Path
			}
			cfg.Seed = uint64(time.Now().UnixNano())
			var tr bench.Trial
			if m.peer {
				tr, err = bench.BinaryExec(peerBin, PeerWorkload, cfg)()
			} else {
				tr, err = bench.ChildExec(Workload, cfg)()
			}
			if tr.Extra == nil {
				tr.Extra = map[string]float64{}
			}
			tr.Extra[XResident] = float64(resident)
			if cg != nil {
				u, uerr := cg.Usage()
				if uerr == nil {
					tr.Extra[XCgroupPeak], tr.Extra[XCgroupHits], tr.Extra[XCgroupOOM] = float64(u.PeakBytes), float64(u.LimitHits), float64(u.OOMKills)
					if err != nil && u.OOMKills > 0 {
						err = fmt.Errorf("killed for want of memory under the %d MiB limit (%d OOM kills, peak %d MiB): %w", o.MemLimit>>20, u.OOMKills, u.PeakBytes>>20, err)
					}
				}
				err = errors.Join(err, uerr, cg.Remove())
			}
			return tr, err
		}
	}
	var modes []*mode
	add := func(name, label, system, access, backend, dir string, peer bool) {
		m := &mode{Mode: bench.Mode{Name: name, Label: label, Batch: o.Batch}, system: system, access: access, backend: backend, dbDir: dir, peer: peer,
			depth: maxInFlight(system, access, backend, o.Batch, o.Callers)}
		cfg := base
		cfg.System, cfg.Mode, cfg.IOMode, cfg.Dir = system, access, backend, dir
		if peer {
			m.version = versions[PebbleModule]
		}
		m.Exec = exec(m, cfg)
		modes = append(modes, m)
	}
	if uringOK {
		add(nameMultiGetURing, "ringstore MultiGet, io_uring", SystemRingstore, ModeMultiGet, "uring", ringDir, false)
	}
	add(nameMultiGetSyscall, "ringstore MultiGet, syscall (serial pread)", SystemRingstore, ModeMultiGet, "syscall", ringDir, false)
	if uringOK {
		add(nameGet64URing, fmt.Sprintf("ringstore Get × %d goroutines, io_uring", o.Batch), SystemRingstore, ModeGetParallel, "uring", ringDir, false)
		add(nameDevice, fmt.Sprintf("device: 4 KiB O_DIRECT reads, io_uring, %d callers × batches of %d (MultiGet's depth)", o.Callers, o.Batch), SystemDevice, ModeDevice, "uring", ringDir, false)
		add(nameMultiGetHot, "CPU: ringstore MultiGet, io_uring, every block cached", SystemRingstore, ModeMultiGetHot, "uring", ringDir, false)
	}
	if peerBin != "" {
		add(namePebbleSerial, "Pebble Get loop, serial", SystemPebble, ModeGetSerial, "", pebbleDir, true)
		add(namePebbleParallel, fmt.Sprintf("Pebble Get × %d goroutines", o.Batch), SystemPebble, ModeGetParallel, "", pebbleDir, true)
	}
	// The device reads as MultiGet on io_uring does (its callers, batches
	// of as many reads as keys); the hot mode's cache holds every table.
	for _, m := range modes {
		switch m.Name {
		case nameMultiGetHot:
			cfg := base
			cfg.System, cfg.Mode, cfg.IOMode, cfg.Dir, cfg.CacheSize = SystemRingstore, ModeMultiGetHot, "uring", ringDir, HotCacheSize(int64(lt.Extra[XDiskBytes]))
			m.hot = true
			m.Exec = exec(m, cfg)
		}
	}

	var names []string
	for _, m := range modes {
		names = append(names, m.Name)
	}
	if err := bench.CheckListed("kv", names, ModeNames(o)); err != nil {
		return err
	}
	if err := o.Modes.Check("kv", names); err != nil {
		return err
	}
	modes = slices.DeleteFunc(modes, func(m *mode) bool { return !o.Modes.Keep(m.Name) })
	bm := make([]bench.Mode, len(modes))
	for i, m := range modes {
		bm[i] = m.Mode
	}
	w := bench.Workload{Name: "kv", Dir: o.Dir, Trials: o.Trials, Modes: bm, Progress: o.Progress, Out: o.Out, JSON: o.JSON, JSONTo: o.JSONTo,
		Plan: fmt.Sprintf(" × %s (each after a page cache drop), %d callers × batches of %d keys, %s keys", o.Duration, o.Callers, o.Batch, o.Dist)}
	w.Summarize = func(results []bench.ModeResult, machine bench.Machine) (bench.Summary, error) {
		cold.ResidentMax = residentMax
		cold.Achieved, cold.Why = true, ""
		switch {
		case !ml.Applied:
			cold.Achieved, cold.Why = false, "no memory limit: "+ml.Reason+"; Pebble could keep what it read in the machine's page cache between its reads (the drop before each trial still held at its start)"
		case residentMax > 0:
			cold.Why = fmt.Sprintf("up to %d KiB of a database's files stayed in the page cache after the drop", residentMax>>10)
		}
		rep := buildReport(o, modes, results, dataBytes, loads, cold, versions)
		rep.Machine = machine
		rep.Notes = append(notes, rep.Notes...)
		return bench.Summary{Heading: "kv — cold point reads in batches", Body: func(w io.Writer) { writeBody(w, rep, modes) },
			Bars: rep.Bars, Notes: rep.Notes, Report: rep}, nil
	}
	return w.Run()
}

func loadOf(system string, t bench.Trial) Load {
	l := Load{System: system, Seconds: t.Seconds, Keys: uint64(t.Extra[XLoadKeys]), DiskBytes: t.Extra[XDiskBytes], Shape: map[string]float64{}}
	for k, v := range t.Extra {
		if k != XLoadKeys && k != XDiskBytes {
			l.Shape[k] = v
		}
	}
	return l
}
