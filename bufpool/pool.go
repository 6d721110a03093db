package bufpool

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

// Pool is a buffer pool of fixed-size frames over registered files, read
// with O_DIRECT through an ioengine.Engine. Its methods are safe for
// concurrent use. See the package documentation.
type Pool struct {
	opts      Options          // immutable, defaults filled in
	frameSize int              // immutable
	eng       *ioengine.Engine // immutable
	ownEngine bool             // immutable: the pool made eng and closes it
	arena     []byte           // immutable until Close frees it
	fixed     *fixedArena      // immutable: the arena's registration with the engine (Options.FixedBuffers), or nil
	fixedOff  string           // immutable: why Options.FixedBuffers is not in effect at all, or ""
	win       *windows         // immutable: nil unless Options.Windows
	nframes   int              // immutable: the frames the arena holds
	perFrame  int              // immutable: Frame.units words per frame
	target    int              // immutable: probation's target length

	pinnedFrames atomic.Int64 // frames with pins > 0
	stallWaiters atomic.Int32 // Pins waiting in stalled for a frame to become evictable

	mu          sync.Mutex
	stalled     sync.Cond              // on mu: a frame may have become evictable, or the pool closed
	work        sync.Cond              // on mu: loads queued, or the pool closed
	closed      bool                   // guarded by mu
	files       map[FileID]*file       // guarded by mu
	lastID      FileID                 // guarded by mu
	table       map[frameKey]*Frame    // guarded by mu: loading and resident frames
	chunks      [][]Frame              // guarded by mu: the frames made so far, frameChunk to a chunk; a chunk never moves
	made        int                    // guarded by mu: frames made, slots [0, made); the rest are free and not made yet
	free        frameList              // guarded by mu
	probation   frameList              // guarded by mu: S3-FIFO's small FIFO
	main        frameList              // guarded by mu: the CLOCK queue
	announced   frameList              // guarded by mu: frames in the table with want > 0, newest at the tail
	announcedP  int                    // guarded by mu: frames on announced whose home is probation
	ghost       ghostList              // guarded by mu
	demandQ     frameList              // guarded by mu: loads a Pin waits for
	prefetchQ   frameList              // guarded by mu: loads of Prefetch
	async       map[*LoadCall]struct{} // guarded by mu: LoadStart's calls nobody has finished
	loading     int                    // guarded by mu: frames in state loading
	calls       uint64                 // guarded by mu: numbers Pin calls (Frame.loader, Frame.mark)
	stats       Stats                  // guarded by mu: the counters
	logged      bool                   // guarded by mu: the first prefetch failure was logged
	scratchKeys []frameKey             // guarded by mu: Announce and Retract
	busyWorkers int                    // guarded by mu: I/O goroutines inside an engine call
	workers     sync.WaitGroup         // the I/O goroutines

	// callerLoads: a Pin issues its own misses (immutable after New).
	callerLoads bool

	// testBeforeDo, when set (tests only, before any Pin), runs before
	// each engine call, on the I/O goroutine or the Pin's, outside mu.
	testBeforeDo func(loads int)
}

// file is a registered file. Immutable after Register except where noted.
type file struct {
	id     FileID
	f      *ioengine.File
	size   int64
	name   string
	frames int  // guarded by mu: frames of this file in the table
	held   int  // guarded by mu: detached frames of this file, still pinned
	gone   bool // guarded by mu: Unregister has taken it out of Pool.files
	// announced holds, by frame index, the open announcements (Announce
	// calls no Pin or Retract has met) of frames not in the table; a
	// frame in the table carries its own count (Frame.want). Guarded by mu.
	announced map[int64]uint32
}

func (f *file) String() string { return fmt.Sprintf("%s (file %d)", f.name, f.id) }

