// Package walbench is `ringstore bench wal`: durable appends of 1 KiB
// entries, side by side in one run:
//
//   - fsync-per-write: a plain os.File, append and fdatasync, one writer;
//   - device-fdatasync: the device's own flush (a 1 KiB overwrite in place,
//     only the fdatasync timed), the limit every durable write pays;
//   - device-group: one group's write (64 entries) made durable, one after
//     another, in place, advancing through a fallocated file (as the log
//     writes a fresh segment) and advancing through a file written full
//     before (as it writes a recycled one), each with pwrite + fdatasync and with
//     the log's own io_uring flush (one RWF_DSYNC write on an inline
//     engine): the floors of the log's p99 and of what io_uring can make
//     against the syscall backend;
//   - ringstore's wal on io_uring with 1, 16, 64 and 256 writers, and with
//     64 writers on SQPOLL and on the syscall backend (pwrite + fdatasync);
//     the report says, for every writer count the syscall backend ran at,
//     whether io_uring beat it;
//   - the peers, hashicorp/raft-wal, tidwall/wal and etcd's wal, with 1 and
//     64 writers one entry per call, and with 64 writers in their batch
//     APIs fed by a batching leader (StoreLogs, WriteBatch, Save), built
//     from their own module in bench/peers so that ringstore's module
//     never depends on them. "The best peer" is the best of all these
//     peer modes.
//
// Every trial of every mode runs in a fresh process, in a fresh empty
// directory (removed afterwards), modes interleaved; see package bench.
package walbench

import (
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/wal"
)

// Workload is the child workload name.
const Workload = "wal"

// EntrySize is the payload of every append.
const EntrySize = 1024

// Options configure a run.
type Options struct {
	Dir      string        // where each trial makes its directory
	Duration time.Duration // measured time per trial
	Trials   int
	Peers    bool   // build and run the peers when the source tree and go are here
	PeersSrc string // bench/peers; empty: FindPeersSource
	JSON     string
	// JSONTo, when set, receives the JSON report instead of the file JSON.
	JSONTo   io.Writer
	Out      io.Writer // report
	Progress io.Writer
	// Modes selects the modes to run (all when empty).
	Modes bench.Selection
}

// Result is one row of the JSON report.
type Result struct {
	System  string `json:"system"`
	Mode    string `json:"mode"`
	Label   string `json:"label"`
	Writers int    `json:"writers"`
	Backend string `json:"backend,omitempty"` // ringstore's I/O backend
	Version string `json:"version,omitempty"` // a peer's module version
	// Batch, for a peer's batch mode, is the most entries its leader puts
	// in one call of the peer's batch API; absent: one entry per call.
	Batch           int     `json:"batch,omitempty"`
	OpsPerS         float64 `json:"ops_per_s"` // appends per second, median of trials
	OpsBest         float64 `json:"ops_per_s_best"`
	OpsMin          float64 `json:"ops_per_s_min"`
	OpsMax          float64 `json:"ops_per_s_max"`
	P50us           float64 `json:"p50_us"` // of the median trial, per append call
	P99us           float64 `json:"p99_us"`
	P90us           float64 `json:"p90_us"`
	P999us          float64 `json:"p999_us"`
	MaxUs           float64 `json:"max_us"`
	EntriesPerFlush float64 `json:"entries_per_flush"`
	FlushesPerS     float64 `json:"flushes_per_s"`
	FlushesInferred bool    `json:"flushes_inferred"` // one sync per call by the code, not counted
	CPUusPerOp      float64 `json:"cpu_us_per_op"`
	// FlushP50us and FlushP99us: the log's group flushes (one write and
	// its fdatasync each) in the median trial; ringstore only.
	FlushP50us   float64   `json:"flush_p50_us,omitempty"`
	FlushP99us   float64   `json:"flush_p99_us,omitempty"`
	TrialOpsPerS []float64 `json:"trial_ops_per_s"`
	TrialP99us   []float64 `json:"trial_p99_us"`
}

// DeviceSync is the device's single-fdatasync latency measured in the run.
type DeviceSync struct {
	P50us       float64   `json:"p50_us"` // of the median trial
	P99us       float64   `json:"p99_us"`
	TrialP50us  []float64 `json:"trial_p50_us"`
	FsyncP50us  float64   `json:"fsync_per_write_p50_us"` // append + fdatasync of the plain-file mode, for comparison
	Measurement string    `json:"measurement"`
}

// LatencyRatio compares a latency with another in the same run.
type LatencyRatio struct {
	A     string  `json:"a"`
	B     string  `json:"b"`
	Ratio float64 `json:"ratio"`
}

// BackendVerdict says whether ringstore's log on io_uring beat it on the
// syscall backend at one writer count (with segments recycled, or not),
// in this run.
type BackendVerdict struct {
	Writers     int     `json:"writers"`
	URingMode   string  `json:"uring_mode"`
	SyscallMode string  `json:"syscall_mode"`
	Ratio       float64 `json:"ratio"` // io_uring's appends/s over the syscall backend's, medians of trials
	// URingWins: every io_uring trial made more appends/s than every
	// syscall trial; SyscallWins the other way round. Neither: the trials
	// overlap, no difference beyond their spread.
	URingWins   bool `json:"uring_wins"`
	SyscallWins bool `json:"syscall_wins"`
	Trials      int  `json:"trials"` // the fewer of the two modes' trials
}

