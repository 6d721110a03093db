package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/bench/htmlreport"
	"github.com/ringstore/ringstore/bench/kvbench"
	"github.com/ringstore/ringstore/bench/nexmarkbench"
	"github.com/ringstore/ringstore/bench/readbench"
	"github.com/ringstore/ringstore/bench/scanbench"
	"github.com/ringstore/ringstore/bench/walbench"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/nexmark"
)

const benchUsage = `usage: ringstore bench [read|wal|scan|kv|nexmark] [flags]

Without a workload name every benchmark runs with its defaults, read, wal,
scan, kv and then a quick nexmark (300,000 events, and 200,000 with large
state for q1, q2, q9, q18, q20, q22), taking the flags of all
but nexmark's; --json OUT then writes OUT-read.json, OUT-wal.json,
OUT-scan.json, OUT-kv.json and OUT-nexmark.json (OUT without its .json).
Workloads:
  read    4 KiB O_DIRECT random reads: serial pread, goroutine-parallel pread,
          io_uring batches 1/8/64/256, SQPOLL, and fio (when installed)
  wal     1 KiB durable appends: os.File + fdatasync, the device's own
          fdatasync, ringstore's wal with 1/16/64/256 writers (io_uring) and
          64 (SQPOLL, syscall), and the peers hashicorp/raft-wal, tidwall/wal
          and etcd's wal, one entry per call and in their batch APIs fed by
          a batching leader (built from bench/peers when go is on PATH)
  scan    12 concurrent analytic queries over Arrow files twice the memory
          limit: mmap, pread, direct (O_DIRECT) and pool (O_DIRECT + bufpool),
          each child under a memory cgroup, beside the device's sequential
          O_DIRECT bandwidth
  kv      cold point reads of 16–32-byte keys and 200–400-byte values in
          batches, data several times the block cache: ringstore MultiGet on
          io_uring and on the syscall backend, a Get loop on as many
          goroutines as the batch, the device's IOPS at MultiGet's depth (in
          keys/s), the CPU's limit (every block cached), and Pebble (built
          from bench/peers when go is on PATH) under a memory cgroup
  nexmark the Nexmark queries on keyed state (package state), io_uring ON vs
          OFF in fresh processes, interleaved, checkpointing each second, in
          two regimes: the reference's configuration, and large state (the
          reads far larger than the caches) with read-ahead, read pools of 3
          and 16 goroutines, every block cached and the device's floor;
          events/s per query, their ratios, outputs compared
A workload's --modes picks its modes; --modes list prints them and runs nothing.
`

