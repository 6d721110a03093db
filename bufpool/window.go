package bufpool

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Window returns the bytes [off, off+n) of file id as one slice of the
// file's window (Options.Windows): the frames covering it, wherever they
// lie in the arena, in file order, without a copy.
//
// frames are frames of that file the caller holds pinned (as Pin returned
// them); the caller may read only the parts of the slice that lie in them
// and only until it unpins them. Other parts may be unmapped (reading them
// kills the process) or show whatever their slot holds now. The slice is
// read-only: writing to it kills the process.
//
// It fails, wrapping ErrNotWindowed, when the pool has no windows, the file
// has none, or a frame's mapping failed (Stats.WindowFailures); the caller
// then copies (CopyOut) instead. A range outside the file's window wraps
// ErrNotCovered.
func (p *Pool) Window(id FileID, off, n int64, frames []*Frame) ([]byte, error) {
	if p.win == nil {
		return nil, fmt.Errorf("%w: the pool was made without Options.Windows", ErrNotWindowed)
	}
	return p.win.slice(id, off, n, frames)
}

// MaxWindowFrames is the most frames a pool with Options.Windows may have.
// Each frame mapped into a window can cost the process two kernel memory
// mappings (the frame and the reserved gap after it), and Linux allows
// 65,530 by default (vm.max_map_count).
const MaxWindowFrames = 1 << 14

// windows maps each registered file's resident frames into a range of
// addresses of its own, in file order, so that a run of consecutive
// frames can be read as one slice (Pool.Window) wherever their frames lie
// in the arena:
//
//	arena (a memfd, MAP_SHARED)   │ slot 0 │ slot 1 │ slot 2 │ slot 3 │
//	                                   ▲        ▲                 ▲
//	file 7's window (PROT_NONE    ┌────┼────────┼────┐            │
//	reserved, size rounded up to  │ k=0│ k=1    │ k=2│ k=3 ───────┘
//	FrameSize)                    │  ──┘  (gap) └────┼─ slot 1 at k=2
//	                              └──────────────────┘
//
// A frame's load maps its slot, read-only, at its key's place in its file's
// window (window base + index × FrameSize) after the read and before the
// frame turns resident, so a Pin never returns a frame whose place is not
// mapped yet. Where the slot is still mapped at its earlier place (no later
// load of that key has mapped another slot there), the load moves that
// mapping to the new place and turns the earlier place back into a
// reserved gap; otherwise it maps the slot afresh. Every address of a
// window is always either a gap or a mapping of a slot, never a hole. A place whose key is no longer in the table may
// thus still show its old slot, whatever that now holds; no one reads it,
// because Window is only for frames the caller holds pinned.
//
// The mapping syscalls run on the loading goroutine outside Pool.mu, under
// windows.mu. Lock order: Pool.mu, then windows.mu.
//
// If a mapping call fails (out of mappings: ENOMEM), the frame is not
// windowed and Window fails for it (ErrNotWindowed); the caller copies
// instead. If
// restoring a reserved gap fails, the address space of a window may have a
// hole another mapping could take, so the pool stops using windows
// altogether and never unmaps them (broken).
type windows struct {
	memfd     int // the arena's backing file; immutable
	frameSize int // immutable

	mu     sync.Mutex
	bases  map[FileID]unsafe.Pointer // guarded by mu: window base of each file that has one
	sizes  map[FileID]int64          // guarded by mu: its length, a multiple of FrameSize
	at     []frameKey                // guarded by mu: by slot, the key whose place the slot is mapped at (0: none); a resident frame is windowed when it is its own key
	by     map[frameKey]int32        // guarded by mu: key → the slot mapped at its place
	broken bool                      // guarded by mu: a gap could not be restored; windows are off for good
	noMove bool                      // guarded by mu: the kernel refused to move a mapping (EINVAL); map afresh instead
	maps   uint64                    // guarded by mu: frames mapped (moved, mapped afresh, or left in place)
	moves  uint64                    // guarded by mu: of maps, those moved from the slot's earlier place
	fails  uint64                    // guarded by mu: frames left unmapped because a mapping call failed

	// testFault, when set (tests only, before any load), runs before each
	// mapping call ("map" a frame at key's place, "move" a slot's mapping
	// to key's place, "gap" to turn key's place back);
	// an error it returns is that call's, as if the kernel had refused it.
	testFault func(op string, key frameKey) error
}

