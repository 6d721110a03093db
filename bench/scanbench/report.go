package scanbench

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
)

// The bars.
const (
	barMean   = 0.5 // pool mean latency ≤ 0.5× mmap's
	barP95    = 0.4 // pool p95 ≤ 0.4× mmap's
	barDevice = 0.8 // pool GB/s ≥ 0.8× the device's sequential GB/s
	// barFloor: pool mean latency ≤ 1.25 × max(memory mode's mean, the
	// bytes a round needs ÷ the device's bandwidth).
	barFloor = 1.25
	// barQPS: pool queries/s ≥ 2× mmap's.
	barQPS = 2.0
	// barCPU: pool CPU-seconds per trial ≤ 1.2× the memory mode's: the
	// pool's I/O path costs at most a fifth of the decoding.
	barCPU = 1.2
)

// trialFigure returns one figure of a trial.
type trialFigure func(t bench.Trial) float64

func extra(key string) trialFigure { return func(t bench.Trial) float64 { return t.Extra[key] } }

// gbps is bytes from the device per second of the measured part: read_bytes
// for the scan modes, the reads' own count for the device.
func gbps(t bench.Trial) float64 {
	if t.Seconds <= 0 {
		return 0
	}
	b := t.Extra[xReadBytes]
	if _, ok := t.Extra[xDeviceBytes]; ok {
		b = t.Extra[xDeviceBytes]
	}
	return b / t.Seconds / 1e9
}

func figures(r bench.ModeResult, f trialFigure) []float64 {
	out := make([]float64, len(r.Trials))
	for i, t := range r.Trials {
		out[i] = f(t)
	}
	return out
}

