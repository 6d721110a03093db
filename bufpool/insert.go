package bufpool

// Present reports, for each span, whether every frame it covers is in the
// pool (resident, or loading), appended to dst, and counts each such frame
// as referenced for the eviction policy, as a hit would (once per call, as
// Pin counts it, however many of the spans cover it), without pinning or
// announcing it. A reader about to read a batch learns which of its
// blocks it has to read and keeps those it will find from being the next
// evicted; the answer may change at once (a frame present now can be
// evicted before it is pinned, unless announced). A bad span is reported
// absent and counted in Stats.PrefetchRejected; after Close every span is
// absent.
func (p *Pool) Present(spans []Span, dst []bool) []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	call := p.calls
	for i, s := range spans {
		present := !p.closed
		if present {
			if _, err := p.checkSpanLocked(i, s); err != nil {
				p.stats.PrefetchRejected++
				present = false
			}
		}
		if present && s.Len > 0 {
			first, last := p.frameRange(s)
			for k := first; k <= last && present; k++ {
				present = p.table[makeKey(s.File, k)] != nil
			}
			if present {
				for k := first; k <= last; k++ {
					if f := p.table[makeKey(s.File, k)]; f.mark != call {
						f.mark = call
						f.freq = min(f.freq+1, maxFreq)
					}
				}
			}
		}
		dst = append(dst, present)
	}
	return dst
}

// Insert puts bytes a caller read from the device itself into the pool,
// as the resident frames of the span that are not in the pool already: a
// block read past the pool, into memory of the reader's own, is then
// found by the next Pin as if the pool had loaded it (Stats.Inserted).
// data holds the span's bytes: the span starts on a frame boundary and
// covers whole frames (the last may end at the file's end). Like a
// prefetch, Insert takes only frames it can evict without waiting and
// never one with open announcements; it reports how many frames it
// filled. The pool does not check the bytes: they must be the file's.
// checked says the caller verified them (a checksum over the span): the
// frames it fills start checked (Frame.Checked), as a pinner's MarkChecked
// would leave them, and a pinner need not verify them again; otherwise they
// start unchecked, as a load leaves them.
// A bad span is counted in Stats.PrefetchRejected and filled nothing;
// with Options.Windows, or after Close, Insert does nothing.
func (p *Pool) Insert(s Span, data []byte, checked bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.win != nil || s.Len == 0 {
		return 0
	}
	fl, err := p.checkSpanLocked(0, s)
	fs := int64(p.frameSize)
	if err != nil || s.Off%fs != 0 || int64(len(data)) != s.Len || (s.Len%fs != 0 && s.Off+s.Len != fl.size) {
		p.stats.PrefetchRejected++
		return 0
	}
	first, last := p.frameRange(s)
	n := 0
	for k := first; k <= last; k++ {
		key := makeKey(s.File, k)
		if p.table[key] != nil {
			continue
		}
		f := p.takeFrameLocked(false)
		if f == nil {
			break
		}
		p.installLocked(f, fl, key, 0, false)
		at := (k - first) * fs
		copy(f.buf[:f.n], data[at:])
		p.loading--
		f.state = stateResident
		if checked {
			f.MarkChecked()
		}
		p.stats.Inserted++
		n++
	}
	if invariantsOn {
		p.mustCheckInvariantsLocked()
	}
	return n
}