// call runs a mapping call for key unless testFault fails it first.
func (w *windows) call(op string, key frameKey, fn func() error) error {
	if w.testFault != nil {
		if err := w.testFault(op, key); err != nil {
			return err
		}
	}
	return fn()
}

// windowLoad is what a loader needs to map one frame after its read.
type windowLoad struct {
	slot int
	key  frameKey
	ok   bool // the read succeeded
}

// sharedArena makes the arena of a pool with windows; tests replace it to
// see a refusal.
var sharedArena = newSharedArena

func newWindows(memfd, frames, frameSize int) *windows {
	return &windows{memfd: memfd, frameSize: frameSize, bases: make(map[FileID]unsafe.Pointer), sizes: make(map[FileID]int64),
		at: make([]frameKey, frames), by: make(map[frameKey]int32, frames)}
}

// placeLocked returns the address of key's place in its file's window,
// nil when the file has none. w.mu held.
func (w *windows) placeLocked(key frameKey) unsafe.Pointer {
	base := w.bases[key.file()]
	if base == nil {
		return nil
	}
	return unsafe.Add(base, key.index()*int64(w.frameSize))
}

// reserve gives file id a window of size bytes (rounded up to FrameSize).
// Without one (windows broken, or the reservation failed) its frames are
// simply never windowed. Called under Pool.mu.
func (w *windows) reserve(id FileID, size int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken || size == 0 {
		return
	}
	n := (size + int64(w.frameSize) - 1) / int64(w.frameSize) * int64(w.frameSize)
	base, err := reserveRange(n)
	if err != nil {
		w.fails++
		return
	}
	w.bases[id] = base
	w.sizes[id] = n
}

// release unmaps file id's window. The caller guarantees that no frame of
// the file is pinned or loading. Called under Pool.mu.
func (w *windows) release(id FileID) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	base := w.bases[id]
	if base == nil {
		return nil
	}
	for slot, k := range w.at {
		if k != 0 && k.file() == id {
			w.at[slot] = 0
			delete(w.by, k)
		}
	}
	delete(w.bases, id)
	n := w.sizes[id]
	delete(w.sizes, id)
	if w.broken {
		return nil // a hole may hold someone else's mapping now: leave it all
	}
	return unmapRange(base, n)
}

