package kv

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/crashfs"
	"github.com/ringstore/ringstore/internal/durable"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/manifest"
	"github.com/ringstore/ringstore/kv/memtable"
	"github.com/ringstore/ringstore/kv/sstable"
	"github.com/ringstore/ringstore/wal"
)

var (
	// ErrNotFound is returned by Get for a key with no value.
	ErrNotFound = errors.New("kv: not found")
	// ErrClosed is returned by every method after Close.
	ErrClosed = errors.New("kv: closed")
	// ErrLocked is returned by Open when another DB has the directory open.
	ErrLocked = errors.New("kv: directory locked")
	// ErrOpenedReadOnly is returned by writes, Flush, Compact and
	// Checkpoint of a store opened with Options.ReadOnly (as
	// wal.ErrOpenedReadOnly by a log's). A store whose log failed a write
	// or sync returns the log's wal.ErrReadOnly instead.
	ErrOpenedReadOnly = errors.New("kv: opened read-only")
	// ErrOpenIterators is returned by Close while iterators or snapshots are
	// still open.
	ErrOpenIterators = errors.New("kv: iterators or snapshots still open")
)

const (
	lockName = "LOCK"
	walDir   = "wal"
)

// memTable is a memtable with the sequence numbers and the last wal entry of
// the writes in it. Its fields are written by the write leader before the
// memtable becomes immutable and only read after.
type memTable struct {
	*memtable.Memtable
	lastSeq uint64 // largest seq applied (0: none)
	walLast uint64 // last wal entry holding its writes (0: none)
	// inflight counts the commit groups given this memtable whose writes
	// are not applied yet (guarded by DB.mu). A memtable is flushed only
	// once it is immutable and inflight is 0.
	inflight int
	// refs counts the holders of the memtable's memory: the DB while it is
	// mem or in imm (that reference covers its writers and its flush), and
	// each read set that lists it (which covers every read through the
	// set). Nothing reads the memtable without one of them; the last unref
	// releases its memory (memtable.Memtable.Release).
	refs atomic.Int32
	held *atomic.Int64 // the DB's count of memtables not released
	// id numbers the DB's memtables in the order they are made; mem and
	// imm hold a run of consecutive ids (a flush takes the oldest).
	id uint64
}

// newMemTable returns an empty memtable holding the DB's reference. Called
// with mu held, or by Open before the DB is shared.
func (db *DB) newMemTable() *memTable {
	db.memIDs++
	m := &memTable{Memtable: memtable.SizedNew(db.opts.MemtableSize), held: &db.memHeld, id: db.memIDs}
	m.refs.Store(1)
	db.memHeld.Add(1)
	return m
}

func (m *memTable) ref() { m.refs.Add(1) }

// unref drops a reference; the last one releases the memtable's memory.
func (m *memTable) unref() {
	switch n := m.refs.Add(-1); {
	case n == 0:
		m.Release()
		m.held.Add(-1)
	case n < 0:
		panic("kv: memtable unreferenced more often than referenced")
	}
}