func buildReport(o Options, results []bench.ModeResult, data *dataSet, ml MemoryLimit, ioMode string, residentMax int64) *report {
	rep := &report{Report: bench.Report{Benchmark: "scan"}, MemoryLimit: ml, CacheDrop: cacheDropMethod, Data: data, ResidentMax: residentMax}
	var rows []Result
	byMode := map[string]*Result{}
	for _, r := range results {
		if len(r.Trials) == 0 {
			continue
		}
		row := Result{Mode: r.Mode.Name, Label: r.Mode.Label, TrialGBps: figures(r, gbps)}
		row.GBps = median(row.TrialGBps)
		row.QueriesPerS = median(r.Rates())
		row.CPUSeconds = median(figures(r, func(t bench.Trial) float64 { return t.CPUSeconds }))
		row.MaxRSS = median(figures(r, extra(xMaxRSS)))
		if v := figures(r, extra(xCgroupPeak)); ml.Applied {
			row.CgroupPeak = median(v)
		}
		if r.Mode.Name == modeDevice || r.Mode.Name == modeFio {
			d := &Device{Label: r.Mode.Label, GBps: row.GBps, TrialGBps: row.TrialGBps, Bytes: median(figures(r, extra(xDeviceBytes))),
				Seconds:     median(figures(r, func(t bench.Trial) float64 { return t.Seconds })),
				Measurement: DeviceOptions{Duration: o.DeviceTime, IOMode: ioModeOf(ioMode)}.withDefaults().String()}
			if r.Mode.Name == modeFio {
				d.Measurement = "fio " + strings.Join(fioArgs([]string{"<the data files>"}, DeviceOptions{Duration: o.DeviceTime}), " ")
				rep.DeviceFio = d
				continue
			}
			d.ReadBytes, d.MaxRSS, d.CgroupPeak, d.CPUSeconds = median(figures(r, extra(xReadBytes))), row.MaxRSS, row.CgroupPeak, row.CPUSeconds
			rep.Device = d
			continue
		}
		row.TrialMeanMS, row.TrialP95MS = figures(r, extra(xMeanMS)), figures(r, extra(xP95MS))
		row.MeanMS, row.P95MS = median(row.TrialMeanMS), median(row.TrialP95MS)
		row.P50MS, row.MaxMS = median(figures(r, extra(xP50MS))), median(figures(r, extra(xMaxMS)))
		row.DeviceBytes = median(figures(r, extra(xReadBytes)))
		row.MajorFaults, row.MinorFaults = median(figures(r, extra(xMajorFaults))), median(figures(r, extra(xMinorFaults)))
		row.QueryMeanMS, row.TrialQueryMeanMS, row.Extra = map[string]float64{}, map[string][]float64{}, map[string]float64{}
		keys := map[string]bool{}
		for _, t := range r.Trials {
			for k := range t.Extra {
				keys[k] = true
			}
		}
		for k := range keys {
			trials := figures(r, extra(k))
			v := median(trials)
			if q, ok := strings.CutPrefix(k, xQueryMSPrefx); ok {
				row.QueryMeanMS[q], row.TrialQueryMeanMS[q] = v, trials
			} else {
				row.Extra[k] = v
			}
		}
		rows = append(rows, row)
	}
	for i := range rows {
		byMode[rows[i].Mode] = &rows[i]
		if rep.Device != nil && rep.Device.GBps > 0 {
			rows[i].VsDevice = rows[i].GBps / rep.Device.GBps
		}
	}
	rep.Results = rows

	find := func(name string) *bench.ModeResult { return bench.Find(results, name) }
	paired := func(a, b string, metric string, f trialFigure) (LatencyRatio, bool) {
		ra, rb := find(a), find(b)
		if ra == nil || rb == nil || len(ra.Trials) == 0 || len(rb.Trials) == 0 {
			return LatencyRatio{}, false
		}
		mb := median(figures(*rb, f))
		if mb <= 0 {
			return LatencyRatio{}, false
		}
		lr := LatencyRatio{A: a, B: b, Metric: metric, Median: median(figures(*ra, f)) / mb}
		lr.Min, lr.Max = lr.Median, lr.Median
		if rs := bench.RoundRatios(ra, rb, f); len(rs) > 0 {
			lr.Min, lr.Max = slices.Min(rs), slices.Max(rs)
		}
		return lr, true
	}
	for _, p := range [][2]string{{"pool", "mmap"}, {"direct", "mmap"}, {"pread", "mmap"}, {"pool", "direct"}, {"pool", modePoolNoCheck}} {
		for _, m := range []struct {
			name string
			f    trialFigure
		}{{"mean_ms", extra(xMeanMS)}, {"p95_ms", extra(xP95MS)}} {
			if lr, ok := paired(p[0], p[1], m.name, m.f); ok {
				rep.LatencyRatios = append(rep.LatencyRatios, lr)
			}
		}
	}
	for _, p := range [][2]string{{"pool", modeDevice}, {"direct", modeDevice}, {"mmap", modeDevice}, {"pread", modeDevice}, {"pool", modeFio}, {modeDevice, modeFio}} {
		if lr, ok := paired(p[0], p[1], "gbps", gbps); ok {
			rep.LatencyRatios = append(rep.LatencyRatios, lr)
		}
	}
	for _, p := range [][2]string{{"pool", "mmap"}, {"direct", "mmap"}, {"pool", "direct"}, {"pool", modePoolNoCheck}} {
		if r, ok := bench.Compare(results, p[0], p[1]); ok {
			rep.Ratios = append(rep.Ratios, r)
		}
	}

	// The bars, valid only under the conditions the issue states.
	valid, why := true, ""
	switch {
	case !ml.Applied:
		valid, why = false, "no memory limit (memory_limit.reason says why)"
	case data.Bytes < 2*o.MemLimit:
		valid, why = false, fmt.Sprintf("the data (%d MiB) is less than twice the memory limit (%d MiB)", data.Bytes>>20, o.MemLimit>>20)
	}
	ratioOf := func(a, b, metric string) (LatencyRatio, bool) {
		for _, lr := range rep.LatencyRatios {
			if lr.A == a && lr.B == b && lr.Metric == metric {
				return lr, true
			}
		}
		return LatencyRatio{}, false
	}
	for _, b := range []struct {
		name    string
		a, b, m string
		limit   float64
		atMost  bool
	}{
		{"pool mean latency ≤ 0.5× mmap's", "pool", "mmap", "mean_ms", barMean, true},
		{"pool p95 latency ≤ 0.4× mmap's", "pool", "mmap", "p95_ms", barP95, true},
		{"pool GB/s ≥ 0.8× the device's sequential GB/s", "pool", modeDevice, "gbps", barDevice, false},
	} {
		if lr, ok := ratioOf(b.a, b.b, b.m); ok {
			rep.Bars = append(rep.Bars, bench.NewBar(b.name, lr.Median, b.limit, b.atMost, valid, why))
		} else {
			rep.Bars = append(rep.Bars, bench.NewBar(b.name, 0, b.limit, b.atMost, false, fmt.Sprintf("%s or %s has no successful trial", b.a, b.b)))
		}
	}

	const floorBar = "pool mean ≤ 1.25× max(CPU floor, device floor)"
	if fl := floors(byMode, rep.Device); fl != nil {
		rep.Floors = fl
		rep.Bars = append(rep.Bars, bench.NewBar(floorBar, fl.PoolVsFloor, barFloor, true, valid, why))
	} else {
		rep.Bars = append(rep.Bars, bench.NewBar(floorBar, 0, barFloor, true, false, "the pool, memory or device mode has no successful trial"))
	}
	const qpsBar = "pool queries/s ≥ 2× mmap's"
	if r, ok := bench.Compare(results, "pool", "mmap"); ok {
		rep.Bars = append(rep.Bars, bench.NewBar(qpsBar, r.Median, barQPS, false, valid, why))
	} else {
		rep.Bars = append(rep.Bars, bench.NewBar(qpsBar, 0, barQPS, false, false, "pool or mmap has no successful trial"))
	}

	const cpuBar = "pool CPU per trial ≤ 1.2× the memory mode's (the same queries on data held in memory)"
	if pool, mem := byMode["pool"], byMode[modeMemory]; pool != nil && mem != nil && pool.CPUSeconds > 0 && mem.CPUSeconds > 0 {
		cpuWhy := fmt.Sprintf("%.3g against %.3g CPU-seconds per trial", pool.CPUSeconds, mem.CPUSeconds)
		if nc := byMode[modePoolNoCheck]; nc != nil && nc.CPUSeconds > 0 {
			cpuWhy += fmt.Sprintf("; without the sidecar checks, which the memory mode pays before its measured part, %.2f×", nc.CPUSeconds/mem.CPUSeconds)
		}
		if fl := rep.Floors; fl != nil && fl.PoolCPUFloor > 0 {
			cpuWhy += fmt.Sprintf("; floor %.2f×: the memory mode's CPU plus %.3g CPU-seconds the device mode's reads take for the %.0f MiB the pool read", fl.PoolCPUFloorRatio, fl.ReadCPUSeconds, pool.DeviceBytes/(1<<20))
		}
		if !valid {
			cpuWhy = why
		}
		rep.Bars = append(rep.Bars, bench.NewBar(cpuBar, pool.CPUSeconds/mem.CPUSeconds, barCPU, true, valid, cpuWhy))
	} else {
		rep.Bars = append(rep.Bars, bench.NewBar(cpuBar, 0, barCPU, true, false, "the pool or memory mode has no successful trial"))
	}

	rep.Notes = append(rep.Notes, measurementNotes(o, data, ml, ioMode, results, residentMax)...)
	return rep
}

