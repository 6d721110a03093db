// Package raftstore gives hashicorp/raft its LogStore and StableStore on
// ringstore's write-ahead log.
//
//	s, err := raftstore.Open(dir, wal.Options{})
//	r, err := raft.NewRaft(conf, fsm, s, s, snaps, trans) // s is both stores
//	...
//	r.Shutdown().Error()
//	s.Close()
//
// # Files
//
//	dir/
//	  00000000000000000001.seg …   the wal's segments: one entry per raft log, seq = raft index
//	  wal.meta, wal.lock           the wal's (see package wal)
//	  stable.db                    the StableStore's keys and values (absent until the first Set)
//	  stable.db.tmp                a stable.db being written (removed at Open)
//
// The wal's lock (flock on wal.lock) keeps a second Store, or a second
// wal.Log, out of the directory while one has it open.
//
// # Log entry
//
// Each raft.Log is one wal entry whose sequence number is its Index; the
// payload, little-endian:
//
//	0   version     uint8    (1)
//	1   type        uint8    raft.LogType
//	2   flags       uint8    bit 0: AppendedAt is set; the other bits are 0
//	3   reserved    uint8    (0)
//	4   index       uint64   must equal the wal seq, checked on every read
//	12  term        uint64
//	20  sec, nsec   int64, uint32   AppendedAt as Unix time (only with flag bit 0)
//	..  dataLen     uint32, then data
//	..  extLen      uint32, then extensions
//
// A payload that does not decode exactly (an unknown version or flag, a
// length past the end, bytes left over, a wrong index) is an error naming
// the index; the wal's CRC32C has already vouched for the bytes.
//
// # Stable file
//
//	0   magic    "RSRAFTKV"
//	8   version  uint32 (1)
//	12  count    uint32
//	16  entries  count × { keyLen uint32, key, valLen uint32, val }, keys sorted, unique
//	..  crc      uint32   CRC32C (Castagnoli) of every byte before it
//
// SetUint64 stores 8 bytes big-endian, as raft-boltdb does. Get and
// GetUint64 of a key never set return ErrKeyNotFound, whose message is
// exactly "not found": raft tells a missing key by that text.
//
// # Indexes and deletion
//
// The wal holds a contiguous run of sequence numbers, so the log cannot
// have gaps, and Store reports IsMonotonic (raft.MonotonicLogStore): after
// installing a snapshot raft deletes every entry and then stores from
// snapshotIndex+1, which moves the empty log's start forward
// (wal.TruncateFront). StoreLogs otherwise takes only the index after the
// last; anything else is an error naming the index expected and the one
// given. DeleteRange takes a range at the front (compaction after a
// snapshot: wal.TruncateFront) or at the back (a conflicting suffix:
// wal.TruncateBack); deleting every entry empties the log from the back,
// keeping its first index, so the next StoreLogs may start at that index or
// any later one. A range in the middle is an error. FirstIndex and
// LastIndex are 0 for an empty log.
//
// # Crash safety
//
//   - StoreLogs returns once every entry is durable (the wal's group
//     commit: write and fdatasync). A crash before it returns may keep any
//     prefix of the entries, each whole: raft had not been told they were
//     stored.
//   - DeleteRange is the wal's crash-safe truncation: a crash part way
//     leaves the log as before or as after at the front, and at the back a
//     log that ends at the cut or later, never one with a hole; raft
//     repeats a suffix deletion when it meets the conflict again.
//   - Set returns once the new stable.db is durable: the whole map is
//     written to stable.db.tmp, flushed, renamed over stable.db, and the
//     directory flushed. A crash leaves the old file or the new one. A
//     failed write or flush is permanent: that Set and every later one
//     fail with the first error (an fsync is never retried), as a wal
//     failure makes the log read-only. A corrupt or truncated stable.db
//     fails Open with an error naming the file, the offset and what was
//     wrong; nothing is repaired silently.
//
// # Concurrency
//
// All methods are safe for concurrent use, as raft needs: its main loop
// stores and deletes suffixes while its snapshot goroutine compacts the
// front and its replication goroutines read. Writers of the log
// (StoreLogs, DeleteRange) are serialised by the Store; readers (GetLog,
// FirstIndex, LastIndex) go straight to the wal, which may answer a read
// racing with compaction with raft.ErrLogNotFound. Stable keys are guarded
// by their own mutex, held across a file rewrite. Close waits for a write
// in progress; every call after it fails with ErrClosed.
package raftstore
