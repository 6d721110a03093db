package kv

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/ringstore/ringstore"
	"github.com/ringstore/ringstore/bufpool"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/crashfs"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv/manifest"
	"github.com/ringstore/ringstore/kv/sstable"
)

// numLevels is the number of LSM levels, L0 to L6.
const numLevels = manifest.NumLevels

// table is one open SST file: a descriptor without O_DIRECT for its
// metadata sections (index, filter, properties), whose decoded form the
// DB's metaCache holds or drops (DB.reader), a second descriptor for data
// block reads (O_DIRECT unless Options.BufferedIO) and its FileID in the
// block cache. refs counts the versions that list it (guarded by DB.mu);
// the last unref of an obsolete table queues it for the cleaner goroutine,
// which closes it and removes its file (dropTableLocked).
type table struct {
	meta                      manifest.FileMeta
	path                      string
	mf                        *os.File // metadata reads; immutable until close
	dropMeta                  bool     // drop mf's pages once read (O_DIRECT data reads); immutable
	m                         tableMeta
	data                      *ioengine.File // its requests hold it: close cannot race a read
	fid                       bufpool.FileID // 0 without a block cache
	refs                      int            // guarded by DB.mu
	gone                      bool           // guarded by DB.mu: no longer in the current version; removed at refs 0
	smallestUser, largestUser []byte
}

func tableName(num uint64) string { return fmt.Sprintf("%06d.sst", num) }

// openTable opens the SST of meta in the DB's directory and checks that it is
// the file the manifest describes: its size, and its metadata sections read
// and checked whole. hold keeps the decoded metadata in the metaCache (the
// tables of a store being opened, which its first reads need, and the new
// tables of flushes and compactions while the store serves reads); else the
// first read that needs it loads it again (a store that only writes never
// reads its metadata).
func (db *DB) openTable(meta manifest.FileMeta, hold bool) (*table, error) {
	path := filepath.Join(db.dir, tableName(meta.Num))
	mf, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("kv: table %s: %w", path, err)
	}
	t := &table{meta: meta, path: path, mf: mf, dropMeta: !db.opts.BufferedIO,
		smallestUser: meta.Smallest.UserKey, largestUser: meta.Largest.UserKey}
	if st, err := mf.Stat(); err != nil || uint64(st.Size()) != meta.Size {
		mf.Close()
		if err != nil {
			return nil, fmt.Errorf("kv: table %s: %w", path, err)
		}
		// A table cut short (or grown) is damage: its entries past the
		// shorter length are not what the manifest committed.
		return nil, fmt.Errorf("kv: %w", &ringstore.CorruptError{Path: path, Offset: min(st.Size(), int64(meta.Size)),
			What: fmt.Sprintf("the table is not the file the manifest describes: %d bytes, the manifest says %d", st.Size(), meta.Size)})
	}
	rd, err := t.loadReader()
	if err != nil {
		mf.Close()
		return nil, err
	}
	var osf *os.File
	if db.opts.BufferedIO {
		osf, err = os.Open(path)
	} else {
		osf, err = directio.OpenFile(path, os.O_RDONLY, 0)
	}
	if err != nil {
		mf.Close()
		return nil, fmt.Errorf("kv: table %s: %w", path, err)
	}
	t.data = ioengine.NewFile(osf)
	if db.pool != nil && !db.opts.BufferedIO {
		if t.fid, err = db.pool.Register(t.data, int64(meta.Size), path); err != nil {
			t.data.Close()
			mf.Close()
			return nil, fmt.Errorf("kv: table %s: %w", path, err)
		}
	}
	if hold {
		db.meta.hold(t, rd)
	}
	return t, nil
}

// close releases the table's descriptors, metadata and cache registration.
func (t *table) close(db *DB) error {
	var first error
	db.meta.drop(t)
	if t.fid != 0 {
		if err := db.pool.Unregister(t.fid); err != nil {
			first = err
		}
	}
	if err := t.data.Close(); err != nil && first == nil {
		first = err
	}
	if err := t.mf.Close(); err != nil && first == nil {
		first = err
	}
	return first
}

// containsUser reports whether key lies in the table's user key range.
func (t *table) containsUser(key []byte) bool {
	return bytes.Compare(key, t.smallestUser) >= 0 && bytes.Compare(key, t.largestUser) <= 0
}

// overlaps reports whether the table's user key range meets [lo, hi].
func (t *table) overlaps(lo, hi []byte) bool {
	return bytes.Compare(t.largestUser, lo) >= 0 && bytes.Compare(t.smallestUser, hi) <= 0
}

// version is one immutable state of the LSM tree: the tables of every level.
// L0 is newest first (its tables may overlap); each lower level is sorted by
// key with no two tables overlapping. refs (guarded by DB.mu) counts the DB's
// current pointer and the readers using it.
type version struct {
	levels     [numLevels][]*table
	flushedSeq uint64
	refs       int
}

// ref and unref are called with DB.mu held.
func (v *version) ref() { v.refs++ }

