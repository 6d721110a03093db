package bufpool

import (
	"fmt"
	"sync"

	"github.com/ringstore/ringstore/ioengine"
)

// Span is a byte range [Off, Off+Len) of a registered file.
type Span struct {
	File     FileID
	Off, Len int64
}

func (s Span) String() string {
	return fmt.Sprintf("file %d [%d, %d)", s.File, s.Off, s.Off+s.Len)
}

// frameRange returns the first and last frame index a non-empty span
// covers.
func (p *Pool) frameRange(s Span) (first, last int64) {
	fs := int64(p.frameSize)
	return s.Off / fs, (s.Off + s.Len - 1) / fs
}

// checkSpanLocked returns the file of span i, or an error naming what is
// wrong with it.
func (p *Pool) checkSpanLocked(i int, s Span) (*file, error) {
	fl := p.files[s.File]
	switch {
	case fl == nil:
		return nil, fmt.Errorf("%w: span %d: file %d", ErrUnknownFile, i, s.File)
	case s.Off < 0:
		return nil, fmt.Errorf("%w: span %d of %s: negative offset %d", ErrBadSpan, i, fl, s.Off)
	case s.Len < 0:
		return nil, fmt.Errorf("%w: span %d of %s at offset %d: negative length %d", ErrBadSpan, i, fl, s.Off, s.Len)
	case s.Off > fl.size || s.Len > fl.size-s.Off:
		return nil, fmt.Errorf("%w: span %d of %s: offset %d length %d ends beyond the file size %d", ErrBadSpan, i, fl, s.Off, s.Len, fl.size)
	}
	return fl, nil
}

// checkSpansLocked checks every span and returns how many frames they
// cover, counting a frame once per span that covers it.
func (p *Pool) checkSpansLocked(spans []Span) (int64, error) {
	var total int64
	for i, s := range spans {
		if _, err := p.checkSpanLocked(i, s); err != nil {
			return 0, err
		}
		if s.Len > 0 {
			first, last := p.frameRange(s)
			total += last - first + 1
		}
	}
	return total, nil
}

// distinctFrames counts the different frames the spans cover, stopping
// once it passes limit.
func (p *Pool) distinctFrames(spans []Span, limit int) int {
	seen := make(map[frameKey]struct{}, limit+1)
	for _, s := range spans {
		if s.Len == 0 {
			continue
		}
		first, last := p.frameRange(s)
		for k := first; k <= last; k++ {
			seen[makeKey(s.File, k)] = struct{}{}
			if len(seen) > limit {
				return len(seen)
			}
		}
	}
	return len(seen)
}

// Pin pins every frame that covers the spans and returns them appended to
// dst: in span order, each span's frames in file order, a frame once per
// span that covers it (so a frame two spans share comes twice, and needs
// two Unpins). An empty span covers no frame.
//
// Frames already resident are hits; frames another caller is loading are
// waited for (one load per frame at a time); the misses of the whole call
// go to the I/O goroutines together, in as few engine calls as MaxBatch
// allows, across files. The call takes all its frames at once or none:
// while the pool cannot find enough evictable frames it holds nothing and
// waits (a stall, counted once per call). A call needing more distinct
// frames than the pool has fails at once with ErrTooManyFrames.
//
// Bad spans (unknown file, negative, beyond the registered size) fail with
// an error naming the span, file and range. If a load fails, every pin of
// the call is released and Pin returns the first failure in span order, a
// *ReadError naming file, offset and errno; the failed frame is not
// cached, so a later Pin loads it again. On any error dst is returned
// unchanged in length.
func (p *Pool) Pin(spans []Span, dst []*Frame) ([]*Frame, error) {
	start := len(dst)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return dst, ErrClosed
	}
	total, err := p.checkSpansLocked(spans)
	if err != nil {
		return dst, err
	}
	if total == 0 {
		return dst, nil
	}
	if total > int64(p.nframes) {
		if n := p.distinctFrames(spans, p.nframes); n > p.nframes {
			return dst, fmt.Errorf("%w: %d spans cover more than %d frames of %d bytes", ErrTooManyFrames, len(spans), p.nframes, p.frameSize)
		}
	}
	p.calls++
	call := p.calls
	stalled := false
	for {
		var ok bool
		if dst, ok = p.tryPinLocked(spans, dst, call); ok {
			break
		}
		if !stalled {
			// Count ourselves as waiting before looking once more, so that
			// an Unpin that races with the look wakes us (see Frame.Unpin).
			stalled = true
			p.stallWaiters.Add(1)
			p.stats.Stalls++
			continue
		}
		if p.finishAsyncLocked() {
			// Its frames become evictable: look again.
			continue
		}
		p.stalled.Wait()
		if !p.closed {
			_, err = p.checkSpansLocked(spans) // a file may have gone meanwhile
		}
		if p.closed || err != nil {
			p.stallWaiters.Add(-1)
			if err == nil {
				err = ErrClosed
			}
			return dst, err
		}
	}
	if stalled {
		p.stallWaiters.Add(-1)
	}
	pinned := dst[start:]
	if own := p.accountLocked(pinned, call); len(own) > 0 {
		p.loadLocked(own)
	}
	return p.awaitPinnedLocked(dst, start)
}

