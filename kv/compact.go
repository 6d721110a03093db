package kv

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ringstore/ringstore/internal/crashfs"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/manifest"
	"github.com/ringstore/ringstore/kv/sstable"
)

// The store's background work runs on two goroutines: flushLoop writes
// full memtables to L0 tables, and compactLoop runs compactions, so that a
// long compaction does not hold back the flush that writers stalled at
// maxImmutable memtables wait for. Both install their results through
// installLocked, one at a time, each editing the version current at that
// moment. The first failure of either turns the store read-only (bgErr)
// and ends both.

// flushLoop flushes immutable memtables, oldest first, until Close or a
// failure.
func (db *DB) flushLoop() {
	defer db.bgWG.Done()
	db.mu.Lock()
	defer db.mu.Unlock()
	for {
		for (len(db.imm) == 0 || db.imm[0].inflight > 0) && !db.closed && db.bgErr == nil {
			db.cond.Wait()
		}
		if db.closed || db.bgErr != nil {
			return
		}
		db.backgroundDoneLocked(db.flushLocked())
	}
}

// compactLoop runs the compactions pickCompactionLocked asks for until
// Close or a failure.
func (db *DB) compactLoop() {
	defer db.bgWG.Done()
	db.mu.Lock()
	defer db.mu.Unlock()
	for {
		var c *compaction
		for !db.closed && db.bgErr == nil {
			if c = db.pickCompactionLocked(); c != nil {
				break
			}
			db.cond.Wait()
		}
		if db.closed || db.bgErr != nil {
			return
		}
		db.compacting = true
		err := db.compactLocked(c)
		db.compacting = false
		db.backgroundDoneLocked(err)
	}
}

// backgroundDoneLocked records the outcome of one flush or compaction.
func (db *DB) backgroundDoneLocked(err error) {
	if err != nil && !db.closed && db.bgErr == nil {
		db.bgErr = err
		db.opts.Logf("kv: background work failed, the store is read-only: %v", err)
	}
	db.cond.Broadcast()
}

// flushLocked writes the oldest immutable memtable to an L0 table, installs
// it and truncates the log. Called with mu held; it is released for the I/O.
func (db *DB) flushLocked() error {
	mt := db.imm[0]
	num := db.nextFileNum
	db.nextFileNum++
	db.flushing = true
	defer func() { db.flushing = false }() // every return holds mu
	db.mu.Unlock()
	start := time.Now()
	var metas []manifest.FileMeta
	var err error
	if mt.Len() > 0 {
		metas, err = db.writeTables(db.flushEng, &memIter{it: mt.NewIterator()}, []uint64{num}, 0, nil)
	}
	var ts []*table
	hold := db.meta.holdNewTables()
	for _, m := range metas {
		var t *table
		if t, err = db.openTable(m, hold); err != nil {
			break
		}
		ts = append(ts, t)
	}
	db.mu.Lock()
	if err != nil {
		return fmt.Errorf("kv: flush: %w", err)
	}
	if err := db.installLocked(db.flushEng, func(cur *version) ([numLevels][]*table, uint64) {
		levels := cur.levels
		levels[0] = append(append([]*table(nil), ts...), cur.levels[0]...)
		return levels, max(cur.flushedSeq, mt.lastSeq)
	}); err != nil {
		return fmt.Errorf("kv: flush: %w", err)
	}
	db.imm = db.imm[1:]
	db.publishReadSetLocked()
	mt.unref() // the DB's; reads still in flight hold their read sets'
	db.stats.flushes.Add(1)
	for _, m := range metas {
		db.stats.flushedBytes.Add(m.Size)
	}
	db.cond.Broadcast()
	if mt.walLast > 0 && db.log != nil {
		db.mu.Unlock()
		err = db.log.TruncateFront(mt.walLast + 1)
		db.mu.Lock()
		if err != nil {
			return fmt.Errorf("kv: flush: truncating the log: %w", err)
		}
	}
	db.stats.flushNanos.Add(uint64(time.Since(start)))
	return nil
}

