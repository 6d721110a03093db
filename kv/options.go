package kv

import (
	"errors"
	"fmt"
	"log"

	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/sstable"
)

// ErrBadOptions is wrapped by errors about Options fields.
var ErrBadOptions = errors.New("kv: bad options")

// Defaults of Options.
const (
	DefaultMemtableSize        = 64 << 20
	DefaultCacheSize           = 64 << 20
	DefaultL0CompactionTrigger = 4
	DefaultL0StopWritesTrigger = 12
	DefaultBaseLevelSize       = 64 << 20
	DefaultLevelMultiplier     = 10
	DefaultTargetFileSize      = 8 << 20
	DefaultTableMetaCacheSize  = 32 << 20
	// maxImmutable is how many full memtables may wait for their flush
	// before writes stall.
	maxImmutable = 2
)

// Options configure a DB. The zero value is a durable store on io_uring
// (unless RINGSTORE_IO_URING says otherwise) with O_DIRECT reads and a 64 MiB
// block cache.
type Options struct {
	// MemtableSize is the bytes a memtable holds before it is flushed to
	// an L0 file. Default 64 MiB; at least 64 KiB. A writable store keeps
	// up to this much of its released memtables' memory mapped for the
	// next ones (memtable.Reserve).
	MemtableSize int64
	// BlockSize is the target size of an SST data block (sstable
	// Options.BlockSize). Default 4096.
	BlockSize int
	// BloomBitsPerKey sizes each SST's bloom filter. Default 10 (about 1%
	// false positives).
	BloomBitsPerKey int
	// CacheSize is the block cache's budget in bytes: a bufpool of 4 KiB
	// frames, off the Go heap, whose memory is taken as the cache fills
	// (on io_uring pinned for READ_FIXED, at most twice what it has used).
	// Default 64 MiB; at least 32 KiB.
	CacheSize int64
	// TableMetaCacheSize bounds the memory of the tables' decoded
	// metadata (block indexes and bloom filters, about 1.2 bytes per key
	// plus 130 per data block): a table's is loaded by the first read that
	// needs it and dropped, least recently read first, past this budget;
	// a read of a table whose metadata was dropped reads it again (some
	// 3% of the table). Default 32 MiB; at least 64 KiB.
	TableMetaCacheSize int64
	// NoBlockCache disables the block cache: every data block read goes to
	// the device (into a buffer of the read's own).
	NoBlockCache bool
	// IOMode is the backend of the store's engine: Auto follows
	// RINGSTORE_IO_URING; ioengine.Syscall reads the blocks of a batch
	// with one pread after another.
	IOMode ioengine.IOMode
	// ReadWorkers is, on the syscall backend, the number of goroutines that
	// read the block cache's misses, each one pread at a time: the read
	// parallelism of a MultiGet there, as a pool of read threads gives it
	// (RocksDB's and ForSt's MultiGet on a thread pool). Default 1: a
	// MultiGet's reads one after another. On io_uring a MultiGet's reads are
	// one submission and this is ignored.
	ReadWorkers int
	// Engine, when set, runs all of the store's I/O (block reads and the log's
	// writes) and is not closed by Close.
	Engine *ioengine.Engine
	// BufferedIO reads data blocks through the page cache instead of
	// O_DIRECT, for file systems that refuse O_DIRECT.
	BufferedIO bool
	// L0CompactionTrigger is the number of L0 files that starts an L0
	// compaction. Default 4.
	L0CompactionTrigger int
	// L0StopWritesTrigger is the number of L0 files at which writes wait
	// for compactions. Default 12.
	L0StopWritesTrigger int
	// BaseLevelSize is L1's target size; each lower level's is
	// LevelMultiplier times the one above. Default 64 MiB.
	BaseLevelSize int64
	// LevelMultiplier is the size ratio of adjacent levels. Default 10.
	LevelMultiplier int
	// TargetFileSize is the size at which a compaction starts a new output
	// file. Default 8 MiB.
	TargetFileSize int64
	// DisableAutoCompaction stops background compactions; Compact still
	// runs them. Flushes still happen.
	DisableAutoCompaction bool
	// DisableWAL writes no log at all: a write is applied to the memtable
	// and acknowledged at once, and is durable only once a flush (Flush,
	// a full memtable, Checkpoint, Close) has put it in a table. CAUTION:
	// after a crash the store holds what its tables held at the last
	// flush; writes acknowledged since are gone, without an error. For
	// state whose durability comes from checkpoints taken with the input's
	// position (package state): recovery restores the last checkpoint and
	// replays the input from there. A log left by an earlier open with the
	// log on is replayed and flushed at Open, so nothing it holds is lost.
	DisableWAL bool
	// ReadOnly opens the store to read it and changes nothing on disk: no
	// lock (it works on a read-only file system and beside a process that
	// has the store open), no file created or removed, no flush or
	// compaction; the log is opened read-only (wal.Options.ReadOnly: a torn
	// tail is not read, nothing is cut) and replayed into memory. Writes,
	// Flush, Compact and Checkpoint fail with ErrOpenedReadOnly. Damage is the
	// same error as for a writer. Beside a writer it sees what was written
	// when it opened.
	ReadOnly bool
	// Logf receives notices (recovery, the engine's fallback reason,
	// background errors). Default: the standard logger.
	Logf func(format string, args ...any)

	// Unsafe holds knobs that trade durability for speed, named and shaped
	// as wal.Options.Unsafe's.
	Unsafe UnsafeOptions
}