// report is bench.Report with what only this benchmark has.
type report struct {
	bench.Report
	Device        *DeviceSync       `json:"device_fdatasync,omitempty"`
	DeviceGroup   *DeviceSync       `json:"device_group_write,omitempty"` // one 64-entry group's in-place write + fdatasync
	LatencyRatios []LatencyRatio    `json:"latency_ratios,omitempty"`
	Bars          []bench.Bar       `json:"bars"`
	PeerVersions  map[string]string `json:"peer_versions,omitempty"`
	// URingVsSyscall has one verdict per writer count at which both
	// backends ran.
	URingVsSyscall []BackendVerdict `json:"uring_vs_syscall,omitempty"`
}

// mode is a bench.Mode with what the report needs to know of it.
type mode struct {
	bench.Mode
	system  string
	writers int
	backend string
	peer    bool
	batch   int    // a peer's batch mode: the most entries a call
	version string // a peer's module version
}

const (
	modeFsync       = "fsync-per-write"
	modeDevice      = "device-fdatasync"
	modeDeviceGroup = "device-group-w64"
	// The same group write advancing through a fallocated file (a fresh
	// segment), and both on io_uring as the log flushes.
	modeDeviceAdvance      = "device-advance-w64"
	modeDeviceGroupURing   = "device-group-uring-w64"
	modeDeviceAdvanceURing = "device-advance-uring-w64"
	// The same group write advancing through a file written full before
	// (a recycled segment), with pwrite + fdatasync and on io_uring.
	modeDeviceWritten      = "device-written-w64"
	modeDeviceWrittenURing = "device-written-uring-w64"
	// Two half groups in flight on one ring, advancing: what a log that
	// kept two groups in flight on io_uring could make of the device.
	modeDeviceAdvanceURing2 = "device-advance-uring-2x32"
	mode64                  = "ringstore-uring-w64"
	mode64Steady            = "ringstore-uring-w64-steady"
	mode64Recycled          = "ringstore-uring-w64-recycled"
	mode64Syscall           = "ringstore-syscall-w64"
	mode64SyscallRecycled   = "ringstore-syscall-w64-recycled"
	mode1                   = "ringstore-uring-w1"
	modeKV1                 = "kv-uring-w1"
	modeKV64                = "kv-uring-w64"
	mode64LSM               = "ringstore-uring-w64-lsm"
)

// The bars: 64 writers on io_uring at least BarVsFsync× fsync per write
// and BarVsPeer× the best peer mode (any writers, one entry per call or
// batched), their append p99 at most BarP99VsGroup× the device's p99 for
// one group's write + fdatasync into the same kind of space at advancing
// offsets (fresh, fallocated space for the log's new segments, untruncated
// and in the steady state; written space for recycled segments); io_uring at least
// BarURingVsSyscall× the syscall backend's appends/s at 64 writers; kv's
// 64 writers at least BarKVScale× its one and BarKVVsLog64× the log's 64
// writers, and a lone kv write at most BarKVVsLog× a lone log append's
// time.
const (
	// SteadyKeep is how many of the newest entries the steady-state mode
	// keeps: a quarter of a default segment, so segments are made and
	// removed all through a trial.
	SteadyKeep = 16 << 10

	BarVsFsync    = 20.0
	BarVsPeer     = 2.0
	BarP99VsGroup = 2.0
	BarKVScale    = 10.0
	BarKVVsLog    = 1.2

	BarURingVsSyscall = 1.15
	BarKVVsLog64      = 0.8
)

func plural(n int) string {
	if n == 1 {
		return "1 writer"
	}
	return strconv.Itoa(n) + " writers"
}