// installLocked makes a new current version: edit gives its levels and
// flushed seq from the version current now; the manifest is written (and
// flushed) first, with mu released, then the version swapped. Installs run
// one at a time (installing), so no edit is lost to another made from the
// same version. Called with mu held, by the background goroutines, each
// with its own engine for the fsyncs (eng).
func (db *DB) installLocked(eng *ioengine.Engine, edit func(cur *version) ([numLevels][]*table, uint64)) error {
	for db.installing {
		db.cond.Wait()
	}
	db.installing = true
	defer func() {
		db.installing = false
		db.cond.Broadcast()
	}()
	v := newVersion(edit(db.current))
	mv := v.manifest(db.nextFileNum)
	dirDirty := db.dirDirty
	db.dirDirty = false
	db.mu.Unlock()
	err := manifest.WriteVia(db.dir, mv, eng)
	if err == nil && dirDirty {
		err = syncDirVia(db.dir, eng)
	}
	db.mu.Lock()
	if err != nil {
		db.dirDirty = db.dirDirty || dirDirty
		for _, lvl := range v.levels {
			for _, t := range lvl {
				t.refs--
			}
		}
		return err
	}
	inNew := map[*table]bool{}
	for _, lvl := range v.levels {
		for _, t := range lvl {
			inNew[t] = true
		}
	}
	for _, lvl := range db.current.levels {
		for _, t := range lvl {
			if !inNew[t] {
				t.gone = true
			}
		}
	}
	old := db.current
	v.ref()
	db.current = v
	db.unrefVersionLocked(old)
	db.publishReadSetLocked()
	return nil
}

// compaction is a picked compaction: the input tables of level and level+1,
// written to level+1; or, for an intra-L0 merge, a run of the newest L0
// tables (inputs[0]) merged into one L0 table that takes their place.
type compaction struct {
	level   int
	inputs  [2][]*table
	lo, hi  []byte
	trivial bool // move the inputs down without rewriting them
	intraL0 bool // merge L0 tables among themselves
}

// outLevel is the level c's outputs go to.
func (c *compaction) outLevel() int {
	if c.intraL0 {
		return 0
	}
	return c.level + 1
}

// When L0 reaches L0CompactionTrigger tables but they are small next to the
// L1 tables they overlap (small flushes: a store flushed every second, by
// its user, holds far less than a full memtable per table), an L0→L1
// compaction would rewrite all of those L1 bytes for a little new data. L0
// tables are then merged among themselves instead, until L0 holds at least
// 1/intraL0Ratio of the L1 bytes it overlaps; an L0→L1 compaction then
// writes at most (1+intraL0Ratio) times the bytes it brings down.
//
// The merged run is the two newest tables, extended to each older table no
// larger than the run so far, so that a merge rewrites little besides the
// new tables and L0 stays at a few tables. (A simulation of 3,000 flushes
// of 0.5–1.1 MB over 64 MB of L1, trigger 4: 3.2 bytes written by intra-L0
// merges and 2.9 by L0→L1 compactions per byte flushed, against 21 when
// every 4 tables go to L1.) L0
// keeps its order: a flush installed meanwhile is newer than the whole run
// and stays ahead of the output, and the output's number (reserved at the
// pick) is above every input's, below every later flush's. So no flush may
// have its number reserved and not installed at the pick (DB.flushing).
// Once L0 has intraL0MaxTables tables, L0 goes to L1 whatever its size.
const intraL0Ratio = 2

// intraL0MaxTables is the L0 table count from which L0 is compacted into L1
// even when it is small: halfway from L0CompactionTrigger to
// L0StopWritesTrigger, so that writes do not stall on intra-L0 merges.
func (db *DB) intraL0MaxTables() int {
	return (db.opts.L0CompactionTrigger + db.opts.L0StopWritesTrigger + 1) / 2
}

// pickIntraL0Locked returns the intra-L0 merge to run instead of an L0→L1
// compaction, or nil when L0 should go to L1. wait reports that an intra-L0
// merge is due but must wait for the flush in progress to install its
// table (a lower level may compact meanwhile).
func (db *DB) pickIntraL0Locked(v *version) (c *compaction, wait bool) {
	l0 := v.levels[0]
	if db.compactReq > 0 || db.drainingL0Locked(v) || len(l0) < 2 || len(l0) >= db.intraL0MaxTables() {
		return nil, false
	}
	lo, hi := keyRange(l0)
	var b0, b1 int64
	for _, t := range l0 {
		b0 += int64(t.meta.Size)
	}
	for _, t := range overlapping(v.levels[1], lo, hi) {
		b1 += int64(t.meta.Size)
	}
	if b1 <= intraL0Ratio*b0 {
		return nil, false
	}
	run, sum := 2, int64(l0[0].meta.Size+l0[1].meta.Size)
	for run < len(l0) && int64(l0[run].meta.Size) <= sum {
		sum += int64(l0[run].meta.Size)
		run++
	}
	if db.flushing {
		return nil, true
	}
	c = &compaction{level: 0, intraL0: true, inputs: [2][]*table{append([]*table(nil), l0[:run]...)}}
	c.lo, c.hi = keyRange(c.inputs[0])
	return c, false
}

