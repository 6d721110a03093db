package bufpool

import (
	"errors"
	"fmt"
)

// checkInvariants locks the pool and checks that the frame table, the
// queues, the lists and the pin counts agree. Tests call it; builds with
// -tags invariants or -race also run it after every Pin and engine call.
func (p *Pool) checkInvariants() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.checkInvariantsLocked()
}

func (p *Pool) mustCheckInvariantsLocked() {
	if err := p.checkInvariantsLocked(); err != nil {
		panic("bufpool: invariant broken: " + err.Error())
	}
}

// checkList walks l and checks its links, its length and that every frame
// on it passes ok.
func checkList(name string, l *frameList, ok func(*Frame) error) error {
	n := 0
	var prev *Frame
	for f := l.head; f != nil; f = f.links[l.slot].next {
		if f.links[l.slot].prev != prev {
			return fmt.Errorf("%s: %s: prev link broken", name, f)
		}
		if err := ok(f); err != nil {
			return fmt.Errorf("%s: %s: %w", name, f, err)
		}
		prev = f
		n++
		if n > l.n {
			return fmt.Errorf("%s: longer than its length %d", name, l.n)
		}
	}
	if n != l.n || l.tail != prev {
		return fmt.Errorf("%s: %d frames walked, length %d, tail ok %v", name, n, l.n, l.tail == prev)
	}
	return nil
}

func (p *Pool) checkInvariantsLocked() error {
	if p.closed {
		return nil
	}
	inTable := func(q queueID) func(*Frame) error {
		return func(f *Frame) error {
			if f.queue != q {
				return fmt.Errorf("queue field %d, want %d", f.queue, q)
			}
			if f.home != queueProbation && f.home != queueMain {
				return fmt.Errorf("home queue %d", f.home)
			}
			if q == queueAnnounced {
				if f.want == 0 {
					return errors.New("on the announced list with no open announcement")
				}
			} else if f.want != 0 || f.home != q {
				return fmt.Errorf("on queue %d with home %d and %d open announcements", q, f.home, f.want)
			}
			if f.state != stateLoading && f.state != stateResident {
				return fmt.Errorf("state %s on an eviction queue", f.state)
			}
			if p.table[f.key] != f {
				return errors.New("not the table's frame for its key")
			}
			return nil
		}
	}
	queued := func(want ioState) func(*Frame) error {
		return func(f *Frame) error {
			if f.io != want || f.state != stateLoading {
				return fmt.Errorf("io state %d, frame state %s on a load queue", f.io, f.state)
			}
			return nil
		}
	}
	checks := []struct {
		name string
		l    *frameList
		ok   func(*Frame) error
	}{
		{"free", &p.free, func(f *Frame) error {
			if f.state != stateFree || f.queue != queueFree || f.io != ioNone || f.file != nil {
				return fmt.Errorf("state %s, queue %d, io %d, file set %v on the free list", f.state, f.queue, f.io, f.file != nil)
			}
			if n := f.pins.Load(); n != 0 {
				return fmt.Errorf("%d pins on the free list", n)
			}
			if f.want != 0 {
				return fmt.Errorf("%d announcements on the free list", f.want)
			}
			return nil
		}},
		{"probation", &p.probation, inTable(queueProbation)},
		{"main", &p.main, inTable(queueMain)},
		{"announced", &p.announced, inTable(queueAnnounced)},
		{"demand queue", &p.demandQ, queued(ioQueuedDemand)},
		{"prefetch queue", &p.prefetchQ, queued(ioQueuedPrefetch)},
	}
	for _, c := range checks {
		if err := checkList(c.name, c.l, c.ok); err != nil {
			return err
		}
	}
	if got, want := len(p.table), p.probation.len()+p.main.len()+p.announced.len(); got != want {
		return fmt.Errorf("table holds %d frames, probation + main + announced %d", got, want)
	}
	homeProbation := 0
	for f := p.announced.head; f != nil; f = f.links[p.announced.slot].next {
		if f.home == queueProbation {
			homeProbation++
		}
	}
	if homeProbation != p.announcedP {
		return fmt.Errorf("%d announced frames have probation for home, counter says %d", homeProbation, p.announcedP)
	}
	loading, detached := 0, 0
	perFile := map[*file]int{}
	heldBy := map[*file]int{}
	var bad error
	p.eachMadeLocked(func(f *Frame) bool {
		bad = p.checkFrameLocked(f, perFile, heldBy, &loading, &detached)
		return bad == nil
	})
	if bad != nil {
		return bad
	}
	if loading != p.loading {
		return fmt.Errorf("%d frames loading, counter says %d", loading, p.loading)
	}
	if total := p.free.len() + p.probation.len() + p.main.len() + p.announced.len() + detached; total != p.made {
		return fmt.Errorf("free %d + probation %d + main %d + announced %d + detached %d = %d, pool has made %d frames",
			p.free.len(), p.probation.len(), p.main.len(), p.announced.len(), detached, total, p.made)
	}
	for fl, n := range heldBy {
		if fl.held != n {
			return fmt.Errorf("%s: counts %d detached frames, %d are", fl, fl.held, n)
		}
	}
	for _, fl := range p.files {
		if fl.held != heldBy[fl] {
			return fmt.Errorf("%s: counts %d detached frames, %d are", fl, fl.held, heldBy[fl])
		}
		if fl.frames != perFile[fl] {
			return fmt.Errorf("%s: counts %d frames, table holds %d", fl, fl.frames, perFile[fl])
		}
		for k, n := range fl.announced {
			if n == 0 || p.table[makeKey(fl.id, k)] != nil {
				return fmt.Errorf("%s: keeps %d announcements of frame %d, which is in the table %v", fl, n, k, p.table[makeKey(fl.id, k)] != nil)
			}
		}
	}
	if p.ghost.len() > p.ghost.capacity {
		return fmt.Errorf("ghost holds %d keys, capacity %d", p.ghost.len(), p.ghost.capacity)
	}
	if p.ghost.ring != nil && p.made < p.nframes {
		return fmt.Errorf("ghost list in use with %d of %d frames made: a frame was evicted while one could be made", p.made, p.nframes)
	}
	for k := range p.ghost.keys {
		if p.table[k] != nil {
			return fmt.Errorf("key %v both on the ghost list and in the table", k)
		}
	}
	if p.win != nil {
		return p.checkWindowsLocked()
	}
	return nil
}

