// Package bufpool is ringstore's buffer pool for O_DIRECT reads: fixed-size
// frames of registered files, held in one off-heap arena, pinned while in
// use, loaded once, evicted by a scan-resistant policy (S3-FIFO), read by
// I/O goroutines through an ioengine.Engine. It sits under arrowscan and is
// meant for kv's block cache too (small frames, many files, batched Pins
// across files).
//
// # Memory
//
//	arena (directio.Alloc: anonymous mmap, 4 KiB aligned, outside the Go heap,
//	       advised for transparent huge pages; a memfd with Windows, below)
//	┌──────────┬──────────┬──────────┬─────┬──────────┐
//	│ frame 0  │ frame 1  │ frame 2  │ ... │ frame N-1│   N = Budget / FrameSize
//	└──────────┴──────────┴──────────┴─────┴──────────┘
//	  each FrameSize bytes; frame k of a file holds [k*FrameSize, (k+1)*FrameSize)
//
// The pool never holds more than N frames of data and allocates no data
// buffers after New: a load reads straight into its frame's piece of the
// arena. The last frame of a file is partial: Bytes stops at the registered
// size (the read itself is rounded up to 4 KiB, as O_DIRECT requires).
//
// A private arena of 2 MiB or more is advised MADV_HUGEPAGE: on a kernel
// that backs advised memory with transparent huge pages, a lookup in a
// cached frame misses the TLB once per 2 MiB rather than once per frame.
//
// With Options.FixedBuffers the arena is registered with the engine's ring
// (ioengine.Engine.RegisterMemory) and unregistered at Close, before it is
// unmapped; loads then go as READ_FIXED, so the kernel does not pin and
// unpin a frame's pages for every read. A prefaulted arena is registered
// whole at New; otherwise New registers its first 4 MiB and the rest is
// registered as the pool first uses it (fixed.go; frames given back go to
// the front of the free list, so the frames in use stay a prefix), and a
// frame not yet registered is read plainly. Where the registration is
// refused the pool reads as before, logs why, and Stats.FixedBuffersOff
// keeps the reason.
//
// # Windows
//
// Consecutive frames of a file lie wherever eviction freed a slot, so a
// range that spans frames is not contiguous in the arena. With
// Options.Windows the arena is a memfd mapped shared, and every registered
// file gets a reserved range of addresses as long as the file: each load
// maps its slot, read-only, at the frame's place there (window.go draws
// it). Window then returns a range of pinned frames as one slice, in file
// order, without a copy; arrowscan decodes record batches from it. The
// load of a slot still mapped at its earlier place moves that mapping,
// page tables and all, to the new place (mremap with MREMAP_DONTUNMAP) and
// turns the earlier place back into a gap: two calls, no faults. A slot
// mapped nowhere (its first load) is mapped afresh and its page tables
// are filled by the first reads. That is paid once per load, however many
// readers use the frame afterwards. The mappings are made on the loading
// goroutine, outside Pool.mu.
//
// # Frames and the table
//
//	table: (FileID, frame index) ──▶ *Frame        one frame per key at a time
//
//	free ──install──▶ loading ──load ok──▶ resident ──evict──▶ (reused)
//	                     │                    │
//	                 load failed          Unregister while pinned
//	                     ▼                    ▼
//	            detached (out of the table, still pinned) ──last Unpin──▶ free
//
// A miss installs a frame in state loading and queues its load; every other
// Pin of that key finds the loading frame, pins it and waits, so a frame is
// loaded exactly once at a time. A failed load takes the frame out of the
// table (nothing is cached) and every waiter gets the same *ReadError.
//
// # Eviction: S3-FIFO with pins
//
//	miss ─┬─ key on the ghost list ─────────────────▶ main (CLOCK)
//	      └─ otherwise ─▶ probation (FIFO, ProbationPercent of the frames)
//	                         │ at the head, when a frame is needed:
//	                         ├─ referenced again ─▶ main
//	                         └─ not referenced  ─▶ evicted, key to the ghost list
//	main, at the hand: referenced ─▶ counter-1, to the back; not ─▶ evicted
//
// Each Pin call counts one reference per distinct frame (a Pin of a
// prefetched frame's first use counts none). A one-time scan therefore
// flows through probation without displacing the working set in main. The
// ghost list remembers as many evicted keys as there are frames. Pinned and
// loading frames are never evicted; the hand passes over them.
//
// A sequential reader that pins the same frame in several Pin calls makes
// it look re-referenced: pin all the spans of one unit of work (a record
// batch, a MultiGet) in one call.
//
// # Announcements
//
// Concurrent scans of one file drift apart; a frame the leading scan
// loaded is wanted by the trailing ones a little later, and under pressure
// the hand took it before they came, so it was read again. A caller that
// knows what it will pin says so with Announce:
//
//	Announce(spans)  each distinct frame: want+1 (kept with the file while not loaded)
//	Pin(spans)       each distinct frame: want-1 if want > 0, else a policy reference
//	Retract(spans)   each distinct frame: want-1 if want > 0 (a scan closed early)
//
// A frame with want > 0 waits off the eviction queues (on a list of its
// own, so an eviction never walks over it; its last announcement met, it
// goes back to the tail of its queue) and is never taken by Prefetch
// (which drops its load instead); a Pin that finds
// nothing else to evict takes the newest announced frame
// (Stats.AnnouncedEvictions), so announcements never make a Pin stall.
// Every announcement must be met by a Pin or a Retract (Stats.
// OpenAnnouncements counts those open); Unregister drops a file's.
//
// # I/O
//
//	Pin (io_uring)                          the engine
//	──────────────                          ──────────
//	install frames, mark its misses issued
//	unlock; one engine.Do of every miss ───▶ one submission, across files
//	lock; complete: resident or failed  ◀───
//	wait on frames other calls are loading
//
//	Prefetch (any goroutine),               I/O goroutines (IOWorkers)
//	Pin on the syscall backend              ──────────────────────────
//	──────────────────────────
//	install frames, queue loads  ─demandQ──▶ take ≤ MaxBatch loads
//	(Pin's before Prefetch's)    ─prefetchQ▶ (demand first), one engine.Do,
//	wait on each loading frame  ◀─────────── complete: resident or failed
//
// A Pin must wait for its misses anyway, so on io_uring it hands them to
// the engine itself, all in one call whatever files they are in (with the
// queued prefetches it now needs): no hop to an I/O goroutine and back.
// The I/O goroutines serve Prefetch, and every load on the syscall backend
// (or with the demandViaWorkers test hook): there one engine call runs its
// reads one after another, so a worker takes only its share of the queue
// (queued loads divided by the workers not inside an engine call) and the
// workers read in parallel. Either way other Pins of a frame being loaded wait on
// it (load once).
//
// LoadStart is Prefetch issued by the caller: on io_uring its loads go to
// the engine with ioengine.Engine.Start and it returns; its Wait completes
// them. Until then whoever needs one of its frames completes the call
// instead (a Pin of the frame, a Pin that finds nothing to evict,
// Unregister, Close), so nothing waits on a caller that never comes back.
//
// A reader that reads some blocks itself, past the pool, asks Present which
// the pool holds (a reference for the policy, as a hit) and hands what it
// read to Insert, which makes the bytes resident frames as a load would,
// taking only frames it can evict at once and never an announced one.
//
// # Concurrency
//
// All methods are safe for concurrent use. One mutex (Pool.mu) guards the
// table, the queues, the lists, the file map and the counters; the fields
// say so. Pin counts are atomic: Pin increments under mu, Unpin decrements
// without a lock and takes mu only when the frame was detached or a Pin is
// stalled. The eviction hand reads a pin count under mu; since increments
// happen only under mu, a zero it reads stays zero.
//
// A Pin takes all its frames or none. When no frame can be evicted it
// releases what it took and waits (Stats.Stalls) until an Unpin or a
// finished load makes one evictable. Pins that one goroutine holds while it
// calls Pin again count against the others: if goroutines together hold
// close to Frames pins and each waits for more, they deadlock; keep the
// pins held at once well below Frames. A Pin needing more distinct frames
// than the pool has fails at once (ErrTooManyFrames). Stalled Pins are not
// served in order: a large Pin may wait while small ones keep finding the
// few frames that become free.
//
// # Costs
//
// A hit is a map lookup and an atomic add under mu (about 0.1–0.3 µs on
// the 2-vCPU VM, BenchmarkPin path=hit); a miss adds the hand-offs to an
// I/O goroutine and back to the read itself. Each frame costs about 260
// bytes of Go heap besides its arena bytes, plus its table and ghost
// entries; the pool makes its frames as it first needs them, 4096 at a
// time, lowest slot first, and the ghost list once it first evicts, so a
// cache that never fills holds the Go memory of the frames it used (a GiB
// of 4 KiB frames made whole at New was 92 MB of heap). Close walks every
// frame made under mu; Unregister walks the file's frame keys where the
// file has fewer frames than the pool has made (a compaction unregisters
// small files of a big pool), every frame made otherwise.
//
// # Lifetimes
//
//   - Frame.Bytes is valid while the frame is pinned, and only then; after
//     Unpin its memory may be overwritten by the next load at any time.
//     Window's slice is valid in the parts covered by the caller's pinned
//     frames, under the same rule; an unregistered file's window is
//     unmapped at the last Unpin of its frames.
//   - A registered file (an ioengine.File) is the caller's: the pool never
//     closes it, and after Unregister (even one that reports pinned frames)
//     reads it no more. Its requests hold the file while in flight, so a
//     Close before Unregister waits for them and fails later loads with
//     ioengine.ErrFileClosed; it can never read a reused descriptor.
//   - Close fails with ErrPinned, changing nothing, while any frame is
//     pinned; otherwise it waits for the loads in flight, drops queued
//     prefetches, closes the pool's own engine and unmaps the arena.
//
// # Errors
//
// Bad options wrap ErrBadOptions and name the field; bad spans wrap
// ErrBadSpan or ErrUnknownFile and name the span, file and range; failed
// loads are *ReadError (file, offset, length, cause) and unwrap to the
// engine's *ioengine.OpError and its errno, or to ErrShortRead when the
// file is shorter than its registered size. Unpinning more than pinned
// panics: it is a bug in the caller, not an input error.
package bufpool