// Run runs the benchmark and writes the report.
func Run(o Options) error {
	if o.Duration <= 0 || o.Trials < 1 {
		return fmt.Errorf("bench wal: duration and trials must be positive (got %s, %d)", o.Duration, o.Trials)
	}
	if err := bench.CheckDir("bench wal", o.Dir, false); err != nil {
		return err
	}
	cfg := func(m string, writers int, io string) ChildConfig {
		return ChildConfig{Dir: o.Dir, Mode: m, IOMode: io, Writers: writers, EntrySize: EntrySize, Duration: o.Duration, WarmupFrac: 0.1}
	}
	groupCfg := cfg("device-group", 1, "")
	groupCfg.WriteSize = 64 * (EntrySize + wal.EntryHeaderSize)
	modes := []mode{
		{Mode: bench.Mode{Name: modeFsync, Label: "os.File append + fdatasync", Exec: bench.ChildExec(Workload, cfg(modeFsync, 1, ""))}, system: "os.File", writers: 1},
		{Mode: bench.Mode{Name: modeDevice, Label: "device: one fdatasync (in place)", Exec: bench.ChildExec(Workload, cfg(modeDevice, 1, ""))}, system: "device", writers: 1},
		{Mode: bench.Mode{Name: modeDeviceGroup, Label: fmt.Sprintf("device: %d KiB write + fdatasync (in place)", groupCfg.WriteSize>>10), Exec: bench.ChildExec(Workload, groupCfg)}, system: "device", writers: 1},
	}
	advanceCfg := groupCfg
	advanceCfg.Advance = true
	modes = append(modes, mode{Mode: bench.Mode{Name: modeDeviceAdvance, Label: fmt.Sprintf("device: %d KiB write + fdatasync (advancing, fallocated)", groupCfg.WriteSize>>10), Exec: bench.ChildExec(Workload, advanceCfg)}, system: "device", writers: 1})
	writtenCfg := advanceCfg
	writtenCfg.Written = true
	modes = append(modes, mode{Mode: bench.Mode{Name: modeDeviceWritten, Label: fmt.Sprintf("device: %d KiB write + fdatasync (advancing, written space)", groupCfg.WriteSize>>10), Exec: bench.ChildExec(Workload, writtenCfg)}, system: "device", writers: 1})

	var notes []string
	kp := ioengine.ProbeKernel()
	uringOK, sqpollOK := kp.Available && kp.SelfTestError == nil, kp.Available && kp.SQPollError == nil
	switch {
	case !kp.Compiled:
		notes = append(notes, "ringstore's io_uring modes skipped: "+kp.NotCompiled)
	case !kp.Available:
		notes = append(notes, fmt.Sprintf("ringstore's io_uring modes skipped: %v", kp.SetupError))
	case kp.SelfTestError != nil:
		notes = append(notes, fmt.Sprintf("ringstore's io_uring modes skipped: self-test failed: %v", kp.SelfTestError))
	case kp.SQPollError != nil:
		notes = append(notes, fmt.Sprintf("ringstore's SQPOLL mode skipped: %v", kp.SQPollError))
	}
	ring := func(io, label string, writers int) mode {
		return mode{Mode: bench.Mode{Name: fmt.Sprintf("ringstore-%s-w%d", io, writers), Label: fmt.Sprintf("ringstore %s, %s", label, plural(writers)),
			Exec: bench.ChildExec(Workload, cfg("ringstore", writers, io))}, system: "ringstore", writers: writers, backend: io}
	}
	// recycled is the log's steady state (below) with its truncated
	// segments' files reused: group writes overwrite written blocks.
	recycled := func(io, label string) mode {
		c := cfg("ringstore", 64, io)
		c.KeepEntries, c.Recycle = SteadyKeep, true
		return mode{Mode: bench.Mode{Name: fmt.Sprintf("ringstore-%s-w64-recycled", io), Label: fmt.Sprintf("ringstore %s, 64 writers, truncated, segments recycled", label),
			Exec: bench.ChildExec(Workload, c)}, system: "ringstore", writers: 64, backend: io}
	}
	if uringOK {
		for _, w := range []int{1, 16, 64, 256} {
			modes = append(modes, ring("uring", "io_uring", w))
		}
	}
	if uringOK {
		// The steady state of a raft log or kv's log: truncated from the
		// front as it goes, so segments are made and removed all along.
		steady := cfg("ringstore", 64, "uring")
		steady.KeepEntries = SteadyKeep
		modes = append(modes, mode{Mode: bench.Mode{Name: mode64Steady, Label: "ringstore io_uring, 64 writers, truncated",
			Exec: bench.ChildExec(Workload, steady)}, system: "ringstore", writers: 64, backend: "uring"})
		modes = append(modes, recycled("uring", "io_uring"))
	}
	if uringOK {
		// One group flush at a time on io_uring, as the log's committer
		// makes it: what bounds the log on io_uring.
		g, a, wr := groupCfg, advanceCfg, writtenCfg
		g.IOMode, a.IOMode, wr.IOMode = "uring", "uring", "uring"
		modes = append(modes,
			mode{Mode: bench.Mode{Name: modeDeviceGroupURing, Label: fmt.Sprintf("device: %d KiB RWF_DSYNC write on io_uring (in place)", groupCfg.WriteSize>>10), Exec: bench.ChildExec(Workload, g)}, system: "device", writers: 1},
			mode{Mode: bench.Mode{Name: modeDeviceAdvanceURing, Label: fmt.Sprintf("device: %d KiB RWF_DSYNC write on io_uring (advancing, fallocated)", groupCfg.WriteSize>>10), Exec: bench.ChildExec(Workload, a)}, system: "device", writers: 1},
			mode{Mode: bench.Mode{Name: modeDeviceWrittenURing, Label: fmt.Sprintf("device: %d KiB RWF_DSYNC write on io_uring (advancing, written space)", groupCfg.WriteSize>>10), Exec: bench.ChildExec(Workload, wr)}, system: "device", writers: 1})
		// Two groups in flight on the ring: with 64 writers, each of half
		// the entries.
		a2 := a
		a2.Writers, a2.WriteSize = 2, groupCfg.WriteSize/2
		modes = append(modes, mode{Mode: bench.Mode{Name: modeDeviceAdvanceURing2, Label: fmt.Sprintf("device: 2 RWF_DSYNC writes of %d KiB in flight on one io_uring (advancing, fallocated)", a2.WriteSize>>10), Exec: bench.ChildExec(Workload, a2)}, system: "device", writers: 2})
	}
	if sqpollOK {
		modes = append(modes, ring("sqpoll", "SQPOLL", 64))
	}
	if uringOK {
		for _, w := range []int{1, 64} {
			modes = append(modes, mode{Mode: bench.Mode{Name: fmt.Sprintf("kv-uring-w%d", w), Label: fmt.Sprintf("ringstore kv Put, io_uring, %s", plural(w)),
				Exec: bench.ChildExec(Workload, cfg("kv", w, "uring"))}, system: "kv", writers: w, backend: "uring"})
		}
		// kv Put's ceiling: the log with the LSM's own work beside it.
		lsm := cfg("ringstore", 64, "uring")
		lsm.LSM = true
		modes = append(modes, mode{Mode: bench.Mode{Name: mode64LSM, Label: "ringstore io_uring, 64 writers, an LSM taking its entries beside it",
			Exec: bench.ChildExec(Workload, lsm)}, system: "ringstore", writers: 64, backend: "uring"})
	}
	modes = append(modes, ring("syscall", "syscall backend (pwrite + fdatasync)", 64))
	// io_uring against the syscall backend where group writes overwrite
	// written blocks.
	modes = append(modes, recycled("syscall", "syscall backend"))

	var versions map[string]string
	if o.Peers {
		tmp, err := os.MkdirTemp("", "ringstore-walpeers-")
		if err != nil {
			return fmt.Errorf("bench wal: %w", err)
		}
		defer os.RemoveAll(tmp)
		pm, v, err := peerModes(o, tmp, cfg)
		if err != nil {
			notes = append(notes, "peers skipped: "+err.Error())
			fmt.Fprintf(o.Progress, "peers skipped: %v\n", err)
		} else {
			modes, versions = append(modes, pm...), v
		}
	} else {
		notes = append(notes, "peers skipped: --no-peers")
	}

	var names []string
	for _, m := range modes {
		names = append(names, m.Name)
	}
	if err := bench.CheckListed("wal", names, ModeNames(o)); err != nil {
		return err
	}
	if err := o.Modes.Check("wal", names); err != nil {
		return err
	}
	modes = slices.DeleteFunc(modes, func(m mode) bool { return !o.Modes.Keep(m.Name) })
	bm := make([]bench.Mode, len(modes))
	for i, m := range modes {
		bm[i] = m.Mode
	}
	w := bench.Workload{Name: "wal", Dir: o.Dir, Trials: o.Trials, Modes: bm, Plan: " × " + o.Duration.String(), Progress: o.Progress, Out: o.Out, JSON: o.JSON, JSONTo: o.JSONTo,
		Before: func(machine bench.Machine) {
			if onTmpfs(machine) { // before the run, not only in its report
				fmt.Fprintf(o.Progress, "CAUTION: %s is on %s, where fdatasync does nothing: the figures will not be those of durable writes. Use a directory on a disk (e.g. under /var/tmp).\n", o.Dir, machine.FileSystem)
			}
		}}
	w.Summarize = func(results []bench.ModeResult, machine bench.Machine) (bench.Summary, error) {
		tmpfs := onTmpfs(machine)
		rows := make([]Result, 0, len(results))
		labels := map[string]string{}
		t := bench.Table{Header: []string{"mode", "writers", "appends/s (median)", "best", "min–max", "p50 µs", "p99 µs", "flush p50/p99 µs", "entries/flush", "flushes/s", "CPU µs/append", "× fsync-per-write", "× best peer"}}
		fsync := bench.Find(results, modeFsync)
		bestAny := bestPeer(results, modes, 0)
		var bestRate float64
		if r := bench.Find(results, bestAny); r != nil {
			bestRate = r.Median().Rate()
		}
		for i, r := range results {
			m := modes[i]
			labels[r.Mode.Name] = r.Mode.Label
			if len(r.Trials) == 0 {
				continue
			}
			med := r.Median()
			row := Result{System: m.system, Mode: m.Name, Label: m.Label, Writers: m.writers, Backend: m.backend, Version: m.version, Batch: m.batch,
				OpsPerS: med.Rate(), OpsBest: r.Best(), OpsMin: r.Min(), OpsMax: r.Max(), P50us: med.P50us, P99us: med.P99us, P90us: med.P90us, P999us: med.P999us, MaxUs: med.MaxUs, TrialOpsPerS: r.Rates()}
			for _, tr := range r.Trials {
				row.TrialP99us = append(row.TrialP99us, tr.P99us)
			}
			if f := med.Extra[ExtraFlushes]; f > 0 {
				row.EntriesPerFlush = entriesPerFlush(med)
				row.FlushesPerS = f / med.Seconds
			}
			row.FlushesInferred = med.Extra[ExtraFlushesInferred] == 1
			row.FlushP50us, row.FlushP99us = med.Extra[ExtraFlushP50us], med.Extra[ExtraFlushP99us]
			if med.Ops > 0 {
				row.CPUusPerOp = med.CPUSeconds / float64(med.Ops) * 1e6
			}
			rows = append(rows, row)
			x := "-"
			if fsync != nil && len(fsync.Trials) > 0 && m.system != "device" {
				x = fmt.Sprintf("%.2f×", row.OpsPerS/fsync.Median().Rate())
			}
			xp := "-"
			if bestRate > 0 && m.system != "device" {
				xp = fmt.Sprintf("%.2f×", row.OpsPerS/bestRate)
			}
			epf, fps := "-", "-"
			if m.system != "device" && row.FlushesPerS > 0 {
				mark := ""
				if row.FlushesInferred {
					mark = "†"
				}
				epf, fps = fmt.Sprintf("%.1f%s", row.EntriesPerFlush, mark), fmt.Sprintf("%.0f%s", row.FlushesPerS, mark)
			}
			flush := "-"
			if row.FlushP50us > 0 {
				flush = fmt.Sprintf("%.0f / %.0f", row.FlushP50us, row.FlushP99us)
			}
			t.Add(m.Label, strconv.Itoa(m.writers), fmt.Sprintf("%.0f", row.OpsPerS), fmt.Sprintf("%.0f", row.OpsBest),
				fmt.Sprintf("%.0f–%.0f", row.OpsMin, row.OpsMax), fmt.Sprintf("%.0f", row.P50us), fmt.Sprintf("%.0f", row.P99us), flush, epf, fps, fmt.Sprintf("%.1f", row.CPUusPerOp), x, xp)
		}

		// Ratios within this run.
		var ratios []bench.Ratio
		pairs := [][2]string{{mode64, modeFsync}}
		if bestAny != "" {
			pairs = append(pairs, [2]string{mode64, bestAny})
		}
		if best := bestPeer(results, modes, 1); best != "" {
			pairs = append(pairs, [2]string{"ringstore-uring-w1", best})
		}
		pairs = append(pairs, [][2]string{{"ringstore-uring-w1", modeFsync}, {"ringstore-uring-w256", modeFsync}, {"ringstore-sqpoll-w64", mode64}, {"ringstore-syscall-w64", mode64}, {"ringstore-syscall-w64", modeFsync}, {mode64Recycled, mode64SyscallRecycled},
			{modeKV64, modeKV1}, {mode1, modeKV1}, {modeKV64, mode64}}...)
		for _, p := range pairs {
			if r, ok := bench.Compare(results, p[0], p[1]); ok {
				ratios = append(ratios, r)
			}
		}
		var device *DeviceSync
		var latRatios []LatencyRatio
		if d := bench.Find(results, modeDevice); d != nil && len(d.Trials) > 0 {
			med := d.Median()
			device = &DeviceSync{P50us: med.P50us, P99us: med.P99us, Measurement: deviceMeasurement}
			for _, tr := range d.Trials {
				device.TrialP50us = append(device.TrialP50us, tr.P50us)
			}
			if fsync != nil && len(fsync.Trials) > 0 {
				device.FsyncP50us = fsync.Median().P50us
			}
			if r := bench.Find(results, mode64); r != nil && len(r.Trials) > 0 && med.P50us > 0 {
				latRatios = append(latRatios, LatencyRatio{A: mode64 + " p99", B: "device fdatasync p50", Ratio: r.Median().P99us / med.P50us})
				if f := r.Median().Extra[ExtraFlushP99us]; f > 0 {
					// What the append's p99 is made of: its group's flush alone.
					latRatios = append(latRatios, LatencyRatio{A: mode64 + " flush p99", B: "device fdatasync p50", Ratio: f / med.P50us})
				}
			}
			if r := bench.Find(results, "ringstore-uring-w1"); r != nil && len(r.Trials) > 0 && med.P50us > 0 {
				latRatios = append(latRatios, LatencyRatio{A: "ringstore-uring-w1 p50", B: "device fdatasync p50", Ratio: r.Median().P50us / med.P50us})
			}
		}

		var group *DeviceSync
		if d := bench.Find(results, modeDeviceGroup); d != nil && len(d.Trials) > 0 {
			med := d.Median()
			group = &DeviceSync{P50us: med.P50us, P99us: med.P99us, Measurement: fmt.Sprintf("a %d-byte pwrite in place into already written blocks of a preallocated file, then fdatasync, both timed: one group of 64 entries as the log writes it, with no file-system metadata to commit", groupCfg.WriteSize)}
			for _, tr := range d.Trials {
				group.TrialP50us = append(group.TrialP50us, tr.P50us)
			}
		}
		bars := walBars(results, modes)
		verdicts := backendVerdicts(results, modes)

		notes = append(notes,
			fmt.Sprintf("%d-byte entries; every append is durable (fdatasync or fsync) before it returns. Latency is per append call, waits for a lock or a group included.", EntrySize),
			fmt.Sprintf("Each trial runs in a fresh empty directory under %s, removed afterwards: the log is opened (not timed), warmed up for 10%% of the duration (not counted), then measured; segment files are created and preallocated inside the trial by each system as it does, so every system pays for its own.", o.Dir),
			"fsync-per-write: an os.File opened O_APPEND, Write then fdatasync, one writer; the file grows, so each fdatasync also commits the new size.",
			"device-fdatasync: "+deviceMeasurement+"; its p50 is the device's single-flush latency, the floor under every durable append.",
			fmt.Sprintf("truncated: the log is cut from the front every 100 ms to its newest %d entries (TruncateFront, as a raft log after a snapshot or kv's log after a flush), so segments are made and removed all through the trial: the log's steady state. Before the trial (untimed) it fills %d segments so cut; \"segments recycled\" (wal.Options.RecycleSegments) then makes its segments from the files of the truncated ones, so its group writes overwrite written blocks.", SteadyKeep, steadyRotations),
			fmt.Sprintf("an LSM taking its entries beside it: the log's 64 writers as above, while one goroutine of the same process puts a %d-byte value into a kv store without a log (kv.Options.DisableWAL, default options otherwise) for every entry the log acknowledges, in writes of up to %d, under the keys kv Put's 64 writers use: the memtable inserts, table flushes and compactions (their CPU, writes and fsyncs) a kv Put adds to its log append, at the log's rate, without kv's commit path. What the log makes so is the most kv Put can make on this machine: kv Put's ceiling.", EntrySize, lsmBatch),
			"ringstore: wal.Open with default options (64 MiB segments) and the named backend; entries/flush and flushes/s are the log's own counters (Stats: Entries/Flushes) over the measured part; flush p50/p99 is the log's own histogram of its group flushes, one write and its fdatasync each, from submission to completion (Stats.FlushLatency, buckets at most 12.5% wide, upper bounds given), over the same part.",
		)
		if o.Peers && versions != nil {
			notes = append(notes,
				"Peers, as their users use them, in two ways. One entry per call: each needs consecutive indexes from one writer, so every call takes the next index and writes under one mutex; concurrent writers queue on it, and none of them groups concurrent callers. Batched: as a batching raft leader feeds its log, each of the 64 writers queues one entry and waits; one leader goroutine takes everything queued (at most 64), writes it with one call of the peer's batch API and acknowledges every entry of it; entries/flush is the mean batch. × best peer is against the best of all peer modes. † = not counted: one sync per call, by the peer's code.",
				"hashicorp/raft-wal: StoreLogs (it fsyncs the segment on every StoreLogs) with one raft.Log, or the batch. tidwall/wal with NoSync=false (os.File.Sync, an fsync, on every write): Write with one entry, WriteBatch with the batch. etcd wal: Save, which fdatasyncs when it has entries: an empty HardState and one entry, or the batch with the HardState a raft leader's Ready carries (term, vote, the commit index of the entries acknowledged before).")
		}
		for _, v := range verdicts {
			notes = append(notes, "io_uring against the syscall backend, "+v.Sentence())
		}
		if tmpfs {
			notes = append(notes, "CAUTION: "+o.Dir+" is on "+machine.FileSystem+", where fdatasync does nothing: these are not figures of durable writes. Use a directory on a disk (e.g. under /var/tmp).")
		}

		rep := &report{
			Report: bench.Report{Benchmark: "wal", Machine: machine,
				Config:  map[string]any{"dir": o.Dir, "duration_s": o.Duration.Seconds(), "trials": o.Trials, "entry_size": EntrySize, "warmup_frac": 0.1, "peers": o.Peers},
				Results: rows, Ratios: ratios, Notes: notes},
			Device: device, DeviceGroup: group, LatencyRatios: latRatios, PeerVersions: versions, Bars: bars, URingVsSyscall: verdicts,
		}
		return bench.Summary{Heading: fmt.Sprintf("wal — %d-byte durable appends", EntrySize), Bars: bars, Notes: notes, Report: rep, Body: func(out io.Writer) {
			if device != nil {
				fmt.Fprintf(out, "device: one fdatasync p50 %.0f µs, p99 %.0f µs (median trial; trials' p50: %s)\n", device.P50us, device.P99us, bench.Whole(device.TrialP50us))
			}
			if len(versions) > 0 {
				fmt.Fprintf(out, "peers:  %s\n", peerVersionLine(versions))
			}
			fmt.Fprintln(out)
			t.Write(out)
			fmt.Fprintln(out, "\nratios measured in this run:")
			bench.WriteRatios(out, ratios, labels)
			for _, r := range latRatios {
				fmt.Fprintf(out, "  %-28s vs %-28s %6.2f×\n", r.A, r.B, r.Ratio)
			}
			if len(verdicts) > 0 {
				fmt.Fprintln(out, "\nio_uring against the syscall backend:")
				for _, v := range verdicts {
					fmt.Fprintf(out, "  %s\n", v.Sentence())
				}
			}
		}}, nil
	}
	return w.Run()
}