// New makes a pool: it maps the arena (Budget / FrameSize frames), creates
// an engine unless Options.Engine is set, and starts the I/O goroutines.
func New(opts Options) (*Pool, error) {
	o := opts.withDefaults()
	nframes, err := o.validate()
	if err != nil {
		return nil, err
	}
	var arena []byte
	var win *windows
	if o.Windows {
		memfd, shared, err := sharedArena(nframes * o.FrameSize)
		if err == nil {
			arena, win = shared, newWindows(memfd, nframes, o.FrameSize)
		} else {
			// A sandbox may refuse memfd_create: the pool works without
			// windows (Options reports Windows false), and says why.
			o.Windows = false
			o.Logf("bufpool: windows off, batches that span frames will be copied: %v", err)
		}
	}
	if arena == nil {
		if arena, err = directio.Alloc(nframes * o.FrameSize); err == nil {
			adviseHugePages(arena)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("bufpool: arena of %d frames × %d bytes: %w", nframes, o.FrameSize, err)
	}
	if o.Prefault {
		prefault(arena)
	}
	p := &Pool{
		win:       win,
		opts:      o,
		frameSize: o.FrameSize,
		eng:       o.Engine,
		arena:     arena,
		nframes:   nframes,
		perFrame:  (o.FrameSize/CheckUnit + 63) / 64,
		target:    max(1, nframes*o.ProbationPercent/100),
		files:     make(map[FileID]*file),
		table:     make(map[frameKey]*Frame),
		free:      frameList{slot: 0},
		probation: frameList{slot: 0},
		main:      frameList{slot: 0},
		announced: frameList{slot: 0},
		demandQ:   frameList{slot: 1},
		prefetchQ: frameList{slot: 1},
		async:     map[*LoadCall]struct{}{},
	}
	p.ghost.init(nframes)
	p.stalled.L = &p.mu
	p.work.L = &p.mu
	p.stats.Frames, p.stats.FrameSize = nframes, o.FrameSize
	if p.eng == nil {
		p.eng, err = ioengine.New(ioengine.Options{Mode: o.IOMode, Logf: o.Logf})
		if err != nil {
			p.freeArena()
			return nil, fmt.Errorf("bufpool: engine: %w", err)
		}
		p.ownEngine = true
	}
	switch {
	case !o.FixedBuffers:
	case p.eng.Backend() == ioengine.BackendSyscall:
		p.fixedOff = "the engine is on the syscall backend, which takes any buffer"
	default:
		if p.fixed, err = newFixedArena(p.eng, arena, o.FrameSize, o.Prefault, o.Logf); err != nil {
			p.fixedOff = err.Error()
			o.Logf("bufpool: arena not registered with the engine, loads read without fixed buffers: %v", err)
		}
	}
	p.callerLoads = !o.demandViaWorkers && p.eng.Backend() != ioengine.BackendSyscall
	p.workers.Add(o.IOWorkers)
	for range o.IOWorkers {
		go p.ioWorker()
	}
	return p, nil
}

// frameChunk is how many frames are made at a time. A pool makes its
// frames as it first needs them, in slot order, so that a cache that never
// fills does not hold the Go memory of frames it never uses (a Frame is
// about 260 bytes: 65 MB for a GiB of 4 KiB frames).
const frameChunk = 4096

// makeFrameLocked makes the next frame, slot made, out of every list, or
// returns nil when every frame is made. The lowest slots are made first,
// so that the arena in use stays a prefix (fixedArena).
func (p *Pool) makeFrameLocked() *Frame {
	if p.made == p.nframes {
		return nil
	}
	i := p.made
	if i%frameChunk == 0 {
		n := min(frameChunk, p.nframes-i)
		chunk := make([]Frame, n)
		var units []atomic.Uint64
		if p.perFrame > 1 {
			units = make([]atomic.Uint64, n*p.perFrame)
		}
		for j := range chunk {
			f := &chunk[j]
			f.pool, f.slot = p, i+j
			if p.perFrame == 1 {
				f.units = f.unit0[:]
			} else {
				f.units = units[j*p.perFrame : (j+1)*p.perFrame : (j+1)*p.perFrame]
			}
			f.buf = p.arena[(i+j)*p.frameSize : (i+j+1)*p.frameSize : (i+j+1)*p.frameSize]
			f.loaded.L = &p.mu
		}
		p.chunks = append(p.chunks, chunk)
	}
	p.made++
	return &p.chunks[i/frameChunk][i%frameChunk]
}

// eachMadeLocked calls fn with every frame made, in slot order, until fn
// returns false.
func (p *Pool) eachMadeLocked(fn func(f *Frame) bool) {
	for i := range p.made {
		if !fn(&p.chunks[i/frameChunk][i%frameChunk]) {
			return
		}
	}
}

// FrameSize returns the bytes per frame.
func (p *Pool) FrameSize() int { return p.frameSize }

// Frames returns the number of frames.
func (p *Pool) Frames() int { return p.nframes }

// Engine returns the engine the loads run on.
func (p *Pool) Engine() *ioengine.Engine { return p.eng }

// Options returns the options in effect (defaults filled in).
func (p *Pool) Options() Options { return p.opts }

// Register makes a file known to the pool. f must be open for reading with
// O_DIRECT; the pool does not close it, and reads it until Unregister
// returns (a read of it after its Close fails with ioengine.ErrFileClosed,
// never reads another file). size is the file size the pool serves (it
// may be less than the file's, not more); name is used in errors.
func (p *Pool) Register(f *ioengine.File, size int64, name string) (FileID, error) {
	switch {
	case f == nil:
		return 0, fmt.Errorf("%w: register %s: no file", ErrBadFile, name)
	case f.Fd() < 0:
		return 0, fmt.Errorf("%w: register %s: the file has no descriptor (closed)", ErrBadFile, name)
	case size < 0:
		return 0, fmt.Errorf("%w: register %s: size %d is negative", ErrBadFile, name, size)
	case size > math.MaxInt64-int64(p.frameSize):
		return 0, fmt.Errorf("%w: register %s: size %d too large", ErrBadFile, name, size)
	case (size+int64(p.frameSize)-1)/int64(p.frameSize) > maxFramesPerFile:
		return 0, fmt.Errorf("%w: register %s: size %d is over %d frames of %d bytes", ErrBadFile, name, size, int64(maxFramesPerFile), p.frameSize)
	}
	if err := checkDescriptor(f.Fd(), size, name); err != nil {
		return 0, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return 0, ErrClosed
	}
	if p.lastID == math.MaxUint32 {
		return 0, fmt.Errorf("%w: register %s: every file ID has been used", ErrBadFile, name)
	}
	p.lastID++
	p.files[p.lastID] = &file{id: p.lastID, f: f, size: size, name: name}
	if p.win != nil {
		p.win.reserve(p.lastID, size)
	}
	return p.lastID, nil
}

// Unregister forgets a file: new Pins and Prefetches of it fail (as of an
// unknown file), loads of it in flight are waited for, and its unpinned
// frames return to the pool. Frames still pinned stay valid until their
// last Unpin, which returns them to the pool; Unregister then returns an
// error wrapping ErrPinned naming the file and how many. Either way, once
// Unregister returns the pool reads fd no more and the caller may close it.
func (p *Pool) Unregister(id FileID) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	fl := p.files[id]
	if fl == nil {
		return fmt.Errorf("%w: unregister of file %d", ErrUnknownFile, id)
	}
	delete(p.files, id)
	fl.gone = true
	fl.announced = nil // its frames' own counts go as they leave the table
	// Prefetches not yet issued are dropped (nobody waits for them: a Pin
	// that does moves the load to demandQ); the loads left, queued for a
	// Pin or in flight, still use fd: wait for them.
	for f := p.prefetchQ.front(); f != nil; {
		next := f.links[p.prefetchQ.slot].next
		if f.file == fl {
			p.prefetchQ.remove(f)
			f.io = ioNone
			p.loading--
			p.removeFromTableLocked(f)
			p.freeLocked(f)
			p.stats.PrefetchDropped++
		}
		f = next
	}
	for {
		var waitFor *Frame
		p.eachFrameOfLocked(fl, func(f *Frame) bool {
			if f.state == stateLoading {
				waitFor = f
				return false
			}
			return true
		})
		if waitFor == nil {
			break
		}
		if waitFor.file == fl {
			p.waitLoadedLocked(waitFor)
		}
	}
	pinned := 0
	var resident []*Frame
	p.eachFrameOfLocked(fl, func(f *Frame) bool {
		if f.state == stateResident {
			resident = append(resident, f)
		}
		return true
	})
	for _, f := range resident {
		if f.pins.Load() > 0 {
			pinned++
		}
		p.detachLocked(f)
	}
	p.wakeStalledLocked()
	p.releaseWindowLocked(fl)
	if pinned > 0 {
		return fmt.Errorf("%w: unregister of %s: %d frames still pinned (they return to the pool at their last Unpin)", ErrPinned, fl, pinned)
	}
	return nil
}