// floors derives the pool's two floors from the rows of one run; nil when
// the pool, memory or device mode is missing.
func floors(byMode map[string]*Result, dev *Device) *Floors {
	pool, mem := byMode["pool"], byMode[modeMemory]
	if pool == nil || mem == nil || dev == nil || dev.GBps <= 0 || mem.MeanMS <= 0 {
		return nil
	}
	fl := &Floors{MemoryMeanMS: mem.MeanMS, NeedBytes: mem.Extra[xNeedBytes], PoolMeanMS: pool.MeanMS}
	fl.DeviceMS = fl.NeedBytes / (dev.GBps * 1e9) * 1e3
	fl.FloorMS, fl.Bound = fl.MemoryMeanMS, "cpu"
	if fl.DeviceMS > fl.FloorMS {
		fl.FloorMS, fl.Bound = fl.DeviceMS, "device"
	}
	fl.PoolVsFloor = pool.MeanMS / fl.FloorMS
	if c := dev.CPUPerByte(); c > 0 && mem.CPUSeconds > 0 {
		fl.PoolCPUSeconds = pool.CPUSeconds
		fl.ReadCPUSeconds = c * pool.DeviceBytes
		fl.PoolCPUFloor = mem.CPUSeconds + fl.ReadCPUSeconds
		fl.PoolCPUFloorRatio = fl.PoolCPUFloor / mem.CPUSeconds
	}
	return fl
}

