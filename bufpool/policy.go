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
//
// Frames with open announcements (want > 0, see Announce) are not on
// either queue: they wait on Pool.announced, newest at the tail, out of the
// hand's reach, and go back to the tail of their home queue (Frame.home)
// when the last announcement is met, as if inserted then. So an eviction
// never walks over them, however many there are; only a Pin that finds
// nothing else takes one, the newest. Those whose home is probation still
// count toward probation's length when the hand picks a queue, so that
// announcing does not move evictions onto main.

// maxFreq is where the reference counter saturates: a frame survives at
// most maxFreq passes of main's hand without a new reference.
const maxFreq = 3

// ghostList remembers the keys most recently evicted from probation
// (as many as the pool has frames), so that a key seen again soon enters
// main directly. A FIFO ring of keys plus a map from key to the sequence
// number of its ring entry; an entry is live when the map agrees.
type ghostList struct {
	keys     map[frameKey]uint64
	ring     []ghostEntry
	capacity int
	seq      uint64 // sequence number of the newest entry; entries start at 1
}

type ghostEntry struct {
	key frameKey
	seq uint64 // 0: empty slot
}

// init sets the capacity; the ring is made at the first add (a pool
// evicts nothing before it has made all its frames).
func (g *ghostList) init(capacity int) {
	g.keys = map[frameKey]uint64{}
	g.capacity = capacity
}

func (g *ghostList) add(k frameKey) {
	if g.ring == nil {
		g.ring = make([]ghostEntry, g.capacity)
	}
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

// evictable reports whether the hand may take f (a frame on probation or
// main, so with no open announcement): resident and unpinned.
func evictable(f *Frame) bool {
	return f.state == stateResident && f.pins.Load() == 0
}

// queueLocked puts f, a frame in the table on no list, at the tail of the
// list its announcements and home say: Pool.announced while want > 0,
// otherwise its home queue.
func (p *Pool) queueLocked(f *Frame) {
	switch {
	case f.want > 0:
		f.queue = queueAnnounced
		p.announced.pushBack(f)
		if f.home == queueProbation {
			p.announcedP++
		}
	case f.home == queueMain:
		f.queue = queueMain
		p.main.pushBack(f)
	default:
		f.queue = queueProbation
		p.probation.pushBack(f)
	}
}

// unqueueLocked takes f off the list it is on (its home stays).
func (p *Pool) unqueueLocked(f *Frame) {
	switch f.queue {
	case queueProbation:
		p.probation.remove(f)
	case queueMain:
		p.main.remove(f)
	case queueAnnounced:
		p.announced.remove(f)
		if f.home == queueProbation {
			p.announcedP--
		}
	}
	f.queue = queueNone
}

// announceLocked records one more open announcement of f, a frame in the
// table; its first takes f off its home queue.
func (p *Pool) announceLocked(f *Frame) {
	f.want++
	if f.want == 1 {
		p.unqueueLocked(f)
		p.queueLocked(f)
	}
}

// meetLocked meets one open announcement of f, a frame in the table, and
// reports whether it had one; meeting the last puts f back at the tail of
// its home queue.
func (p *Pool) meetLocked(f *Frame) bool {
	if f.want == 0 {
		return false
	}
	f.want--
	if f.want == 0 {
		p.unqueueLocked(f)
		p.queueLocked(f)
	}
	return true
}

// takeFrameLocked returns an unused frame, from the free list or by
// evicting one, out of every table, queue and list; or nil when every frame
// is pinned or loading. A frame with open announcements goes only for a
// demand load (demand set), when no other frame can: a prefetch never
// undoes what a scan said it will read.
func (p *Pool) takeFrameLocked(demand bool) *Frame {
	f := p.free.popFront()
	if f == nil {
		f = p.makeFrameLocked()
	}
	if f != nil {
		f.queue = queueNone
		p.fixed.usingLocked(p, f.slot)
		return f
	}
	if f := p.evictLocked(); f != nil || !demand {
		return f
	}
	return p.evictAnnouncedLocked()
}

// evictAnnouncedLocked evicts the newest resident, unpinned frame on
// Pool.announced, or returns nil when there is none. Scans announce what
// lies ahead of them, so the newest such frame is the one they need last:
// evicting it keeps the frames the laggards reach first. Its
// announcements stay with its file (removeFromTableLocked). It passes over
// only the announced frames that are loading or pinned, at the tail.
func (p *Pool) evictAnnouncedLocked() *Frame {
	for f := p.announced.tail; f != nil; f = f.links[p.announced.slot].prev {
		if f.state == stateResident && f.pins.Load() == 0 {
			p.stats.AnnouncedEvictions++
			if f.home == queueProbation {
				p.ghost.add(f.key)
			}
			p.evictFrameLocked(f)
			return f
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
		if probationOK && (p.probation.len()+p.announcedP >= p.target || !mainOK) {
			f := p.probation.front()
			switch {
			case !evictable(f):
				p.probation.rotate()
				skipProbation++
			case f.freq > 0:
				p.unqueueLocked(f)
				f.freq = 0
				f.home = queueMain
				p.queueLocked(f)
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
	for i := range f.units {
		f.units[i].Store(0)
	}
	f.note.Store(0)
	p.table[key] = f
	fl.frames++
	p.loading++
	f.home = queueProbation
	if p.ghost.take(key) {
		p.stats.GhostHits++
		f.home = queueMain
	}
	p.queueLocked(f)
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
	case p.meetLocked(f):
	case f.freq < maxFreq:
		f.freq++
	}
}
