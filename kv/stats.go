package kv

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

type statCounters struct {
	writes, commits, writeStalls          atomic.Uint64
	gets, multiGets, multiGetKeys, rounds atomic.Uint64
	blockReads, directCalls               atomic.Uint64
	readAheadBlocks, readAheadLookups     atomic.Uint64
	readAheadJoined                       atomic.Uint64
	flushes, flushedBytes, flushNanos     atomic.Uint64
	compactions, trivialMoves             atomic.Uint64
	compactedIn, compactedOut             atomic.Uint64
	compactNanos                          atomic.Uint64
	// byLevel counts compactions by output level (L0: intra-L0 merges).
	byLevel [numLevels]struct{ count, in, out atomic.Uint64 }
}

// LevelCompactions count the merging compactions that wrote into one level
// (trivial moves not included): for L0, merges of L0 tables among
// themselves; for Ln, n >= 1, compactions of L(n-1) into Ln. Read is the
// bytes of their input tables (both levels), Written of their outputs.
// Their Written summed over the levels, over Stats.FlushedBytes, is the
// store's write amplification beyond its flushes.
type LevelCompactions struct {
	Count         uint64
	Read, Written uint64
}

// LevelStats describe one level of the tree.
type LevelStats struct {
	Tables int
	Bytes  int64
	Target int64 // 0 for L0
}

// Stats are a DB's counters (since Open) and its current shape.
type Stats struct {
	Writes      uint64 // batches committed
	Commits     uint64 // leaders' log requests (each commits one or more batches)
	LogFlushes  uint64 // the log's group commits (one write + fdatasync each, many requests)
	WriteStalls uint64 // commits that waited for a flush or compaction

	Gets         uint64
	MultiGets    uint64
	MultiGetKeys uint64
	ReadRounds   uint64 // block-read rounds of Get and MultiGet (one submission each)
	BlockReads   uint64 // 4 KiB blocks read from the device (cache misses and uncached reads)
	DirectReads  uint64 // engine calls for uncached reads
	// ReadAheadBlocks counts the blocks ReadAhead read past the cache (the
	// blocks the cache held it searched there instead).
	ReadAheadBlocks uint64
	// ReadAheadJoined counts the blocks a ReadAhead took from another open
	// one reading them past the cache instead of reading them again.
	ReadAheadJoined uint64
	// ReadAheadLookups counts the keys whose tables and first block (or
	// what it held) a MultiGet took from its ReadAhead
	// (ReadOptions.ReadAhead), or found in the memtables the ReadAhead
	// held after their flush.
	ReadAheadLookups uint64
	Cache            *bufpool.Stats // nil without a block cache
	// DirectFixed: reads past the cache go into memory registered with the
	// engine's ring (READ_FIXED) while it has room; DirectFixedOff says
	// why not where they do not. DirectLostPages counts its 4 KiB pages
	// kept from reuse by failed reads.
	DirectFixed     bool
	DirectFixedOff  string
	DirectLostPages int
	Engine          ioengine.Stats
	Backend         ioengine.Backend
	FallbackCause   string

	Flushes, FlushedBytes     uint64
	FlushTime                 time.Duration
	Compactions, TrivialMoves uint64
	CompactedIn, CompactedOut uint64
	CompactionTime            time.Duration
	// Compacted is indexed by output level.
	Compacted     [numLevels]LevelCompactions
	Memtables     int   // the mutable one plus those waiting for a flush
	MemtableBytes int64 // their approximate size
	// HeldMemtables counts the memtables whose memory is not given back:
	// Memtables, plus flushed ones that reads begun before their flush
	// still hold (an Iterator until its Close).
	HeldMemtables        int
	Levels               [numLevels]LevelStats
	Snapshots, Iterators int
	LastSeq              uint64
}

