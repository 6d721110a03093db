package bufpool

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// FileID names a registered file. IDs start at 1 and are never reused by a
// pool, so the zero FileID is never registered.
type FileID uint32

// frameKey is what the frame table is keyed by: a file and a frame index
// in it (frame k covers [k*FrameSize, (k+1)*FrameSize)), packed into one
// word, file above index, so the table and the ghost list are maps of a
// plain integer (the runtime's fast 64-bit map paths). Register keeps
// every file under maxFramesPerFile frames.
type frameKey uint64

// maxFramesPerFile bounds a registered file's size in frames, so that a
// frame index fits the low half of a frameKey.
const maxFramesPerFile = 1 << 32

func makeKey(file FileID, index int64) frameKey { return frameKey(uint64(file)<<32 | uint64(index)) }

func (k frameKey) file() FileID { return FileID(k >> 32) }
func (k frameKey) index() int64 { return int64(k & (maxFramesPerFile - 1)) }

// frameState is where a frame is in its life. Guarded by Pool.mu.
//
//	free ──install──▶ loading ──load ok──▶ resident ──evict──▶ (reused: loading)
//	                     │                    │
//	                 load failed          file unregistered
//	                     ▼                    ▼
//	            detached (out of the table, pinned) ──last Unpin──▶ free
type frameState uint8

const (
	stateFree     frameState = iota // on the free list
	stateLoading                    // in the table and a queue; a load queued or in flight
	stateResident                   // in the table and a queue; Bytes valid
	stateDetached                   // out of the table and queues; pinned; freed at the last unpin
)

func (s frameState) String() string {
	switch s {
	case stateFree:
		return "free"
	case stateLoading:
		return "loading"
	case stateResident:
		return "resident"
	case stateDetached:
		return "detached"
	}
	return fmt.Sprintf("frameState(%d)", uint8(s))
}

// queueID says which eviction list a frame is on. Guarded by Pool.mu.
type queueID uint8

const (
	queueNone      queueID = iota // detached, or being installed
	queueFree                     // Pool.free
	queueProbation                // Pool.probation: S3-FIFO's small FIFO
	queueMain                     // Pool.main: the CLOCK queue
	queueAnnounced                // Pool.announced: out of the hand's reach (want > 0)
)

// ioState says where a frame's load is. Guarded by Pool.mu.
type ioState uint8

const (
	ioNone           ioState = iota
	ioQueuedDemand           // on Pool.demandQ (a Pin waits for it)
	ioQueuedPrefetch         // on Pool.prefetchQ (nobody waits yet)
	ioIssued                 // handed to the engine by an I/O goroutine or by the Pin that loads it
)

// Frame is one FrameSize piece of the pool's arena holding (part of) a
// frame of a registered file. A *Frame returned by Pin is valid until the
// matching Unpin; the pool reuses the Frame, and its memory, afterwards.
//
// Fields marked "guarded by mu" are Pool.mu's; those the holder of a pin
// reads (key, off, n, buf) do not change while the frame is pinned.
type Frame struct {
	pool *Pool  // immutable
	buf  []byte // immutable: FrameSize bytes of the arena
	slot int    // immutable: index in Pool.frames

	pins     atomic.Int32     // pin count; incremented under mu only, decremented anywhere (Unpin)
	detached atomic.Bool      // mirrors state == stateDetached for the lock-free Unpin
	unit0    [1]atomic.Uint64 // units' word when one word covers the frame: in the cache line Pin has just touched
	units    []atomic.Uint64  // immutable header: bit u of word u/64, unit u verified since the last load (CheckRange, MarkChecked; cleared by installLocked)
	note     atomic.Uint64    // SetCheckNote's since the frame's last load (cleared by installLocked)

	// Guarded by mu.
	key      frameKey
	file     *file
	off      int64 // key.index * FrameSize
	n        int   // valid bytes: FrameSize, or fewer for a file's last frame
	state    frameState
	queue    queueID
	home     queueID // queueProbation or queueMain: the policy queue it is on, or goes back to off Pool.announced
	io       ioState
	freq     uint8     // references seen (saturates at maxFreq); S3-FIFO's counter
	want     uint32    // open announcements (Announce calls no Pin or Retract has met)
	prefetch bool      // loaded by Prefetch and not pinned since
	loader   uint64    // the Pin call that installed it (0: Prefetch)
	mark     uint64    // the last Pin call that counted it (once per call)
	loadErr  error     // why the last load failed (state detached)
	async    *LoadCall // while LoadStart's load of it is in flight: the call, which anyone waiting may finish
	loaded   sync.Cond
	links    [2]listLinks // [0]: free/probation/main/announced, [1]: demandQ/prefetchQ
}

