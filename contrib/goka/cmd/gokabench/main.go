// Command gokabench compares goka storages on a stateful processor's storage
// path: ringstore's (package gokastore) with io_uring on and off, and goka's
// default LevelDB storage (storage.DefaultBuilder, one LevelDB per
// partition), each trial in a fresh child process under the same memory
// cgroup limit, modes interleaved.
//
// Each trial:
//
//  1. restore: every partition's goroutine writes its changelog through the
//     Storage API the way goka's PartitionTable recovery does (Set then
//     SetOffset per record, MarkRecovered at the end), without Kafka; timed,
//     and the child's RSS high-water mark read after it.
//  2. cold start: the storages are closed, the trial's own files dropped
//     from the page cache (fadvise), and reopened.
//  3. process: every partition's goroutine runs Nexmark query 18's callback
//     (the last bid per (bidder, auction)) on random bids of its own keys, as
//     goka's partition processor does: Get the key's state (each Get timed),
//     keep the newer bid, Set it, SetOffset. Events/s over the measured
//     seconds.
//
// Usage:
//
//	gokabench [--keys 2000000] [--restore 0 (= keys)] [--seconds 10] [--trials 3]
//	          [--cache-mib 64] [--memtable-mib 16] [--limit-mib 192] [--settle] [--json FILE]
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ringstore/ringstore/bench"
)

type options struct {
	Keys        int64   `json:"keys"`
	Restore     int64   `json:"restore"`
	Partitions  int     `json:"partitions"`
	Seconds     float64 `json:"seconds"`
	Warmup      float64 `json:"warmup"`
	Trials      int     `json:"trials"`
	CacheMiB    int64   `json:"cache_mib"`
	MemtableMiB int64   `json:"memtable_mib"`
	LimitMiB    int64   `json:"limit_mib"`
	NoCgroup    bool    `json:"no_cgroup"`
	Dir         string  `json:"dir"`
	Systems     string  `json:"systems"`
	Settle      bool    `json:"settle"`
}

// report is what --json writes.
type report struct {
	Date    string            `json:"date"`
	Command string            `json:"command"`
	Options options           `json:"options"`
	Machine bench.Machine     `json:"machine"`
	Memory  bench.MemoryLimit `json:"memory_limit"`
	Modes   []modeReport      `json:"modes"`
	Bars    []barReport       `json:"bars"`
	Notes   []string          `json:"notes"`
}

type modeReport struct {
	Name   string        `json:"name"`
	Trials []bench.Trial `json:"trials"`
}

type barReport struct {
	What  string  `json:"what"`
	Value float64 `json:"value"`
	Limit float64 `json:"limit"`
	Met   bool    `json:"met"`
	// Floor is the best value the device allows, measured in the same run
	// (0: none): the device's IOPS at the partitions' depth ÷ ringstore's
	// block reads per event, over LevelDB's events/s; the device's own
	// read p99 at that depth.
	Floor float64 `json:"floor,omitempty"`
}

func main() {
	bench.MaybeChild()
	var o options
	var jsonPath string
	flag.Int64Var(&o.Keys, "keys", 2_000_000, "distinct (bidder, auction) keys: the state")
	flag.Int64Var(&o.Restore, "restore", 0, "changelog records restored per trial, over all partitions (0: as many as keys; 10000000 for the 10M figure)")
	flag.IntVar(&o.Partitions, "partitions", 8, "partitions (one goroutine and one Storage each)")
	flag.Float64Var(&o.Seconds, "seconds", 30, "processing seconds measured per trial (long enough that the compactions a restore leaves behind do not fill the window)")
	flag.Float64Var(&o.Warmup, "warmup", 1, "processing seconds before the measured ones")
	flag.IntVar(&o.Trials, "trials", 3, "trials per mode (modes interleaved)")
	flag.Int64Var(&o.CacheMiB, "cache-mib", 64, "ringstore block cache, MiB (64: the block caches goka's LevelDB storage holds at 8 partitions, goleveldb's default 8 MiB each)")
	flag.Int64Var(&o.MemtableMiB, "memtable-mib", 16, "ringstore memtable size, MiB (up to 3 are held)")
	flag.Int64Var(&o.LimitMiB, "limit-mib", 192, "memory cgroup limit of every child, MiB")
	flag.BoolVar(&o.NoCgroup, "no-cgroup", false, "run the children without a memory cgroup")
	flag.StringVar(&o.Dir, "dir", os.TempDir(), "directory for the stores (a fresh one per trial)")
	flag.StringVar(&o.Systems, "systems", "ringstore-uring,ringstore-syscall,leveldb", "systems to run")
	flag.BoolVar(&o.Settle, "settle", false, "ringstore only: run compactions to the end after the restore, before processing (LevelDB is not settled: goka's Storage API has no such call)")
	flag.StringVar(&jsonPath, "json", "", "write the results as JSON to this file")
	flag.Parse()
	if err := run(o, jsonPath, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gokabench:", err)
		os.Exit(1)
	}
}