// Stats returns the counters and the current shape of the tree.
func (db *DB) Stats() Stats {
	c := &db.stats
	s := Stats{
		Writes: c.writes.Load(), Commits: c.commits.Load(), WriteStalls: c.writeStalls.Load(),
		Gets: c.gets.Load(), MultiGets: c.multiGets.Load(), MultiGetKeys: c.multiGetKeys.Load(),
		ReadRounds: c.rounds.Load(), BlockReads: c.blockReads.Load(), DirectReads: c.directCalls.Load(), ReadAheadBlocks: c.readAheadBlocks.Load(), ReadAheadLookups: c.readAheadLookups.Load(), ReadAheadJoined: c.readAheadJoined.Load(),
		Flushes: c.flushes.Load(), FlushedBytes: c.flushedBytes.Load(), FlushTime: time.Duration(c.flushNanos.Load()),
		Compactions: c.compactions.Load(), TrivialMoves: c.trivialMoves.Load(),
		CompactedIn: c.compactedIn.Load(), CompactedOut: c.compactedOut.Load(),
		CompactionTime: time.Duration(c.compactNanos.Load()),
		Engine:         db.eng.Stats(), Backend: db.eng.Backend(), FallbackCause: db.eng.FallbackReason(),
		LastSeq: db.visible.Load(), DirectFixed: db.directArena != nil, DirectFixedOff: db.directArenaOff,
	}
	if db.directArena != nil {
		s.DirectLostPages = db.directArena.lost()
	}
	for l := range s.Compacted {
		b := &c.byLevel[l]
		s.Compacted[l] = LevelCompactions{Count: b.count.Load(), Read: b.in.Load(), Written: b.out.Load()}
	}
	if db.log != nil {
		s.LogFlushes = db.log.Stats().Flushes
	}
	if db.pool != nil {
		ps := db.pool.Stats()
		s.Cache = &ps
		s.BlockReads += ps.BytesRead / directio.BlockSize
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	s.Memtables = 1 + len(db.imm)
	s.HeldMemtables = int(db.memHeld.Load())
	s.MemtableBytes = db.mem.ApproximateBytes()
	for _, m := range db.imm {
		s.MemtableBytes += m.ApproximateBytes()
	}
	if db.current != nil {
		for l := range s.Levels {
			s.Levels[l] = LevelStats{Tables: len(db.current.levels[l]), Bytes: db.current.levelBytes(l)}
			if l > 0 {
				s.Levels[l].Target = db.levelTarget(l)
			}
		}
	}
	s.Snapshots, s.Iterators = db.snapshots.len(), db.iterators
	return s
}

// String prints the stats as a small report.
func (s Stats) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "backend %s", s.Backend)
	if s.FallbackCause != "" {
		fmt.Fprintf(&b, " (fell back: %s)", s.FallbackCause)
	}
	fmt.Fprintf(&b, "\nlast seq %d; memtables %d (%d bytes, %d held); snapshots %d, iterators %d\n", s.LastSeq, s.Memtables, s.MemtableBytes, s.HeldMemtables, s.Snapshots, s.Iterators)
	fmt.Fprintf(&b, "level  tables          bytes         target\n")
	for l, ls := range s.Levels {
		if ls.Tables == 0 && l > 1 {
			continue
		}
		fmt.Fprintf(&b, "L%d     %6d %14d %14d\n", l, ls.Tables, ls.Bytes, ls.Target)
	}
	fmt.Fprintf(&b, "writes %d in %d commits, %d stalls\n", s.Writes, s.Commits, s.WriteStalls)
	fmt.Fprintf(&b, "gets %d, multigets %d (%d keys), read rounds %d, blocks read %d, uncached read calls %d",
		s.Gets, s.MultiGets, s.MultiGetKeys, s.ReadRounds, s.BlockReads, s.DirectReads)
	switch {
	case s.DirectFixed && s.DirectLostPages > 0:
		fmt.Fprintf(&b, " (fixed buffers; %d pages kept from reuse by failed reads)", s.DirectLostPages)
	case s.DirectFixed:
		fmt.Fprintf(&b, " (fixed buffers)")
	default:
		fmt.Fprintf(&b, " (no fixed buffers: %s)", s.DirectFixedOff)
	}
	b.WriteString("\n")
	if s.Cache != nil {
		fmt.Fprintf(&b, "block cache: %s\n", s.Cache)
	} else {
		fmt.Fprintf(&b, "block cache: off\n")
	}
	fmt.Fprintf(&b, "flushes %d (%d bytes, %s), compactions %d (+%d moves; %d bytes in, %d out, %s)\n",
		s.Flushes, s.FlushedBytes, s.FlushTime.Round(time.Millisecond), s.Compactions, s.TrivialMoves,
		s.CompactedIn, s.CompactedOut, s.CompactionTime.Round(time.Millisecond))
	for l, lc := range s.Compacted {
		if lc.Count > 0 {
			fmt.Fprintf(&b, "  into L%d: %d compactions, %d bytes read, %d written\n", l, lc.Count, lc.Read, lc.Written)
		}
	}
	return b.String()
}