// DB is an LSM key-value store in one directory. All methods are safe for
// concurrent use; see the package documentation.
type DB struct {
	dir    string
	opts   Options
	lock   *os.File
	eng    *ioengine.Engine
	ownEng bool
	// compactEng runs compactions' input reads and output writes, flushEng
	// the flushes' table writes: on io_uring inline engines of eng's
	// (NewInline), each used by one goroutine only (the compaction's, the
	// flush's), so that their 256 KiB transfers are neither queued by eng's
	// ring goroutine ahead of lookups' block reads nor reaped by it; else
	// eng. Immutable after Open; closed by closeResources when not eng.
	compactEng *ioengine.Engine
	flushEng   *ioengine.Engine
	pool       *bufpool.Pool // nil without a block cache
	// directArena is the memory registered with eng that reads past the
	// cache go into (READ_FIXED), nil where it is not registered
	// (directArenaOff says why). Immutable after Open.
	directArena    *directArena
	directArenaOff string
	log            *wal.Log
	visible        atomic.Uint64 // reads see writes with seq <= visible
	// reads is the published read set (read.go): replaced under mu at
	// every change of mem, imm or current; nil once Close has begun.
	reads atomic.Pointer[readSet]

	// The write queue (guarded by wmu): the writer at the front is the
	// leader; it numbers every queued batch and queues them to the log in
	// one request, then leaves the front to the next leader while its
	// request is flushed (the commit pipeline, write.go). A queued writer
	// sleeps on its own channel until it leads or is done: no broadcast.
	// lastSeq is the leaders'; applied is closed once the newest group in
	// the pipeline has been applied (nil before the first).
	wmu     sync.Mutex
	writers []*writer
	lastSeq uint64
	applied chan struct{}

	// pipeMu guards the pipeline: the groups queued to the log and not yet
	// visible (or failed), in sequence order (their log order), the first
	// inserted of them inserted into their memtables. insertMu is held by
	// the memtables' single writer while it inserts the others (insertBuf
	// is its scratch): the inserter goroutine, woken through insertWake by
	// the log as it submits a group commit, or a writer whose group the
	// inserter has not reached. Lock order: wmu, insertMu, pipeMu, mu.
	pipeMu     sync.Mutex
	pipeline   []*commitGroup
	inserted   int
	insertMu   sync.Mutex
	insertBuf  []*commitGroup
	insertWake chan struct{} // nil without a log to wake the inserter
	insertDone sync.WaitGroup
	// minInsertAhead is the least number of requests in a group commit
	// for which the log wakes the inserter; set before the first write.
	minInsertAhead int

	mu      sync.Mutex
	cond    *sync.Cond // broadcast on every change of mem/imm/current/bgErr/closed
	mem     *memTable
	imm     []*memTable  // full memtables waiting for their flush, oldest first
	memHeld atomic.Int64 // memtables not released (memTable.refs)
	memIDs  uint64       // the last memTable.id given; guarded by mu (Open: before the DB is shared)
	// unreserve gives back the memtable memory the store reserved on the
	// free list (memtable.Reserve; nil read-only).
	unreserve   func()
	current     *version
	nextFileNum uint64
	snapshots   snapshotList
	aheadSnaps  snapshotList // the open read aheads' seqs, kept by compactions as snapshots' (ReadAhead); they do not hold Close
	iterators   int
	bgErr       error // the first background failure; writes fail with it after
	closed      bool
	compactReq  int    // Compact calls waiting
	drainL0     uint64 // L0 tables numbered up to this go to L1 at once (DrainL0)
	compacting  bool   // the compaction goroutine is running a compaction
	flushing    bool   // a flush has reserved its table's number and not installed it
	installing  bool   // a version is being installed (its manifest written)
	dirDirty    bool   // a file was removed since the directory was last flushed
	compactPtr  [numLevels][]byte
	bgWG        sync.WaitGroup // the flush and compaction goroutines

	// obsolete are the tables no version lists, queued for the cleaner
	// goroutine (cleanLoop), which closes them and removes the files of
	// those compacted away, woken through cleanWake (capacity 1; nil when
	// no cleaner runs: read-only, and from Close on). cleaning: it holds a
	// batch taken from obsolete.
	obsolete  []obsoleteTable // guarded by mu
	cleaning  bool            // guarded by mu
	cleanWake chan struct{}   // guarded by mu
	cleanDone sync.WaitGroup

	// testInCompaction, set by tests (under mu), runs in every merging
	// compaction once its inputs are chosen, with mu released.
	testInCompaction func()
	// testBeforeClean, set by tests (under mu), runs before the cleaner
	// retires a batch of tables, with mu released.
	testBeforeClean func()

	// aheads are the ReadAheads whose reads past the cache are not waited
	// for yet (Close finishes them); guarded by aheadMu.
	aheadMu sync.Mutex
	aheads  map[*aheadReads]struct{}
	// aheadBlocks maps each block the listed reads read past the cache to
	// where (the latest of them to read it); guarded by aheadMu.
	aheadBlocks map[blockKey]blockRef

	stats statCounters
	meta  metaCache
}

// cacheIOWorkers is how many I/O goroutines the block cache runs on
// io_uring, for its prefetches (a MultiGet's own misses are submitted by
// the MultiGet): each waits for all reads of its engine call, so this
// bounds how many prefetch calls are in flight (docs/DECISIONS.md).
const cacheIOWorkers = 8