func (o *options) check() error {
	switch {
	case o.Keys < int64(o.Partitions) || o.Keys <= 0:
		return fmt.Errorf("--keys %d: want at least one per partition", o.Keys)
	case o.Restore < 0:
		return fmt.Errorf("--restore %d: negative", o.Restore)
	case o.Partitions <= 0:
		return fmt.Errorf("--partitions %d: want at least 1", o.Partitions)
	case o.Seconds <= 0 || o.Warmup < 0:
		return fmt.Errorf("--seconds %v, --warmup %v: want seconds > 0 and warmup >= 0", o.Seconds, o.Warmup)
	case o.Trials <= 0:
		return fmt.Errorf("--trials %d: want at least 1", o.Trials)
	case o.CacheMiB <= 0 || o.MemtableMiB <= 0 || o.LimitMiB <= 0:
		return fmt.Errorf("--cache-mib %d, --memtable-mib %d, --limit-mib %d: want positive sizes", o.CacheMiB, o.MemtableMiB, o.LimitMiB)
	}
	if o.Restore == 0 {
		o.Restore = o.Keys
	}
	for _, s := range strings.Split(o.Systems, ",") {
		if s != sysURing && s != sysSyscall && s != sysLevelDB {
			return fmt.Errorf("--systems: unknown system %q (want %s, %s or %s)", s, sysURing, sysSyscall, sysLevelDB)
		}
	}
	return nil
}