// awaitPinnedLocked waits until the frames of dst[start:], which the call
// pinned, are loaded. If one failed it releases them all and returns its
// error with dst cut back to start.
func (p *Pool) awaitPinnedLocked(dst []*Frame, start int) ([]*Frame, error) {
	pinned := dst[start:]
	var failed *Frame
	for _, f := range pinned {
		p.waitLoadedLocked(f)
		if f.loadErr != nil && failed == nil {
			failed = f
		}
	}
	if failed != nil {
		err := failed.loadErr
		for _, f := range pinned {
			p.unpinLocked(f)
		}
		clear(pinned)
		return dst[:start], err
	}
	if invariantsOn {
		p.mustCheckInvariantsLocked()
	}
	return dst, nil
}

// waitLoadedLocked waits while f is loading. A load LoadStart began is
// finished by whoever waits for it first, so no waiter depends on the
// caller of LoadStart coming back.
func (p *Pool) waitLoadedLocked(f *Frame) {
	for f.state == stateLoading {
		if c := f.async; c != nil {
			p.mu.Unlock()
			c.finish()
			p.mu.Lock()
			continue
		}
		f.loaded.Wait()
	}
}

// LoadCall is a set of loads LoadStart began: its frames are loading, and
// pinned by nobody, until someone finishes it.
type LoadCall struct {
	p    *Pool
	own  []*Frame
	reqs []ioengine.Request
	pend *ioengine.Pending
	once sync.Once
}

// LoadStart starts loads of the frames covering the spans that are not
// resident or loading, as Prefetch does, but issues them itself with
// ioengine.Engine.Start instead of through the I/O goroutines, and returns
// without waiting: on an inline io_uring engine the reads are submitted
// from the caller's thread and nothing waits for them until someone needs
// them. The caller finishes the call with Wait once it needs the frames (a
// reader submits the blocks of its next batch, works on the current one,
// waits, and pins them); until then anyone that needs one of its frames —
// a Pin of it, a Pin that finds no frame to evict, Unregister, Close —
// finishes it instead, so no one depends on the caller coming back. Like
// Prefetch it pins nothing, takes only frames that can be evicted without
// waiting (the rest is dropped, Stats.PrefetchDropped), skips bad spans
// (Stats.PrefetchRejected), counts Stats.PrefetchIssued, and a later Pin of
// one of its frames is a prefetch hit. Where loads go to the I/O goroutines
// (the syscall backend, the demandViaWorkers test hook) it is Prefetch.
func (p *Pool) LoadStart(spans []Span) *LoadCall {
	c := &LoadCall{p: p}
	if !p.callerLoads {
		p.Prefetch(spans)
		return c
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return c
	}
	p.installPrefetchesLocked(spans, func(f *Frame) {
		f.io, f.async = ioIssued, c
		c.own = append(c.own, f)
	})
	if len(c.own) == 0 {
		return c
	}
	c.reqs = make([]ioengine.Request, len(c.own))
	for i, f := range c.own {
		c.reqs[i] = ioengine.Request{Op: ioengine.OpRead, File: f.file.f, Off: f.off, Buf: f.buf[:readLen(f)]}
	}
	p.async[c] = struct{}{}
	p.stats.EngineCalls++
	p.mu.Unlock()
	pend, err := p.eng.Start(c.reqs)
	p.mu.Lock()
	if err != nil {
		// Nothing was started: the loads fail as those of a failed call do.
		c.once.Do(func() { p.completeAsyncLocked(c, err) })
		return c
	}
	c.pend = pend
	return c
}

// Wait waits for the call's loads and completes them (resident, or failed
// and out of the table); it is safe to call more than once and from any
// goroutine.
func (c *LoadCall) Wait() { c.finish() }

// finish waits for the loads and completes them, once, whoever calls it;
// mu is not held.
func (c *LoadCall) finish() {
	if len(c.own) == 0 {
		return
	}
	c.once.Do(func() {
		err := c.pend.Wait()
		c.p.mapWindows(c.own, c.reqs, err, nil)
		c.p.mu.Lock()
		c.p.completeAsyncLocked(c, err)
		c.p.mu.Unlock()
	})
}

func (p *Pool) completeAsyncLocked(c *LoadCall, err error) {
	for _, f := range c.own {
		f.async = nil
	}
	delete(p.async, c)
	p.completeLocked(c.own, c.reqs, err)
}