// File returns the file the frame belongs to.
func (f *Frame) File() FileID { return f.key.file() }

// Offset returns the file offset of the frame's first byte.
func (f *Frame) Offset() int64 { return f.off }

// Len returns the number of valid bytes, len(f.Bytes()).
func (f *Frame) Len() int { return f.n }

// Bytes returns the frame's valid bytes: FrameSize, or fewer for the file's
// last frame (it stops at the registered file size). The slice points into
// the pool's off-heap arena and is valid only while the frame is pinned:
// after Unpin it may be overwritten by another load at any time, and after
// Close it is unmapped. Do not write to it; every pinner sees the same
// bytes.
func (f *Frame) Bytes() []byte { return f.buf[:f.n:f.n] }

// Checked reports whether every byte of the frame was verified since it
// was loaded (MarkChecked, or CheckRange over all of it): the caller's own
// verification of them (a checksum) need not run again. A frame loaded
// again starts unchecked.
func (f *Frame) Checked() bool {
	for w := range f.wholeWords() {
		if want := f.wholeMask(w); f.units[w].Load()&want != want {
			return false
		}
	}
	return true
}

// MarkChecked records that the caller verified the frame's bytes (call it
// while the frame is pinned, after the check passed).
func (f *Frame) MarkChecked() {
	for w := range f.wholeWords() {
		f.units[w].Or(f.wholeMask(w))
	}
}

// wholeWords is how many words of f.units cover the frame's valid bytes.
func (f *Frame) wholeWords() int { return ((f.n+CheckUnit-1)/CheckUnit + 63) / 64 }

// wholeMask is the bits of word w of f.units that stand for units of the
// frame's valid bytes.
func (f *Frame) wholeMask(w int) uint64 {
	if rest := (f.n+CheckUnit-1)/CheckUnit - w*64; rest < 64 {
		return 1<<rest - 1
	}
	return ^uint64(0)
}

// CheckUnit is the granularity of CheckRange's marks: a frame's bytes are
// checked in pieces of CheckUnit bytes from its start (FrameSize is a
// multiple of it).
const CheckUnit = 4096

// CheckRange calls verify for the bytes [off, off+n) of the frame (offsets
// in f.Bytes()), widened to whole CheckUnits and cut at f.Len(), except
// the units a CheckRange verified since the frame's bytes were loaded: once
// for each run of such units, with the run's offset and bytes. The units of
// a run verify accepts are marked verified; the first error is returned
// and its run stays unmarked; after MarkChecked verify is not called. Call
// it while the frame is pinned. Two pinners may
// verify the same unit at once; both see the same bytes.
//
// A pinner that reads only part of a frame checks only that part, just
// before reading it, instead of the whole frame at its first pin.
func (f *Frame) CheckRange(off, n int, verify func(off int, b []byte) error) error {
	if n <= 0 {
		return nil
	}
	if off < 0 || off+n > f.n {
		panic(fmt.Sprintf("bufpool: CheckRange of [%d, %d) in a frame of %d bytes", off, off+n, f.n)) // a bug in the caller
	}
	lo, hi := off/CheckUnit, (off+n+CheckUnit-1)/CheckUnit
	for u := lo; u < hi; {
		if f.units[u/64].Load()&(1<<(u%64)) != 0 {
			u++
			continue
		}
		end := u + 1
		for end < hi && f.units[end/64].Load()&(1<<(end%64)) == 0 {
			end++
		}
		start, stop := u*CheckUnit, min(end*CheckUnit, f.n)
		if err := verify(start, f.buf[start:stop:stop]); err != nil {
			return err
		}
		for ; u < end; u++ {
			f.units[u/64].Or(1 << (u % 64))
		}
	}
	return nil
}

// CheckNote returns the note a pinner kept with the frame's checked bytes
// (SetCheckNote) since they were loaded, or 0.
func (f *Frame) CheckNote() uint64 { return f.note.Load() }

// SetCheckNote keeps note (0: none) beside the frame's checked bytes until
// they are loaded again: what a pinner learnt of them that the pinners after
// it can use (kv: where a data block's entries lie). Call it while the
// frame is pinned and checked; the note must follow from the bytes alone, so
// that pinners noting the same bytes at once store the same note.
func (f *Frame) SetCheckNote(note uint64) { f.note.Store(note) }

