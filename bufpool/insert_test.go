package bufpool

import (
	"bytes"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// residencyFrame is the frame size of residencyCase's pool.
const residencyFrame = 4096

// residencyCase is a pool of 8 frames holding the first 2 of a 16-frame
// file, spans over it of every kind, and whether each one's frames are all
// in the pool.
func residencyCase(t *testing.T, mode ioengine.IOMode) (*Pool, *testFile, []Span, []bool) {
	t.Helper()
	const fs = residencyFrame
	p := newPool(t, newEngine(t, mode, nil), Options{FrameSize: fs, Budget: 8 * fs})
	tf := register(t, p, testdir.Direct(t), "f", 16*fs, 1)
	pinOnce(t, p, tf, Span{tf.id, 0, 2 * fs})
	spans := []Span{
		{tf.id, 0, fs},       // resident
		{tf.id, fs, 2 * fs},  // frame 1 resident, frame 2 not
		{tf.id, 8 * fs, fs},  // not
		{tf.id, 0, 2 * fs},   // both resident
		{tf.id, 40 * fs, fs}, // past the end
		{tf.id + 7, 0, fs},   // no such file
		{tf.id, 2 * fs, 0},   // empty: no frame to lack
	}
	return p, tf, spans, []bool{true, false, false, true, false, false, true}
}

// TestPresent: Present tells the spans the pool holds from those it does
// not, a span with one missing frame as missing, a bad span as missing
// (counted rejected), and counts a reference of what it finds, not a pin
// or a load.
func TestPresent(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		p, tf, spans, want := residencyCase(t, mode)
		const fs = residencyFrame
		before := p.Stats()
		got := p.Present(spans, nil)
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("Present: span %d: %v, want %v (all: %v)", i, got[i], want[i], got)
			}
		}
		st := p.Stats()
		if st.PrefetchRejected != before.PrefetchRejected+2 || st.Misses != before.Misses || st.Hits != before.Hits || st.Pinned != 0 || st.PrefetchIssued != 0 {
			t.Errorf("Present changed more than its references: before %s, after %s", before, st)
		}
		p.mu.Lock()
		freq := p.table[makeKey(tf.id, 0)].freq
		p.mu.Unlock()
		if freq == 0 {
			t.Errorf("frame 0, found by Present, has no reference for the policy")
		}
		// Three spans over frame 0 in one call count one reference, as a
		// Pin's would.
		p.Present([]Span{{tf.id, 0, fs}, {tf.id, 0, fs}, {tf.id, 0, 2 * fs}}, nil)
		p.mu.Lock()
		again := p.table[makeKey(tf.id, 0)].freq
		p.mu.Unlock()
		if again != min(freq+1, maxFreq) {
			t.Errorf("frame 0's references after one more Present covering it three times: %d, want %d", again, min(freq+1, maxFreq))
		}
	})
}