// finishAsyncLocked finishes one load call LoadStart began and nobody has
// finished, and reports whether there was one; mu is released meanwhile.
func (p *Pool) finishAsyncLocked() bool {
	for c := range p.async {
		p.mu.Unlock()
		c.finish()
		p.mu.Lock()
		return true
	}
	return false
}

// tryPinLocked pins the frames of spans, taking frames for the misses. If
// it runs out of frames it undoes everything and reports false.
func (p *Pool) tryPinLocked(spans []Span, dst []*Frame, call uint64) ([]*Frame, bool) {
	start := len(dst)
	for _, s := range spans {
		if s.Len == 0 {
			continue
		}
		fl := p.files[s.File]
		first, last := p.frameRange(s)
		for k := first; k <= last; k++ {
			key := makeKey(s.File, k)
			f := p.table[key]
			if f == nil {
				if f = p.takeFrameLocked(true); f == nil {
					p.undoLocked(dst[start:], call)
					clear(dst[start:])
					return dst[:start], false
				}
				p.installLocked(f, fl, key, call, false)
			}
			p.pinLocked(f)
			dst = append(dst, f)
		}
	}
	return dst, true
}

// undoLocked releases the pins of a failed attempt and frees the frames it
// installed (their loads were not queued yet).
func (p *Pool) undoLocked(pinned []*Frame, call uint64) {
	for _, f := range pinned {
		p.unpinLocked(f)
	}
	for _, f := range pinned {
		if f.loader == call && f.state == stateLoading && f.io == ioNone {
			p.removeFromTableLocked(f)
			p.loading--
			p.freeLocked(f)
		}
	}
}

// accountLocked counts each distinct frame of a successful Pin once,
// records the reference for the eviction policy, and starts the call's
// loads: its misses, and the queued prefetches it now waits for. With
// callerLoads it returns them, marked issued, for the Pin to hand to the
// engine itself; otherwise it queues them for the I/O goroutines (a
// prefetch ahead of the other prefetches) and returns nil.
func (p *Pool) accountLocked(pinned []*Frame, call uint64) (own []*Frame) {
	queued := 0
	start := func(f *Frame) {
		if p.callerLoads {
			f.io = ioIssued
			own = append(own, f)
			return
		}
		f.io = ioQueuedDemand
		p.demandQ.pushBack(f)
		queued++
	}
	for _, f := range pinned {
		if f.mark == call {
			continue
		}
		f.mark = call
		switch {
		case f.loader == call && f.state == stateLoading:
			p.stats.Misses++
			p.meetLocked(f) // a load is no reference, but it meets an announcement
			start(f)
		case f.state == stateLoading:
			p.stats.LoadWaits++
			p.referenceLocked(f)
			if f.io == ioQueuedPrefetch {
				p.prefetchQ.remove(f)
				start(f)
			}
		default:
			p.stats.Hits++
			p.referenceLocked(f)
		}
	}
	p.wakeWorkersLocked(queued)
	return own
}

// loadLocked hands the loads of one Pin to the engine in one call from the
// Pin's own goroutine, with mu released for the call, and completes them.
// The frames are pinned by the caller, so neither Close nor eviction can
// take them meanwhile; other Pins of them wait on Frame.loaded as they
// would for an I/O goroutine's load.
func (p *Pool) loadLocked(own []*Frame) {
	reqs := make([]ioengine.Request, len(own))
	for i, f := range own {
		reqs[i] = ioengine.Request{Op: ioengine.OpRead, File: f.file.f, Off: f.off, Buf: f.buf[:readLen(f)]}
	}
	p.stats.EngineCalls++
	p.stats.CallerEngineCalls++
	p.mu.Unlock()
	if p.testBeforeDo != nil {
		p.testBeforeDo(len(reqs))
	}
	err := p.eng.Do(reqs)
	p.mapWindows(own, reqs, err, nil)
	p.mu.Lock()
	p.completeLocked(own, reqs, err)
}

// wakeWorkersLocked wakes enough I/O goroutines for n newly queued loads.
func (p *Pool) wakeWorkersLocked(n int) {
	switch {
	case n == 0:
	case n <= p.opts.MaxBatch:
		p.work.Signal()
	default:
		p.work.Broadcast()
	}
}

// Prefetch starts loads of the frames covering the spans on the I/O
// goroutines and returns at once, pinning nothing. Frames resident or
// being loaded are skipped. When no frame is evictable, the rest is
// dropped (Stats.PrefetchDropped counts the frames); bad spans are skipped
// (Stats.PrefetchRejected). A later Pin of a prefetched frame counts as a
// prefetch hit, and a Pin waiting for a queued prefetch moves it ahead of
// the other prefetches. Prefetch never blocks on I/O and never fails; after
// Close it does nothing.
func (p *Pool) Prefetch(spans []Span) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	queued := 0
	p.installPrefetchesLocked(spans, func(f *Frame) {
		f.io = ioQueuedPrefetch
		p.prefetchQ.pushBack(f)
		queued++
	})
	p.wakeWorkersLocked(queued)
}

