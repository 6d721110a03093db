package bufpool

import (
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// pinOnce pins s, checks the bytes and unpins.
func pinOnce(t *testing.T, p *Pool, tf *testFile, s Span) {
	t.Helper()
	frames, err := p.Pin([]Span{s}, nil)
	if err != nil {
		t.Fatalf("Pin(%v): %v", s, err)
	}
	checkFrames(t, p, tf, s, frames)
	unpinAll(frames)
}

// resident reports whether every frame covering s is resident, without
// counting a reference.
func resident(p *Pool, s Span) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	first, last := p.frameRange(s)
	for k := first; k <= last; k++ {
		f := p.table[makeKey(s.File, k)]
		if f == nil || f.state != stateResident {
			return false
		}
	}
	return true
}

// TestAnnounceKeepsFrames: frames two scans announced stay through a
// stream of other loads after the first scan pinned them, until the second
// pins them too; then the hand takes them like any other.
func TestAnnounceKeepsFrames(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
		tf := register(t, p, dir, "f", 64*fs, 1)
		head := Span{tf.id, 0, 4 * fs}
		// Two overlapping spans in one call count each frame once.
		p.Announce([]Span{head, {tf.id, fs, fs}})
		p.Announce([]Span{head})
		if st := p.Stats(); st.Announced != 8 || st.OpenAnnouncements != 8 || st.Misses != 0 || st.PrefetchIssued != 0 {
			t.Fatalf("after two announcements of 4 frames (nothing loaded): %s", st)
		}
		pinOnce(t, p, tf, head) // the leading scan: loads them, meets one each
		if st := p.Stats(); st.OpenAnnouncements != 4 || st.Misses != 4 {
			t.Fatalf("after the first scan's Pin: %s", st)
		}
		for k := int64(4); k < 64; k++ {
			pinOnce(t, p, tf, Span{tf.id, k * fs, fs})
		}
		if !resident(p, head) {
			t.Fatalf("announced frames evicted by a stream of 60 other loads: %s", p.Stats())
		}
		if st := p.Stats(); st.Evictions != 56 || st.AnnouncedEvictions != 0 || st.Stalls != 0 {
			t.Fatalf("stream through the 4 unannounced frames: %s", st)
		}
		before := p.Stats().Hits
		pinOnce(t, p, tf, head) // the trailing scan: all hits, meets the rest
		if st := p.Stats(); st.Hits != before+4 || st.OpenAnnouncements != 0 {
			t.Fatalf("the second scan's Pin: %s", st)
		}
		for k := int64(4); k < 16; k++ {
			pinOnce(t, p, tf, Span{tf.id, k * fs, fs})
		}
		if resident(p, Span{tf.id, 0, fs}) {
			t.Errorf("frame 0 survived 12 more loads after its announcements were met: %s", p.Stats())
		}
	})
}

// TestAnnouncePrefetchLeavesThem: Prefetch never evicts an announced frame;
// with nothing else to take it drops its loads.
func TestAnnouncePrefetchLeavesThem(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
		tf := register(t, p, dir, "f", 16*fs, 1)
		all := Span{tf.id, 0, 8 * fs}
		p.Announce([]Span{all})
		p.Announce([]Span{all})
		pinOnce(t, p, tf, all)
		p.Prefetch([]Span{{tf.id, 10 * fs, 2 * fs}})
		if st := p.Stats(); st.PrefetchIssued != 0 || st.PrefetchDropped != 2 || st.Evictions != 0 || !resident(p, all) {
			t.Fatalf("Prefetch into a pool of announced frames: %s", st)
		}
		p.Retract([]Span{all})
		p.Prefetch([]Span{{tf.id, 10 * fs, 2 * fs}})
		eventually(t, 10*time.Second, "prefetch loaded", func() bool { return p.Stats().Loading == 0 })
		if st := p.Stats(); st.PrefetchIssued != 2 || st.Evictions != 2 || st.OpenAnnouncements != 0 {
			t.Fatalf("Prefetch after Retract: %s", st)
		}
	})
}

// TestAnnouncePinTakesNewest: a Pin that finds only announced frames does
// not stall: it evicts the newest, whose announcement waits with its file
// and is met when the frame is loaded and pinned again.
func TestAnnouncePinTakesNewest(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
		tf := register(t, p, dir, "f", 16*fs, 1)
		for k := int64(0); k < 8; k++ {
			s := Span{tf.id, k * fs, fs}
			p.Announce([]Span{s})
			p.Announce([]Span{s})
			pinOnce(t, p, tf, s)
		}
		within(t, 10*time.Second, "Pin into a pool of announced frames", func() {
			pinOnce(t, p, tf, Span{tf.id, 10 * fs, fs})
		})
		st := p.Stats()
		if st.AnnouncedEvictions != 1 || st.Stalls != 0 || st.OpenAnnouncements != 8 {
			t.Fatalf("Pin that had to take an announced frame: %s", st)
		}
		if !resident(p, Span{tf.id, 0, 7 * fs}) || resident(p, Span{tf.id, 7 * fs, fs}) {
			t.Fatalf("evicted a frame other than the newest announced one (frame 7)")
		}
		pinOnce(t, p, tf, Span{tf.id, 7 * fs, fs}) // reload: meets the kept announcement
		if st := p.Stats(); st.OpenAnnouncements != 7 {
			t.Fatalf("reload of the evicted frame: %s", st)
		}
		p.Retract([]Span{{tf.id, 0, 16 * fs}})
		if st := p.Stats(); st.OpenAnnouncements != 0 {
			t.Fatalf("Retract of the whole file: %s", st)
		}
	})
}