// Open opens the store in dir, creating it if needed, and recovers: it loads
// the manifest, opens every table it names (removing files of an unfinished
// flush or compaction), and replays the log's writes that are not in a table.
func Open(dir string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if opts.ReadOnly {
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("kv: %w", err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("kv: %s is not a directory", dir)
		}
	} else if err := mkdirAll(dir); err != nil {
		return nil, fmt.Errorf("kv: %w", err)
	}
	db := &DB{dir: dir, opts: opts}
	if !opts.ReadOnly {
		db.unreserve = memtable.Reserve(opts.MemtableSize)
	}
	db.meta.budget = opts.TableMetaCacheSize
	db.cond = sync.NewCond(&db.mu)
	ok := false
	defer func() {
		if !ok {
			db.closeResources()
		}
	}()
	var err error
	if !opts.ReadOnly {
		if db.lock, err = lockFile(filepath.Join(dir, lockName)); err != nil {
			return nil, err
		}
	}
	if opts.Engine != nil {
		db.eng = opts.Engine
	} else {
		if db.eng, err = ioengine.New(ioengine.Options{Mode: opts.IOMode, Logf: opts.Logf}); err != nil {
			return nil, fmt.Errorf("kv: %w", err)
		}
		db.ownEng = true
	}
	db.compactEng, db.flushEng = db.eng, db.eng
	if db.eng.Backend() == ioengine.BackendURing && !opts.ReadOnly {
		if ie, err := db.eng.NewInline(); err == nil {
			db.compactEng = ie
		} else {
			opts.Logf("kv: compactions do their I/O on the store's engine: %v", err)
		}
		if ie, err := db.eng.NewInline(); err == nil {
			db.flushEng = ie
		} else {
			opts.Logf("kv: flushes write on the store's engine: %v", err)
		}
	}
	if !opts.NoBlockCache && !opts.BufferedIO {
		workers := cacheIOWorkers
		if db.eng.Backend() == ioengine.BackendSyscall {
			workers = max(1, opts.ReadWorkers) // each one pread at a time
		}
		// On io_uring the cache's arena is registered with the ring as the
		// cache fills, so a block read goes as READ_FIXED (the kernel pins
		// no page per read); a refusal (RLIMIT_MEMLOCK) is logged and reads
		// go plain.
		if db.pool, err = bufpool.New(bufpool.Options{FrameSize: directio.BlockSize, Budget: opts.CacheSize,
			Engine: db.eng, IOWorkers: workers, MaxBatch: 256, Logf: opts.Logf,
			FixedBuffers: db.eng.Backend() == ioengine.BackendURing}); err != nil {
			return nil, fmt.Errorf("kv: block cache: %w", err)
		}
	}
	// Reads past the cache (a read ahead's, a MultiGet's beyond what the
	// cache can take, every read of a store without one) go into memory
	// registered with the ring; a refusal is logged and they read into Go
	// memory.
	if arena, err := newDirectArena(db.eng); err == nil {
		db.directArena = arena
	} else {
		db.directArenaOff = err.Error()
		if db.eng.Backend() == ioengine.BackendURing {
			opts.Logf("kv: reads past the block cache go into Go memory, without fixed buffers: %v", err)
		}
	}
	mv, err := manifest.Load(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) && opts.ReadOnly:
		return nil, fmt.Errorf("kv: %s holds no store (no %s) to open read-only", dir, manifest.FileName)
	case errors.Is(err, fs.ErrNotExist):
		// A new store: its first act is an empty manifest, so that a store
		// without one is never taken for new (Open would remove its tables).
		if err := refuseUnmanaged(dir); err != nil {
			return nil, err
		}
		mv = &manifest.Version{NextFileNum: 1}
		if err := manifest.Write(dir, mv); err != nil {
			return nil, fmt.Errorf("kv: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("kv: %w", err)
	}
	if !opts.ReadOnly {
		if err := db.removeStrays(mv); err != nil {
			return nil, err
		}
	}
	var levels [numLevels][]*table
	for l, metas := range mv.Levels {
		for _, m := range metas {
			t, err := db.openTable(m, true)
			if err != nil {
				for _, lvl := range levels {
					for _, t := range lvl {
						t.close(db)
					}
				}
				return nil, err
			}
			levels[l] = append(levels[l], t)
		}
	}
	db.current = newVersion(levels, mv.FlushedSeq)
	db.current.ref()
	db.nextFileNum = mv.NextFileNum
	db.lastSeq = mv.FlushedSeq
	for _, lvl := range levels {
		for _, t := range lvl {
			db.lastSeq = max(db.lastSeq, t.meta.MaxSeq)
		}
	}
	db.mem = db.newMemTable()
	db.mu.Lock()
	db.publishReadSetLocked()
	db.mu.Unlock()

	walOpts := wal.Options{Engine: db.eng, Logf: opts.Logf, SegmentSize: walSegmentSize(opts.MemtableSize), ReadOnly: opts.ReadOnly || opts.DisableWAL}
	walOpts.Unsafe.NoSync = opts.Unsafe.NoSync
	// A flush truncates the log's front, and the segments it frees are
	// reused: group flushes then overwrite written blocks, and an
	// fdatasync commits no extent conversion through the file system's
	// journal (which would wait for the tables being written beside it).
	walOpts.RecycleSegments = !walOpts.ReadOnly
	if !walOpts.ReadOnly {
		db.insertWake, db.minInsertAhead = make(chan struct{}, 1), minInsertAhead
		walOpts.OnGroupWrite = db.wakeInserter
		db.insertDone.Add(1)
		go db.insertLoop()
	}
	_, statErr := os.Stat(filepath.Join(dir, walDir))
	if !opts.DisableWAL || statErr == nil {
		if db.log, err = wal.Open(filepath.Join(dir, walDir), walOpts); err != nil {
			return nil, fmt.Errorf("kv: %w", err)
		}
		if err := db.replay(mv.FlushedSeq); err != nil {
			return nil, err
		}
	}
	if opts.DisableWAL && db.log != nil {
		// What an earlier open logged is in the memtable now: flushed below,
		// before any write goes unlogged.
		if err := db.log.Close(); err != nil {
			return nil, fmt.Errorf("kv: %w", err)
		}
		db.log = nil
	}
	db.visible.Store(db.lastSeq)
	if !opts.ReadOnly {
		db.cleanWake = make(chan struct{}, 1) // before the first drop
		db.cleanDone.Add(1)
		go db.cleanLoop(db.cleanWake)
		db.bgWG.Add(2)
		go db.flushLoop()
		go db.compactLoop()
	}
	if opts.DisableWAL && db.mem.Len() > 0 {
		ok = true // Flush needs a running store; Close on failure
		if err := db.Flush(); err != nil {
			db.Close()
			return nil, fmt.Errorf("kv: flushing the log's writes before writing without it: %w", err)
		}
	}
	ok = true
	return db, nil
}

// walSegmentSize sizes log segments to the memtable: about four per memtable,
// between 1 and 64 MiB, so that a flushed memtable frees whole segments.
func walSegmentSize(memtableSize int64) int64 {
	s := memtableSize / 4
	s = max(1<<20, min(64<<20, s))
	return s &^ 4095
}

// replay applies the log's batches with seqs above flushedSeq to the
// memtable, in log order.
func (db *DB) replay(flushedSeq uint64) error {
	it := db.log.Iterator(db.log.FirstSeq())
	for it.Next() {
		walSeq, payload := it.Seq(), it.Payload()
		applied := false
		_, err := decodeBatch(payload, func(seq uint64, kind sstable.Kind, key, value []byte) error {
			if seq <= flushedSeq {
				return nil
			}
			db.mem.Add(seq, kind, key, value)
			db.mem.lastSeq = max(db.mem.lastSeq, seq)
			db.lastSeq = max(db.lastSeq, seq)
			applied = true
			return nil
		})
		if err != nil {
			e := &logEntryError{seq: walSeq, path: filepath.Join(db.dir, walDir), off: -1, err: err}
			if path, off, lerr := db.log.Locate(walSeq); lerr == nil {
				e.path, e.off = path, off
			}
			return e
		}
		if applied {
			db.mem.walLast = walSeq
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("kv: replaying the log: %w", err)
	}
	if db.mem.walLast == 0 && db.log.LastSeq() >= db.log.FirstSeq() && !db.opts.ReadOnly && !db.opts.DisableWAL {
		// Every entry is in a table already (a crash after the flush's
		// manifest, before the log was truncated).
		if err := db.log.TruncateFront(db.log.LastSeq() + 1); err != nil {
			return fmt.Errorf("kv: %w", err)
		}
	}
	return nil
}

// logEntryError is a log entry, intact in the log, whose payload is not a
// batch: damage, found by replay. It unwraps to the decoder's error, is
// ringstore.ErrCorrupt, and errors.As gives it as a
// *ringstore.CorruptError.
type logEntryError struct {
	seq  uint64
	path string // the entry's segment, or the log's directory when off is -1
	off  int64  // the entry's offset in path; -1 when it could not be found
	err  error  // what decodeBatch said
}

func (e *logEntryError) Error() string {
	where := e.path
	if e.off >= 0 {
		where = fmt.Sprintf("%s at offset %d", e.path, e.off)
	}
	return fmt.Sprintf("kv: log entry %d (%s) is not a valid batch: %v", e.seq, where, e.err)
}

func (e *logEntryError) Unwrap() error        { return e.err }
func (e *logEntryError) Is(target error) bool { return target == ringstore.ErrCorrupt }

// As sets a **ringstore.CorruptError target to the entry's segment and
// offset.
func (e *logEntryError) As(target any) bool {
	t, ok := target.(**ringstore.CorruptError)
	if ok {
		*t = &ringstore.CorruptError{Path: e.path, Offset: e.off, What: fmt.Sprintf("log entry %d is not a valid batch: %v", e.seq, e.err)}
	}
	return ok
}

// refuseUnmanaged fails when dir has no manifest but holds tables or a log:
// a store whose MANIFEST was lost or a directory that is not a store, not a
// new one, and opening it as new would remove its tables.
func refuseUnmanaged(dir string) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("kv: %w", err)
	}
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sst") || e.Name() == walDir {
			return fmt.Errorf("kv: %s has no %s but holds %s: not a new store and not one that can be opened (restore its MANIFEST, or open a checkpoint)",
				dir, manifest.FileName, filepath.Join(dir, e.Name()))
		}
	}
	return nil
}