// eachFrameOfLocked calls fn with each frame of fl in the table, until fn
// returns false: by the file's frame keys where the file has fewer frames
// than the pool, so that forgetting a small file of a big pool does not
// walk every frame; otherwise by the frames.
func (p *Pool) eachFrameOfLocked(fl *file, fn func(f *Frame) bool) {
	if fl.frames == 0 {
		return
	}
	if n := (fl.size + int64(p.frameSize) - 1) / int64(p.frameSize); n < int64(p.made) {
		for k := range n {
			if f := p.table[makeKey(fl.id, k)]; f != nil && f.file == fl && !fn(f) {
				return
			}
		}
		return
	}
	p.eachMadeLocked(func(f *Frame) bool {
		return f.file != fl || (f.state != stateLoading && f.state != stateResident) || fn(f)
	})
}

// Close waits for the loads in flight, stops the I/O goroutines, closes the
// pool's own engine and unmaps the arena. If any frame is pinned, Close
// changes nothing and returns an error wrapping ErrPinned (unpin, then
// Close again): the arena must outlive every slice Bytes returned. After
// Close, Pin and Register return ErrClosed and Prefetch does nothing; a
// second Close returns nil.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	pinned, first := 0, (*Frame)(nil)
	p.eachMadeLocked(func(f *Frame) bool {
		if f.pins.Load() > 0 {
			if pinned == 0 {
				first = f
			}
			pinned++
		}
		return true
	})
	if pinned > 0 {
		p.mu.Unlock()
		name := "?"
		if first.file != nil {
			name = first.file.name
		}
		return fmt.Errorf("%w: close with %d frames pinned (first: %s offset %d)", ErrPinned, pinned, name, first.off)
	}
	for p.finishAsyncLocked() {
	}
	p.closed = true
	p.work.Broadcast()
	p.stalled.Broadcast()
	p.mu.Unlock()

	p.workers.Wait()
	var errs []error
	if p.fixed != nil {
		if err := p.fixed.close(); err != nil {
			errs = append(errs, err)
		}
	}
	if p.ownEngine {
		if err := p.eng.Close(); err != nil {
			errs = append(errs, fmt.Errorf("bufpool: close engine: %w", err))
		}
	}
	p.mu.Lock()
	p.eachMadeLocked(func(f *Frame) bool {
		f.buf = nil
		return true
	})
	p.mu.Unlock()
	if p.win != nil {
		if err := p.win.releaseAll(); err != nil {
			errs = append(errs, fmt.Errorf("bufpool: unmap windows: %w", err))
		}
	}
	if err := p.freeArena(); err != nil {
		errs = append(errs, fmt.Errorf("bufpool: free arena: %w", err))
	}
	return errors.Join(errs...)
}