// TestAnnounceRetractAndUnregister: Retract without an open announcement
// changes nothing; bad spans are counted and skipped; Unregister drops the
// file's open announcements, loaded or not; after Close both do nothing.
func TestAnnounceRetractAndUnregister(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
		a := register(t, p, dir, "a", 8*fs, 1)
		b := register(t, p, dir, "b", 8*fs, 2)
		p.Retract([]Span{{a.id, 0, 8 * fs}})
		p.Announce([]Span{{a.id, 0, 2 * fs}, {b.id, 0, 3 * fs}, {99, 0, 1}, {a.id, 0, 1 << 30}, {a.id, 0, 0}})
		if st := p.Stats(); st.OpenAnnouncements != 5 || st.PrefetchRejected != 2 {
			t.Fatalf("Announce with two bad spans: %s", st)
		}
		pinOnce(t, p, a, Span{a.id, fs, fs}) // meets a's frame 1
		p.Retract([]Span{{a.id, 0, 8 * fs}}) // meets a's frame 0, leaves the rest
		p.Retract([]Span{{a.id, 0, 8 * fs}})
		if st := p.Stats(); st.OpenAnnouncements != 3 {
			t.Fatalf("after a Pin and two Retracts of file a: %s", st)
		}
		pinOnce(t, p, b, Span{b.id, 0, fs})
		p.Announce([]Span{{b.id, 0, fs}})
		if err := p.Unregister(b.id); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.OpenAnnouncements != 0 {
			t.Fatalf("after Unregister of the announced file: %s", st)
		}
		if err := p.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
		p.Announce([]Span{{a.id, 0, fs}})
		p.Retract([]Span{{a.id, 0, fs}})
	})
}

// TestAnnouncedFramesLeaveTheQueues: a frame with an open announcement is
// on Pool.announced, not on a queue the eviction hand walks, so an eviction
// costs the same however many frames wait for a scan
// (BenchmarkAnnouncedMiss); meeting its last announcement puts it at the
// tail of its home queue, in the order they are met.
func TestAnnouncedFramesLeaveTheQueues(t *testing.T) {
	dir := testdir.Direct(t)
	eng := newEngine(t, ioengine.URing, nil)
	const fs = 4096
	p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
	tf := register(t, p, dir, "f", 32*fs, 1)
	lens := func() (probation, main, announced int) {
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.probation.len(), p.main.len(), p.announced.len()
	}
	frame := func(k int64) Span { return Span{tf.id, k * fs, fs} }
	for k := range int64(4) { // frames 0-3: two scans announce, one pins
		p.Announce([]Span{frame(k)})
		p.Announce([]Span{frame(k)})
		pinOnce(t, p, tf, frame(k))
	}
	for k := int64(4); k < 20; k++ { // a stream through the other 4 frames
		pinOnce(t, p, tf, frame(k))
	}
	if pr, m, a := lens(); pr+m != 4 || a != 4 {
		t.Fatalf("with frames 0-3 announced: probation %d + main %d, announced %d; want 4 and 4", pr, m, a)
	}
	if !resident(p, Span{tf.id, 0, 4 * fs}) {
		t.Fatal("an announced frame was evicted while others could go")
	}
	pinOnce(t, p, tf, frame(2)) // the second scan meets frames 2 and 0
	pinOnce(t, p, tf, frame(0))
	if pr, m, a := lens(); pr+m != 6 || a != 2 {
		t.Fatalf("after frames 2 and 0 were met: probation %d + main %d, announced %d; want 6 and 2", pr, m, a)
	}
	p.mu.Lock()
	tail := p.probation.tail
	got := []int64{tail.key.index(), tail.links[0].prev.key.index()}
	p.mu.Unlock()
	if got[0] != 0 || got[1] != 2 {
		t.Fatalf("probation ends with frames %d, %d (tail last); want 2 then 0", got[1], got[0])
	}
	for k := int64(20); k < 24; k++ { // four misses take the four older frames
		pinOnce(t, p, tf, frame(k))
	}
	if !resident(p, frame(0)) || !resident(p, frame(2)) || !resident(p, Span{tf.id, fs, fs}) || !resident(p, frame(3)) {
		t.Fatal("the frames met last, or the ones still announced, were evicted before older ones")
	}
	p.Retract([]Span{{tf.id, 0, 4 * fs}})
	if pr, m, a := lens(); pr+m != 8 || a != 0 {
		t.Fatalf("after Retract: probation %d + main %d, announced %d; want 8 and 0", pr, m, a)
	}
}