func (db *DB) unrefVersionLocked(v *version) {
	v.refs--
	if v.refs > 0 {
		return
	}
	if v.refs < 0 {
		panic("kv: version unreferenced more than referenced")
	}
	for _, lvl := range v.levels {
		for _, t := range lvl {
			t.refs--
			if t.refs == 0 {
				db.dropTableLocked(t)
			}
		}
	}
}

// dropTableLocked hands a table no version lists any more to the cleaner,
// which closes it and, if it left the current version (it was compacted
// away), removes its file: the read whose release drops the last reference
// does not wait for a close and an unlink, and DB.mu is not held over them.
// Without a cleaner (a read-only store, and from Close on) it does that
// work itself.
func (db *DB) dropTableLocked(t *table) {
	if db.cleanWake == nil {
		if db.retireTable(t, t.gone) {
			db.dirDirty = true
		}
		return
	}
	db.obsolete = append(db.obsolete, obsoleteTable{t: t, remove: t.gone})
	select {
	case db.cleanWake <- struct{}{}:
	default: // a wake-up is pending: the cleaner takes the whole list
	}
}

// obsoleteTable is a table waiting for the cleaner; remove is its gone,
// final once no version lists it.
type obsoleteTable struct {
	t      *table
	remove bool
}

// retireTable closes t and, if remove, removes its file; it reports whether
// the file was removed. Failures are logged: the table is out of every
// version, and Open removes a file the manifest does not name.
func (db *DB) retireTable(t *table, remove bool) bool {
	if err := t.close(db); err != nil {
		db.opts.Logf("kv: closing %s: %v", t.path, err)
	}
	if !remove {
		return false
	}
	if err := os.Remove(t.path); err != nil {
		db.opts.Logf("kv: removing obsolete %s: %v", t.path, err)
		return true // the directory may have changed all the same
	}
	crashfs.Removed(t.path)
	return true
}

// cleanLoop retires the tables dropTableLocked queues until Close closes
// wake (cleanWake, which Close sets to nil first).
func (db *DB) cleanLoop(wake <-chan struct{}) {
	defer db.cleanDone.Done()
	for range wake {
		db.cleanObsolete()
	}
}

// cleanObsolete retires the queued tables, with DB.mu released for the
// closes and unlinks. The next install flushes the directory.
func (db *DB) cleanObsolete() {
	db.mu.Lock()
	ts := db.obsolete
	db.obsolete = nil
	db.cleaning = len(ts) > 0
	hook := db.testBeforeClean
	db.mu.Unlock()
	if len(ts) == 0 {
		return
	}
	if hook != nil {
		hook()
	}
	removed := false
	for _, o := range ts {
		if db.retireTable(o.t, o.remove) {
			removed = true
		}
	}
	db.mu.Lock()
	db.cleaning = false
	db.dirDirty = db.dirDirty || removed
	db.cond.Broadcast()
	db.mu.Unlock()
}

// cleanedLocked reports whether the cleaner has nothing queued or in hand.
func (db *DB) cleanedLocked() bool { return len(db.obsolete) == 0 && !db.cleaning }

// stopCleaner ends the cleaner and retires what it left; later drops
// retire their tables themselves.
func (db *DB) stopCleaner() {
	db.mu.Lock()
	wake := db.cleanWake
	db.cleanWake = nil
	db.mu.Unlock()
	if wake == nil {
		return
	}
	close(wake)
	db.cleanDone.Wait()
	db.cleanObsolete()
}

// newVersion returns a version with the tables of levels, taking a ref on
// each.
func newVersion(levels [numLevels][]*table, flushedSeq uint64) *version {
	v := &version{levels: levels, flushedSeq: flushedSeq}
	for _, lvl := range v.levels {
		for _, t := range lvl {
			t.refs++
		}
	}
	return v
}

// manifest returns the manifest form of v.
func (v *version) manifest(nextFileNum uint64) *manifest.Version {
	m := &manifest.Version{NextFileNum: nextFileNum, FlushedSeq: v.flushedSeq}
	for l, lvl := range v.levels {
		for _, t := range lvl {
			m.Levels[l] = append(m.Levels[l], t.meta)
		}
	}
	return m
}

// levelBytes returns the bytes of level l's tables.
func (v *version) levelBytes(l int) int64 {
	var n int64
	for _, t := range v.levels[l] {
		n += int64(t.meta.Size)
	}
	return n
}

// sortLevel orders a level below L0 by smallest key.
func sortLevel(ts []*table) {
	sort.Slice(ts, func(i, j int) bool {
		return sstable.Compare(ts[i].meta.Smallest, ts[j].meta.Smallest) < 0
	})
}

// findTable returns the table of a sorted level (L1 and below) whose range may
// hold key, or nil.
func findTable(lvl []*table, key []byte) *table {
	i := sort.Search(len(lvl), func(i int) bool { return bytes.Compare(lvl[i].largestUser, key) >= 0 })
	if i == len(lvl) || bytes.Compare(key, lvl[i].smallestUser) < 0 {
		return nil
	}
	return lvl[i]
}