func (p *Pool) freeArena() error {
	if p.win != nil {
		return freeSharedArena(p.win.memfd, p.arena)
	}
	return directio.Free(p.arena)
}

// releaseWindowLocked unmaps the window of an unregistered file once none
// of its frames is pinned any more.
func (p *Pool) releaseWindowLocked(fl *file) {
	if p.win == nil || !fl.gone || fl.held > 0 {
		return
	}
	if err := p.win.release(fl.id); err != nil {
		p.opts.Logf("bufpool: unmap the window of %s: %v", fl, err)
	}
}

// detachLocked takes a loading-finished or resident frame out of the table
// and its queue: to the free list when unpinned, otherwise detached until
// its last Unpin.
func (p *Pool) detachLocked(f *Frame) {
	p.removeFromTableLocked(f)
	if f.pins.Load() == 0 {
		p.freeLocked(f)
		return
	}
	f.state = stateDetached
	f.detached.Store(true)
	f.file.held++
}

// removeFromTableLocked takes f out of the table and its eviction queue.
// Its open announcements stay with its file, for the next load of the key.
func (p *Pool) removeFromTableLocked(f *Frame) {
	delete(p.table, f.key)
	if f.want > 0 && !f.file.gone {
		f.file.keepAnnouncedLocked(f.key.index(), f.want)
	}
	f.want = 0
	f.file.frames--
	p.unqueueLocked(f)
	f.queue, f.home = queueNone, queueNone
}

