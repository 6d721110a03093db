// Package kv is ringstore's embedded LSM key-value store for keyed state (the
// per-key state of a stream processor). Its MultiGet sends the data-block
// reads of a whole batch of keys, across every table of every level, to the
// kernel together: one io_uring submission per round, with O_DIRECT and a
// block cache of its own (package bufpool).
//
//	db, err := kv.Open(dir, kv.Options{})
//	err = db.Put(k, v)                 // durable when it returns
//	var b kv.Batch; b.Put(k1, v1); b.Delete(k2)
//	err = db.Write(&b)                 // atomic and durable
//	v, err := db.Get(k)                // kv.ErrNotFound when absent
//	vals, found, err := db.MultiGet(keys)
//	it := db.NewIterator(lo, hi); for it.Next() { ... }; err = it.Close()
//	snap := db.NewSnapshot(); ...; snap.Close()
//	err = db.WriteContext(ctx, &b)     // gives up with ctx.Err() while stalled, before the log
//	err = db.Checkpoint(ctx, otherDir)
//
// # Write path
//
//	Write ──▶ queue ──▶ leader (under wmu): seqs, wal.StartAppendBatch ─┐ next leader
//	          log committer: gathers many leaders' requests, one write + fdatasync
//	          ├─ as it submits them: inserter ──▶ memtable (seqs not yet visible)
//	          flushed ──▶ pipeline head (under pipeMu), in seq order: visible seq
//	full memtable ──▶ immutable ──▶ background: flush to an L0 table (once no
//	                                 group in flight targets it), manifest, wal TruncateFront
//
// The commit pipeline. Writers queue; the writer at the front (the leader)
// takes every batch queued behind it (up to 4 MiB), gives them consecutive
// sequence numbers, puts the group in the pipeline and then queues it to the
// log (package wal) as one request, each batch one entry, still holding the
// queue's lock — so the log order is the pipeline's and the sequence order,
// and the inserter the log wakes finds every group it submits — and leaves
// the front to the next leader while its
// request is flushed: the log's committer gathers the requests of many
// leaders into one group commit. As the log submits a group commit it wakes
// the inserter goroutine (the memtable's single writer), which adds the
// queued batches to the memtable while the flush runs, at sequence numbers
// above the visible one, so no read sees them yet. A flushed group waits for
// every group before it; whoever finds groups at the head of the pipeline
// flushed and inserted publishes the visible sequence number, in order (a
// writer whose group the inserter has not reached inserts it itself). A
// batch is one wal entry, so after a crash it is there whole or not at all.
// A failed log request turns the store read-only, so no memtable is flushed
// again and a write inserted but not durable never reaches a table; the
// groups behind it fail too. Each queued writer sleeps on a channel of its own and
// is woken once: when it reaches the front, or when its leader completes its
// group. A batch is checked against the limits as it is built and decoded
// once, when it is inserted.
//
// When the memtable reaches MemtableSize it becomes immutable and the
// flush goroutine writes it to a new L0 table; writes stall while two
// immutable memtables wait or L0 holds L0StopWritesTrigger tables. The
// leader waits out a stall before it takes the batches behind it, and
// lets the queue's lock go meanwhile: a WriteContext whose ctx ends in
// the queue or in the stall leaves without a sequence number and
// without a trace in the log; one whose batch a leader took waits for
// the log's outcome.
//
// # Read path
//
// A read takes a read state without a lock: a reference (one atomic add) to
// the read set the store publishes at every change of its memtables or
// version — the memtables and the current version, whose tables stay open
// while any read holds it — and the sequence number it reads at (a
// Snapshot's, or the latest visible). It looks in the memtables
// newest first (each past its key filter, a Bloom filter sized from
// MemtableSize, so a key a memtable lacks costs a hash and one load, not a
// search), then in the tables that may hold the key: L0's newest first,
// then at most one table per lower level, each past its key range and its
// bloom filter, with no I/O when the table's metadata is held. A table's
// metadata (its block index and bloom filter) is held in a cache bounded
// by Options.TableMetaCacheSize: the tables opened by Open hold theirs, new
// tables of flushes and compactions keep what their writer checked when a
// read has needed a table's metadata since the last flush or compaction (a
// store that only writes, as a restore, holds none but its running
// compaction's), and past the budget the least recently read are dropped
// and read again (one pread of the sections, every checksum checked again)
// when next needed. MultiGet reads in rounds: each round takes, for
// every key not yet resolved, the data block of its next candidate table, and
// reads them all together, through the block cache in one Pin (whose misses go
// to the engine in one call) or, without a cache, in one engine call of
// O_DIRECT reads with adjacent blocks of a file coalesced (up to 256 KiB). A
// round of more blocks than the cache has frames pins as many as fit; on
// io_uring the blocks past those (up to 1 MiB) are read without the cache in
// the same submission, so the round waits for the device once (the cache
// could not have kept them: the round's own later Pins would have evicted
// them), and the rest in further Pins. A key is resolved by the first table
// that holds any version of it, so a second round happens only for bloom
// false positives (about 1%).
//
// On io_uring that engine call is one submission; on the syscall backend
// (RINGSTORE_IO_URING off, or io_uring refused) the same reads are
// preads one after another (Options.ReadWorkers: that many at once). The
// block cache is a bufpool of 4 KiB frames keyed by (table, offset), off
// the Go heap, one load per block at a time, scan resistant;
// ReadOptions.NoFillCache uses cached blocks but reads misses without
// keeping them. A block's CRC32C is checked when it is read from the file:
// a cached block at its first lookup after its load (its frame is then
// marked), an uncached one on every read. A cached block looked up again
// gets a note of the cache lines its entries' headers and keys lie in
// (sstable.BlockNote, kept with the frame until it loads again); a round's
// lookups prefetch each block's noted lines two blocks before they reach it.
//
// ReadAhead starts the first round of a MultiGet of a batch of keys and
// returns at once (on an inline io_uring engine, submitted from the
// caller's thread); it changes what is cached, never what a read returns.
// A key's first block that the cache holds it pins, searches and lets go
// at once (bufpool.Pool.PinEachResident), keeping what it found; the
// blocks the cache lacks it reads past it, up to 4 MiB, into memory of its
// own, so that however far ahead a reader runs, it holds no frame of the
// cache; a block an earlier open read ahead is reading so it takes from
// that one instead of reading it again. A MultiGet given it (ReadOptions.ReadAhead) looks in the
// memtables again and, while the tables are unchanged, takes for each key
// what the read ahead found in a table none of whose entries is newer than
// the read ahead (and no newer than the MultiGet's own seq), reads on from
// there, and uses the blocks read past the cache, putting each in the
// cache once it has checked it (bufpool.Pool.Insert), as its own load
// would have. After a flush or compaction it still takes a value or
// deletion the read ahead found where no table that may hold the key has
// an entry above the read ahead's seq: until Done that seq is held as a
// snapshot's (DB.aheadSnaps, which does not hold Close), so compactions
// keep every later version of the key, a deletion too, above it. It also
// holds the memtables it looked in until Done: while no memtable made
// after them has been flushed, every write since the read ahead is in
// those or the live ones, so the MultiGet reads a key in no live memtable
// from the flushed ones it holds, or else takes what the read ahead found,
// with no table lookup, after any flush or compaction — looking the key up
// in the block the read ahead read past the cache where it had not yet.
//
// An iterator merges the memtables and one iterator per L0 table and per
// lower level. Its first seek prefetches the first block of every table
// together; a table walk past its first block keeps 4 blocks loading ahead
// (both through the block cache, so only with one).
//
// # Memory
//
// A memtable's keys, values and skiplist nodes live off the Go heap
// (package memtable: anonymous mappings on Linux), so they do not count
// toward the collector's heap goal, which would let the heap grow to
// about twice the memtables before a collection. Its memory is given back
// (to a free list the next memtables take from) when the last holder of
// the memtable lets it go: the store, until the memtable is flushed, and
// every read set that lists it, until the last read through that set
// ends. A Get, MultiGet or ReadAhead holds its read set for the call (the
// ReadAhead until Done); an Iterator from its creation to its Close. A
// Snapshot holds none: it is a sequence number, and what it reads of a
// flushed memtable is in the memtable's table. No read returns memtable
// memory: Get and MultiGet return copies (in the caller's ValueBuffer
// where it names one), an Iterator's Key and Value are its own. So the one rule for users is the one that already holds: close
// every Iterator (and call Done on every ReadAhead) — one left open keeps
// its memtables' memory, as well as its tables, for the life of the
// process. Stats.HeldMemtables counts the memtables whose memory is held.
//
// Blocks read past the cache (a round's overflow, a ReadAhead's, every
// block of a store without a cache) land, on io_uring, in 2 MiB of memory
// outside the Go heap that Open registers with the ring (directArena): a
// call takes a run of its 4 KiB pages, first fit, and its reads go as
// READ_FIXED, so the kernel pins no page per read. Where the arena has no
// run long enough, where the kernel refuses the registration
// (RLIMIT_MEMLOCK; logged, and Stats.DirectFixedOff says why) and on the
// syscall backend, they land in aligned Go memory in size classes of 4 KiB
// to 4 MiB, recycled through a sync.Pool. Either goes back once the blocks
// are handed over — the values taken from them are copies — so reading
// past a small cache does not allocate about a block per block read. The
// memory of a read that failed is never reused: a ring that failed may not
// be done with it (Stats.DirectLostPages counts the arena's pages kept so).
// A ReadAhead's goes back at its Done. Close unregisters the arena and
// unmaps it unless a read that raced Close still holds some of it.
//
// # Files
//
//	dir/
//	  LOCK              flock held while open
//	  MANIFEST          the live tables per level (package manifest), replaced atomically
//	  000007.sst ...    tables (package sstable), named by file number
//	  wal/              the log of writes not yet in a table (package wal)
//
// A wal entry is one batch:
//
//	seq u64 | count u32 | count × { kind u8 | keyLen uvarint | key |
//	                                 valueLen uvarint | value (sets only) }
//
// # Compaction
//
// Leveled: L0 tables may overlap; L1 to L6 are sorted runs of tables with
// disjoint key ranges, each level LevelMultiplier times the one above, L1
// BaseLevelSize. When L0 has L0CompactionTrigger tables they are merged with
// the L1 tables they overlap — unless those L1 tables hold more than twice
// L0's bytes (small flushes, e.g. a store flushed every second) and L0 has
// fewer than halfway to L0StopWritesTrigger tables: then the newest L0
// tables (two, and each older one no larger than those before it) are
// merged into one L0 table in their place, so L1 is rewritten for at least
// half its size of new data, not for every few small flushes
// (Stats.Compacted counts bytes by output level). Otherwise the level furthest over its target
// gives one table (round robin through its keys) to be merged with the next
// level's overlapping tables. A table with nothing to merge with moves down
// without being rewritten. Outputs are cut at TargetFileSize between user
// keys. A version older than the oldest snapshot is dropped once a newer one
// (also at or below it) exists; a tombstone is dropped at the bottom of the
// tree. A compaction reads its inputs with O_DIRECT in 256 KiB chunks of
// consecutive blocks, each input's next chunk read ahead while the merge
// decodes the current one; on io_uring these reads go to an inline engine
// of the compaction goroutine's own, so they never queue in the ring
// goroutine that serves lookups (and Stats.Engine counts lookups and the
// log only). A table being written (by a flush or a compaction) is written
// with O_DIRECT, on the writing goroutine's own inline engine, in 256 KiB
// chunks, the next filled while the last is written; its last page is
// zero-padded and the file cut back to its size before the fsync. The
// fsyncs of a flush, a compaction or a checkpoint (the table, the MANIFEST,
// the directory) go to that goroutine's engine as IORING_OP_FSYNC where it
// runs on io_uring (fsync(2) otherwise), so an engine that parks its waits
// (ioengine.Options.ParkWaits) frees the goroutine's P meanwhile. A
// table's pages are dropped from the page cache after each read of its
// metadata: without BufferedIO, no table stays in the page cache (the log,
// written through it, does). With BufferedIO tables are written through
// the page cache, their writeback started every MiB (sync_file_range, not
// a durability point: the fsync at its end is).
// Flushes and compactions run on two goroutines of their own, so a
// long compaction does not hold back the flush that stalled writers wait
// for. Either installs its result as an edit of the version current at that
// moment, one install at a time (its manifest written and renamed before
// the version is swapped): a flush adds L0 tables, which are newer than
// anything a running compaction merges; only the compaction goroutine
// takes tables out of L0 or changes the levels below it.
//
// # Crash safety
//
// A table is written, fsynced and its directory fsynced before the manifest
// names it; the manifest is written to a temporary file, fsynced and renamed
// (then the directory fsynced); only then is the log truncated before the
// flushed writes. A new store writes an empty manifest before anything else,
// and Open refuses a directory that has tables or a log but no manifest
// (opening it as new would remove the tables). Open loads the manifest, checks every table against it
// (size, entries, max seq) and opens it, removes tables the manifest does not
// name (outputs of an interrupted flush or compaction), and replays the log's
// batches with sequence numbers above the manifest's FlushedSeq. Files of
// compacted tables are removed once no reader uses them. Damage to a table, the
// manifest or the log is an error naming the file and offset; nothing is
// skipped silently. A store's directory (and the log's) is made durable in its
// parent when Open creates it.
//
// The crash model (internal/crashfs; TestCrashStates checks 1,000 states of
// a workload of batches, flushes, compactions and checkpoints): a write is
// durable once a sync of its file, or of the write itself (RWF_DSYNC), has
// returned; one that is not may be lost, kept, or torn at 512-byte or 4 KiB
// sectors; a file's size is what fallocate set or the end of its last write
// kept; a directory change (create, rename, remove, link, mkdir) is durable
// once its directory was synced after it, and of those that are not, a prefix
// in the order they were made survives. In every such state Open succeeds,
// every acknowledged batch is there, every batch is all or nothing, and every
// checkpoint that Checkpoint returned opens with every batch acknowledged
// before it was called.
//
// # Concurrency
//
// All methods of DB are safe for concurrent use. DB.mu guards the memtable
// list, the current version, snapshots and reference counts. It is released
// for the flush and compaction I/O, the manifest write and the log truncation.
// The last unref of a dropped table (often a read's release) queues it for a
// third background goroutine, the cleaner, which closes it and, when it was
// compacted away, removes its file, with DB.mu released; Compact and
// WaitForCompactions wait for it, and Close retires what is left. A write
// stall waits on its condition variable.
// Memtable reads take no lock. Iterators and snapshots must be closed before Close (which fails
// with ErrOpenIterators otherwise); Close gives back the memory of the
// memtables that no read still holds. An Iterator is owned by one goroutine.
//
// # Checkpoints
//
// Checkpoint flushes the memtable, then hard-links the current version's
// tables into a new directory and writes a manifest there: a consistent
// prefix of the commit order, taken while writes go on. Open opens it as a
// store of its own.
package kv