// checkFrameLocked checks one frame made, counting it in perFile, heldBy,
// loading and detached.
func (p *Pool) checkFrameLocked(f *Frame, perFile, heldBy map[*file]int, loading, detached *int) error {
	if f.pins.Load() < 0 {
		return fmt.Errorf("%s: negative pin count %d", f, f.pins.Load())
	}
	if f.detached.Load() != (f.state == stateDetached) {
		return fmt.Errorf("%s: detached flag %v, state %s", f, f.detached.Load(), f.state)
	}
	switch f.state {
	case stateLoading:
		*loading++
		if f.io == ioNone {
			return fmt.Errorf("%s: loading but its load is neither queued nor issued", f)
		}
		fallthrough
	case stateResident:
		perFile[f.file]++
		if p.files[f.key.file()] != f.file && !f.file.gone {
			return fmt.Errorf("%s: in the table but its file is not registered", f)
		}
		if f.off != f.key.index()*int64(p.frameSize) || f.n <= 0 || f.n > p.frameSize || f.off+int64(f.n) > f.file.size {
			return fmt.Errorf("%s: offset/length do not fit frame index %d of %s (size %d)", f, f.key.index(), f.file, f.file.size)
		}
		if f.state == stateResident && f.io != ioNone {
			return fmt.Errorf("%s: resident with io state %d", f, f.io)
		}
	case stateDetached:
		*detached++
		heldBy[f.file]++
		if f.queue != queueNone || f.want != 0 {
			return fmt.Errorf("%s: detached but on queue %d with %d announcements", f, f.queue, f.want)
		}
	}
	return nil
}

// checkWindowsLocked checks that the window maps agree with each other and,
// when no mapping call failed, that every resident frame is mapped at its
// place.
func (p *Pool) checkWindowsLocked() error {
	w := p.win
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, slot := range w.by {
		if w.at[slot] != k {
			return fmt.Errorf("window: key %v says slot %d, which is mapped at %v", k, slot, w.at[slot])
		}
		if w.bases[k.file()] == nil {
			return fmt.Errorf("window: key %v mapped, but file %d has no window", k, k.file())
		}
	}
	for slot, k := range w.at {
		if k != 0 && int(w.by[k]) != slot {
			return fmt.Errorf("window: slot %d mapped at %v, which says slot %d", slot, k, w.by[k])
		}
	}
	if w.broken || w.fails > 0 {
		return nil
	}
	var bad error
	p.eachMadeLocked(func(f *Frame) bool {
		if f.state == stateResident && w.at[f.slot] != f.key {
			bad = fmt.Errorf("window: resident %s is not mapped at its place (slot mapped at %v)", f, w.at[f.slot])
		}
		return bad == nil
	})
	return bad
}

// checkQuiescent checks, on a pool nobody is using, that no frame is
// pinned or loading and the pinned-frame counter agrees.
func (p *Pool) checkQuiescent() error {
	if err := p.checkInvariants(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	pinned := 0
	p.eachMadeLocked(func(f *Frame) bool {
		if f.pins.Load() > 0 {
			pinned++
		}
		return true
	})
	if pinned != 0 || p.pinnedFrames.Load() != 0 || p.loading != 0 {
		return fmt.Errorf("not quiescent: %d frames pinned (counter %d), %d loading", pinned, p.pinnedFrames.Load(), p.loading)
	}
	return nil
}
