// Package crashfs records the changes a program makes to its files, in one
// order, and builds from that record the states a power loss could leave:
// what the crash-state tests of wal and kv recover from.
//
// Recording is off unless a test starts a Recorder: every hook is one
// atomic load then. The code under test reports each change as it makes it
// (Created, Wrote, Synced, Renamed, Removed, Linked, MadeDir, SyncedDir);
// the test adds its own marks (an acknowledgement) in the same order.
//
// # The crash model
//
//   - File data: a write is durable once a sync of its file (fsync,
//     fdatasync: every earlier write of the file) or of the write itself
//     (RWF_DSYNC) returned. A write not durable at the crash is lost, kept,
//     or torn: each of its sectors (512 B or 4 KiB) kept or lost on its own.
//     A file's size is what fallocate set, or the end of the last write kept.
//   - Directories: a create, rename, remove, link or mkdir is durable once
//     a sync of its directory returned after it. Of those not durable at the
//     crash, a prefix (in the order they were made) is kept.
//   - A lost byte reads as zero (as in the space fallocate reserved or past
//     the end of a file, for a file created empty).
package crashfs

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
)

// Op is what an Event did.
type Op uint8

const (
	OpCreate  Op = iota + 1 // a new file at Path, Size bytes (fallocate; 0: empty)
	OpWrite                 // Data written to Path at Off, write ID
	OpSync                  // Path's writes made durable: write ID, or every earlier one (ID 0)
	OpRename                // Path renamed to Path2
	OpRemove                // Path removed
	OpLink                  // Path2 made a hard link of Path
	OpMkdir                 // directory Path made
	OpSyncDir               // directory Path's earlier creates, renames, removes, links and mkdirs made durable
	OpMark                  // the test's own mark (Mark)
)

// Event is one recorded change. Paths are as the program gave them.
type Event struct {
	Op    Op
	Path  string
	Path2 string
	Off   int64
	Size  int64
	Data  []byte
	ID    uint64
	Mark  any
}

// Recorder collects events, safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

var (
	active atomic.Pointer[Recorder]
	ids    atomic.Uint64
)

// Start makes r the recorder of every hook until Stop.
func Start() *Recorder {
	r := &Recorder{}
	active.Store(r)
	return r
}

// Stop ends recording.
func Stop() { active.Store(nil) }

// On reports whether a recorder is started.
func On() bool { return active.Load() != nil }

// Events returns a copy of what was recorded so far.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Mark records the test's own mark m (an acknowledgement) among the
// program's changes.
func (r *Recorder) Mark(m any) { r.add(Event{Op: OpMark, Mark: m}) }

func (r *Recorder) add(e Event) {
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
}

func record(e Event) {
	if r := active.Load(); r != nil {
		r.add(e)
	}
}

// Created records a new file of size bytes.
func Created(path string, size int64) { record(Event{Op: OpCreate, Path: path, Size: size}) }

// Wrote records data written to path at off and returns the write's ID
// (for a Synced of this write alone); 0 when not recording.
func Wrote(path string, off int64, data []byte) uint64 {
	if !On() {
		return 0
	}
	id := ids.Add(1)
	record(Event{Op: OpWrite, Path: path, Off: off, Data: append([]byte(nil), data...), ID: id})
	return id
}

// Synced records that write id of path (0: every earlier write of path) is
// durable.
func Synced(path string, id uint64) { record(Event{Op: OpSync, Path: path, ID: id}) }

// Renamed records a rename.
func Renamed(from, to string) { record(Event{Op: OpRename, Path: from, Path2: to}) }

// Removed records a removal of a file.
func Removed(path string) { record(Event{Op: OpRemove, Path: path}) }

// Linked records a hard link to of from.
func Linked(from, to string) { record(Event{Op: OpLink, Path: from, Path2: to}) }

// MadeDir records a new directory.
func MadeDir(dir string) { record(Event{Op: OpMkdir, Path: dir}) }

// SyncedDir records a sync of a directory.
func SyncedDir(dir string) { record(Event{Op: OpSyncDir, Path: dir}) }

// State is the files and directories a crash left, by path.
type State struct {
	Files map[string]*File
	Dirs  map[string]bool
}

// File is a file's content in a State: its size and the bytes written,
// the rest zeros.
type File struct {
	Size   int64
	Chunks []Chunk
}

// Chunk is bytes at an offset of a File.
type Chunk struct {
	Off  int64
	Data []byte
}

type object struct {
	created int64
	writes  []*write
}

type write struct {
	ev      *Event
	durable bool
}