// onTmpfs says whether the run's directory is in memory, where fdatasync
// does nothing.
func onTmpfs(m bench.Machine) bool { return m.FileSystem == "tmpfs" || m.FileSystem == "ramfs" }

// walBars checks the run's figures against the bars; a bar whose modes did
// not run is there, not tested.
func walBars(results []bench.ModeResult, modes []mode) []bench.Bar {
	rate := func(name string) float64 {
		if r := bench.Find(results, name); r != nil && len(r.Trials) > 0 {
			return r.Median().Rate()
		}
		return 0
	}
	ratio := func(name string, a, b float64, limit float64, atMost bool, why string) bench.Bar {
		if a <= 0 || b <= 0 {
			return bench.NewBar(name, 0, limit, atMost, false, "a mode it compares did not run")
		}
		return bench.NewBar(name, a/b, limit, atMost, true, why)
	}
	var bars []bench.Bar
	bars = append(bars, ratio("io_uring 64 writers vs fsync per write (appends/s)", rate(mode64), rate(modeFsync), BarVsFsync, false, ""))
	best := bestPeer(results, modes, 0)
	bars = append(bars, ratio("io_uring 64 writers vs the best peer mode, one entry per call or batched (appends/s)", rate(mode64), rate(best), BarVsPeer, false, "against "+best))
	// Each log mode's p99 is read against the device writing one group into
	// the same kind of space, at advancing offsets as the log writes: the
	// log's new segments are fallocated, so its group writes convert
	// unwritten extents as the advancing device modes' do; a recycled
	// segment's file was written full in its earlier use, so its group
	// writes overwrite written blocks as the written-space modes' do. Of the
	// device's two ways (pwrite + fdatasync, an RWF_DSYNC write on io_uring)
	// the floor is the lower p99. The in-place write (the same blocks over
	// and over, which no log does) is given beside each.
	inPlace, _ := deviceP99(results, "in place", modeDeviceGroup, modeDeviceGroupURing)
	advancing, advancingWhy := deviceP99(results, "advancing through fallocated space", modeDeviceAdvance, modeDeviceAdvanceURing)
	written, writtenWhy := deviceP99(results, "advancing through written space", modeDeviceWritten, modeDeviceWrittenURing)
	for _, m := range []struct {
		mode, name string
		fresh      bool // the log writes fresh segments: read against the advancing modes
	}{
		{mode64, "io_uring 64 writers' append p99 vs the device's p99 for one group write + fdatasync into fresh space, as the log's new segments", true},
		{mode64Steady, "the same, the log truncated as it goes (steady state)", true},
		{mode64Recycled, "the same, the log truncated as it goes, segments recycled (steady state), vs one group write + fdatasync into written space", false},
	} {
		floor, floorWhy := written, writtenWhy
		if m.fresh {
			floor, floorWhy = advancing, advancingWhy
		}
		var p99 float64
		if r := bench.Find(results, m.mode); r != nil && len(r.Trials) > 0 {
			p99 = r.Median().P99us
		}
		why := fmt.Sprintf("%.0f against %.0f µs, %s", p99, floor, floorWhy)
		if inPlace > 0 && p99 > 0 {
			why += fmt.Sprintf("; against the in-place write's %.0f µs %.2f×", inPlace, p99/inPlace)
		}
		bars = append(bars, ratio(m.name, p99, floor, BarP99VsGroup, true, why))
	}
	bars = append(bars, ratio("io_uring 64 writers vs the syscall backend's 64 writers (appends/s)", rate(mode64), rate(mode64Syscall), BarURingVsSyscall, false, uringDevicePart(results)))
	bars = append(bars, ratio("kv Put 64 writers vs 1 writer (writes/s)", rate(modeKV64), rate(modeKV1), BarKVScale, false, ""))
	bars = append(bars, ratio("kv Put 64 writers vs the log's 64 writers (writes/s against appends/s)", rate(modeKV64), rate(mode64), BarKVVsLog64, false, kvCeiling(results)))
	bars = append(bars, ratio("a lone kv Put's time vs a lone log append's", rate(mode1), rate(modeKV1), BarKVVsLog, true, "the inverse of their rates"))
	return bars
}