// freeLocked puts an unpinned frame that is in no table or queue on the
// free list.
func (p *Pool) freeLocked(f *Frame) {
	f.state = stateFree
	f.detached.Store(false)
	f.file, f.key, f.off, f.n = nil, 0, 0, 0
	f.loadErr, f.prefetch, f.freq, f.loader = nil, false, 0, 0
	f.want = 0
	f.queue, f.home = queueFree, queueNone
	p.free.pushFront(f) // before the frames not made yet: the arena in use stays a prefix (fixedArena)
}

// afterUnpinLocked runs when f's pin count reached zero and someone may
// care: a detached frame goes back to the pool, a stalled Pin is woken.
func (p *Pool) afterUnpinLocked(f *Frame) {
	if f.state == stateDetached && f.pins.Load() == 0 {
		fl := f.file
		fl.held--
		p.freeLocked(f)
		p.releaseWindowLocked(fl)
	}
	p.wakeStalledLocked()
}

// wakeStalledLocked wakes the Pins waiting for an evictable frame.
func (p *Pool) wakeStalledLocked() {
	if p.stallWaiters.Load() > 0 {
		p.stalled.Broadcast()
	}
}

// pinLocked adds one pin to f.
func (p *Pool) pinLocked(f *Frame) {
	if f.pins.Add(1) == 1 {
		p.pinnedFrames.Add(1)
	}
}

// unpinLocked drops one pin of f taken by a Pin that is failing.
func (p *Pool) unpinLocked(f *Frame) {
	n := f.pins.Add(-1)
	if n < 0 {
		panic(fmt.Sprintf("bufpool: internal error: pin count of %s below zero", f))
	}
	if n == 0 {
		p.pinnedFrames.Add(-1)
		p.afterUnpinLocked(f)
	}
}