// levelTarget is the target size of level l >= 1.
func (db *DB) levelTarget(l int) int64 {
	t := db.opts.BaseLevelSize
	for i := 1; i < l; i++ {
		t *= int64(db.opts.LevelMultiplier)
	}
	return t
}

// pickCompactionLocked returns the compaction to run next, or nil: L0 when it
// has L0CompactionTrigger tables (into L1, or merged among themselves while
// they are small, pickIntraL0Locked), else the level furthest over its
// target.
func (db *DB) pickCompactionLocked() *compaction {
	if db.opts.DisableAutoCompaction && db.compactReq == 0 {
		return nil
	}
	v := db.current
	trigger := db.opts.L0CompactionTrigger
	if db.compactReq > 0 || db.drainingL0Locked(v) {
		trigger = 1
	}
	if len(v.levels[0]) >= trigger {
		// While an intra-L0 merge waits, a lower level may compact.
		intra, wait := db.pickIntraL0Locked(v)
		if intra != nil {
			return intra
		}
		if !wait {
			c := &compaction{level: 0, inputs: [2][]*table{append([]*table(nil), v.levels[0]...)}}
			c.lo, c.hi = keyRange(c.inputs[0])
			c.inputs[1] = overlapping(v.levels[1], c.lo, c.hi)
			c.trivial = len(c.inputs[1]) == 0 && disjoint(c.inputs[0])
			return c
		}
	}
	best, bestScore := -1, 1.0
	for l := 1; l < numLevels-1; l++ {
		score := float64(v.levelBytes(l)) / float64(db.levelTarget(l))
		if score > bestScore {
			best, bestScore = l, score
		}
	}
	if best < 0 {
		return nil
	}
	lvl := v.levels[best]
	pick := lvl[0]
	for _, t := range lvl {
		if bytes.Compare(t.smallestUser, db.compactPtr[best]) > 0 {
			pick = t
			break
		}
	}
	db.compactPtr[best] = append(db.compactPtr[best][:0], pick.largestUser...)
	c := &compaction{level: best, inputs: [2][]*table{{pick}}, lo: pick.smallestUser, hi: pick.largestUser}
	c.inputs[1] = overlapping(v.levels[best+1], c.lo, c.hi)
	c.trivial = len(c.inputs[1]) == 0
	return c
}

func keyRange(ts []*table) (lo, hi []byte) {
	for i, t := range ts {
		if i == 0 || bytes.Compare(t.smallestUser, lo) < 0 {
			lo = t.smallestUser
		}
		if i == 0 || bytes.Compare(t.largestUser, hi) > 0 {
			hi = t.largestUser
		}
	}
	return lo, hi
}

func overlapping(lvl []*table, lo, hi []byte) []*table {
	var out []*table
	for _, t := range lvl {
		if t.overlaps(lo, hi) {
			out = append(out, t)
		}
	}
	return out
}

// disjoint reports whether no two tables' user key ranges meet.
func disjoint(ts []*table) bool {
	s := append([]*table(nil), ts...)
	sortLevel(s)
	for i := 1; i < len(s); i++ {
		if bytes.Compare(s[i-1].largestUser, s[i].smallestUser) >= 0 {
			return false
		}
	}
	return true
}