func run(o options, jsonPath string, out io.Writer) error {
	if err := o.check(); err != nil {
		return err
	}
	if err := bench.CheckDir("--dir", o.Dir, true); err != nil {
		return err
	}
	limit := o.LimitMiB << 20
	mem, cgroups := bench.SetUpMemoryLimit(bench.DetectMemCgroups, limit, o.NoCgroup, "--no-cgroup", out)
	if !mem.Applied {
		fmt.Fprintf(out, "no memory cgroup: %s; the children run without a memory limit\n", mem.Reason)
	}
	var modes []bench.Mode
	seed := time.Now().UnixNano()
	for _, sys := range strings.Split(o.Systems, ",") {
		cfg := childConfig{
			System: sys, Partitions: o.Partitions, Keys: o.Keys, Restore: o.Restore,
			Seconds: o.Seconds, Warmup: o.Warmup, CacheBytes: o.CacheMiB << 20, MemBytes: o.MemtableMiB << 20, Seed: seed,
			Settle: o.Settle,
		}
		var env []string
		if sys == sysSyscall {
			env = append(env, "RINGSTORE_IO_URING=false")
		}
		modes = append(modes, bench.Mode{Name: sys, Label: sys, Exec: func() (bench.Trial, error) {
			dir, err := os.MkdirTemp(o.Dir, "gokabench-"+sys+"-")
			if err != nil {
				return bench.Trial{}, err
			}
			defer os.RemoveAll(dir)
			c := cfg
			c.Dir = filepath.Join(dir, "store")
			var cg *bench.MemCgroup
			if cgroups != nil {
				if cg, err = cgroups.New(limit); err != nil {
					return bench.Trial{}, err
				}
				c.Cgroup = cg.Path
			}
			tr, err := bench.ChildExec("goka", c, env...)()
			if cg != nil {
				u, uerr := cg.Usage()
				if uerr == nil {
					if tr.Extra == nil {
						tr.Extra = map[string]float64{}
					}
					tr.Extra[xCgroupPeak], tr.Extra[xCgroupHits] = float64(u.PeakBytes), float64(u.LimitHits)
					if err != nil && u.OOMKills > 0 {
						err = fmt.Errorf("killed for want of memory under the %d MiB limit: %w", o.LimitMiB, err)
					}
				}
				err = errors.Join(err, uerr, cg.Remove())
			}
			return tr, err
		}})
	}
	machine := bench.DescribeMachine(o.Dir)
	bench.WriteMachine(out, machine)
	fmt.Fprintf(out, "load average at start: %s\n", loadAvg())
	results, err := bench.Run(modes, o.Trials, out)
	if err != nil && len(results) == 0 {
		return err
	}
	rep := report{
		Date: time.Now().UTC().Format("2006-01-02"), Command: strings.Join(os.Args, " "),
		Options: o, Machine: machine, Memory: mem,
	}
	if err != nil {
		rep.Notes = append(rep.Notes, "failed: "+err.Error())
	}
	rep.Notes = append(rep.Notes, "load average at end: "+loadAvg())
	for _, r := range results {
		rep.Modes = append(rep.Modes, modeReport{Name: r.Mode.Name, Trials: r.Trials})
	}
	rep.Bars = bars(o, results)
	writeTable(out, o, mem, results, rep.Bars)
	for _, n := range rep.Notes {
		fmt.Fprintln(out, "note:", n)
	}
	if jsonPath != "" {
		data, jerr := json.MarshalIndent(rep, "", "  ")
		if jerr != nil {
			return jerr
		}
		if jerr := os.WriteFile(jsonPath, append(data, '\n'), 0o644); jerr != nil {
			return jerr
		}
	}
	return err
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return strings.TrimSpace(string(b))
	}
	return strings.Join(f[:3], " ")
}

// median of one Extra key over a mode's trials.
func medianExtra(r *bench.ModeResult, key string) float64 {
	var vs []float64
	for _, t := range r.Trials {
		if v, ok := t.Extra[key]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0
	}
	return bench.Median(vs)
}

func medianOf(r *bench.ModeResult, f func(bench.Trial) float64) float64 {
	var vs []float64
	for _, t := range r.Trials {
		vs = append(vs, f(t))
	}
	return bench.Median(vs)
}

const mib = 1 << 20