// deviceP99 returns the lowest p99 (median trials) of the named device
// modes that ran, and which it is: space, then how it was written ("in
// place, an RWF_DSYNC write on io_uring").
func deviceP99(results []bench.ModeResult, space string, names ...string) (float64, string) {
	var best float64
	why := ""
	for _, name := range names {
		r := bench.Find(results, name)
		if r == nil || len(r.Trials) == 0 || r.Median().P99us <= 0 {
			continue
		}
		if p := r.Median().P99us; best == 0 || p < best {
			how := "pwrite + fdatasync"
			if strings.Contains(name, "uring") {
				how = "an RWF_DSYNC write on io_uring"
			}
			best, why = p, space+", "+how
		}
	}
	return best, why
}

// uringDevicePart says what the device gives the log on io_uring over the
// syscall backend at 64 writers. The two backends run the same log and
// differ only in how a group is made durable, so what io_uring's group
// flush gains on the device, written as the log writes it (advancing
// through fallocated space, as into the log's new segments) at a depth the
// log can keep, is its part of the ratio: one group at a time (an RWF_DSYNC
// write against pwrite + fdatasync, groups/s), or two in flight on one
// ring, each of half the entries (the 64 writers split between them),
// whichever is better, each the median of the rounds' ratios (roundRatio):
// the device drifts from round to round by more than the two flushes
// differ. The rest is how much of its own flushes' pace each log keeps
// (its entries per flush at the device's p50), which it also says. ""
// when a mode it needs did not run.
func uringDevicePart(results []bench.ModeResult) string {
	ran := func(name string) *bench.ModeResult {
		if r := bench.Find(results, name); r != nil && len(r.Trials) > 0 && r.Median().Rate() > 0 {
			return r
		}
		return nil
	}
	ring, sysDev, log, sys := ran(modeDeviceAdvanceURing), ran(modeDeviceAdvance), ran(mode64), ran(mode64Syscall)
	if ring == nil || sysDev == nil || log == nil || sys == nil {
		return ""
	}
	one := roundRatio(ring, sysDev)
	part := one
	why := fmt.Sprintf("one group at a time, io_uring's flush made %.2f× the groups/s of pwrite + fdatasync (medians of trials: %.2f×, p50 %.0f against %.0f µs)",
		one, ring.Median().Rate()/sysDev.Median().Rate(), ring.Median().P50us, sysDev.Median().P50us)
	if two := ran(modeDeviceAdvanceURing2); two != nil {
		r := roundRatio(two, sysDev) / 2
		part = max(part, r)
		why += fmt.Sprintf(", two half groups in flight on one ring %.2f× the entries/s", r)
	}
	why = fmt.Sprintf("the device's part %.2f×: advancing through fallocated space as the log's new segments, each the median of the rounds' ratios, %s", part, why)
	if part < BarURingVsSyscall {
		why += "; under the bar, which io_uring then reaches only by keeping more of its flushes' pace than the syscall backend's log keeps of its own"
	}
	pace := func(log, dev *bench.ModeResult) string {
		perFlush, p50 := entriesPerFlush(log.Median()), dev.Median().P50us
		if perFlush <= 0 || p50 <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100*log.Median().Rate()/(perFlush/(p50/1e6)))
	}
	return why + fmt.Sprintf("; each log made of its entries per flush at its own flush's p50: io_uring %s, syscall %s", pace(log, ring), pace(sys, sysDev))
}