// Stats are a pool's counters. Frames, FrameSize, Pinned, Resident,
// Loading and OpenAnnouncements are the state when Stats was called; the
// rest count since New.
type Stats struct {
	Frames            int `json:"frames"`
	FrameSize         int `json:"frame_size"`
	Pinned            int `json:"pinned"`             // frames with at least one pin
	Resident          int `json:"resident"`           // frames holding loaded data (in the table, not loading)
	Loading           int `json:"loading"`            // frames whose load is queued or in flight
	OpenAnnouncements int `json:"open_announcements"` // announcements no Pin or Retract has met yet (see Announce)

	Hits      uint64 `json:"hits"`       // frames a Pin found resident
	Misses    uint64 `json:"misses"`     // frames a Pin had to load
	LoadWaits uint64 `json:"load_waits"` // frames a Pin found being loaded by someone else and waited for

	Loads             uint64 `json:"loads"`               // loads finished (successfully or not)
	BytesRead         uint64 `json:"bytes_read"`          // bytes the loads transferred
	EngineCalls       uint64 `json:"engine_calls"`        // engine calls made for loads: by the I/O goroutines (each up to MaxBatch loads) and by Pins issuing their own
	CallerEngineCalls uint64 `json:"caller_engine_calls"` // of EngineCalls, those a Pin made from its own goroutine (its misses, in one call)
	Evictions         uint64 `json:"evictions"`           // resident frames evicted to make room
	Promotions        uint64 `json:"promotions"`          // frames moved from probation to main because they were referenced again
	GhostHits         uint64 `json:"ghost_hits"`          // misses whose key was on the ghost list and went straight to main

	PrefetchIssued   uint64 `json:"prefetch_issued"`   // frame loads Prefetch started
	PrefetchHits     uint64 `json:"prefetch_hits"`     // Pins of a frame Prefetch loaded (or is loading)
	PrefetchDropped  uint64 `json:"prefetch_dropped"`  // frames Prefetch skipped because no frame was evictable, or whose queued load Unregister or Close dropped
	PrefetchRejected uint64 `json:"prefetch_rejected"` // spans Prefetch, Announce, Present or Insert ignored: unknown file, out of range (Insert: not whole frames)

	Inserted uint64 `json:"inserted"` // frames Insert filled with bytes the caller read itself

	Announced          uint64 `json:"announced"`           // frame announcements made by Announce
	AnnouncedEvictions uint64 `json:"announced_evictions"` // frames evicted with announcements open, because a Pin found no other frame to evict

	Stalls     uint64 `json:"stalls"`      // Pins that waited because every frame was pinned or loading
	ReadErrors uint64 `json:"read_errors"` // loads that failed

	WindowMaps     uint64 `json:"window_maps,omitempty"`     // frames mapped into their files' windows (Options.Windows)
	WindowMoves    uint64 `json:"window_moves,omitempty"`    // of WindowMaps, those whose slot's mapping was moved from its earlier place, page tables and all
	WindowFailures uint64 `json:"window_failures,omitempty"` // frames or files left without a window because a mapping call failed

	FixedBuffers    bool   `json:"fixed_buffers"`               // the arena is registered with the engine's ring: loads go as READ_FIXED (Options.FixedBuffers)
	FixedBytes      int64  `json:"fixed_bytes,omitempty"`       // of the arena, the bytes registered so far (it is registered as the pool first uses its frames, unless Prefault)
	FixedBuffersOff string `json:"fixed_buffers_off,omitempty"` // why Options.FixedBuffers asked for it and it is not (or not wholly) in effect
}

// HitRatio returns Hits / (Hits + Misses + LoadWaits), or 0 before any Pin.
func (s Stats) HitRatio() float64 {
	total := s.Hits + s.Misses + s.LoadWaits
	if total == 0 {
		return 0
	}
	return float64(s.Hits) / float64(total)
}

func (s Stats) String() string {
	return fmt.Sprintf("frames %d × %d B: %d pinned, %d resident, %d loading; hits %d, misses %d, load waits %d (hit ratio %.3f); "+
		"loads %d, %d B read in %d engine calls; evictions %d, promotions %d, ghost hits %d; "+
		"prefetch issued %d, hits %d, dropped %d, rejected %d; inserted %d; announced %d (open %d, evicted while announced %d); stalls %d; read errors %d; window maps %d (moved %d), failures %d; fixed buffers %v%s",
		s.Frames, s.FrameSize, s.Pinned, s.Resident, s.Loading, s.Hits, s.Misses, s.LoadWaits, s.HitRatio(),
		s.Loads, s.BytesRead, s.EngineCalls, s.Evictions, s.Promotions, s.GhostHits,
		s.PrefetchIssued, s.PrefetchHits, s.PrefetchDropped, s.PrefetchRejected, s.Inserted,
		s.Announced, s.OpenAnnouncements, s.AnnouncedEvictions, s.Stalls, s.ReadErrors, s.WindowMaps, s.WindowMoves, s.WindowFailures,
		s.FixedBuffers, fixedOffNote(s.FixedBuffersOff))
}

// Stats returns the pool's counters.
func (p *Pool) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.stats
	s.Pinned = int(p.pinnedFrames.Load())
	s.Loading = p.loading
	s.Resident = len(p.table) - p.loading
	s.OpenAnnouncements = p.openAnnouncementsLocked()
	s.FixedBuffers, s.FixedBuffersOff = p.fixed != nil, p.fixedOff
	if p.fixed != nil {
		s.FixedBytes, s.FixedBuffersOff = p.fixed.registered()
	}
	if p.win != nil {
		p.win.mu.Lock()
		s.WindowMaps, s.WindowMoves, s.WindowFailures = p.win.maps, p.win.moves, p.win.fails
		p.win.mu.Unlock()
	}
	return s
}

func fixedOffNote(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}