// removeStrays deletes SST files the manifest does not name (outputs of a
// flush or compaction a crash interrupted) and temporary files.
func (db *DB) removeStrays(mv *manifest.Version) error {
	live := map[uint64]bool{}
	for _, lvl := range mv.Levels {
		for _, m := range lvl {
			live[m.Num] = true
		}
	}
	ents, err := os.ReadDir(db.dir)
	if err != nil {
		return fmt.Errorf("kv: %w", err)
	}
	removed := false
	for _, e := range ents {
		name := e.Name()
		stray := strings.HasSuffix(name, ".tmp")
		if base, ok := strings.CutSuffix(name, ".sst"); ok {
			num, err := strconv.ParseUint(base, 10, 64)
			stray = err == nil && !live[num]
			if err == nil && num >= mv.NextFileNum && live[num] {
				return fmt.Errorf("kv: %s: table number %d not below the manifest's next file number %d", filepath.Join(db.dir, name), num, mv.NextFileNum)
			}
		}
		if stray {
			if err := os.Remove(filepath.Join(db.dir, name)); err != nil {
				return fmt.Errorf("kv: removing stray %s: %w", name, err)
			}
			crashfs.Removed(filepath.Join(db.dir, name))
			db.opts.Logf("kv: removed %s, left by an interrupted flush or compaction", filepath.Join(db.dir, name))
			removed = true
		}
	}
	if removed {
		return syncDir(db.dir)
	}
	return nil
}