// workloadHelp is the paragraph of benchUsage about workload w.
func workloadHelp(w string) string {
	lines := strings.Split(benchUsage, "\n")
	var out []string
	for i, l := range lines {
		if strings.HasPrefix(l, "  "+w+" ") {
			out = append(out, strings.TrimSpace(l[len(w)+2:]))
			for _, m := range lines[i+1:] {
				if !strings.HasPrefix(m, "          ") {
					break
				}
				out = append(out, strings.TrimSpace(m))
			}
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// benchWorkloads are the workloads of ringstore bench, in the order the
// main job runs them.
var benchWorkloads = []string{"read", "wal", "scan", "kv", "nexmark"}

func cmdBench(args []string, stdout, stderr io.Writer) error {
	workload := "all"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		workload, args = args[0], args[1:]
	}
	switch workload {
	case "all", "read", "wal", "scan", "kv", "nexmark":
		return benchRun(workload, args, stdout, stderr)
	case "help":
		fmt.Fprint(stdout, benchUsage)
		return nil
	}
	return usagef("bench: unknown workload %q (%s)", workload, strings.Join(benchWorkloads, ", "))
}

// benchRun parses the flags of workload ("all" takes those of every
// workload) and runs it.
func benchRun(workload string, args []string, stdout, stderr io.Writer) error {
	name := "bench"
	if workload != "all" {
		name += " " + workload
	}
	read, wal, scan := workload == "all" || workload == "read", workload == "all" || workload == "wal", workload == "all" || workload == "scan"
	kvb := workload == "all" || workload == "kv"
	nx := workload == "all" || workload == "nexmark"
	fs := newFlags(name, stderr)
	fs.Usage = func() {
		if workload == "all" {
			fmt.Fprint(fs.Output(), benchUsage)
		} else {
			fmt.Fprintf(fs.Output(), "usage: ringstore %s [flags]\n\n%s", name, workloadHelp(workload))
		}
		fmt.Fprintf(fs.Output(), "\nFlags:\n")
		fs.PrintDefaults()
	}
	dir := fs.String("dir", os.TempDir(), "directory for the benchmark's files (read, scan, kv: must support O_DIRECT; wal: put it on a disk, not tmpfs)")
	dur := new(time.Duration)
	if read || wal || kvb {
		dur = fs.Duration("duration", 2*time.Second, "read, wal, kv: measured time per mode and trial")
	}
	trials := fs.Int("trials", 3, "trials per mode (at least 3 for ratios you can trust)")
	jsonOut := fs.String("json", "", "also write the results as JSON to this file; - for stdout (the Markdown report then goes to stderr)")
	htmlOut := fs.String("html", "", "also write the results as one HTML page of charts to this file (its JSON reports too, beside it, unless --json names them)")
	var modes *string
	if workload != "all" {
		modes = fs.String("modes", "", "run only these modes: names or patterns, comma-separated (uring-*,serial-pread); 'list' prints the modes and runs nothing")
	} else {
		modes = new(string)
	}
	var file, size *string
	var noFio, noPeers *bool
	if read {
		file = fs.String("file", "", "read: existing file to read (default: create one of --size in --dir, removed afterwards)")
		size = fs.String("size", "1GiB", "read: size of the created file (K, M, G, KiB, MiB, GiB suffixes)")
	}
	if read || scan {
		noFio = fs.Bool("no-fio", false, "read, scan: skip the fio comparison even when fio is installed")
	}
	if wal || kvb {
		noPeers = fs.Bool("no-peers", false, "wal, kv: skip the peers (wal: hashicorp/raft-wal, tidwall/wal, etcd's wal; kv: Pebble)")
	}
	var kvKeys *uint64
	var kvCache *string
	var kvBatch, kvCallers *int
	var kvDist, kvMem *string
	var kvDrop *bool
	if kvb {
		kvKeys = fs.Uint64("keys", kvbench.DefaultKeys, "kv: keys loaded into every store")
		kvCache = fs.String("cache", "64MiB", "kv: block cache of every store (K, M, G, KiB, MiB, GiB suffixes)")
		kvBatch = fs.Int("batch", kvbench.DefaultBatch, "kv: keys per batch (one MultiGet, or as many Gets)")
		kvCallers = fs.Int("callers", kvbench.DefaultCallers, "kv: concurrent callers, each with its own batches")
		kvDist = fs.String("dist", kvbench.Uniform, "kv: key distribution: uniform or zipfian")
		kvDrop = fs.Bool("drop-caches", false, "kv: before every trial also sync and write 3 to /proc/sys/vm/drop_caches (root only): empties the page cache, dentries and inodes of the whole machine, every process's, not only this benchmark's files; default: only the benchmark's own files are dropped (fadvise DONTNEED, checked with mincore)")
		kvMem = fs.String("kv-mem-limit", "", "kv: memory cgroup limit of every read child, page cache included (default: the cache + 96MiB); none for no limit")
	}
	var dataSize, memSize, poolSize, frameSize *string
	var queries, rounds *int
	var devTime *time.Duration
	var compression *string
	var keep, noSidecarCheck *bool
	if scan {
		dataSize = fs.String("data", humanSize(scanbench.DefaultDataBytes), "scan: size of the Arrow data set (at least twice --mem-limit for the comparison the benchmark is for)")
		memSize = fs.String("mem-limit", humanSize(scanbench.DefaultMemLimit), "scan: memory cgroup limit of every child, page cache included; none for no limit")
		poolSize = fs.String("pool", humanSize(scanbench.DefaultPoolBytes), "scan: buffer pool budget (pool mode)")
		frameSize = fs.String("frame", humanSize(scanbench.DefaultFrameSize), "scan: buffer pool frame size, a multiple of 4KiB")
		queries = fs.Int("queries", scanbench.DefaultQueries, "scan: queries run at once in each round")
		rounds = fs.Int("rounds", scanbench.DefaultRounds, "scan: rounds of concurrent queries per trial")
		devTime = fs.Duration("device-time", scanbench.DefaultDeviceTime, "scan: time of each trial of the device's sequential-read measurement")
		compression = fs.String("compression", scanbench.DefaultCompression, "scan: compression of the data set: none, lz4 or zstd")
		keep = fs.Bool("keep", false, "scan: keep a data set this run generated in --dir, for the next run to reuse")
		noSidecarCheck = fs.Bool("no-sidecar-check", false, "scan: no mode checks its reads against the files' checksum sidecars (the pool-nocheck mode never does: pool ÷ pool-nocheck is the checks' cost)")
	}
	// The main job's quick run: state several times the caches, and a
	// short large-state pass over the queries that read the most state.
	// The large pass's stateless queries are three, so that their ON/OFF
	// geomean is not one query's noise.
	// Its stateful queries run at least a second in their fastest mode, so
	// that every run holds a checkpoint.
	nxOpts := nexmarkbench.Options{Events: 300_000, Cache: 64 << 10, LargeEvents: 200_000, LargeMinSeconds: 1, LargeQueries: []string{"q1", "q2", "q9", "q18", "q20", "q22"}}
	var nxQueries, nxCache, nxMemtable, nxRegime, nxLargeQueries, nxLargeCache *string
	var nxEvents, nxLargeEvents *int64
	var nxParallelism, nxBatch, nxAuctions, nxPeople, nxLargeBatch *int
	var nxCheckpointEvery *time.Duration
	var nxLargeMinSeconds *float64
	if workload == "nexmark" {
		nxRegime = fs.String("regime", "both", "default (the reference's configuration), large (in-flight auctions and active people raised: state reads far larger than the caches) or both")
		nxLargeQueries = fs.String("large-queries", "", "large state: the queries, comma-separated (default: --queries)")
		nxLargeEvents = fs.Int64("large-events", 500_000, "large state: events generated per trial")
		nxLargeMinSeconds = fs.Float64("large-min-seconds", 2, "large state: a stateful query whose all-cached run would take less runs more events (at most 8× --large-events), so that each run holds several checkpoints; 0: --large-events for every query")
		nxAuctions = fs.Int("in-flight-auctions", 100_000, "large state: the generator's in-flight auctions (the reference's numInFlightAuctions)")
		nxPeople = fs.Int("active-people", 100_000, "large state: the generator's active people (numActivePeople)")
		nxLargeCache = fs.String("large-cache", "auto", "large state: each worker's block cache; auto: sized per query, the working set 10× the caches (a sizing run in the all-cached mode measures it)")
		nxLargeBatch = fs.Int("large-batch", 1000, "large state: events per mini-batch")
		nxCheckpointEvery = fs.Duration("checkpoint-every", time.Second, "a job checkpoint each this much of every run's time (0: none)")
		nxQueries = fs.String("queries", strings.Join(nexmark.QueryNames(), ","), "the queries, comma-separated")
		nxEvents = fs.Int64("events", 2_000_000, "events generated per trial")
		nxParallelism = fs.Int("parallelism", nexmark.DefaultParallelism, "workers, each with its own state")
		nxBatch = fs.Int("batch", nexmark.DefaultBatch, "events per mini-batch (one MultiGet of state per worker)")
		nxCache = fs.String("cache", "256KiB", "each worker's block cache")
		nxMemtable = fs.String("memtable", "256KiB", "each worker's memtable")
	}
	if err := parse(fs, args, false); err != nil {
		if fs.NArg() > 0 && slices.Contains(benchWorkloads, fs.Arg(0)) {
			return usagef("%s: unexpected argument %q: the workload goes before the flags (ringstore bench %s [flags])", fs.Name(), fs.Arg(0), fs.Arg(0))
		}
		return err
	}
	if workload == "nexmark" {
		nxOpts.Queries = strings.Split(*nxQueries, ",")
		for _, q := range nxOpts.Queries {
			if _, ok := nexmark.Lookup(q); !ok {
				return usagef("%s: --queries: unknown query %q (known: %s)", name, q, strings.Join(nexmark.QueryNames(), ", "))
			}
		}
		if *nxEvents < 1 || *nxParallelism < 1 || *nxParallelism > 256 || *nxBatch < 1 {
			return usagef("%s: --events, --batch and --parallelism (at most 256) must be positive", name)
		}
		var err error
		if nxOpts.Cache, err = sizeArg(name, "cache", *nxCache, 32<<10, 1<<40); err != nil {
			return err
		}
		if nxOpts.Memtable, err = sizeArg(name, "memtable", *nxMemtable, 64<<10, 1<<40); err != nil {
			return err
		}
		nxOpts.Events, nxOpts.Parallelism, nxOpts.Batch = *nxEvents, *nxParallelism, *nxBatch
		switch *nxRegime {
		case "default", "large", "both":
			nxOpts.Regime = *nxRegime
		default:
			return usagef("%s: --regime %q: want default, large or both", name, *nxRegime)
		}
		nxOpts.LargeQueries = nil
		if *nxLargeQueries != "" {
			nxOpts.LargeQueries = strings.Split(*nxLargeQueries, ",")
			for _, q := range nxOpts.LargeQueries {
				if _, ok := nexmark.Lookup(q); !ok {
					return usagef("%s: --large-queries: unknown query %q (known: %s)", name, q, strings.Join(nexmark.QueryNames(), ", "))
				}
			}
		}
		if *nxLargeEvents < 1 || *nxAuctions < 1 || *nxPeople < 1 || *nxLargeBatch < 1 || *nxCheckpointEvery < 0 || !(*nxLargeMinSeconds >= 0 && *nxLargeMinSeconds <= 600) {
			return usagef("%s: --large-events, --in-flight-auctions, --active-people and --large-batch must be positive, --checkpoint-every not negative, --large-min-seconds from 0 to 600", name)
		}
		nxOpts.LargeMinSeconds = *nxLargeMinSeconds
		if nxOpts.LargeMinSeconds == 0 {
			nxOpts.LargeMinSeconds = -1 // none
		}
		if *nxLargeCache != "auto" {
			if nxOpts.LargeCache, err = sizeArg(name, "large-cache", *nxLargeCache, 32<<10, 1<<40); err != nil {
				return err
			}
		}
		nxOpts.LargeEvents, nxOpts.InFlightAuctions, nxOpts.ActivePeople, nxOpts.LargeBatch = *nxLargeEvents, *nxAuctions, *nxPeople, *nxLargeBatch
		nxOpts.CheckpointEvery = *nxCheckpointEvery
		if nxOpts.CheckpointEvery == 0 {
			nxOpts.CheckpointEvery = -1 // none
		}
	}
	if strings.TrimSpace(*modes) == "list" {
		return listModes(workload, nxOpts, stdout)
	}
	if (read || wal || kvb) && *dur <= 0 {
		return usagef("%s: --duration must be positive, got %s", name, *dur)
	}
	if *trials < 1 {
		return usagef("%s: --trials must be at least 1, got %d", name, *trials)
	}
	var n int64
	if read {
		var err error
		if n, err = parseSize(*size); err != nil {
			return usagef("%s: --size: %v", name, err)
		}
	}
	var dataBytes, memBytes, poolBytes, frameBytes int64
	if scan {
		var err error
		if dataBytes, err = sizeArg(name, "data", *dataSize, 1<<20, 1<<44); err != nil {
			return err
		}
		if *memSize != "none" {
			if memBytes, err = sizeArg(name, "mem-limit", *memSize, 64<<20, 1<<44); err != nil {
				return err
			}
		}
		if frameBytes, err = sizeArg(name, "frame", *frameSize, 4<<10, 1<<30); err != nil {
			return err
		}
		if frameBytes%(4<<10) != 0 {
			return usagef("%s: --frame must be a multiple of 4KiB, got %s", name, *frameSize)
		}
		// The pool's own limits (bufpool.MinFrames frames at least), checked
		// here rather than found by the child.
		if poolBytes, err = sizeArg(name, "pool", *poolSize, bufpool.MinFrames*frameBytes, 1<<44); err != nil {
			return usagef("%s (a pool holds at least %d frames of --frame %s)", err.Error(), bufpool.MinFrames, *frameSize)
		}
		for _, f := range []struct {
			name     string
			v        int
			min, max int
		}{{"queries", *queries, 1, 4096}, {"rounds", *rounds, 1, 1 << 16}} {
			if f.v < f.min || f.v > f.max {
				return usagef("%s: --%s must be between %d and %d, got %d", name, f.name, f.min, f.max, f.v)
			}
		}
		if memBytes > 0 && poolBytes >= memBytes {
			return usagef("%s: --pool %s must be below --mem-limit %s", name, *poolSize, *memSize)
		}
		if *devTime <= 0 {
			return usagef("%s: --device-time must be positive, got %s", name, *devTime)
		}
		switch *compression {
		case "none", "lz4", "zstd":
		default:
			return usagef("%s: --compression must be none, lz4 or zstd, got %q", name, *compression)
		}
	}
	var kvCacheBytes, kvMemBytes int64
	if kvb {
		var err error
		if kvCacheBytes, err = sizeArg(name, "cache", *kvCache, 32<<10, 1<<44); err != nil {
			return err
		}
		if *kvKeys < 1 || *kvBatch < 1 || *kvCallers < 1 {
			return usagef("%s: --keys, --batch and --callers must be at least 1", name)
		}
		if *kvDist != kvbench.Uniform && *kvDist != kvbench.Zipfian {
			return usagef("%s: --dist must be uniform or zipfian, got %q", name, *kvDist)
		}
		switch *kvMem {
		case "", "none":
		default:
			if kvMemBytes, err = sizeArg(name, "kv-mem-limit", *kvMem, 64<<20, 1<<44); err != nil {
				return err
			}
		}
	}
	if wal || scan || kvb || nx || read && *file == "" {
		if st, err := os.Stat(*dir); err != nil {
			return usagef("%s: --dir: %v", name, err)
		} else if !st.IsDir() {
			return usagef("%s: --dir: %s is not a directory", name, *dir)
		}
	}
	var jsonTo io.Writer
	if *jsonOut == "-" {
		if *htmlOut != "" {
			return usagef("%s: --html needs the JSON reports in files: give --json a file name, not -", name)
		}
		jsonTo, stdout = stdout, stderr // stdout holds the JSON alone
	}
	if *htmlOut != "" && *jsonOut == "" {
		*jsonOut = strings.TrimSuffix(*htmlOut, ".html") + ".json"
	}
	readJSON, walJSON, scanJSON, kvJSON, nxJSON := *jsonOut, *jsonOut, *jsonOut, *jsonOut, *jsonOut
	if workload == "all" && *jsonOut != "" && jsonTo == nil {
		base := strings.TrimSuffix(*jsonOut, ".json")
		readJSON, walJSON, scanJSON, kvJSON, nxJSON = base+"-read.json", base+"-wal.json", base+"-scan.json", base+"-kv.json", base+"-nexmark.json"
	}
	var errs []error
	if read {
		errs = append(errs, readbench.Run(readbench.Options{Modes: bench.Selection(*modes), File: *file, Dir: *dir, Size: n, Duration: *dur, Trials: *trials,
			Fio: !*noFio, JSON: readJSON, JSONTo: jsonTo, Out: stdout, Progress: stderr}))
	}
	if wal {
		errs = append(errs, walbench.Run(walbench.Options{Modes: bench.Selection(*modes), Dir: *dir, Duration: *dur, Trials: *trials,
			Peers: !*noPeers, JSON: walJSON, JSONTo: jsonTo, Out: stdout, Progress: stderr}))
	}
	if scan {
		errs = append(errs, scanbench.Run(scanbench.Options{Modes: bench.Selection(*modes), Dir: *dir, DataBytes: dataBytes, MemLimit: memBytes, NoMemLimit: memBytes == 0,
			PoolBytes: poolBytes, FrameSize: int(frameBytes), Trials: *trials, Queries: *queries, Rounds: *rounds, DeviceTime: *devTime,
			Compression: *compression, Keep: *keep, NoFio: *noFio, NoSidecarCheck: *noSidecarCheck, JSON: scanJSON, JSONTo: jsonTo, Out: stdout, Progress: stderr}))
	}
	if kvb {
		errs = append(errs, kvbench.Run(kvbench.Options{Modes: bench.Selection(*modes), Dir: *dir, Keys: *kvKeys, CacheSize: kvCacheBytes, Batch: *kvBatch, Callers: *kvCallers,
			Trials: *trials, Duration: *dur, Dist: *kvDist, MemLimit: kvMemBytes, NoMemLimit: *kvMem == "none",
			Peers: !*noPeers, DropCaches: *kvDrop, JSON: kvJSON, JSONTo: jsonTo, Out: stdout, Progress: stderr}))
	}
	if nx {
		nxOpts.Dir, nxOpts.Trials, nxOpts.Modes, nxOpts.JSON, nxOpts.Out, nxOpts.Progress = *dir, *trials, bench.Selection(*modes), nxJSON, stdout, stderr
		nxOpts.JSONTo = jsonTo
		errs = append(errs, nexmarkbench.Run(nxOpts))
	}
	if *htmlOut != "" {
		var inputs []htmlreport.Input
		for _, p := range []string{readJSON, walJSON, scanJSON, kvJSON, nxJSON} {
			if data, err := os.ReadFile(p); err == nil && !slices.ContainsFunc(inputs, func(in htmlreport.Input) bool { return in.Name == filepath.Base(p) }) {
				inputs = append(inputs, htmlreport.Input{Name: filepath.Base(p), Data: data})
			}
		}
		errs = append(errs, writeHTML(*htmlOut, inputs, stdout))
	}
	return errors.Join(errs...)
}

// listModes prints the modes of workload and what each needs, running
// nothing and writing no file.
func listModes(workload string, nx nexmarkbench.Options, stdout io.Writer) error {
	var ms []bench.ModeInfo
	switch workload {
	case "read":
		ms = readbench.ModeNames(readbench.Options{})
	case "wal":
		ms = walbench.ModeNames(walbench.Options{})
	case "scan":
		ms = scanbench.ModeNames(scanbench.Options{})
	case "kv":
		ms = kvbench.ModeNames(kvbench.Options{})
	case "nexmark":
		ms = nexmarkbench.ModeNames(nx)
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mode\tneeds")
	for _, m := range ms {
		needs := m.Needs
		if needs == "" {
			needs = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\n", m.Name, needs)
	}
	return tw.Flush()
}

// sizeArg parses the value of flag --flag of command name as a size
// between lo and hi bytes; a mistake is a usage error naming both.
func sizeArg(name, flag, v string, lo, hi int64) (int64, error) {
	n, err := parseSize(v)
	if err != nil {
		return 0, usagef("%s: --%s: %v", name, flag, err)
	}
	if n < lo || n > hi {
		return 0, usagef("%s: --%s must be between %s and %s, got %s", name, flag, humanSize(lo), humanSize(hi), v)
	}
	return n, nil
}

// humanSize writes n bytes as the largest binary unit that divides it
// ("288MiB", "4KiB", "1000B").
func humanSize(n int64) string {
	for _, u := range []struct {
		suffix string
		size   int64
	}{{"TiB", 1 << 40}, {"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n >= u.size && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.suffix
		}
	}
	return strconv.FormatInt(n, 10) + "B"
}

// parseSize parses "1GiB", "512M", "4096", "1g".
func parseSize(s string) (int64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40}, {"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"tb", 1 << 40}, {"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30}, {"t", 1 << 40}, {"b", 1}} {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSuffix(t, u.suffix), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(t), 64)
	n := v * float64(mult)
	if err != nil || !(n >= 1 && n <= 1<<50) { // written so that NaN fails too
		return 0, fmt.Errorf("%q is not a size (try 1GiB, 512M or 4096)", s)
	}
	return int64(n), nil
}