// releaseAll unmaps every window (Pool.Close, nothing pinned or loading).
func (w *windows) releaseAll() error {
	w.mu.Lock()
	ids := make([]FileID, 0, len(w.bases))
	for id := range w.bases {
		ids = append(ids, id)
	}
	w.mu.Unlock()
	var first error
	for _, id := range ids {
		if err := w.release(id); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// slice returns [off, off+n) of file id's window, if frames are all
// windowed frames of that file covering parts of it.
func (w *windows) slice(id FileID, off, n int64, frames []*Frame) ([]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	base := w.bases[id]
	switch {
	case w.broken:
		return nil, fmt.Errorf("%w: a mapping call failed and the pool stopped using windows", ErrNotWindowed)
	case base == nil:
		return nil, fmt.Errorf("%w: file %d has no window", ErrNotWindowed, id)
	case off < 0 || n < 0 || off+n > w.sizes[id]:
		return nil, fmt.Errorf("%w: range [%d, %d) is outside file %d's window of %d bytes", ErrNotCovered, off, off+n, id, w.sizes[id])
	}
	for _, f := range frames {
		if f.key.file() != id || w.at[f.slot] != f.key {
			return nil, fmt.Errorf("%w: %s is not mapped in its file's window", ErrNotWindowed, f)
		}
	}
	return unsafe.Slice((*byte)(unsafe.Add(base, off)), n), nil
}

// mapLoads maps the frames of finished loads at their places. Called by the
// loader without Pool.mu, before completeLocked publishes the frames.
//
// A slot still mapped at its earlier place is moved from there to the new
// one (moveSlotLocked): the page tables go with it, so the new place needs
// no faults. A slot mapped nowhere is mapped afresh. A slot reloaded with
// the key it is mapped at stays where it is.
func (w *windows) mapLoads(loads []windowLoad) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, l := range loads {
		if w.broken {
			return
		}
		if l.ok && w.shownLocked(l.slot) == l.key {
			w.maps++ // its place shows the slot already
			continue
		}
		addr := w.placeLocked(l.key)
		if l.ok && addr != nil {
			if moved, ok := w.moveSlotLocked(l.slot, l.key, addr); moved || !ok {
				if moved {
					w.mappedLocked(l.slot, l.key)
				}
				continue
			}
		}
		// The slot's earlier place goes first, so that the slot is mapped
		// at its own key only once this load has mapped it there.
		if !w.unmapSlotLocked(l.slot) || !l.ok || addr == nil {
			continue
		}
		if err := w.call("map", l.key, func() error { return mapFrame(addr, w.frameSize, w.memfd, int64(l.slot)*int64(w.frameSize)) }); err != nil {
			w.fails++
			// A failed MAP_FIXED may have removed what was there: put the
			// gap back, and if even that fails give up on windows.
			if w.call("gap", l.key, func() error { return mapGap(addr, w.frameSize) }) != nil {
				w.broken = true
			}
			if s, ok := w.by[l.key]; ok {
				w.at[s] = 0
				delete(w.by, l.key)
			}
			continue
		}
		w.mappedLocked(l.slot, l.key)
	}
}

// shownLocked returns the key at whose place slot is mapped, 0 if none.
func (w *windows) shownLocked(slot int) frameKey {
	k := w.at[slot]
	if s, ok := w.by[k]; k == 0 || !ok || int(s) != slot {
		return 0
	}
	return k
}

// mappedLocked records that slot is mapped at key's place, where it
// replaced any other slot's stale mapping.
func (w *windows) mappedLocked(slot int, key frameKey) {
	if s, ok := w.by[key]; ok && int(s) != slot {
		w.at[s] = 0
	}
	w.at[slot], w.by[key] = key, int32(slot)
	w.maps++
}

// moveSlotLocked moves slot's mapping from its earlier place, if it is
// still mapped there, to addr (key's place) and turns the earlier place
// back into a gap. moved reports that the slot is now mapped at addr; ok
// false that windows broke. Where the slot has no earlier place, or the
// kernel refuses the move (it then changed nothing at the earlier place;
// EINVAL, a kernel older than 5.13, turns moves off), it returns moved
// false and ok true, and the caller maps the slot afresh.
func (w *windows) moveSlotLocked(slot int, key frameKey, addr unsafe.Pointer) (moved, ok bool) {
	old := w.shownLocked(slot)
	if w.noMove || old == 0 {
		return false, true
	}
	from := w.placeLocked(old)
	if from == nil {
		return false, true
	}
	if err := w.call("move", key, func() error { return moveFrame(from, addr, w.frameSize) }); err != nil {
		if errors.Is(err, unix.EINVAL) {
			w.noMove = true
		}
		return false, true
	}
	w.at[slot] = 0
	delete(w.by, old)
	w.moves++
	if err := w.call("gap", old, func() error { return mapGap(from, w.frameSize) }); err != nil {
		w.broken = true
		return true, false
	}
	return true, true
}

// unmapSlotLocked turns slot's earlier place, if it still shows the slot,
// back into a gap. It reports false if windows broke.
func (w *windows) unmapSlotLocked(slot int) bool {
	old := w.at[slot]
	if old == 0 {
		return true
	}
	w.at[slot] = 0
	if s, ok := w.by[old]; !ok || int(s) != slot {
		return true
	}
	delete(w.by, old)
	addr := w.placeLocked(old) // released windows' keys were cleared
	if addr == nil {
		return true
	}
	if err := w.call("gap", old, func() error { return mapGap(addr, w.frameSize) }); err != nil {
		w.broken = true
		return false
	}
	return true
}