// Close waits for the background flush or compaction in progress, then
// closes the log, the tables, the block cache and the engine. Writes not yet
// flushed stay in the log and are replayed by the next Open; without a log
// (DisableWAL) Close flushes them first. Close fails with
// ErrOpenIterators, changing nothing, while iterators or snapshots are open.
func (db *DB) Close() error {
	if db.opts.DisableWAL && !db.opts.ReadOnly {
		// Without a log the memtable is the only copy of its writes.
		db.mu.Lock()
		closed := db.closed
		db.mu.Unlock()
		if !closed {
			if err := db.Flush(); err != nil && err != ErrClosed {
				return fmt.Errorf("kv: close: flushing the writes no log holds: %w", err)
			}
		}
	}
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		return nil
	}
	if db.iterators > 0 || !db.snapshots.empty() {
		db.mu.Unlock()
		return fmt.Errorf("%w: %d iterators, %d snapshots", ErrOpenIterators, db.iterators, db.snapshots.len())
	}
	db.closed = true
	db.unpublishReadSetLocked()
	db.cond.Broadcast()
	db.mu.Unlock()
	db.bgWG.Wait()
	// Wait for the writes in progress: a leader checks closed before it
	// queues to the log, so once a barrier queued now is at the front no
	// group joins the pipeline after it, and the newest group is applied
	// after all the others.
	w := getWriter(nil)
	db.enqueue(context.Background(), w) // a barrier is never taken into a group: it leads
	last := db.applied
	db.leaveLocked(1)
	db.wmu.Unlock()
	putWriter(w)
	if last != nil {
		<-last
	}
	// Reads run ahead and not waited for hold a read set and are in flight
	// on the engine: finish them before the engine and the tables go.
	db.finishReadAheads()
	return db.closeResources()
}