func writeTable(out io.Writer, o options, mem bench.MemoryLimit, results []bench.ModeResult, bars []barReport) {
	fmt.Fprintf(out, "\n%d partitions, %d keys, restore %d records, %d trials; ringstore cache %d MiB, memtable %d MiB; ",
		o.Partitions, o.Keys, o.Restore, o.Trials, o.CacheMiB, o.MemtableMiB)
	if mem.Applied {
		fmt.Fprintf(out, "memory cgroup %s, limit %d MiB\n", mem.Cgroup, o.LimitMiB)
	} else {
		fmt.Fprintf(out, "no memory cgroup (%s)\n", mem.Reason)
	}
	fmt.Fprintln(out, "medians of trials (events/s: median, min-max)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "system\tevents/s\tmin-max\tGet p50 µs\tGet p99 µs\tstate MiB\trestore s\trestore rec/s\trestore RSS peak MiB\tcgroup peak MiB\treq/enter\tcompaction s in process\tcompacted B/rec restore\tcompacted B/event\tcompacted/flushed process\t")
	for i := range results {
		r := &results[i]
		if len(r.Trials) == 0 {
			fmt.Fprintf(tw, "%s\tno trial completed\t\t\t\t\t\t\t\t\t\t\t\t\t\n", r.Mode.Name)
			continue
		}
		rs := medianExtra(r, xRestoreSeconds)
		fmt.Fprintf(tw, "%s\t%.0f\t%.0f-%.0f\t%.0f\t%.0f\t%.0f\t%.1f\t%.0f\t%.0f\t%.0f\t%.2f\t%.1f\t%.0f\t%.0f\t%.1f\t\n",
			r.Mode.Name, bench.Median(r.Rates()), r.Min(), r.Max(),
			medianOf(r, func(t bench.Trial) float64 { return t.P50us }),
			medianOf(r, func(t bench.Trial) float64 { return t.P99us }),
			medianExtra(r, xStateBytes)/mib, rs, float64(o.Restore)/rs,
			medianExtra(r, xRestoreHWM)/mib, medianExtra(r, xCgroupPeak)/mib, medianExtra(r, xReqPerEnter), medianExtra(r, xCompactSeconds),
			medianExtra(r, xRestoreCompactPerRec), medianExtra(r, xCompactPerEvent), medianExtra(r, xCompactPerFlush))
	}
	tw.Flush()
	if u := bench.Find(results, sysURing); u != nil && deviceFloorEPS(u) > 0 {
		fmt.Fprintf(out, "device floor (io_uring child, its store closed): %.0f random 4 KiB reads/s of its tables at %d in flight (p99 %.0f µs) ÷ %.2f block reads per event = %.0f events/s\n",
			medianExtra(u, xDeviceIOPS), o.Partitions, medianExtra(u, xDeviceP99), medianExtra(u, xReadsPerEvent), deviceFloorEPS(u))
	}
	fmt.Fprintln(out, "\nbars (issue 30):")
	for _, b := range bars {
		met := "NOT met"
		if b.Met {
			met = "met"
		}
		floor := ""
		if b.Floor > 0 {
			floor = fmt.Sprintf("  (device floor %.2f)", b.Floor)
		}
		fmt.Fprintf(out, "  %-62s %10.2f  (bar %.2f)  %s%s\n", b.What, b.Value, b.Limit, met, floor)
	}
}

// deviceFloorEPS is the events/s the device allows ringstore io_uring: its
// IOPS at the partitions' depth ÷ the store's block reads per event
// (medians of trials; 0 where either was not measured).
func deviceFloorEPS(u *bench.ModeResult) float64 {
	iops, rpe := medianExtra(u, xDeviceIOPS), medianExtra(u, xReadsPerEvent)
	if iops <= 0 || rpe <= 0 {
		return 0
	}
	return iops / rpe
}

func bars(o options, results []bench.ModeResult) []barReport {
	var bs []barReport
	u, l := bench.Find(results, sysURing), bench.Find(results, sysLevelDB)
	if u != nil && l != nil && len(u.Trials) > 0 && len(l.Trials) > 0 {
		ratio := bench.Median(u.Rates()) / bench.Median(l.Rates())
		b := barReport{What: "events/s, ringstore io_uring / LevelDB (median), at least", Value: ratio, Limit: 2, Met: ratio >= 2}
		if f := deviceFloorEPS(u); f > 0 {
			b.Floor = f / bench.Median(l.Rates())
		}
		bs = append(bs, b)
	}
	if u != nil && len(u.Trials) > 0 {
		p99 := medianOf(u, func(t bench.Trial) float64 { return t.P99us }) / 1000
		bs = append(bs, barReport{What: "cold Get p99, ringstore io_uring, ms, at most", Value: p99, Limit: 0.5, Met: p99 <= 0.5,
			Floor: medianExtra(u, xDeviceP99) / 1000})
		peak := medianExtra(u, xRestoreHWM) / mib
		bound := float64(o.CacheMiB + 3*o.MemtableMiB + 64)
		bs = append(bs, barReport{What: "restore RSS peak MiB, ringstore io_uring, at most cache+3 memtables+64", Value: peak, Limit: bound, Met: peak <= bound})
	}
	return bs
}
