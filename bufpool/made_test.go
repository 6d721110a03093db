package bufpool

import (
	"runtime"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// A pool makes its frames as it first needs them, lowest slot first: a
// big cache that holds little costs little Go memory, and once every frame
// is made the pool evicts as before.
func TestFramesMadeAsNeeded(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		eng := newEngine(t, mode, nil)
		const frames = 1 << 16 // 256 MiB of 4 KiB frames
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p := newPool(t, eng, Options{Budget: frames * 4096, FrameSize: 4096})
		runtime.GC()
		runtime.ReadMemStats(&after)
		// Made whole at New, the frames were 17 MB (a Frame is about 260
		// bytes), the table and the ghost list 6 MB more.
		if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 2<<20 {
			t.Errorf("a pool of %d frames holding nothing grew the heap by %d bytes", frames, grew)
		}
		if p.Frames() != frames || p.made != 0 {
			t.Fatalf("Frames() %d, made %d; want %d and 0", p.Frames(), p.made, frames)
		}
		tf := register(t, p, testdir.Direct(t), "f", 10*4096, 1)
		got, err := p.Pin([]Span{{tf.id, 0, 10 * 4096}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkFrames(t, p, tf, Span{tf.id, 0, 10 * 4096}, got)
		for i, f := range got {
			if f.slot != i {
				t.Errorf("frame %d of the first Pin has slot %d: frames are made lowest slot first", i, f.slot)
			}
		}
		unpinAll(got)
		p.mu.Lock()
		made := p.made
		p.mu.Unlock()
		if made != 10 {
			t.Errorf("made %d frames for a Pin of 10 into an empty pool", made)
		}
	})
}

// A small pool makes all its frames, then evicts: the ghost list is used
// only once no frame is left to make.
func TestFramesMadeThenEvicted(t *testing.T) {
	eng := newEngine(t, ioengine.URing, nil)
	p := newPool(t, eng, Options{Budget: 8 * 4096, FrameSize: 4096})
	tf := register(t, p, testdir.Direct(t), "f", 64*4096, 2)
	for k := range int64(64) {
		s := Span{tf.id, k * 4096, 4096}
		got, err := p.Pin([]Span{s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkFrames(t, p, tf, s, got)
		unpinAll(got)
		if err := p.checkInvariants(); err != nil {
			t.Fatalf("after frame %d: %v", k, err)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.made != 8 || p.ghost.ring == nil || p.ghost.len() == 0 {
		t.Fatalf("made %d of 8 frames, ghost list made %v holding %d keys, after 64 frames through the pool", p.made, p.ghost.ring != nil, p.ghost.len())
	}
}