// closeResources releases whatever Open set up.
func (db *DB) closeResources() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	db.stopCleaner()
	if db.log != nil {
		keep(db.log.Close())
	}
	if db.insertWake != nil { // the log is closed: nothing wakes the inserter again
		close(db.insertWake)
		db.insertDone.Wait()
		db.insertWake = nil
	}
	if db.current != nil {
		db.mu.Lock()
		db.unpublishReadSetLocked()
		db.unrefVersionLocked(db.current)
		db.current = nil
		// Nothing writes or flushes any more: the DB's references go (reads
		// still in flight hold their read sets').
		if db.mem != nil {
			db.mem.unref()
		}
		for _, m := range db.imm {
			m.unref()
		}
		db.imm = nil
		db.mu.Unlock()
	}
	if db.unreserve != nil {
		db.unreserve()
	}
	if db.pool != nil {
		keep(db.pool.Close())
	}
	if db.directArena != nil {
		keep(db.directArena.close())
	}
	if db.compactEng != nil && db.compactEng != db.eng {
		keep(db.compactEng.Close())
	}
	if db.flushEng != nil && db.flushEng != db.eng {
		keep(db.flushEng.Close())
	}
	if db.ownEng && db.eng != nil {
		keep(db.eng.Close())
	}
	if db.lock != nil {
		keep(db.lock.Close())
	}
	if first != nil {
		return fmt.Errorf("kv: close: %w", first)
	}
	return nil
}

// Recovery returns what Open's recovery changed on disk: the torn tail of
// the log it cut, if any (wal.Log.Recovery).
func (db *DB) Recovery() wal.Recovery {
	if db.log == nil {
		return wal.Recovery{}
	}
	return db.log.Recovery()
}

// Dir returns the store's directory.
func (db *DB) Dir() string { return db.dir }

// Options returns the options in effect, defaults filled in.
func (db *DB) Options() Options { return db.opts }

// lockFile takes an exclusive flock on path.
func lockFile(path string) (*os.File, error) {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("kv: %w", err)
	}
	if statErr != nil {
		crashfs.Created(path, 0)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		f.Close()
		if err == unix.EWOULDBLOCK {
			return nil, fmt.Errorf("%w: %s", ErrLocked, path)
		}
		return nil, &os.PathError{Op: "flock", Path: path, Err: err}
	}
	return f, nil
}

// syncDir flushes a directory's entries.
func syncDir(dir string) error { return syncDirVia(dir, nil) }

// syncDirVia flushes dir's entries through eng (durable.Fsync).
func syncDirVia(dir string, eng *ioengine.Engine) error {
	if err := durable.SyncDirVia(dir, eng); err != nil {
		return fmt.Errorf("kv: %w", err)
	}
	return nil
}

// mkdirAll makes dir and its missing parents, each made durable in its
// parent (a store whose directory a crash could take away would lose
// everything acknowledged in it).
func mkdirAll(dir string) error { return durable.MkdirAll(dir, false) }