// compactLocked runs c and installs its result. Called with mu held; it is
// released for the I/O.
func (db *DB) compactLocked(c *compaction) error {
	v := db.current
	out := c.outLevel()
	drop := map[*table]bool{}
	for _, in := range c.inputs {
		for _, t := range in {
			drop[t] = true
		}
	}
	keep := func(lvl []*table) []*table {
		var r []*table
		for _, t := range lvl {
			if !drop[t] {
				r = append(r, t)
			}
		}
		return r
	}
	// The result replaces the inputs in the version current at install:
	// flushes may have added L0 tables meanwhile (newer than every input,
	// so they stay above the outputs); only this goroutine changes the
	// levels below L0 and takes tables out of L0.
	replace := func(outputs []*table) func(cur *version) ([numLevels][]*table, uint64) {
		return func(cur *version) ([numLevels][]*table, uint64) {
			levels := cur.levels
			if c.intraL0 {
				// The output takes the place of the run: after the
				// tables flushed since the pick, before the older ones.
				var l0 []*table
				placed := false
				for _, t := range cur.levels[0] {
					if drop[t] {
						if !placed {
							l0 = append(l0, outputs...)
							placed = true
						}
						continue
					}
					l0 = append(l0, t)
				}
				levels[0] = l0
				return levels, cur.flushedSeq
			}
			levels[c.level] = keep(cur.levels[c.level])
			levels[out] = append(keep(cur.levels[out]), outputs...)
			sortLevel(levels[out])
			return levels, cur.flushedSeq
		}
	}
	if c.trivial {
		if err := db.installLocked(db.compactEng, replace(c.inputs[0])); err != nil {
			return fmt.Errorf("kv: compaction (move L%d to L%d): %w", c.level, out, err)
		}
		db.stats.trivialMoves.Add(1)
		return nil
	}
	// Versions older than the oldest snapshot (or open read ahead) are
	// needed by nobody once a newer one (itself at or below it) exists.
	smallestSnap := db.visible.Load()
	for _, l := range []*snapshotList{&db.snapshots, &db.aheadSnaps} {
		if s := l.oldest(); s != 0 && s < smallestSnap {
			smallestSnap = s
		}
	}
	// An intra-L0 merge has older L0 tables and the levels below under it.
	bottom := !c.intraL0
	for l := out + 1; l < numLevels; l++ {
		if len(overlapping(v.levels[l], c.lo, c.hi)) > 0 {
			bottom = false
		}
	}
	var inBytes uint64
	var nums []uint64
	for _, in := range c.inputs {
		for _, t := range in {
			inBytes += t.meta.Size
		}
	}
	// Enough file numbers for the outputs at TargetFileSize, with room.
	for i := uint64(0); i < inBytes/uint64(db.opts.TargetFileSize)+2; i++ {
		nums = append(nums, db.nextFileNum)
		db.nextFileNum++
	}
	v.ref()
	hook := db.testInCompaction
	db.mu.Unlock()
	if hook != nil {
		hook()
	}
	start := time.Now()
	// L0's inputs overlap: each is an input of the merge. A lower level's
	// are sorted and disjoint: one concatenated input, walked a table at a
	// time.
	m := &mergingIter{}
	var closers []interface{ close() }
	for i, in := range c.inputs {
		if c.level+i == 0 {
			for _, t := range in {
				ti := newCompactionIter(db, t)
				closers = append(closers, ti)
				m.all = append(m.all, ti)
			}
		} else if len(in) > 0 {
			li := &levelIter{db: db, ts: in, compaction: true}
			closers = append(closers, li)
			m.all = append(m.all, li)
		}
	}
	f := &compactionFilter{in: m, smallestSnap: smallestSnap, bottom: bottom}
	metas, err := db.writeTables(db.compactEng, f, nums, out, func() bool {
		db.mu.Lock()
		defer db.mu.Unlock()
		return db.closed
	})
	for _, cl := range closers {
		cl.close()
	}
	var ts []*table
	hold := db.meta.holdNewTables()
	for _, meta := range metas {
		if err != nil {
			break
		}
		var t *table
		if t, err = db.openTable(meta, hold); err == nil {
			ts = append(ts, t)
		}
	}
	db.mu.Lock()
	db.unrefVersionLocked(v)
	if err != nil {
		for _, t := range ts {
			t.close(db)
		}
		if err == errCompactionAborted {
			return nil
		}
		return fmt.Errorf("kv: compaction L%d→L%d: %w", c.level, out, err)
	}
	if err := db.installLocked(db.compactEng, replace(ts)); err != nil {
		return fmt.Errorf("kv: compaction L%d→L%d: %w", c.level, out, err)
	}
	db.stats.compactions.Add(1)
	db.stats.compactedIn.Add(inBytes)
	lc := &db.stats.byLevel[out]
	lc.count.Add(1)
	lc.in.Add(inBytes)
	for _, meta := range metas {
		db.stats.compactedOut.Add(meta.Size)
		lc.out.Add(meta.Size)
	}
	db.stats.compactNanos.Add(uint64(time.Since(start)))
	return nil
}

