package bufpool

// The eviction policy: S3-FIFO (Yang et al., SOSP 2023) over frames, with
// pins. Everything here is guarded by Pool.mu.
//
//	miss ─┬─ key on ghost ──────────────────────────────▶ main (CLOCK)
//	      └─ otherwise ─▶ probation (FIFO, ~10% of frames)
//	                         │ at its head, when evicting:
//	                         ├─ referenced again (freq > 0) ─▶ main
//	                         └─ not referenced ─▶ evicted; key to ghost
//	main, at the hand: freq > 0 ─▶ freq-1, to the back; freq 0 ─▶ evicted
//
// Pinned and loading frames are never evicted: the hand passes over them
// (they go to the back of their queue, freq unchanged). A one-time scan
// therefore flows through probation and never displaces what main holds.

// maxFreq is where the reference counter saturates: a frame survives at
// most maxFreq passes of main's hand without a new reference.
const maxFreq = 3

// ghostList remembers the keys most recently evicted from probation
// (as many as the pool has frames), so that a key seen again soon enters
// main directly. A FIFO ring of keys plus a map from key to the sequence
// number of its ring entry; an entry is live when the map agrees.
type ghostList struct {
	keys map[frameKey]uint64
	ring []ghostEntry
	seq  uint64 // sequence number of the newest entry; entries start at 1
}

type ghostEntry struct {
	key frameKey
	seq uint64 // 0: empty slot
}

func (g *ghostList) init(capacity int) {
	g.keys = make(map[frameKey]uint64, capacity)
	g.ring = make([]ghostEntry, capacity)
}

func (g *ghostList) add(k frameKey) {
	g.seq++
	e := &g.ring[g.seq%uint64(len(g.ring))]
	if e.seq != 0 && g.keys[e.key] == e.seq {
		delete(g.keys, e.key)
	}
	*e = ghostEntry{key: k, seq: g.seq}
	g.keys[k] = g.seq
}

// take reports whether k is on the list and removes it.
func (g *ghostList) take(k frameKey) bool {
	if _, ok := g.keys[k]; ok {
		delete(g.keys, k)
		return true
	}
	return false
}

func (g *ghostList) len() int { return len(g.keys) }

// evictable reports whether the hand may take f: resident, unpinned and
// not announced (see Announce).
func evictable(f *Frame) bool {
	return f.state == stateResident && f.pins.Load() == 0 && f.want == 0
}

// takeFrameLocked returns an unused frame, from the free list or by
// evicting one, out of every table, queue and list; or nil when every frame
// is pinned or loading. A frame with open announcements goes only for a
// demand load (demand set), when no other frame can: a prefetch never
// undoes what a scan said it will read.
func (p *Pool) takeFrameLocked(demand bool) *Frame {
	if f := p.free.popFront(); f != nil {
		f.queue = queueNone
		return f
	}
	if f := p.evictLocked(); f != nil || !demand {
		return f
	}
	return p.evictAnnouncedLocked()
}

// evictAnnouncedLocked evicts the most recently queued resident, unpinned
// frame that has announcements open, or returns nil when there is none.
// Scans announce what lies ahead of them, so the newest such frame is the
// one they need last: evicting it keeps the frames the laggards reach
// first. Its announcements stay with its file (removeFromTableLocked).
func (p *Pool) evictAnnouncedLocked() *Frame {
	for _, l := range []*frameList{&p.probation, &p.main} {
		for f := l.tail; f != nil; f = f.links[l.slot].prev {
			if f.state == stateResident && f.pins.Load() == 0 {
				p.stats.AnnouncedEvictions++
				if l == &p.probation {
					p.ghost.add(f.key)
				}
				p.evictFrameLocked(f)
				return f
			}
		}
	}
	return nil
}

// evictLocked runs S3-FIFO's eviction until it frees a frame, or returns
// nil when every frame on both queues is pinned or loading.
//
// A queue is exhausted when the hand has passed over as many unevictable
// frames in a row as the queue holds; any other step (a promotion, a
// counter decrement) resets that count. Each such step lowers the sum of
// counters plus probation's length, so the loop ends.
func (p *Pool) evictLocked() *Frame {
	skipProbation, skipMain := 0, 0
	for {
		probationOK := p.probation.len() > 0 && skipProbation < p.probation.len()
		mainOK := p.main.len() > 0 && skipMain < p.main.len()
		if !probationOK && !mainOK {
			return nil
		}
		if probationOK && (p.probation.len() >= p.target || !mainOK) {
			f := p.probation.front()
			switch {
			case !evictable(f):
				p.probation.rotate()
				skipProbation++
			case f.freq > 0:
				p.probation.remove(f)
				f.freq = 0
				f.queue = queueMain
				p.main.pushBack(f)
				p.stats.Promotions++
				skipMain = 0
			default:
				p.ghost.add(f.key)
				p.evictFrameLocked(f)
				return f
			}
			continue
		}
		f := p.main.front()
		switch {
		case !evictable(f):
			p.main.rotate()
			skipMain++
		case f.freq > 0:
			f.freq--
			p.main.rotate()
			skipMain = 0
		default:
			p.evictFrameLocked(f)
			return f
		}
	}
}

// evictFrameLocked takes a resident, unpinned frame out of the table and
// its queue for reuse.
func (p *Pool) evictFrameLocked(f *Frame) {
	p.removeFromTableLocked(f)
	p.stats.Evictions++
	f.state = stateFree
	f.loadErr, f.prefetch, f.freq = nil, false, 0
}

// installLocked makes f, taken by takeFrameLocked, the frame of key in fl,
// in state loading, on probation or (a ghost hit) main. The caller queues
// its load.
func (p *Pool) installLocked(f *Frame, fl *file, key frameKey, loader uint64, prefetch bool) {
	f.key, f.file = key, fl
	f.off = key.index() * int64(p.frameSize)
	f.n = int(min(int64(p.frameSize), fl.size-f.off))
	f.state = stateLoading
	f.io = ioNone
	f.freq = 0
	f.want = fl.takeAnnouncedLocked(key.index())
	f.prefetch = prefetch
	f.loader = loader
	f.mark = 0
	f.loadErr = nil
	p.table[key] = f
	fl.frames++
	p.loading++
	if p.ghost.take(key) {
		p.stats.GhostHits++
		f.queue = queueMain
		p.main.pushBack(f)
	} else {
		f.queue = queueProbation
		p.probation.pushBack(f)
	}
}

// referenceLocked records a pin of f (once per Pin call): it meets one
// open announcement if there is one, and counts as a reference for the
// eviction policy otherwise. A scan's pin of what it announced is the
// access it said would come, not a sign of reuse.
func (p *Pool) referenceLocked(f *Frame) {
	if f.prefetch {
		p.stats.PrefetchHits++
		f.prefetch = false
	}
	switch {
	case f.want > 0:
		f.want--
	case f.freq < maxFreq:
		f.freq++
	}
}