// roundRatio is the median over the run's rounds of a's rate ÷ b's in the
// same round (bench.RoundRatios), so that what the device does from one
// round to the next, which both see, cancels. 0 when no round has both.
func roundRatio(a, b *bench.ModeResult) float64 {
	return bench.Median(bench.RoundRatios(a, b, bench.Trial.Rate))
}

// kvCeiling says what bounds kv Put at 64 writers against the log: a Put
// is a log append plus the LSM's work for its write (memtable insert, its
// share of the table flushes and compactions, their writes and fsyncs),
// and the log's 64 writers with an LSM taking their entries beside it
// (mode64LSM) make what the log makes with that work on the same CPUs and
// device. "" when a mode it needs did not run.
func kvCeiling(results []bench.ModeResult) string {
	lsm, log, kvr := bench.Find(results, mode64LSM), bench.Find(results, mode64), bench.Find(results, modeKV64)
	if lsm == nil || log == nil || kvr == nil || len(lsm.Trials) == 0 || len(log.Trials) == 0 || len(kvr.Trials) == 0 {
		return ""
	}
	ceiling, logRate, kvRate := lsm.Median().Rate(), log.Median().Rate(), kvr.Median().Rate()
	if ceiling <= 0 || logRate <= 0 || kvRate <= 0 {
		return ""
	}
	why := fmt.Sprintf("ceiling %.2f×: the log's 64 writers with an LSM taking their entries beside it made %.0f appends/s; kv Put made %.2f× that", ceiling/logRate, ceiling, kvRate/ceiling)
	if ceiling/logRate < BarKVVsLog64 {
		why += "; the bar is above it in this run"
	}
	return why
}