// Unpin releases one pin returned by Pin. Each frame Pin returned must be
// unpinned once per time it was returned. Unpinning a frame that has no
// pins left panics: that is a bug in the caller, and continuing would let
// the pool reuse memory someone still reads. A second Unpin of a frame that
// meanwhile was pinned by another caller cannot be told apart from that
// caller's own Unpin and goes undetected.
//
// Unpin takes no lock unless the frame was detached (its file unregistered)
// or a Pin is waiting for a frame to become evictable.
func (f *Frame) Unpin() {
	n := f.pins.Add(-1)
	if n < 0 {
		f.pins.Add(1)
		panic(fmt.Sprintf("bufpool: Unpin of frame %d (file %d, offset %d) that is not pinned: more Unpins than pins", f.slot, f.key.file(), f.off))
	}
	if n > 0 {
		return
	}
	p := f.pool
	p.pinnedFrames.Add(-1)
	if f.detached.Load() || p.stallWaiters.Load() > 0 {
		p.mu.Lock()
		p.afterUnpinLocked(f)
		p.mu.Unlock()
	}
}

func (f *Frame) String() string {
	return fmt.Sprintf("frame %d (file %d, offset %d, %d bytes)", f.slot, f.key.file(), f.off, f.n)
}

// listLinks are a frame's links on one intrusive list.
type listLinks struct {
	prev, next *Frame
}

// frameList is an intrusive doubly linked list of frames through
// Frame.links[slot]. A frame is on at most one list per slot. The lists of
// a Pool are guarded by Pool.mu.
type frameList struct {
	head, tail *Frame
	n          int
	slot       uint8
}

func (l *frameList) len() int { return l.n }

func (l *frameList) front() *Frame { return l.head }

func (l *frameList) pushBack(f *Frame) {
	k := &f.links[l.slot]
	k.prev, k.next = l.tail, nil
	if l.tail != nil {
		l.tail.links[l.slot].next = f
	} else {
		l.head = f
	}
	l.tail = f
	l.n++
}

func (l *frameList) pushFront(f *Frame) {
	k := &f.links[l.slot]
	k.prev, k.next = nil, l.head
	if l.head != nil {
		l.head.links[l.slot].prev = f
	} else {
		l.tail = f
	}
	l.head = f
	l.n++
}

func (l *frameList) remove(f *Frame) {
	k := &f.links[l.slot]
	if k.prev != nil {
		k.prev.links[l.slot].next = k.next
	} else {
		l.head = k.next
	}
	if k.next != nil {
		k.next.links[l.slot].prev = k.prev
	} else {
		l.tail = k.prev
	}
	k.prev, k.next = nil, nil
	l.n--
}

func (l *frameList) popFront() *Frame {
	f := l.head
	if f != nil {
		l.remove(f)
	}
	return f
}

// rotate moves the front frame to the back (the CLOCK hand's step).
func (l *frameList) rotate() {
	if l.n > 1 {
		l.pushBack(l.popFront())
	}
}

// CopyOut copies [off, off+len(dst)) of a file into dst out of frames that
// cover it, such as the frames Pin returned for a span. The frames must be
// pinned and belong to one file; they may come in any order. It returns an
// error wrapping ErrNotCovered naming the first offset no frame holds.
func CopyOut(dst []byte, frames []*Frame, off int64) error {
	if len(dst) == 0 {
		return nil
	}
	if off < 0 {
		return fmt.Errorf("%w: negative offset %d", ErrNotCovered, off)
	}
	end := off + int64(len(dst))
	var file FileID
	for i, f := range frames {
		if f == nil {
			return fmt.Errorf("%w: frame %d of %d is nil", ErrNotCovered, i, len(frames))
		}
		if i == 0 {
			file = f.File()
		} else if f.File() != file {
			return fmt.Errorf("%w: frame %d belongs to file %d, frame 0 to file %d", ErrNotCovered, i, f.File(), file)
		}
	}
	pos, next := off, 0
	for pos < end {
		// Frames of a span come in order, so the next one usually holds pos.
		found := -1
		for j := 0; j < len(frames); j++ {
			i := (next + j) % len(frames)
			f := frames[i]
			if f.off <= pos && pos < f.off+int64(f.n) {
				found = i
				break
			}
		}
		if found < 0 {
			return fmt.Errorf("%w: offset %d of [%d, %d) in file %d", ErrNotCovered, pos, off, end, file)
		}
		f := frames[found]
		pos += int64(copy(dst[pos-off:], f.buf[pos-f.off:f.n]))
		next = found + 1
	}
	return nil
}
