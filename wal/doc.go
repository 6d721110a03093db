// Package wal is ringstore's durable append-only log with group commit.
//
//	l, err := wal.Open(dir, wal.Options{})
//	seq, err := l.Append(payload) // returns once the entry is on stable storage
//	p, err := l.ReadAt(seq)
//
// Every acknowledged entry survives a crash: Append returns only after the
// write that holds the entry and an fdatasync that covers it have both
// completed. Concurrent appends share that work: one write and one
// fdatasync commit every entry that arrived while the previous group was
// flushing.
//
// # Group commit
//
//	appenders ──▶ queue ──▶ committer ──▶ flushers ──▶ acker ──▶ appenders
//	                         assigns seqs   write (linked) acknowledges
//	                         encodes group  + fdatasync    in seq order
//
// The committer takes every queued append (up to MaxGroupBytes), gives them
// consecutive sequence numbers, encodes them into one buffer and hands it
// to a flusher, which submits a write linked to an fdatasync through
// ioengine: on io_uring one submission, the flush starting only after the
// write completed in full (short writes are finished first). While that
// flush runs the committer forms the next group (PipelineDepth groups may
// be in flight). The acker acknowledges groups strictly in order, so an
// entry is acknowledged only when every entry before it is durable too.
//
// Before it takes a group the committer waits, briefly, for the writers the
// last acknowledgement released: they tend to append again at once, and
// without the wait writers settle into cohorts that take turns (two at
// depth 1), each append then waiting a whole flush before its own. The
// wait ends as soon as as many requests are queued as were acknowledged
// plus those already waiting, so a lone writer never waits; otherwise after
// a quarter of the last flush's duration (20 µs to 1 ms), extended an
// eighth at a time while writers keep coming back, up to the last flush's
// duration (and 1 ms) at most (a test hook, noGather, turns it off to
// measure what it gains).
//
// The first failed write or sync turns the log read-only: that append and
// every later one fail with ErrReadOnly wrapping the cause, and no fsync is
// ever retried (after a failed fsync the kernel may have dropped the dirty
// pages; a retry could report success for data that is gone). Reopening
// runs recovery.
//
// # Concurrency
//
// All methods of Log are safe for concurrent use. One committer goroutine
// owns the set of segments and the next sequence number; truncations go
// through its queue, ordered with the appends around them. Readers
// (ReadAt, Iterator, Follow) see entries once they are durable, while
// appends go on; sealed segments are read through a read-only mmap, the
// active one with pread up to the durable point; Locate names the file and
// offset of an entry (for messages about it). A directory is locked
// (flock on wal.lock) by the one Log that has it open.
//
// # Files
//
//	dir/
//	  00000000000000000001.seg   segments, named by the seq of their first entry
//	  00000000000000065537.seg
//	  wal.meta                   first seq after TruncateFront, two slots (absent before)
//	  wal.lock                   flock held while open
//	  spare-N.seg.tmp            the next segment, made ahead of need
//	  recycle-N.seg.tmp          a truncated segment's file kept for reuse
//	                             (*.tmp files are removed at Open)
//
// # Segment file
//
// A segment is a preallocated file of a fixed size. Unwritten space reads
// as zeros (in a reusable segment, as the stale table says: see below).
//
//	offset 0                  SegmentHeaderSize     dataEnd          size-TrailerSize   size
//	┌──────────────────────────┬──────────────────────┬────── zeros ────┬─────────────────┐
//	│ header (40 B)            │ entry entry entry …  │                 │ trailer (40 B)  │
//	└──────────────────────────┴──────────────────────┴─────────────────┴─────────────────┘
//	                                                                      (written on seal,
//	                                                                      or the clean-close
//	                                                                      mark: see below)
//
// Header, little-endian:
//
//	0  magic    "RSWALSEG"
//	8  version  uint32 (1)
//	12 reserved uint32 (0)
//	16 baseSeq  uint64   sequence number of the segment's first entry
//	24 size     uint64   the segment file's fixed size
//	32 reserved uint32 (0)
//	36 crc      uint32   CRC32C (Castagnoli) of bytes 0..36
//
// Trailer, little-endian, at size-40, written when the segment is sealed:
//
//	0  magic    "RSWALEND"
//	8  lastSeq  uint64   sequence number of the last entry (baseSeq-1 if none)
//	16 dataEnd  uint64   offset just past the last entry
//	24 dataCRC  uint32   CRC32C of bytes SegmentHeaderSize..dataEnd
//	28 reserved [8]byte (0)
//	36 crc      uint32   CRC32C of bytes 0..36
//
// Clean-close mark: the trailer's layout under the magic "RSWALCLS", in
// the trailer's place of the last segment, which stays unsealed. Close
// writes it (and flushes it) when the log did not fail: lastSeq, dataEnd
// and dataCRC are those of the segment's entries, all durable, with
// nothing in flight. Open (not ReadOnly) erases it with zeros, flushed,
// before it returns, so no append made after it is ever read as covered
// by it.
//
// # Reusable segment
//
// With Options.RecycleSegments every new segment has format version 2, and
// the file of a segment TruncateFront drops is made into a later segment:
// group flushes then overwrite written blocks instead of converting
// unwritten extents. Past its entries lie the bytes of the file's earlier
// use, not zeros:
//
//	0        40                     dataEnd  page end                 tableOff          size-4096     size
//	┌────────┬──────────────────────┬────────┬─ earlier bytes ─────────┬─────────────────┬─────────────┐
//	│ header │ entry entry …        │ zeros  │ (entries of seqs below  │ stale table     │ 0 … trailer │
//	│ (v2)   │                      │        │  the base, or anything) │                 │             │
//	└────────┴──────────────────────┴────────┴─────────────────────────┴─────────────────┴─────────────┘
//
// tableOff is size - 4096 - (4×(size/512) + 4, rounded up to 4 KiB): the
// stale table fills whole pages up to the trailer's. The stale table holds the CRC32C of
// each 512-byte sector of the file as it was before the segment began
// (then a CRC32C of the table; a region of zeros: the file was new, its
// earlier bytes zeros): a sector the table matches was not written since,
// as a zero sector of a fresh segment was not. Every group write ends with
// zeros to the end of its 4 KiB page, and the header is written with zeros
// to the end of the first page, so the bytes from the last durable entry
// to its page's end read as unwritten too. With these two, recovery tells
// a torn tail from damage by the same rule as in a fresh segment
// (tail.go). The groups' zeros would race the next group's write into the
// same page, so RecycleSegments needs PipelineDepth 1.
//
// The committer computes, as it writes a segment, the table its file will
// carry into its next use: each sector's checksum once the sector is
// whole, and at the seal, zeros to the end of the last page and the
// segment's own stale table after it. After the seal is durable the job
// goroutine writes that table over the segment's own (a sealed segment's
// table is never read again) and flushes it. Only a segment the Log made
// and sealed full, with that table written, is reused, so every seq its
// file holds is below the next one the log gives; one TruncateBack sealed
// short is not (its later entries' seqs come again).
//
// Reuse: after wal.meta holds the new first seq, the dropped file is
// renamed recycle-N.seg.tmp (two are kept at most; the others are
// removed). The job goroutine flushes the directory (so that no crash
// brings the file back under its segment name once it changes), reads the
// table back, writes zeros over the trailer page and flushes the file. At
// rotation the header page is written and flushed, the file renamed to its
// segment name and the directory flushed, as for a new spare. Versions
// before this one cannot read a version 2 segment.
//
// # Entry
//
//	0  bodyLen  uint32   length of the payload
//	4  seq      uint64   sequence number (never 0)
//	12 crc      uint32   CRC32C of bytes 0..12 and the payload
//	16 payload  [bodyLen]byte
//
// A header of 16 zero bytes marks the end of the written entries (the
// preallocated zeros). bodyLen is checked against the space left before any
// payload is read.
//
// # Crash safety and recovery
//
// A new segment is created as a temporary file, preallocated (fallocate),
// given its header, flushed, renamed to its name and the directory
// flushed, all before any entry goes in. A full segment is sealed (its
// trailer written and flushed) before the next is created. Open:
//
//   - checks every sealed segment: header, trailer, every entry's CRC and
//     sequence number, the data CRC, and that each segment starts where the
//     previous one ended (LazyVerify defers the entry checks to first read).
//     Entries that stop before the end its trailer records are damage, even
//     where they stop as a torn tail would (zeros, an entry cut short): a
//     *CorruptError naming the entries a cut there would lose;
//   - reads the last, unsealed segment to its first entry that is not valid.
//     If it carries the clean-close mark, the entries must be exactly those
//     the mark records: an entry it covers that is not valid is damage (a
//     *CorruptError naming the file, the offset and the entries a cut would
//     lose), never a torn tail, since nothing was in flight at the close.
//     If only unwritten bytes follow (zeros; in a reusable segment, also
//     sectors its stale table matches), appends continue there. Otherwise
//     the rest is a torn tail of a group that was never acknowledged: the
//     segment is sealed at that point (removed if it holds no entry), so
//     the torn bytes can never be read as entries, and appends go to a new
//     segment;
//   - reports damage anywhere else as a *CorruptError naming the file and
//     offset, and changes nothing. Repair is the explicit choice to cut the
//     log at the damage; PlanRepair says what it would cut, changing
//     nothing.
//
// One reader of segment files applies these rules: OpenSegment (and, for a
// whole directory, Reader) is what Open's recovery, Verify, Repair and the
// ringstore CLI's `wal dump` read segments through. A Reader takes no lock
// and writes nothing; beside a writer that is appending, the group being
// written may show as a torn tail.
//
// TruncateFront records the new first seq in wal.meta before it removes
// whole segments, oldest first: in place, in the slot of the two that does
// not hold the current first seq, written and flushed (internal/format
// draws the file; the file itself is made whole: a temporary file,
// flushed, renamed, directory flushed). The removals are not flushed one
// by one: a segment a crash brings back lies below the recorded first seq,
// and Open removes it. While entries remain, that write, its flush and the
// removals are a job of the file lifecycle (below), done in the order the
// truncations were made, and the appends that follow go on meanwhile: a
// crash before the slot is durable leaves the log as before the
// truncation, with those appends after its last entry. A truncation that
// empties the log waits for the queued truncations and writes wal.meta
// before the next append is taken, since that append's seq follows no
// entry on disk. TruncateBack waits for the queued truncations, removes
// later segments newest first, each removal flushed, then seals the
// segment holding the new last entry at that entry's end. A crash part way
// through either leaves the log as before or as after, never with a hole.
//
// # The file lifecycle
//
// Every segment file has one state (lifecycle.go), changed under one
// mutex:
//
//	spare: wanted ─▶ making ─▶ ready ─(rotation: header, rename)─▶ active
//	active ─seal─▶ sealed ─▶ tableQueued ─▶ tableWriting ─▶ reusable
//	sealed | tableQueued | reusable ─(dropped by a truncation)─▶ removed
//	reusable ─(dropped; fewer than 2 kept)─▶ recycled ─▶ a spare being made
//
// One job goroutine does what the committer hands off, from one queue: the
// spare first whenever one is wanted (asked for when the active segment
// passes half full, or by a rotation that finds none), then in order the
// next stale tables of sealed segments and the durable part of front
// truncations. A removal waits for a table being written into the file; a
// table whose segment was removed first is not written. The committer
// waits for the queued truncations, not for tables or spares, before it
// writes wal.meta itself or removes segments from the back. Close finishes
// the queued truncations, drops the queued tables, and removes an unused
// spare and the recycled files.
//
// # System assumptions
//
// Sector writes are not atomic and un-flushed writes may be lost, kept, or
// kept in part, in any order; a flushed write is kept. The size fallocate
// gives a file survives once the file has been flushed. Directory changes
// (create, rename, remove) become durable in the order they were made, and
// all of them once the directory is flushed. The crash-state test checks
// recovery against exactly this model.
//
// # Caveats
//
// After a crash (no clean-close mark), damage to acknowledged entries of
// the last, unsealed segment cannot be told apart from a torn tail when
// nothing valid follows them, nor when a sector of the damaged entry reads
// as unwritten (all zeros, or in a reusable segment the very bytes the
// file held there before): recovery cuts there and logs what it cut
// (Options.Logf, Stats.TailCuts). After a clean close the mark tells them
// apart, unless the mark itself is damaged: a mark that fails its checksum
// is read as a torn seal (no mark). Unsafe.NoSync logs write no mark. A payload returned by ReadAt is a copy;
// one passed to Iterator's or Follow's callers is valid until the next
// entry. An AppendBatch interrupted by a crash may leave any prefix of its
// entries (each whole); put what must be all-or-nothing in one entry.
package wal