// UnsafeOptions can lose acknowledged writes.
//
// CAUTION: with any of these set, an acknowledged write may be lost in a
// power failure or kernel crash. Use them for bulk loads, benchmarks and
// tests only.
type UnsafeOptions struct {
	// NoSync skips the fdatasync of each write's log entry (the log's
	// wal.Options.Unsafe.NoSync). THIS IS UNSAFE. Such a log leaves no
	// clean-close mark either: damage to the last writes in it, even after
	// a clean Close, reads at the next Open as a torn tail and those
	// writes are dropped, not reported.
	NoSync bool
}

func (o Options) withDefaults() Options {
	if o.MemtableSize == 0 {
		o.MemtableSize = DefaultMemtableSize
	}
	if o.BlockSize == 0 {
		o.BlockSize = sstable.DefaultBlockSize
	}
	if o.BloomBitsPerKey == 0 {
		o.BloomBitsPerKey = sstable.DefaultBloomBitsPerKey
	}
	if o.CacheSize == 0 {
		o.CacheSize = DefaultCacheSize
	}
	if o.TableMetaCacheSize == 0 {
		o.TableMetaCacheSize = DefaultTableMetaCacheSize
	}
	if o.L0CompactionTrigger == 0 {
		o.L0CompactionTrigger = DefaultL0CompactionTrigger
	}
	if o.L0StopWritesTrigger == 0 {
		o.L0StopWritesTrigger = DefaultL0StopWritesTrigger
	}
	if o.BaseLevelSize == 0 {
		o.BaseLevelSize = DefaultBaseLevelSize
	}
	if o.LevelMultiplier == 0 {
		o.LevelMultiplier = DefaultLevelMultiplier
	}
	if o.TargetFileSize == 0 {
		o.TargetFileSize = DefaultTargetFileSize
	}
	if o.Logf == nil {
		o.Logf = log.Printf
	}
	return o
}

func (o Options) validate() error {
	bad := func(field string, v any, why string) error {
		return fmt.Errorf("%w: %s = %v: %s", ErrBadOptions, field, v, why)
	}
	switch {
	case o.MemtableSize < 64<<10:
		return bad("MemtableSize", o.MemtableSize, "must be at least 64 KiB")
	case o.BlockSize < 0 || o.BlockSize > sstable.MaxBlockSize:
		return bad("BlockSize", o.BlockSize, fmt.Sprintf("must be 1 to %d", sstable.MaxBlockSize))
	case o.BloomBitsPerKey < 0 || o.BloomBitsPerKey > sstable.MaxBloomBitsPerKey:
		return bad("BloomBitsPerKey", o.BloomBitsPerKey, fmt.Sprintf("must be 1 to %d", sstable.MaxBloomBitsPerKey))
	case !o.NoBlockCache && o.CacheSize < 32<<10:
		return bad("CacheSize", o.CacheSize, "must be at least 32 KiB (or set NoBlockCache)")
	case o.TableMetaCacheSize < 64<<10:
		return bad("TableMetaCacheSize", o.TableMetaCacheSize, "must be at least 64 KiB")
	case o.ReadWorkers < 0 || o.ReadWorkers > 256:
		return bad("ReadWorkers", o.ReadWorkers, "must be 0 (one) to 256")
	case o.L0CompactionTrigger < 1:
		return bad("L0CompactionTrigger", o.L0CompactionTrigger, "must be at least 1")
	case o.L0StopWritesTrigger <= o.L0CompactionTrigger:
		return bad("L0StopWritesTrigger", o.L0StopWritesTrigger, "must be above L0CompactionTrigger")
	case o.BaseLevelSize < 64<<10:
		return bad("BaseLevelSize", o.BaseLevelSize, "must be at least 64 KiB")
	case o.LevelMultiplier < 2 || o.LevelMultiplier > 100:
		return bad("LevelMultiplier", o.LevelMultiplier, "must be 2 to 100")
	case o.TargetFileSize < 64<<10:
		return bad("TargetFileSize", o.TargetFileSize, "must be at least 64 KiB")
	}
	return nil
}

// String returns the options as the DB uses them, on one line.
func (o Options) String() string {
	cache := fmt.Sprintf("%d", o.CacheSize)
	if o.NoBlockCache || o.BufferedIO {
		cache = "off"
	}
	return fmt.Sprintf("memtable_size=%d block_size=%d bloom_bits_per_key=%d cache=%s table_meta_cache=%d io_mode=%s buffered_io=%v "+
		"l0_compaction_trigger=%d l0_stop_writes_trigger=%d base_level_size=%d level_multiplier=%d "+
		"target_file_size=%d auto_compaction=%v sync=%v",
		o.MemtableSize, o.BlockSize, o.BloomBitsPerKey, cache, o.TableMetaCacheSize, o.IOMode, o.BufferedIO,
		o.L0CompactionTrigger, o.L0StopWritesTrigger, o.BaseLevelSize, o.LevelMultiplier,
		o.TargetFileSize, !o.DisableAutoCompaction, !o.Unsafe.NoSync)
}

// ReadOptions configure one read.
type ReadOptions struct {
	// Snapshot reads as of the snapshot; nil reads the latest writes.
	Snapshot *Snapshot
	// NoFillCache reads blocks that miss the cache without keeping them in
	// it (a one-off scan that should not displace the working set). Blocks
	// already cached are still used.
	NoFillCache bool
	// ReadAhead is a read ahead of the same keys (DB.ReadAhead), for a
	// MultiGet: it takes the tables and first block the read ahead chose
	// for each key instead of looking them up again, as long as no flush or
	// compaction has changed the tables since (a key written meanwhile is
	// still found in its memtable first). Keys it did not look at, or that
	// differ from those it was given, are looked up as usual. It changes the
	// work a MultiGet does, never what it returns. Get ignores it.
	ReadAhead *ReadAhead
	// Values, when set, is where a MultiGet copies the values it returns,
	// and where its values and found slices are, instead of memory of
	// their own: all valid until Values.Reset. Get ignores it.
	Values *ValueBuffer
}