// installPrefetchesLocked installs, in state loading, a frame for each
// frame of the spans that is neither resident nor loading, taking only
// frames it can evict without waiting (once none is left the rest are
// dropped: Stats.PrefetchDropped), and hands each to start, which issues
// or queues its load.
func (p *Pool) installPrefetchesLocked(spans []Span, start func(f *Frame)) {
	full := false
	p.eachFrameLocked(spans, func(fl *file, key frameKey) {
		if p.table[key] != nil {
			return
		}
		var f *Frame
		if !full {
			f = p.takeFrameLocked(false)
			full = f == nil
		}
		if full {
			p.stats.PrefetchDropped++
			return
		}
		p.installLocked(f, fl, key, 0, true)
		p.stats.PrefetchIssued++
		start(f)
	})
}

// eachFrameLocked calls fn for each frame the valid spans cover, in span
// order (a frame two spans share comes twice); bad spans are counted in
// Stats.PrefetchRejected and skipped. It serves the calls that take spans
// as hints (Prefetch, Announce, Retract) and so never fail.
func (p *Pool) eachFrameLocked(spans []Span, fn func(fl *file, key frameKey)) {
	for i, s := range spans {
		fl, err := p.checkSpanLocked(i, s)
		if err != nil {
			p.stats.PrefetchRejected++
			continue
		}
		if s.Len == 0 {
			continue
		}
		first, last := p.frameRange(s)
		for k := first; k <= last; k++ {
			fn(fl, makeKey(s.File, k))
		}
	}
}

// PinResident pins the frames covering the spans only if every one of them
// is resident, and returns them appended to dst as Pin does, with true. If any
// frame is missing or still loading it pins nothing, starts no load and
// returns dst unchanged with false: the caller reads the data itself without
// filling the pool (kv's NoFillCache reads). Frames it pins count as hits;
// a false result counts nothing. Bad spans fail as in Pin.
func (p *Pool) PinResident(spans []Span, dst []*Frame) ([]*Frame, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return dst, false, ErrClosed
	}
	if _, err := p.checkSpansLocked(spans); err != nil {
		return dst, false, err
	}
	for _, s := range spans {
		if s.Len == 0 {
			continue
		}
		first, last := p.frameRange(s)
		for k := first; k <= last; k++ {
			if f := p.table[makeKey(s.File, k)]; f == nil || f.state != stateResident {
				return dst, false, nil
			}
		}
	}
	start := len(dst)
	dst, _ = p.tryPinLocked(spans, dst, 0)
	p.calls++
	call := p.calls
	for _, f := range dst[start:] {
		if f.mark == call {
			continue
		}
		f.mark = call
		p.stats.Hits++
		p.referenceLocked(f)
	}
	if invariantsOn {
		p.mustCheckInvariantsLocked()
	}
	return dst, true, nil
}

// PinEachResident is PinResident span by span, under one lock: it pins the
// frames of each span whose frames are all resident, appends them to dst as
// Pin does, and appends to pinned whether it pinned that span's. A span with
// a frame missing or still loading pins nothing and starts no load, nor
// does a bad span (counted in Stats.PrefetchRejected, as Present counts
// it); an empty span covers no frame and is reported pinned. After Close no
// span is pinned. A reader that finds some of a batch's blocks in the pool
// this way reads the others itself. Frames it pins count as hits, each once
// per call; the spans it passes over count nothing.
func (p *Pool) PinEachResident(spans []Span, dst []*Frame, pinned []bool) ([]*Frame, []bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	call := p.calls
	for i, s := range spans {
		ok := !p.closed
		if ok {
			if _, err := p.checkSpanLocked(i, s); err != nil {
				p.stats.PrefetchRejected++
				ok = false
			}
		}
		if ok && s.Len > 0 {
			first, last := p.frameRange(s)
			for k := first; k <= last && ok; k++ {
				f := p.table[makeKey(s.File, k)]
				ok = f != nil && f.state == stateResident
			}
			for k := first; k <= last && ok; k++ {
				f := p.table[makeKey(s.File, k)]
				p.pinLocked(f)
				dst = append(dst, f)
				if f.mark != call {
					f.mark = call
					p.stats.Hits++
					p.referenceLocked(f)
				}
			}
		}
		pinned = append(pinned, ok)
	}
	if invariantsOn {
		p.mustCheckInvariantsLocked()
	}
	return dst, pinned
}
