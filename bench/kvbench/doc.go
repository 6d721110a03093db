// Package kvbench is `ringstore bench kv`: cold point reads of keyed state
// in batches, side by side in one run:
//
//   - ringstore's kv: MultiGet on io_uring (a batch's block reads, across
//     all files and levels, in one submission), MultiGet on the syscall
//     backend (the same reads as serial preads), and a Get loop with as many
//     goroutines as the batch on io_uring;
//   - the device: 4 KiB O_DIRECT random reads of the same SST files on
//     io_uring at the depth MultiGet on io_uring keeps in flight (as many
//     callers, each submitting as many reads as a batch has keys and
//     waiting for all), its IOPS in the same run, drawn in keys/s (÷ the
//     blocks that MultiGet read per key) beside the other modes;
//   - Pebble (bench/peers/cmd/kvpeers, its own module), the same keys and
//     values, the same block cache size and batches: a serial Get loop and
//     a Get loop on as many goroutines as the batch.
//
// # What one run does
//
//	parent                                     children (fresh process per mode per trial)
//	──────                                     ──────────────────────────────────────────
//	probe io_uring, memory cgroups
//	load ringstore (child) ─────────────▶      write N keys (Unsafe.NoSync), Flush, Compact, Close
//	build kvpeers, load Pebble (child) ─▶      write N keys (NoSync), Flush, Compact all, Close
//	for trial in 1..T, modes rotated:
//	  drop the store's files from the page
//	    cache (fadvise DONTNEED; mincore:
//	    resident; --drop-caches: the whole
//	    machine's too, drop_caches as root)
//	  mkdir memory cgroup, limit         ──▶   join it first thing; open the store
//	                                           (empty block cache), C callers × batches
//	                                           of B keys for --duration, every value
//	                                           checked; store and cache counters
//	                                     ◀──   RESULT {keys, batch latencies, counters}
//	  cgroup peak and OOM counters, rmdir
//	report: table, ratios, the bar (met or not, from the figures), JSON
//
// # Cold
//
// ringstore reads with O_DIRECT: a fresh process per trial has an empty
// block cache, and the page cache is not in its path. Pebble reads through
// the page cache: its files are dropped from it before each trial (only the
// benchmark's own files: the machine's cache is left alone unless
// DropCaches asks for a machine-wide drop), and every read child runs
// under a memory cgroup limit (the cache plus 96 MiB by default, page cache
// included), so that within a trial Pebble cannot keep more of the data in
// memory than ringstore could. The report says which of these held; where
// no cgroup can be made it says so and marks the Pebble bar not tested.
//
// # Data
//
// Key i is "user" and the zero-padded digits of a 48-bit permutation of i,
// 16 to 32 bytes; value i is a 200–400-byte state row that starts with i,
// so each read checks that it got its own key's value. The default million
// keys are about 310 MiB of keys and values, 4.8× the 64 MiB cache.
package kvbench