// sidecarNote says which modes checked their reads against the files'
// checksum sidecars.
func sidecarNote(o Options) string {
	if o.NoSidecarCheck {
		return "No mode checked its reads against the files' checksum sidecars (--no-sidecar-check): pool-nocheck is pool."
	}
	return "Every mode but pool-nocheck checks each range it reads against the files' checksum sidecars (CRC32C per 4 KiB chunk; mmap and pread once per chunk and open file, direct per read, pool once per frame load for the chunks each query reads); pool-nocheck is pool without the checks, so pool ÷ pool-nocheck is their cost."
}

func measurementNotes(o Options, data *dataSet, ml MemoryLimit, ioMode string, results []bench.ModeResult, residentMax int64) []string {
	limit := "no memory limit (" + ml.Reason + ")"
	if ml.Applied {
		limit = fmt.Sprintf("a memory limit of %d MiB, page cache included (cgroup %s, one new cgroup per child below %s, removed after it exited)", o.MemLimit>>20, ml.Cgroup, ml.Parent)
	}
	if ml.NotV2 != "" {
		limit += "; cgroup v2 was not used: " + ml.NotV2
	}
	reused := fmt.Sprintf("generated by this run in %.0f s", data.GenTime)
	if data.Reused {
		reused = "reused from an earlier run"
	}
	notes := []string{
		fmt.Sprintf("Data: %d Arrow IPC files of events (%s compression), %d MiB, %d rows, %s (%s).", len(data.Files), o.Compression, data.Bytes>>20, data.Rows, reused, data.Gen),
		fmt.Sprintf("Every trial of every mode runs in a fresh child process with %s. Before each trial the data's page cache is dropped with %s: at most %d KiB of the data stayed resident (of %d MiB), so mmap and pread start cold; direct and pool never use the page cache.", limit, cacheDropMethod, residentMax>>10, data.Bytes>>20),
		fmt.Sprintf("A trial runs %d rounds; each round starts %d queries at once (one goroutine each, the events queries in order, repeated: %s) and waits for all of them. Every query scans every file in order with its own projection. Latency is one query's wall time, start to result; mean and p95 (nearest rank) are over the %d queries of a trial; the table gives the median of the trials' figures and their min–max.",
			o.Rounds, o.Queries, strings.Join(queryMix(o.Queries), ", "), o.Rounds*o.Queries),
		"Every query result of every trial is compared with the first mode's (cell for cell, floats bit for bit); a difference fails the run.",
		fmt.Sprintf("GB/s = /proc/self/io read_bytes of the child over the measured part ÷ its wall time: bytes fetched from the device, readahead included, whatever the path (page-cache misses and mmap faults, O_DIRECT preads, io_uring). Major and minor faults and max RSS are the child's getrusage; the cgroup peak is %s.", peakSource(ml)),
		fmt.Sprintf("Modes: mmap = a read-only mapping of each file, record bodies sliced out of it and decoded by arrow-go's IPC reader, projecting columns (arrow-go's own NewMappedFileReader fails on files with dictionary columns, see the arrowscan package doc); pread = the needed ranges with pread through the page cache; direct = the needed ranges with O_DIRECT on ioengine (%s), read ahead of the decoder; pool = O_DIRECT through one bufpool.Pool of %d MiB in %d KiB frames shared by all queries, with prefetch. %s", ioMode, o.PoolBytes>>20, o.FrameSize>>10, sidecarNote(o)),
		fmt.Sprintf("Device: %s, on the same files and file system, in its own child process per trial, interleaved with the modes; where fio is installed it does the same reads (io_uring, O_DIRECT, same block size and depth) as a mode of its own, a measurement by a tool that is not ours.", DeviceOptions{Duration: o.DeviceTime, IOMode: ioModeOf(ioMode)}.withDefaults()),
	}
	if ra := readAheadKB(data.Dir); ra != "" {
		notes = append(notes, "The device's readahead (read_ahead_kb) is "+ra+" KiB: a page-cache miss, a fault on the mapping above all, reads that much around it.")
	}
	var opens []string
	for _, m := range scanModes {
		if r := bench.Find(results, m.name); r != nil && len(r.Trials) > 0 {
			opens = append(opens, fmt.Sprintf("%s %.0f ms (%.0f MiB read, %.0f KiB resident after the drop)", m.name,
				median(figures(*r, extra(xOpenMS))), median(figures(*r, extra(xOpenReadBytes)))/(1<<20), median(figures(*r, extra(xResidentStart)))/(1<<10)))
		}
	}
	if len(opens) > 0 {
		notes = append(notes, "Opening the files (footer and every batch's metadata) is not part of the measured part; each child then drops the data's page cache again, so the queries start cold. Open, median of trials: "+strings.Join(opens, ", ")+".")
	}
	if residentMax > data.Bytes/100 {
		notes = append(notes, fmt.Sprintf("WARNING: %d MiB of the data stayed in the page cache after the drop: mmap and pread did not start fully cold", residentMax>>20))
	}
	// Say whether the pool decoded batches in place (bufpool windows) or
	// had to copy them out.
	if r := bench.Find(results, "pool"); r != nil && len(r.Trials) > 0 {
		maps, fails, moves := median(figures(*r, extra(xPoolWinMaps))), median(figures(*r, extra(xPoolWinFails))), median(figures(*r, extra(xPoolWinMoves)))
		switch {
		case maps == 0:
			notes = append(notes, "pool: the pool has no windows here, so every batch spanning frames was copied out of them (bufpool.CopyOut)")
		case fails > 0:
			notes = append(notes, fmt.Sprintf("pool: batches decoded in place through the pool's windows, but %.0f frame mappings failed (median trial) and their batches were copied", fails))
		default:
			notes = append(notes, fmt.Sprintf("pool: batches decoded in place through the pool's windows (bufpool.Options.Windows): %.0f frame mappings per trial (median), %.0f of them a reused slot's mapping moved with its page tables, none failed. Max RSS counts a frame read through a window twice (its slot in the arena and its place in the window map the same memory); the cgroup peak counts it once", maps, moves))
		}
		if fixed := median(figures(*r, extra(xEngineFixed))); fixed > 0 {
			notes = append(notes, fmt.Sprintf("pool: the arena is registered with the ring (bufpool.Options.FixedBuffers): %.0f loads per trial (median) read as READ_FIXED", fixed))
		} else {
			notes = append(notes, "pool: no load read as READ_FIXED: the arena is not registered with the ring (the child's log says why)")
		}
	}
	// The device byte counts rest on read_bytes counting O_DIRECT and
	// io_uring reads: check it against the pool's and the engine's counts.
	for _, c := range []struct{ mode, key, what string }{{"pool", xPoolRead, "the pool's BytesRead"}, {"direct", xEngineBytes, "the engine's Bytes"}} {
		r := bench.Find(results, c.mode)
		if r == nil || len(r.Trials) == 0 {
			continue
		}
		var ratios []float64
		for _, t := range r.Trials {
			if t.Extra[c.key] > 0 {
				ratios = append(ratios, t.Extra[xReadBytes]/t.Extra[c.key])
			}
		}
		if len(ratios) == 0 {
			continue
		}
		sort.Float64s(ratios)
		n := fmt.Sprintf("%s: read_bytes ÷ %s = %.3f (trials %.3f–%.3f)", c.mode, c.what, median(ratios), ratios[0], ratios[len(ratios)-1])
		if ratios[0] < 0.9 || ratios[len(ratios)-1] > 1.1 {
			n = "WARNING: " + n + ": read_bytes does not match what was read; its GB/s is doubtful"
		}
		notes = append(notes, n)
	}
	return notes
}

