// Package scanbench is `ringstore bench scan`: concurrent analytic queries
// over Arrow IPC files that do not fit in memory, in the four arrowscan
// modes side by side, beside the device's own sequential bandwidth. The
// data set has checksum sidecars, which every mode checks its reads
// against; pool-nocheck is pool without the checks, so pool ÷ pool-nocheck
// is their cost (--no-sidecar-check turns them off in every mode).
//
// # What one run does
//
//	parent                                         children (fresh process per mode per trial)
//	──────                                         ──────────────────────────────────────────
//	detect memory cgroups (v2, else v1)
//	data set in --dir: reuse (manifest.json
//	  matches, sizes match) or generate
//	for trial in 1..T, modes rotated per trial:
//	  for mode in mmap pread direct pool device:
//	    fadvise DONTNEED every data file,
//	      mincore: bytes still resident
//	    mkdir cgroup, memory limit            ──▶  join the cgroup (cgroup.procs) first thing
//	    run child (bench.ChildExec)                open the files in the mode, then fadvise
//	                                                 DONTNEED again (what opening read)
//	                                               R rounds: Q queries at once, one goroutine each,
//	                                                 every file in order, own projection
//	                                               compare every result with reference.json
//	                                                 (written by the first child that ran queries)
//	                                               /proc/self/io, getrusage, pool and engine stats
//	                                          ◀──  RESULT {latencies, bytes, faults, RSS, ...}
//	    cgroup peak and OOM counters, rmdir
//	report: Markdown table, ratios with min–max, bars, JSON
//
// The device mode reads the same files front to back with O_DIRECT, 1 MiB
// reads, 16 in flight, through ioengine (io_uring where it works) for
// --device-time, in its own child per trial like the other modes, so that
// the pool's GB/s is compared with the device measured in the same run.
// Where fio is on PATH it does the same reads (io_uring, O_DIRECT, 1 MiB,
// depth 16, the same files) as one more mode, a measurement by a tool that
// is not ours; --no-fio skips it.
//
// A child that runs past Options.ChildTimeout (default 10 minutes) prints
// its goroutines' stacks and exits, failing that mode instead of hanging the
// run.
//
// # Memory limit
//
// Each child gets a cgroup of its own, below the cgroup the benchmark runs
// in (bench.MemCgroups): v2 when the memory controller is enabled for
// children there, else v1's memory hierarchy. The limit counts the page
// cache, so mmap and pread meet memory pressure when the data is larger
// than the limit, while direct and pool (O_DIRECT) only hold what they
// allocate. Where no cgroup can be made (not root, read-only cgroupfs, v2
// without the controller delegated) the children run without a limit and
// the report says so in its first lines and marks the bars as not tested.
// Cgroups are removed after each child; those an interrupted run left behind
// (named ringstore-bench-<dead pid>-<n>, empty) are removed at the next start.
//
// # Data set
//
// events.Generate writes about --data of events into
// <dir>/ringstore-scan-data-v<version>-<MiB>MiB-<files>f-<compression>/ in
// files of about 128 MiB (at least 2); rows are sized from one sample
// batch. manifest.json, written last (fsync, rename), lists the files and
// sizes: a data set is reused only when the manifest is there and every
// file has its recorded size. A data set the run generated is removed at the
// end unless --keep; one it found is left.
//
// # What is measured, and where
//
// In the child, over the measured part (the rounds, after the files are
// open): each query's wall time; /proc/self/io read_bytes (bytes fetched
// from the device by this process, whatever the path: page-cache misses and
// readahead, mmap faults, O_DIRECT preads, io_uring reads — tested in
// sys_linux_test.go and checked in every pool and direct trial against the
// pool's and the engine's own byte counts); getrusage major and minor
// faults; ru_maxrss for the whole child. In the parent: the cgroup's peak
// (v1 memory.max_usage_in_bytes, v2 memory.peak) and OOM kills.
//
// # Concurrency and lifetimes
//
// The parent is sequential: one child at a time, so that modes never share
// the device or the CPUs. In a child the queries of a round run on their own
// goroutines over shared *arrowscan.File values (which allow concurrent
// Scans) and, in pool mode, one bufpool.Pool; each query's result is owned
// by its goroutine until the round's WaitGroup is done. The reference file
// is written by one child while no other runs (tmp + rename) and read by the
// later ones.
package scanbench