var errCompactionAborted = fmt.Errorf("compaction aborted by Close")

// compactionFilter drops what no reader can see: a version shadowed by a
// newer one at or below the oldest snapshot, and, at the bottom of the tree,
// a tombstone at or below it.
type compactionFilter struct {
	in           internalIter
	smallestSnap uint64
	bottom       bool
	started      bool
	lastUser     []byte
	haveLast     bool
	lastSeq      uint64 // seq of the previous version of lastUser
}

func (f *compactionFilter) seekGE(key []byte) bool {
	f.started = true
	if !f.in.seekGE(key) {
		return false
	}
	return f.settle()
}

func (f *compactionFilter) next() bool {
	if !f.in.next() {
		return false
	}
	return f.settle()
}

// settle advances past dropped entries.
func (f *compactionFilter) settle() bool {
	for {
		k := f.in.key()
		if !f.haveLast || !bytes.Equal(k.UserKey, f.lastUser) {
			f.lastUser = append(f.lastUser[:0], k.UserKey...)
			f.haveLast = true
			f.lastSeq = sstable.MaxSeq + 1
		}
		shadowed := f.lastSeq <= f.smallestSnap
		f.lastSeq = k.Seq
		dropTomb := k.Kind == sstable.KindDelete && k.Seq <= f.smallestSnap && f.bottom
		if !shadowed && !dropTomb {
			return true
		}
		if !f.in.next() {
			return false
		}
	}
}

func (f *compactionFilter) key() sstable.InternalKey { return f.in.key() }
func (f *compactionFilter) value() []byte            { return f.in.value() }
func (f *compactionFilter) err() error               { return f.in.err() }

// writeTables writes the entries of it into new tables numbered from nums,
// cutting a new table at TargetFileSize (between user keys, so no user key
// spans two tables of a level), fsyncs them and the directory, and returns
// their metadata. level is recorded in the metadata. aborted, if set, is
// polled between tables.
func (db *DB) writeTables(eng *ioengine.Engine, it internalIter, nums []uint64, level int, aborted func() bool) ([]manifest.FileMeta, error) {
	var metas []manifest.FileMeta
	var created []string
	fail := func(err error) ([]manifest.FileMeta, error) {
		for _, p := range created {
			os.Remove(p)
			crashfs.Removed(p)
		}
		return nil, err
	}
	ok := it.seekGE(nil)
	for ok {
		if len(metas) == len(nums) {
			return fail(fmt.Errorf("kv: more output tables than the %d numbers reserved", len(nums)))
		}
		if aborted != nil && aborted() {
			return fail(errCompactionAborted)
		}
		num := nums[len(metas)]
		path := filepath.Join(db.dir, tableName(num))
		tf, err := createTable(path, eng, db.opts.BufferedIO)
		if err != nil {
			return fail(fmt.Errorf("kv: %w", err))
		}
		created = append(created, path)
		w, err := sstable.NewWriter(tf, sstable.Options{BlockSize: db.opts.BlockSize, BloomBitsPerKey: db.opts.BloomBitsPerKey})
		if err != nil {
			tf.close()
			return fail(err)
		}
		var prev []byte
		for ok {
			k := it.key()
			if level > 0 && tf.n >= db.opts.TargetFileSize && !bytes.Equal(k.UserKey, prev) {
				break
			}
			if err := w.Add(k, it.value()); err != nil {
				tf.close()
				return fail(fmt.Errorf("kv: writing %s: %w", path, err))
			}
			prev = append(prev[:0], k.UserKey...)
			ok = it.next()
		}
		if err := it.err(); err != nil {
			tf.close()
			return fail(err)
		}
		meta, err := w.Finish()
		if err == nil {
			err = tf.sync()
		}
		if cerr := tf.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fail(fmt.Errorf("kv: writing %s: %w", path, err))
		}
		metas = append(metas, manifest.FileMeta{Num: num, Size: meta.Size, Smallest: meta.Smallest, Largest: meta.Largest,
			MaxSeq: meta.MaxSeq, Entries: meta.Entries})
	}
	if err := it.err(); err != nil {
		return fail(err)
	}
	if len(metas) > 0 {
		if err := syncDirVia(db.dir, eng); err != nil {
			return fail(err)
		}
	}
	return metas, nil
}