func peakSource(ml MemoryLimit) string {
	switch ml.Cgroup {
	case "v1":
		return "memory.max_usage_in_bytes"
	case "v2":
		return "memory.peak"
	}
	return "not measured (no cgroup)"
}

func ioModeOf(s string) ioengine.IOMode {
	m, _ := ioengine.ParseIOMode(s)
	return m
}

func mib(b float64) string { return fmt.Sprintf("%.0f", b/(1<<20)) }

func minMax(vs []float64, format string) string {
	if len(vs) == 0 {
		return "-"
	}
	lo, hi := vs[0], vs[0]
	for _, v := range vs {
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return fmt.Sprintf(format+"–"+format, lo, hi)
}

// heading is the report's title.
func heading(rep *report) string {
	limit := "no memory limit"
	if rep.MemoryLimit.Applied {
		limit = fmt.Sprintf("memory limit %d MiB (cgroup %s)", rep.MemoryLimit.LimitBytes>>20, rep.MemoryLimit.Cgroup)
	}
	return fmt.Sprintf("scan — %d concurrent queries over %d MiB of Arrow events (%d files), %s", rep.Config.(map[string]any)["queries"], rep.Data.Bytes>>20, len(rep.Data.Files), limit)
}

// writeBody prints the report between the machine lines and the bars.
func writeBody(w io.Writer, rep *report, results []bench.ModeResult) {
	cfg := rep.Config.(map[string]any)
	if d := rep.Device; d != nil {
		fmt.Fprintf(w, "device:  sequential O_DIRECT reads %.2f GB/s (median of %d trials, %s)", d.GBps, len(d.TrialGBps), minMax(d.TrialGBps, "%.2f"))
		if f := rep.DeviceFio; f != nil {
			fmt.Fprintf(w, "; fio, the same reads: %.2f GB/s (%s)", f.GBps, minMax(f.TrialGBps, "%.2f"))
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "device:  not measured (its trials failed)\n")
	}
	if rep.MemoryLimit.Applied {
		fmt.Fprintf(w, "memory:  %d MiB per child, page cache included: cgroup %s below %s\n", rep.MemoryLimit.LimitBytes>>20, rep.MemoryLimit.Cgroup, rep.MemoryLimit.Parent)
	} else {
		fmt.Fprintf(w, "memory:  NO LIMIT — %s\n", rep.MemoryLimit.Reason)
	}
	fmt.Fprintf(w, "cache:   dropped before every trial; at most %d KiB of the data still resident after the drop\n", rep.ResidentMax>>10)
	if fl := rep.Floors; fl != nil {
		fmt.Fprintf(w, "floors:  CPU %.0f ms (the memory mode's mean), device %.0f ms (%.0f MiB a round needs ÷ %.2f GB/s): the pool's mean of %.0f ms is %.2f× the %s floor\n",
			fl.MemoryMeanMS, fl.DeviceMS, fl.NeedBytes/(1<<20), rep.Device.GBps, fl.PoolMeanMS, fl.PoolVsFloor, fl.Bound)
		if fl.PoolCPUFloor > 0 {
			fmt.Fprintf(w, "         CPU per trial %.2f s (the memory mode's %.2f s, plus %.2f s for the device mode's reads of the bytes the pool read, %.2f ms per GiB): the pool's %.2f s is %.2f× that floor\n",
				fl.PoolCPUFloor, fl.PoolCPUFloor-fl.ReadCPUSeconds, fl.ReadCPUSeconds, rep.Device.CPUPerByte()*(1<<30)*1e3, fl.PoolCPUSeconds, fl.PoolCPUSeconds/fl.PoolCPUFloor)
		}
	}
	fmt.Fprintln(w)

	t := bench.Table{Header: []string{"mode", "mean ms", "min–max", "p95 ms", "min–max", "GB/s", "min–max", "× device", "MiB read", "major faults", "minor faults", "max RSS MiB", "cgroup peak MiB", "queries/s"}}
	for _, row := range rep.Results.([]Result) {
		peak := "-"
		if rep.MemoryLimit.Applied && row.CgroupPeak >= 0 {
			peak = mib(row.CgroupPeak)
		}
		vs := "-"
		if row.VsDevice > 0 {
			vs = fmt.Sprintf("%.2f", row.VsDevice)
		}
		t.Add(row.Label, fmt.Sprintf("%.0f", row.MeanMS), minMax(row.TrialMeanMS, "%.0f"), fmt.Sprintf("%.0f", row.P95MS), minMax(row.TrialP95MS, "%.0f"),
			fmt.Sprintf("%.2f", row.GBps), minMax(row.TrialGBps, "%.2f"), vs, mib(row.DeviceBytes), fmt.Sprintf("%.0f", row.MajorFaults), fmt.Sprintf("%.0f", row.MinorFaults),
			mib(row.MaxRSS), peak, fmt.Sprintf("%.2f", row.QueriesPerS))
	}
	if d := rep.Device; d != nil {
		peak := "-"
		if rep.MemoryLimit.Applied && d.CgroupPeak >= 0 {
			peak = mib(d.CgroupPeak)
		}
		t.Add(d.Label, "-", "-", "-", "-", fmt.Sprintf("%.2f", d.GBps), minMax(d.TrialGBps, "%.2f"), "1.00", mib(d.Bytes), "-", "-", mib(d.MaxRSS), peak, "-")
	}
	if f := rep.DeviceFio; f != nil {
		vs := "-"
		if d := rep.Device; d != nil && d.GBps > 0 {
			vs = fmt.Sprintf("%.2f", f.GBps/d.GBps)
		}
		t.Add(f.Label, "-", "-", "-", "-", fmt.Sprintf("%.2f", f.GBps), minMax(f.TrialGBps, "%.2f"), vs, mib(f.Bytes), "-", "-", "-", "-", "-")
	}
	t.Write(w)

	fmt.Fprintln(w, "\nratios measured in this run (median of trials; min–max of the trials run in the same round):")
	for _, lr := range rep.LatencyRatios {
		what := map[string]string{"mean_ms": "mean latency", "p95_ms": "p95 latency", "gbps": "GB/s"}[lr.Metric]
		fmt.Fprintf(w, "  %-6s vs %-10s %-12s %6.2f× (%.2f–%.2f)\n", lr.A, lr.B, what, lr.Median, lr.Min, lr.Max)
	}
	labels := map[string]string{}
	for _, r := range results {
		labels[r.Mode.Name] = r.Mode.Name
	}
	bench.WriteRatios(w, rep.Ratios, labels)

	// Per-query mean latency, one column per mode.
	rows := rep.Results.([]Result)
	if len(rows) > 0 {
		qt := bench.Table{Header: []string{"query (mean ms)"}}
		for _, r := range rows {
			qt.Header = append(qt.Header, r.Mode)
		}
		seen := map[string]bool{}
		for _, q := range cfg["query_mix"].([]string) {
			if seen[q] {
				continue
			}
			seen[q] = true
			cells := []string{q}
			for _, r := range rows {
				if v, ok := r.QueryMeanMS[q]; ok {
					cells = append(cells, fmt.Sprintf("%.0f", v))
				} else {
					cells = append(cells, "-")
				}
			}
			qt.Add(cells...)
		}
		fmt.Fprintln(w)
		qt.Write(w)
	}
}