// Build returns a state a crash after the first crashAt events could leave,
// with the choices for what was not durable drawn from rng and sectors of
// sector bytes.
func Build(events []Event, crashAt int, rng *rand.Rand, sector int) State {
	events = events[:crashAt]
	// Which directory operations are durable: a sync of their directory
	// after them.
	lastDirSync := map[string]int{}
	for i, e := range events {
		if e.Op == OpSyncDir {
			lastDirSync[filepath.Clean(e.Path)] = i
		}
	}
	synced := func(path string, i int) bool {
		j, ok := lastDirSync[filepath.Dir(filepath.Clean(path))]
		return ok && j > i
	}
	// A link is an entry in its new path's directory; a rename changes
	// both directories; the rest change their path's.
	durableDirOp := func(i int, e Event) bool {
		switch e.Op {
		case OpLink:
			return synced(e.Path2, i)
		case OpRename:
			return synced(e.Path, i) && synced(e.Path2, i)
		}
		return synced(e.Path, i)
	}
	var pending int
	for i, e := range events {
		switch e.Op {
		case OpCreate, OpRename, OpRemove, OpLink, OpMkdir:
			if !durableDirOp(i, e) {
				pending++
			}
		}
	}
	keepPending := rng.IntN(pending + 1) // a prefix of the ones not durable

	// Replay: the live namespace (as the program saw it) tells which
	// object each write and sync touched; the crash namespace applies only
	// the kept directory operations.
	live := map[string]*object{}
	crash := map[string]*object{}
	dirs := map[string]bool{}
	var objs []*object
	seen := 0
	for i := range events {
		e := &events[i]
		p, p2 := filepath.Clean(e.Path), filepath.Clean(e.Path2)
		kept := false
		switch e.Op {
		case OpCreate, OpRename, OpRemove, OpLink, OpMkdir:
			kept = durableDirOp(i, *e)
			if !kept {
				kept = seen < keepPending
				seen++
			}
		}
		switch e.Op {
		case OpCreate:
			o := &object{created: e.Size}
			objs = append(objs, o)
			live[p] = o
			if kept {
				crash[p] = o
			}
		case OpRename:
			o := live[p]
			delete(live, p)
			live[p2] = o
			if kept && crash[p] == o {
				delete(crash, p)
				crash[p2] = o
			}
		case OpRemove:
			o := live[p]
			delete(live, p)
			if kept && crash[p] == o {
				delete(crash, p)
			}
		case OpLink:
			o := live[p]
			live[p2] = o
			if kept && crash[p] == o && o != nil {
				crash[p2] = o
			}
		case OpMkdir:
			if kept {
				dirs[p] = true
			}
		case OpWrite:
			if o := live[p]; o != nil {
				o.writes = append(o.writes, &write{ev: e})
			}
		case OpSync:
			if o := live[p]; o != nil {
				for _, w := range o.writes {
					if e.ID == 0 || w.ev.ID == e.ID {
						w.durable = true
					}
				}
			}
		}
	}
	contents := map[*object]*File{}
	for _, o := range objs {
		f := &File{Size: o.created}
		for _, w := range o.writes {
			data, off := w.ev.Data, w.ev.Off
			switch {
			case w.durable:
				f.add(off, data)
			default:
				switch rng.IntN(3) {
				case 0: // lost
				case 1:
					f.add(off, data)
				case 2: // torn: each sector on its own
					for s := off / int64(sector) * int64(sector); s < off+int64(len(data)); s += int64(sector) {
						from, to := max(s, off), min(s+int64(sector), off+int64(len(data)))
						if rng.IntN(2) == 0 {
							f.add(from, data[from-off:to-off])
						}
					}
				}
			}
		}
		contents[o] = f
	}
	st := State{Files: map[string]*File{}, Dirs: dirs}
	for p, o := range crash {
		st.Files[p] = contents[o]
	}
	return st
}

func (f *File) add(off int64, data []byte) {
	f.Chunks = append(f.Chunks, Chunk{Off: off, Data: data})
	f.Size = max(f.Size, off+int64(len(data)))
}

// Materialize writes the state under root: a path below base becomes the
// same path below root (others are skipped). Files are sparse: the zeros
// between chunks are holes.
func (s State) Materialize(base, root string) error {
	rel := func(p string) (string, bool) {
		r, err := filepath.Rel(base, p)
		if err != nil || r == ".." || len(r) > 2 && r[:3] == "../" {
			return "", false
		}
		return filepath.Join(root, r), true
	}
	var dirs []string
	for d := range s.Dirs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	for _, d := range dirs {
		if p, ok := rel(d); ok {
			if err := os.MkdirAll(p, 0o755); err != nil {
				return err
			}
		}
	}
	for path, f := range s.Files {
		p, ok := rel(path)
		if !ok {
			continue
		}
		if _, err := os.Stat(filepath.Dir(p)); err != nil {
			continue // its directory did not survive
		}
		fh, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			return err
		}
		if err := fh.Truncate(f.Size); err != nil {
			fh.Close()
			return err
		}
		for _, c := range f.Chunks {
			if _, err := fh.WriteAt(c.Data, c.Off); err != nil {
				fh.Close()
				return err
			}
		}
		if err := fh.Close(); err != nil {
			return err
		}
	}
	return nil
}

// Record records e as it is (its Data not copied): for a package with a
// trace of its own that already holds copies.
func Record(e Event) { record(e) }