// Compact runs compactions until none is needed (every level within its
// target, L0 empty) and waits for them, even with DisableAutoCompaction,
// and for the removal of the tables they replaced that no read holds.
func (db *DB) Compact() error {
	if err := db.Flush(); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.compactReq++
	defer func() { db.compactReq-- }()
	db.cond.Broadcast()
	for {
		if err := db.stoppedLocked(); err != nil {
			return err
		}
		if !db.compacting && len(db.imm) == 0 && db.pickCompactionPeekLocked() && db.cleanedLocked() {
			return nil
		}
		db.cond.Wait()
	}
}

// WaitForCompactions returns once no compaction runs and none is due: L0
// holds fewer than L0CompactionTrigger tables and every level is within its
// target, the state the background compactions keep when they keep up; and
// the tables they replaced that no read holds are removed. A
// store that has just taken a bulk load (a restore) calls it to pay the
// load's compaction debt before it serves reads. Unlike Compact it forces
// nothing, so other writers' flushes keep the usual triggers and the wait
// ends whenever the compactions catch up. With DisableAutoCompaction
// nothing runs by itself and it returns at once. ctx ends the wait early
// with its error.
func (db *DB) WaitForCompactions(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() {
		db.mu.Lock()
		db.cond.Broadcast()
		db.mu.Unlock()
	})
	defer stop()
	db.mu.Lock()
	defer db.mu.Unlock()
	for {
		if err := db.stoppedLocked(); err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if db.opts.DisableAutoCompaction || (!db.compacting && !db.compactionDueLocked() && db.cleanedLocked()) {
			return nil
		}
		db.cond.Wait()
	}
}

// DrainL0 compacts every table L0 holds now into L1 (and so on down while
// a level is over its target) and waits for it, as WaitForCompactions does.
// Tables flushed after the call keep the usual triggers. A store that has
// just taken a bulk load calls it so that the load's L0 tables, which the
// triggers would leave in L0 for the next flushes to push into L1 while
// reads are served, are merged before. It returns at once with
// DisableAutoCompaction (use Compact).
func (db *DB) DrainL0(ctx context.Context) error {
	db.mu.Lock()
	if l0 := db.current.levels[0]; len(l0) > 0 {
		// L0 is newest first; every table is numbered below nextFileNum.
		db.drainL0 = max(db.drainL0, db.nextFileNum-1)
		db.cond.Broadcast()
	}
	db.mu.Unlock()
	return db.WaitForCompactions(ctx)
}

// drainingL0Locked reports whether L0 still holds a table that DrainL0
// asked to move into L1.
func (db *DB) drainingL0Locked(v *version) bool {
	l0 := v.levels[0]
	return len(l0) > 0 && l0[len(l0)-1].meta.Num <= db.drainL0
}

// compactionDueLocked reports whether the background compactions have work:
// L0 at its trigger or a level over its target (what pickCompactionLocked
// looks at, without moving its round-robin pointers).
func (db *DB) compactionDueLocked() bool {
	v := db.current
	return len(v.levels[0]) >= db.opts.L0CompactionTrigger || db.drainingL0Locked(v) || db.levelOverTarget(v)
}

// levelOverTarget reports whether a level of v below L0 holds more than
// its target.
func (db *DB) levelOverTarget(v *version) bool {
	for l := 1; l < numLevels-1; l++ {
		if v.levelBytes(l) > db.levelTarget(l) {
			return true
		}
	}
	return false
}

// stoppedLocked returns what ends a wait for the background work: the
// store's failure, or ErrClosed.
func (db *DB) stoppedLocked() error {
	switch {
	case db.bgErr != nil:
		return db.bgErr
	case db.closed:
		return ErrClosed
	}
	return nil
}

// pickCompactionPeekLocked reports whether nothing is left to compact for a
// Compact call (without changing the round-robin pointers).
func (db *DB) pickCompactionPeekLocked() bool {
	return len(db.current.levels[0]) == 0 && !db.levelOverTarget(db.current)
}