// entriesPerFlush returns a ringstore trial's entries per group flush (0
// when it counted none).
func entriesPerFlush(t bench.Trial) float64 {
	if f := t.Extra[ExtraFlushes]; f > 0 {
		return t.Extra[ExtraEntries] / f
	}
	return 0
}

const deviceMeasurement = "a 1 KiB pwrite in place into an already written block of a preallocated (fallocate) file, then fdatasync, timing only the fdatasync"

// bestPeer returns the peer mode (one entry per call or batched) with
// writers writers, any when writers is 0, and the highest median rate, or
// "" when none ran.
func bestPeer(results []bench.ModeResult, modes []mode, writers int) string {
	best, rate := "", 0.0
	for i, r := range results {
		m := modes[i]
		if !m.peer || writers != 0 && m.writers != writers || len(r.Trials) == 0 {
			continue
		}
		if v := r.Median().Rate(); v > rate {
			best, rate = m.Name, v
		}
	}
	return best
}

// peerModes builds the peers' program in tmp and returns its modes.
func peerModes(o Options, tmp string, cfg func(string, int, string) ChildConfig) ([]mode, map[string]string, error) {
	src := o.PeersSrc
	if src == "" {
		var err error
		if src, err = FindPeersSource(); err != nil {
			return nil, nil, err
		}
	}
	fmt.Fprintf(o.Progress, "building the peers from %s...\n", src)
	bin, versions, err := BuildPeers(src, tmp)
	if err != nil {
		return nil, nil, err
	}
	var modes []mode
	for _, p := range Peers {
		v := versions[p.Module]
		if v == "" {
			v = "unknown"
		}
		for _, w := range []int{1, 64} {
			modes = append(modes, mode{Mode: bench.Mode{Name: PeerModeName(p, w, false), Label: fmt.Sprintf("%s, %s", p.System, plural(w)),
				Exec: bench.BinaryExec(bin, PeerWorkload, cfg(p.Mode, w, ""))}, system: p.System, writers: w, peer: true, version: v})
		}
		bc := cfg(p.Mode, PeerBatchWriters, "")
		bc.Batch = PeerBatchWriters
		modes = append(modes, mode{Mode: bench.Mode{Name: PeerModeName(p, PeerBatchWriters, true), Label: fmt.Sprintf("%s, %s batches by a leader, %s", p.System, p.BatchAPI, plural(PeerBatchWriters)),
			Exec: bench.BinaryExec(bin, PeerWorkload, bc)}, system: p.System, writers: PeerBatchWriters, peer: true, batch: PeerBatchWriters, version: v})
	}
	return modes, versions, nil
}

