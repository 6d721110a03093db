package bufpool

import "slices"

// Announcements: a scan that knows what it will read tells the pool ahead
// of time, so that frames one scan loads stay until every scan that said
// it needs them has pinned them.
//
//	Announce(spans)   each distinct frame the spans cover: want + 1
//	Pin(spans)        each distinct frame pinned: want - 1 if want > 0
//	                  (else an ordinary reference for the policy)
//	Retract(spans)    each distinct frame: want - 1 if want > 0
//
// A frame with want > 0 waits off the eviction queues, on Pool.announced
// (so evictions never walk over it, however many there are), and Prefetch
// does not take it; a Pin that finds no other frame to evict takes the
// newest such frame (Stats.AnnouncedEvictions), so announcements never
// make a Pin wait. Meeting its last announcement puts it back at the tail
// of its queue. Counts of frames not in the table are kept with their
// file until the frame is loaded; Unregister drops them.
//
// Every announcement must be met by a Pin or a Retract: one left open
// keeps its frame out of the hand's reach until a Pin needs it. A frame
// counts once per call, however many of the call's spans cover it, for
// Announce, Pin and Retract alike; a caller that announces batch by batch
// and pins batch by batch therefore balances.

// Announce records that the frames covering the spans will be pinned (once
// per call each). It loads nothing and never blocks on I/O. Bad spans are
// skipped (counted in Stats.PrefetchRejected); after Close it does nothing.
func (p *Pool) Announce(spans []Span) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eachDistinctFrameLocked(spans, func(fl *file, key frameKey) {
		p.stats.Announced++
		if f := p.table[key]; f != nil {
			p.announceLocked(f)
			return
		}
		if fl.announced == nil {
			fl.announced = make(map[int64]uint32)
		}
		fl.announced[key.index()]++
	})
}

// Retract withdraws one announcement of each distinct frame the spans
// cover, for frames a caller announced and will not pin after all (a scan
// closed early). A frame with no open announcement is left as it is.
func (p *Pool) Retract(spans []Span) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.eachDistinctFrameLocked(spans, func(fl *file, key frameKey) {
		if f := p.table[key]; f != nil {
			p.meetLocked(f)
			return
		}
		k := key.index()
		if n := fl.announced[k]; n > 1 {
			fl.announced[k] = n - 1
		} else if n == 1 {
			delete(fl.announced, k)
		}
	})
}

// eachDistinctFrameLocked calls fn once for each distinct frame the valid
// spans cover; bad spans are counted as rejected and skipped.
func (p *Pool) eachDistinctFrameLocked(spans []Span, fn func(fl *file, key frameKey)) {
	if p.closed {
		return
	}
	keys := p.scratchKeys[:0]
	p.eachFrameLocked(spans, func(_ *file, key frameKey) {
		keys = append(keys, key)
	})
	if !slices.IsSorted(keys) {
		slices.Sort(keys)
	}
	for i, key := range keys {
		if i > 0 && keys[i-1] == key {
			continue
		}
		fn(p.files[key.file()], key)
	}
	p.scratchKeys = keys[:0]
}

// takeAnnouncedLocked returns and forgets the open announcements of frame
// index k, which is being installed.
func (fl *file) takeAnnouncedLocked(k int64) uint32 {
	n, ok := fl.announced[k]
	if ok {
		delete(fl.announced, k)
	}
	return n
}

// keepAnnouncedLocked stores the open announcements of frame index k,
// which leaves the table.
func (fl *file) keepAnnouncedLocked(k int64, n uint32) {
	if fl.announced == nil {
		fl.announced = make(map[int64]uint32)
	}
	fl.announced[k] += n
}

// openAnnouncementsLocked counts the open announcements: those of frames in
// the table and those kept by registered files for frames not loaded.
func (p *Pool) openAnnouncementsLocked() int {
	n := 0
	for _, f := range p.table {
		n += int(f.want)
	}
	for _, fl := range p.files {
		for _, c := range fl.announced {
			n += int(c)
		}
	}
	return n
}
