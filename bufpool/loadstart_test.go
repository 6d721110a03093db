package bufpool

import (
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestLoadStart: frames LoadStart began are found by a later Pin — after
// Wait, as prefetch hits without misses; without Wait, a Pin of them
// finishes the loads itself; a Pin that needs every frame of the pool
// while calls nobody waited for hold some finishes them rather than stall;
// Close finishes what is left. On an inline engine, on one with a ring
// goroutine, and on the syscall backend (where it is Prefetch).
func TestLoadStart(t *testing.T) {
	for _, c := range []struct {
		name   string
		mode   ioengine.IOMode
		inline bool
	}{{"uring-inline", ioengine.URing, true}, {"uring", ioengine.URing, false}, {"syscall", ioengine.Syscall, false}} {
		t.Run(c.name, func(t *testing.T) {
			eng := testengineWith(t, c.mode, c.inline)
			const frames = 16
			p := newPool(t, eng, Options{FrameSize: 4096, Budget: frames * 4096})
			tf := register(t, p, testdir.Direct(t), "a", 64*4096, 1)
			span := func(first, n int) Span { return Span{File: tf.id, Off: int64(first) * 4096, Len: int64(n) * 4096} }
			pin := func(what string, s Span) {
				t.Helper()
				within(t, 10e9, what, func() {
					fs, err := p.Pin([]Span{s}, nil)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					checkFrames(t, p, tf, s, fs)
					unpinAll(fs)
				})
			}
			// Waited for: the Pin misses nothing.
			call := p.LoadStart([]Span{span(0, 4)})
			call.Wait()
			call.Wait() // more than once is fine
			before := p.Stats()
			pin("a Pin after Wait", span(0, 4))
			if st := p.Stats(); st.Misses != before.Misses || (c.mode != ioengine.Syscall && st.PrefetchHits < before.PrefetchHits+4) {
				t.Errorf("Pin after a finished LoadStart: misses %d → %d, prefetch hits %d → %d", before.Misses, st.Misses, before.PrefetchHits, st.PrefetchHits)
			}
			// Not waited for: the Pin finishes it.
			p.LoadStart([]Span{span(8, 4)})
			pin("a Pin of frames being loaded", span(8, 4))
			// Calls nobody waits for hold frames; a Pin of the whole pool
			// finishes them instead of stalling.
			p.LoadStart([]Span{span(20, 6)})
			p.LoadStart([]Span{span(30, 6)})
			pin("a Pin of every frame", span(40, frames))
			// Left for Close (the cleanup) to finish.
			p.LoadStart([]Span{span(50, 4)})
			if st := p.Stats(); st.PrefetchRejected != 0 {
				t.Errorf("prefetch rejected %d", st.PrefetchRejected)
			}
		})
	}
}

func testengineWith(t *testing.T, mode ioengine.IOMode, inline bool) *ioengine.Engine {
	t.Helper()
	e := newEngine(t, mode, nil)
	if !inline {
		return e
	}
	in, err := e.NewInline()
	if in == nil {
		t.Skipf("no inline engine: %v", err)
	}
	t.Cleanup(func() { in.Close() })
	return in
}

// TestCheckedMark: a frame marked checked stays so while it is resident,
// and a frame loaded again (after its eviction) starts unchecked, without
// the note kept with its old bytes.
func TestCheckedMark(t *testing.T) {
	eng := newEngine(t, ioengine.URing, nil)
	p := newPool(t, eng, Options{FrameSize: 4096, Budget: 8 * 4096})
	tf := register(t, p, testdir.Direct(t), "a", 64*4096, 1)
	first := []Span{{File: tf.id, Off: 0, Len: 4096}}
	fs, err := p.Pin(first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fs[0].Checked() {
		t.Fatal("a frame just loaded is checked")
	}
	fs[0].MarkChecked()
	if n := fs[0].CheckNote(); n != 0 {
		t.Fatalf("note %#x before any was kept", n)
	}
	fs[0].SetCheckNote(0x2a)
	unpinAll(fs)
	if fs, err = p.Pin(first, nil); err != nil || !fs[0].Checked() || fs[0].CheckNote() != 0x2a {
		t.Fatalf("resident frame: checked %v, note %#x, %v", fs[0].Checked(), fs[0].CheckNote(), err)
	}
	unpinAll(fs)
	// Other frames, each referenced twice (so they go to main, where the
	// first frame is), until the first frame is evicted.
	for i := 1; i < 64*4; i++ {
		s := []Span{{File: tf.id, Off: int64(1+i%63) * 4096, Len: 4096}}
		for range 2 {
			more, err := p.Pin(s, nil)
			if err != nil {
				t.Fatal(err)
			}
			unpinAll(more)
		}
	}
	p.mu.Lock()
	_, resident := p.table[makeKey(tf.id, 0)]
	p.mu.Unlock()
	if resident {
		t.Fatal("the first frame was not evicted")
	}
	if fs, err = p.Pin(first, nil); err != nil || fs[0].Checked() || fs[0].CheckNote() != 0 {
		t.Fatalf("frame loaded again: checked %v, note %#x, %v", fs[0].Checked(), fs[0].CheckNote(), err)
	}
	unpinAll(fs)
}