func peerVersionLine(v map[string]string) string {
	keys := make([]string, 0, len(v))
	for k := range v {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ", "
		}
		s += k + " " + v[k]
	}
	return s
}

// backendVerdicts compares ringstore's log on io_uring with it on the
// syscall backend wherever both ran (the mode of the same name with
// "uring" for "syscall"), in the order the syscall modes ran.
func backendVerdicts(results []bench.ModeResult, modes []mode) []BackendVerdict {
	var out []BackendVerdict
	for i, r := range results {
		m := modes[i]
		if m.system != "ringstore" || m.backend != "syscall" || len(r.Trials) == 0 {
			continue
		}
		u := strings.Replace(m.Name, "-syscall-", "-uring-", 1) // the same log on io_uring
		ur := bench.Find(results, u)
		if ur == nil || len(ur.Trials) == 0 || r.Median().Rate() <= 0 || ur.Median().Rate() <= 0 {
			continue
		}
		out = append(out, BackendVerdict{Writers: m.writers, URingMode: u, SyscallMode: m.Name, Ratio: ur.Median().Rate() / r.Median().Rate(),
			URingWins: ur.Min() > r.Max(), SyscallWins: r.Min() > ur.Max(), Trials: min(len(ur.Trials), len(r.Trials))})
	}
	return out
}

// Sentence says the verdict in words, for the report's text and notes.
func (v BackendVerdict) Sentence() string {
	what := plural(v.Writers)
	if strings.HasSuffix(v.SyscallMode, "-recycled") {
		what += ", segments recycled"
	}
	every := "every trial above every trial of the other"
	if v.Trials == 1 {
		every = "one trial each"
	}
	switch {
	case v.URingWins:
		return fmt.Sprintf("%s: io_uring wins, %.2f× the syscall backend's appends/s (medians of trials; %s).", what, v.Ratio, every)
	case v.SyscallWins:
		return fmt.Sprintf("%s: io_uring does not win: the syscall backend makes %.2f× its appends/s (medians of trials; %s).", what, 1/v.Ratio, every)
	}
	return fmt.Sprintf("%s: no difference beyond the trials' spread: io_uring makes %.2f× the syscall backend's appends/s (medians of trials), and their trials overlap.", what, v.Ratio)
}