// TestInsert: bytes a caller read itself become resident frames a Pin
// finds without a load; frames already there are left alone; a span that
// does not start on a frame or whose bytes do not match its length
// inserts nothing; announced frames are never taken for an insert.
func TestInsert(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
		tf := register(t, p, dir, "f", 32*fs, 2)
		s := Span{tf.id, 2 * fs, 2 * fs}
		if n := p.Insert(s, tf.data[s.Off:s.Off+s.Len], false); n != 2 {
			t.Fatalf("Insert of 2 frames into an empty pool: %d filled", n)
		}
		if !resident(p, s) {
			t.Fatalf("inserted frames not resident: %s", p.Stats())
		}
		before := p.Stats()
		pinOnce(t, p, tf, s) // checks the bytes against the file
		if st := p.Stats(); st.Misses != before.Misses || st.Hits != before.Hits+2 || st.Inserted != 2 {
			t.Fatalf("Pin of inserted frames: before %s, after %s", before, st)
		}
		// Bytes the caller did not verify start unchecked, as a load
		// leaves them; those it verified start checked.
		if checked := insertedChecked(t, p, s); checked {
			t.Errorf("frames inserted unchecked are Checked")
		}
		c := Span{tf.id, 4 * fs, fs}
		if n := p.Insert(c, tf.data[c.Off:c.Off+c.Len], true); n != 1 {
			t.Fatalf("Insert of a checked frame: %d filled", n)
		}
		if checked := insertedChecked(t, p, c); !checked {
			t.Errorf("a frame inserted checked is not Checked")
		}
		// Already resident: left as it is.
		junk := bytes.Repeat([]byte{0xEE}, 2*fs)
		if n := p.Insert(s, junk, false); n != 0 {
			t.Fatalf("Insert over resident frames filled %d", n)
		}
		pinOnce(t, p, tf, s)
		// Bad spans: misaligned, bytes of the wrong length, unknown file.
		rejected := p.Stats().PrefetchRejected
		for _, c := range []struct {
			s    Span
			data []byte
		}{
			{Span{tf.id, 8*fs + 512, fs}, tf.data[8*fs+512 : 9*fs+512]},
			{Span{tf.id, 8 * fs, fs}, tf.data[8*fs : 8*fs+100]},
			{Span{tf.id + 9, 0, fs}, tf.data[:fs]},
		} {
			if n := p.Insert(c.s, c.data, false); n != 0 {
				t.Errorf("Insert(%v) of a bad span filled %d", c.s, n)
			}
		}
		if got := p.Stats().PrefetchRejected - rejected; got != 3 {
			t.Errorf("bad inserts counted as rejected: %d, want 3", got)
		}
		// Announced frames stay: with all eight announced, an insert finds
		// no frame to take.
		all := Span{tf.id, 0, 8 * fs}
		p.Announce([]Span{all})
		pinOnce(t, p, tf, all)
		p.Announce([]Span{all})
		if n := p.Insert(Span{tf.id, 20 * fs, fs}, tf.data[20*fs:21*fs], false); n != 0 {
			t.Fatalf("Insert took one of eight announced frames: %s", p.Stats())
		}
		p.Retract([]Span{all})
		if n := p.Insert(Span{tf.id, 20 * fs, fs}, tf.data[20*fs:21*fs], false); n != 1 {
			t.Fatalf("Insert after the announcements were withdrawn: %d filled, %s", n, p.Stats())
		}
		pinOnce(t, p, tf, Span{tf.id, 20 * fs, fs})
	})
}

// insertedChecked pins s and says whether every frame of it is Checked.
func insertedChecked(t *testing.T, p *Pool, s Span) bool {
	t.Helper()
	frames, err := p.Pin([]Span{s}, nil)
	if err != nil {
		t.Fatalf("Pin(%v): %v", s, err)
	}
	defer unpinAll(frames)
	for _, f := range frames {
		if !f.Checked() {
			return false
		}
	}
	return true
}

// TestPinEachResident: of a batch of spans, those whose frames are all
// resident are pinned (a frame once per span covering it) and counted as
// hits once each; a span with a missing frame, a bad span, and every span
// after Close are passed over, starting no load.
func TestPinEachResident(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		p, tf, spans, want := residencyCase(t, mode)
		const fs = residencyFrame
		before := p.Stats()
		frames, pinned := p.PinEachResident(spans, nil, nil)
		for i := range want {
			if pinned[i] != want[i] {
				t.Errorf("span %d: pinned %v, want %v (all: %v)", i, pinned[i], want[i], pinned)
			}
		}
		if len(frames) != 3 {
			t.Fatalf("%d frames pinned for spans of 1 and 2 resident frames, want 3", len(frames))
		}
		for i, f := range frames {
			at := []int64{0, 0, fs}[i]
			if !bytes.Equal(f.Bytes(), tf.data[at:at+fs]) {
				t.Errorf("frame %d: not the bytes at offset %d", i, at)
			}
		}
		st := p.Stats()
		if st.Hits != before.Hits+2 || st.Misses != before.Misses || st.PrefetchRejected != before.PrefetchRejected+2 || st.Pinned != 2 || st.PrefetchIssued != before.PrefetchIssued {
			t.Errorf("want 2 hits, 2 rejected, 2 frames pinned, no load: before %s, after %s", before, st)
		}
		if resident(p, Span{tf.id, 8 * fs, fs}) {
			t.Errorf("a span passed over was loaded")
		}
		for _, f := range frames {
			f.Unpin()
		}
		if st := p.Stats(); st.Pinned != 0 {
			t.Errorf("%d frames still pinned after unpinning each", st.Pinned)
		}
		p.Close()
		frames, pinned = p.PinEachResident(spans[:1], nil, nil)
		if len(frames) != 0 || pinned[0] {
			t.Errorf("after Close: %d frames pinned, %v", len(frames), pinned)
		}
	})
}
