package bufpool

import (
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// refCache is a reference policy written for the test, run on the same
// trace of keys as the pool.
type refCache interface {
	access(key int64) (hit bool)
}

// clockCache is plain CLOCK: one reference bit per frame, set on a hit;
// the hand clears bits until it finds a clear one, and evicts that.
type clockCache struct {
	keys []int64
	ref  []bool
	pos  map[int64]int
	hand int
}

func newClock(frames int) *clockCache {
	return &clockCache{pos: map[int64]int{}, keys: make([]int64, 0, frames), ref: make([]bool, 0, frames)}
}

func (c *clockCache) access(key int64) bool {
	if i, ok := c.pos[key]; ok {
		c.ref[i] = true
		return true
	}
	if len(c.keys) < cap(c.keys) {
		c.pos[key] = len(c.keys)
		c.keys = append(c.keys, key)
		c.ref = append(c.ref, false)
		return false
	}
	for c.ref[c.hand] {
		c.ref[c.hand] = false
		c.hand = (c.hand + 1) % len(c.keys)
	}
	delete(c.pos, c.keys[c.hand])
	c.keys[c.hand], c.ref[c.hand] = key, false
	c.pos[key] = c.hand
	c.hand = (c.hand + 1) % len(c.keys)
	return false
}

// fifoCache evicts in insertion order.
type fifoCache struct {
	keys   []int64
	in     map[int64]bool
	frames int
}

func (c *fifoCache) access(key int64) bool {
	if c.in[key] {
		return true
	}
	if len(c.keys) == c.frames {
		delete(c.in, c.keys[0])
		c.keys = c.keys[1:]
	}
	c.keys = append(c.keys, key)
	c.in[key] = true
	return false
}

// TestScanResistance: a hot working set of a quarter of the pool, warmed
// up, then read at intervals during a long one-time scan whose reuse
// distance for the hot set is more than twice the pool. The pool keeps the
// hot set (S3-FIFO: the scan flows through probation); plain CLOCK and
// FIFO, run on the same trace, lose it.
func TestScanResistance(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const (
			fs         = 4096
			frames     = 64
			hotFrames  = 16
			scanLen    = 1200
			scanPerHot = 8 // scan frames between two hot accesses: hot reuse distance 16 × 9 = 144 > 64
		)
		p := newPool(t, eng, Options{FrameSize: fs, Budget: frames * fs, MaxBatch: 8})
		hot := register(t, p, dir, "hot", hotFrames*fs, 1)
		scan := register(t, p, dir, "scan", scanLen*fs, 2)

		type access struct {
			tf    *testFile
			frame int64
		}
		var trace []access
		for range 3 {
			for k := range hotFrames {
				trace = append(trace, access{hot, int64(k)})
			}
		}
		warm := len(trace)
		for i := range scanLen {
			trace = append(trace, access{scan, int64(i)})
			if i%scanPerHot == scanPerHot-1 {
				trace = append(trace, access{hot, int64(i/scanPerHot) % hotFrames})
			}
		}

		// The pool, one Pin per access.
		poolHot, hotAccesses := 0, 0
		for i, a := range trace {
			before := p.Stats().Hits
			s := Span{a.tf.id, a.frame*fs + 7, 100}
			got, err := p.Pin([]Span{s}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if a.tf == hot && i%5 == 0 {
				checkFrames(t, p, a.tf, s, got)
			}
			unpinAll(got)
			if i >= warm && a.tf == hot {
				hotAccesses++
				if p.Stats().Hits == before+1 {
					poolHot++
				}
			}
		}
		// The reference policies on the same trace.
		key := func(a access) int64 {
			if a.tf == hot {
				return -1 - a.frame
			}
			return a.frame
		}
		refs := map[string]refCache{
			"CLOCK": newClock(frames),
			"FIFO":  &fifoCache{in: map[int64]bool{}, frames: frames},
		}
		refHot := map[string]int{}
		for name, c := range refs {
			for i, a := range trace {
				hit := c.access(key(a))
				if i >= warm && a.tf == hot && hit {
					refHot[name]++
				}
			}
		}
		rate := func(n int) float64 { return float64(n) / float64(hotAccesses) }
		st := p.Stats()
		t.Logf("hot-set hit ratio during the scan (%d hot accesses): pool %.3f, CLOCK %.3f, FIFO %.3f; %s",
			hotAccesses, rate(poolHot), rate(refHot["CLOCK"]), rate(refHot["FIFO"]), st)
		if rate(poolHot) < 0.95 {
			t.Errorf("pool kept %.3f of the hot set's accesses during the scan, want >= 0.95", rate(poolHot))
		}
		for name, n := range refHot {
			if rate(n) > 0.2 {
				t.Errorf("reference %s hit %.3f of the hot accesses: the trace does not defeat it, so it proves nothing", name, rate(n))
			}
		}
		if st.Promotions < hotFrames {
			t.Errorf("%d promotions; the hot set should have moved to main", st.Promotions)
		}
	})
}

// TestGhost: a key evicted from probation and seen again soon enters main
// directly.
func TestGhost(t *testing.T) {
	dir := testdir.Direct(t)
	eng := newEngine(t, ioengine.Syscall, nil)
	const fs = 4096
	p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
	tf := register(t, p, dir, "f", 32*fs, 1)
	pin := func(k int64) *Frame {
		t.Helper()
		got, err := p.Pin([]Span{{tf.id, k * fs, 1}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		got[0].Unpin()
		return got[0]
	}
	for k := range int64(8) {
		pin(k)
	}
	pin(8) // evicts frame 0 (probation head, not referenced) to the ghost list
	if st := p.Stats(); st.Evictions != 1 || st.GhostHits != 0 {
		t.Fatalf("after filling and one more: %s", st)
	}
	f := pin(0)
	p.mu.Lock()
	q := f.queue
	p.mu.Unlock()
	if st := p.Stats(); st.GhostHits != 1 || q != queueMain {
		t.Errorf("frame 0 again: queue %d (want main %d); %s", q, queueMain, st)
	}
	if err := p.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

// TestEvictionSkipsPinned: with all but one frame pinned, every load goes
// through that one frame; pinned frames keep their data.
func TestEvictionSkipsPinned(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
		tf := register(t, p, dir, "f", 64*fs, 1)
		held, err := p.Pin([]Span{{tf.id, 0, 7 * fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k := int64(7); k < 64; k++ {
			s := Span{tf.id, k * fs, fs}
			got, err := p.Pin([]Span{s}, nil)
			if err != nil {
				t.Fatal(err)
			}
			checkFrames(t, p, tf, s, got)
			unpinAll(got)
		}
		checkFrames(t, p, tf, Span{tf.id, 0, 7 * fs}, held)
		unpinAll(held)
		if st := p.Stats(); st.Evictions != 56 || st.Stalls != 0 {
			t.Errorf("%s", st)
		}
	})
}
