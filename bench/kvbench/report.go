package kvbench

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/ringstore/ringstore/bench"
)

// The bar of the issue: MultiGet on io_uring at least BarVsSyscall× the
// syscall backend's MultiGet and BarVsPebble× Pebble's best mode, and its
// block reads per second at least BarVsDevice of the device's IOPS at the
// depth the MultiGet keeps in flight.
const (
	BarVsSyscall = 3.0
	BarVsPebble  = 2.0
	BarVsDevice  = 0.8
	// BarVsLimit: the cold MultiGet at least this share of the lower of
	// the device-bound and the CPU-bound rate (Limits).
	BarVsLimit = 0.8
)

// perSecond returns the median over trials of extra key k per second.
func perSecond(r bench.ModeResult, k string) float64 {
	var vs []float64
	for _, t := range r.Trials {
		if v, ok := t.Extra[k]; ok && t.Seconds > 0 {
			vs = append(vs, v/t.Seconds)
		}
	}
	return bench.Median(vs)
}

func extraMedian(r bench.ModeResult, k string) float64 {
	var vs []float64
	for _, t := range r.Trials {
		if v, ok := t.Extra[k]; ok {
			vs = append(vs, v)
		}
	}
	return bench.Median(vs)
}

func buildReport(o Options, modes []*mode, results []bench.ModeResult, dataBytes int64, loads []Load, cold Cold, versions map[string]string) *report {
	rep := &report{DataBytes: dataBytes, CacheBytes: o.CacheSize, DataVsCache: float64(dataBytes) / float64(o.CacheSize), Cold: cold, Loads: loads, PeerVersions: versions}
	rep.Benchmark = "kv"
	rep.Config = map[string]any{
		"dir": o.Dir, "keys": o.Keys, "cache_bytes": o.CacheSize, "batch": o.Batch, "callers": o.Callers, "trials": o.Trials,
		"duration_s": o.Duration.Seconds(), "dist": o.Dist, "mem_limit_bytes": o.MemLimit, "no_mem_limit": o.NoMemLimit, "peers": o.Peers,
		"key_bytes": fmt.Sprintf("%d–%d", MinKeyLen, MaxKeyLen), "value_bytes": fmt.Sprintf("%d–%d", MinValueLen, MaxValueLen), "warmup": "none",
	}
	var rows []Result
	for i, r := range results {
		m := modes[i]
		if len(r.Trials) == 0 {
			continue
		}
		med := r.Median()
		row := Result{System: m.system, Mode: m.Name, Label: m.Label, Access: m.access, IOBackend: m.backend, Batch: m.Mode.Batch, Callers: o.Callers, MaxInFlight: m.depth,
			KeysPerS: med.Rate(), KeysPerSBest: r.Best(), KeysPerSMin: r.Min(), KeysPerSMax: r.Max(), P50us: med.P50us, P99us: med.P99us, P90us: med.P90us, P999us: med.P999us, MaxUs: med.MaxUs,
			BlockReadsPerS: perSecond(r, XBlockReads), KVBlockReadsPerS: perSecond(r, XKVBlockReads), DeviceMBps: perSecond(r, XReadBytes) / 1e6, MaxRSS: extraMedian(r, XMaxRSS),
			CgroupPeak: extraMedian(r, XCgroupPeak), ResidentStart: extraMedian(r, XResident), TrialKeysPerS: r.Rates(), Version: m.version}
		if row.KeysPerS > 0 && row.BlockReadsPerS > 0 {
			row.BlocksPerKey = row.BlockReadsPerS / row.KeysPerS
		}
		if h, ms := extraMedian(r, XCacheHits), extraMedian(r, XCacheMisses); h+ms > 0 {
			row.CacheHitRate = h / (h + ms)
		}
		if med.Ops > 0 {
			row.CPUusPerKey = med.CPUSeconds / float64(med.Ops) * 1e6
		}
		for _, t := range r.Trials {
			row.TrialP99us = append(row.TrialP99us, t.P99us)
		}
		rows = append(rows, row)
	}
	rep.Device = deviceFloor(o, modes, results, rows)
	rep.Results = rows

	// Ratios.
	bestPebble, bestPebbleRate := "", 0.0
	for i, r := range results {
		if modes[i].system == SystemPebble && len(r.Trials) > 0 && r.Median().Rate() > bestPebbleRate {
			bestPebble, bestPebbleRate = modes[i].Name, r.Median().Rate()
		}
	}
	pairs := [][2]string{{nameMultiGetURing, nameMultiGetSyscall}}
	if bestPebble != "" {
		pairs = append(pairs, [2]string{nameMultiGetURing, bestPebble})
	}
	pairs = append(pairs, [][2]string{{nameMultiGetURing, nameGet64URing}, {nameGet64URing, namePebbleParallel}, {nameMultiGetSyscall, namePebbleSerial}, {namePebbleParallel, namePebbleSerial}}...)
	for _, p := range pairs {
		if r, ok := bench.Compare(results, p[0], p[1]); ok {
			rep.Ratios = append(rep.Ratios, r)
		}
	}

	// Bars.
	mg := bench.Find(results, nameMultiGetURing)
	haveMG := mg != nil && len(mg.Trials) > 0
	bar := func(name string, limit float64, value float64, ok bool, why string) Bar {
		return bench.NewBar(name, value, limit, false, ok, why)
	}
	if r, ok := bench.Compare(results, nameMultiGetURing, nameMultiGetSyscall); ok {
		rep.Bars = append(rep.Bars, bar("MultiGet io_uring vs MultiGet syscall (keys/s, median of trials)", BarVsSyscall, r.Median, true, ""))
	} else {
		rep.Bars = append(rep.Bars, bar("MultiGet io_uring vs MultiGet syscall (keys/s, median of trials)", BarVsSyscall, 0, false, "a mode did not run"))
	}
	if bestPebble != "" && haveMG {
		r, _ := bench.Compare(results, nameMultiGetURing, bestPebble)
		why := "against " + bestPebble + ", Pebble's best mode in this run"
		valid := cold.Achieved
		if !valid {
			why += "; NOT a cold comparison: " + cold.Why
		}
		rep.Bars = append(rep.Bars, bar("MultiGet io_uring vs Pebble's best mode (keys/s, median of trials)", BarVsPebble, r.Median, valid, why))
	} else {
		rep.Bars = append(rep.Bars, bar("MultiGet io_uring vs Pebble's best mode (keys/s, median of trials)", BarVsPebble, 0, false, "Pebble or MultiGet on io_uring did not run"))
	}
	// The device's bars hold only against a floor measured at the depth
	// the MultiGet keeps in flight.
	depthOK, depthWhy := true, ""
	if mgm := findMode(modes, nameMultiGetURing); rep.Device != nil && mgm != nil {
		depthWhy = fmt.Sprintf("the device at %d reads in flight (%d callers × batches of %d), the most MultiGet on io_uring keeps", rep.Device.MaxInFlight, rep.Device.Callers, rep.Device.Batch)
		if rep.Device.MaxInFlight != mgm.depth {
			depthOK = false
			depthWhy = fmt.Sprintf("NOT the MultiGet's depth: the device at %d reads in flight, MultiGet on io_uring keeps up to %d", rep.Device.MaxInFlight, mgm.depth)
		}
	}
	const deviceBar = "MultiGet io_uring block reads/s vs the device's IOPS at the same depth (medians of trials)"
	if rep.Device != nil && haveMG && rep.Device.IOPS > 0 {
		v := perSecond(*mg, XBlockReads) / rep.Device.IOPS
		rep.Bars = append(rep.Bars, bar(deviceBar, BarVsDevice, v, depthOK, fmt.Sprintf("%.0f block reads/s against %.0f IOPS; %s", perSecond(*mg, XBlockReads), rep.Device.IOPS, depthWhy)))
	} else {
		rep.Bars = append(rep.Bars, bar(deviceBar, BarVsDevice, 0, false, "the device or MultiGet on io_uring did not run"))
	}

	rep.Limits = limits(rows, rep.Device)
	const limitBar = "MultiGet io_uring keys/s vs min(device-bound, CPU-bound rate) (medians of trials)"
	if l := rep.Limits; l != nil {
		why := fmt.Sprintf("device-bound %.0f keys/s (%.0f IOPS at %d in flight ÷ %.2f blocks/key), CPU-bound %.0f keys/s (every block cached): %s-bound", l.DeviceBoundKeysPerS, rep.Device.IOPS, rep.Device.MaxInFlight, l.BlocksPerKey, l.CPUBoundKeysPerS, l.Bound)
		valid := l.HotCacheHitRate >= 0.99
		if !valid {
			why += fmt.Sprintf("; NOT a CPU bound: the hot mode's cache hit rate was %.1f%%", 100*l.HotCacheHitRate)
		}
		if !depthOK {
			valid = false
			why += "; " + depthWhy
		}
		rep.Bars = append(rep.Bars, bar(limitBar, BarVsLimit, l.ColdVsLimit, valid, why))
	} else {
		rep.Bars = append(rep.Bars, bar(limitBar, BarVsLimit, 0, false, "the device, the hot mode or MultiGet on io_uring did not run"))
	}

	rep.Notes = append(rep.Notes,
		fmt.Sprintf("Data: %d keys of %d–%d bytes (\"user\" + zero-padded digits of a scrambled index), values of %d–%d bytes (state rows, incompressible past their first fields), %.0f MiB of keys and values, %.1f× the %d MiB block cache every system is given.",
			o.Keys, MinKeyLen, MaxKeyLen, MinValueLen, MaxValueLen, float64(dataBytes)/(1<<20), rep.DataVsCache, o.CacheSize>>20),
		fmt.Sprintf("Each mode: %d callers at once, each reading batches of %d %s-random keys (a batch is a MultiGet, a loop of Gets, or %d goroutines with one Get each); keys/s counts keys whose value was checked (length and the index stored in it); latency is one batch's; no warm-up: measurement starts at the first batch after Open.", o.Callers, o.Batch, o.Dist, o.Batch),
		"Loading: every key once in index order (scattered key order), batches of 1000 without fdatasync; then a flush and compaction until none is needed (ringstore: Compact; Pebble: Flush and a manual compaction of the whole key range), before any trial. Load time is not a figure of this benchmark.",
		"Pebble: "+PebbleModule+" with the same block cache size, 4 KiB blocks, bloom filters of 10 bits per key on every level (as ringstore's default) and no compression (the values are incompressible; ringstore does not compress).",
		"Block reads/s (ringstore) are the bytes its block cache loaded from the device (bufpool Stats.BytesRead) over the measured part, in 4 KiB blocks, per second; kv's own Stats.BlockReads is in the JSON beside it (kv_stats_block_reads_per_s). Device MB/s is the child's /proc/self/io read_bytes per second, for every system.",
		"Cold, ringstore: "+cold.Ringstore+".",
		"Cold, Pebble: "+cold.Pebble+".",
		"Page cache drop before every trial of every mode: "+cold.CacheDrop+".",
	)
	if d := rep.Device; d != nil {
		n := "Device: " + d.Measurement + ". Its row is in keys/s like every other: its IOPS (shown as its block reads/s) ÷ the blocks MultiGet on io_uring read per key in this run; its latency is one caller's batch."
		if d.KeysPerS == 0 {
			n += " MultiGet on io_uring did not run, so its keys/s are not known (0)."
		}
		rep.Notes = append(rep.Notes, n)
	}
	if cold.CacheDropNote != "" {
		rep.Notes = append(rep.Notes, "CAUTION: "+cold.CacheDropNote+".")
	}
	if cold.MemoryLimit.Applied {
		rep.Notes = append(rep.Notes, fmt.Sprintf("Memory limit: every read child (ringstore, Pebble, device) in a memory cgroup of its own (cgroup %s below %s, made before the child and removed after it), %d MiB, page cache included: Pebble cannot keep more of the data in the page cache than the limit leaves beside its heap and its block cache.", cold.MemoryLimit.Cgroup, cold.MemoryLimit.Parent, cold.MemoryLimit.LimitBytes>>20))
	} else {
		rep.Notes = append(rep.Notes, "CAUTION: NO memory limit — "+cold.MemoryLimit.Reason+". Pebble read through the machine's page cache, dropped only before each trial: within a trial it may warm up on the machine's RAM, so its figures are not cold ones and the Pebble bar is marked not tested.")
	}
	if rep.DataVsCache < 4 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("CAUTION: the data is only %.1f× the block cache; the benchmark is meant for at least 4×.", rep.DataVsCache))
	}
	return rep
}

func findMode(modes []*mode, name string) *mode {
	for _, m := range modes {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// deviceFloor returns the device's figures of the run, nil when it did not
// run, and puts its row (among rows) in keys/s, the unit of every other
// row: its IOPS ÷ the blocks MultiGet on io_uring read per key, with the
// IOPS in BlockReadsPerS. Without that MultiGet the row's keys/s are 0.
func deviceFloor(o Options, modes []*mode, results []bench.ModeResult, rows []Result) *Device {
	dm := findMode(modes, nameDevice)
	d := bench.Find(results, nameDevice)
	if dm == nil || d == nil || len(d.Trials) == 0 {
		return nil
	}
	med := d.Median()
	dev := &Device{IOPS: med.Rate(), IOPSBest: d.Best(), TrialIOPS: d.Rates(), MaxInFlight: dm.depth, Callers: o.Callers, Batch: dm.Mode.Batch,
		P50us: med.P50us, P99us: med.P99us, Measurement: deviceMeasurement(dm.Mode.Batch, o.Callers)}
	var row, mg *Result
	for i := range rows {
		switch rows[i].Mode {
		case nameDevice:
			row = &rows[i]
		case nameMultiGetURing:
			mg = &rows[i]
		}
	}
	if mg != nil && mg.BlocksPerKey > 0 {
		dev.BlocksPerKey = mg.BlocksPerKey
		dev.KeysPerS = dev.IOPS / mg.BlocksPerKey
	}
	if row == nil {
		return dev
	}
	perKey := func(v float64) float64 {
		if dev.BlocksPerKey == 0 {
			return 0
		}
		return v / dev.BlocksPerKey
	}
	row.BlockReadsPerS, row.BlocksPerKey = dev.IOPS, dev.BlocksPerKey
	row.KeysPerS, row.KeysPerSBest, row.KeysPerSMin, row.KeysPerSMax = perKey(row.KeysPerS), perKey(row.KeysPerSBest), perKey(row.KeysPerSMin), perKey(row.KeysPerSMax)
	for i, v := range row.TrialKeysPerS {
		row.TrialKeysPerS[i] = perKey(v)
	}
	row.CPUusPerKey *= dev.BlocksPerKey // measured per read
	return dev
}

// limits computes the device-bound and CPU-bound rates of the cold
// MultiGet on io_uring from the rows of one run; nil when a mode is missing.
func limits(rows []Result, dev *Device) *Limits {
	var cold, hot *Result
	for i := range rows {
		switch rows[i].Mode {
		case nameMultiGetURing:
			cold = &rows[i]
		case nameMultiGetHot:
			hot = &rows[i]
		}
	}
	if cold == nil || hot == nil || dev == nil || dev.IOPS <= 0 || cold.BlocksPerKey <= 0 || hot.KeysPerS <= 0 {
		return nil
	}
	l := &Limits{DeviceBoundKeysPerS: dev.IOPS / cold.BlocksPerKey, BlocksPerKey: cold.BlocksPerKey, CPUBoundKeysPerS: hot.KeysPerS,
		HotCacheHitRate: hot.CacheHitRate, HotCPUusPerKey: hot.CPUusPerKey, ColdKeysPerS: cold.KeysPerS, Bound: "device"}
	lim := l.DeviceBoundKeysPerS
	if l.CPUBoundKeysPerS < lim {
		lim, l.Bound = l.CPUBoundKeysPerS, "cpu"
	}
	l.ColdVsLimit = cold.KeysPerS / lim
	return l
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }

// writeBody prints the report between the machine lines and the bars.
func writeBody(w io.Writer, rep *report, modes []*mode) {
	fmt.Fprintf(w, "data:    %.0f MiB of keys and values, %.1f× the %d MiB block cache\n", float64(rep.DataBytes)/(1<<20), rep.DataVsCache, rep.CacheBytes>>20)
	for _, l := range rep.Loads {
		fmt.Fprintf(w, "loaded:  %s in %.1f s, %.0f MiB on disk\n", l.System, l.Seconds, l.DiskBytes/(1<<20))
	}
	fmt.Fprintf(w, "cold:    page cache: %s\n", rep.Cold.CacheDrop)
	if ml := rep.Cold.MemoryLimit; ml.Applied {
		fmt.Fprintf(w, "         memory limit %d MiB per read child, page cache included (cgroup %s)\n", ml.LimitBytes>>20, ml.Cgroup)
	} else {
		fmt.Fprintf(w, "         NO memory limit: %s\n", ml.Reason)
	}
	if d := rep.Device; d != nil {
		fmt.Fprintf(w, "device:  %.0f IOPS at %d reads in flight, MultiGet's depth (%d callers × batches of %d; median; trials %s), p50 %.0f µs per batch of %d",
			d.IOPS, d.MaxInFlight, d.Callers, d.Batch, bench.Whole(d.TrialIOPS), d.P50us, d.Batch)
		if d.KeysPerS > 0 {
			fmt.Fprintf(w, "; %.0f keys/s at %.2f blocks per key", d.KeysPerS, d.BlocksPerKey)
		}
		fmt.Fprintln(w)
	}
	if l := rep.Limits; l != nil {
		fmt.Fprintf(w, "limits:  device-bound %.0f keys/s (the device's IOPS ÷ %.2f blocks read per key), CPU-bound %.0f keys/s (MultiGet with every block cached, %.1f µs of CPU per key); the cold MultiGet is %s-bound\n",
			l.DeviceBoundKeysPerS, l.BlocksPerKey, l.CPUBoundKeysPerS, l.HotCPUusPerKey, l.Bound)
	}
	if len(rep.PeerVersions) > 0 {
		var vs []string
		for k, v := range rep.PeerVersions {
			vs = append(vs, k+" "+v)
		}
		slices.Sort(vs)
		fmt.Fprintf(w, "peers:   %s\n", strings.Join(vs, ", "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "keys/s for every row, the device's too: its IOPS (its block reads/s) ÷ the blocks MultiGet on io_uring read per key; in flight: the most device reads the mode keeps in flight at once")
	t := bench.Table{Header: []string{"mode", "keys/s (median)", "best", "min–max", "in flight", "p50 µs", "p99 µs", "block reads/s", "blocks/key", "cache hits", "device MB/s", "CPU µs/key", "cgroup peak MiB"}}
	rows, _ := rep.Results.([]Result)
	for _, r := range rows {
		br, bpk, hit, peak := "-", "-", "-", "-"
		if r.BlockReadsPerS > 0 {
			br, bpk = f0(r.BlockReadsPerS), fmt.Sprintf("%.2f", r.BlocksPerKey)
		}
		if r.CacheHitRate > 0 {
			hit = fmt.Sprintf("%.0f%%", 100*r.CacheHitRate)
		}
		if r.CgroupPeak > 0 {
			peak = f0(r.CgroupPeak / (1 << 20))
		}
		keys := f0(r.KeysPerS)
		if r.System == SystemDevice && r.KeysPerS == 0 {
			keys = "- (no MultiGet on io_uring)"
		}
		t.Add(r.Label, keys, f0(r.KeysPerSBest), f0(r.KeysPerSMin)+"–"+f0(r.KeysPerSMax), strconv.Itoa(r.MaxInFlight), f0(r.P50us), f0(r.P99us), br, bpk, hit, fmt.Sprintf("%.0f", r.DeviceMBps), fmt.Sprintf("%.1f", r.CPUusPerKey), peak)
	}
	t.Write(w)
	labels := map[string]string{}
	for _, m := range modes {
		labels[m.Name] = m.Label
	}
	fmt.Fprintln(w, "\nratios measured in this run:")
	bench.WriteRatios(w, rep.Ratios, labels)
}
