package bufpool

import (
	"errors"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestWindow pins runs of frames whose slots are scattered by earlier
// loads of other files and checks that Window shows each run as the file's
// bytes, through slot reuse across files and an Unregister while pinned.
func TestWindow(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		const fs = 8192
		p := newPool(t, newEngine(t, mode, nil), Options{FrameSize: fs, Budget: 8 * fs, Windows: true})
		a := register(t, p, dir, "a", 20*fs+100, 1)
		b := register(t, p, dir, "b", 11*fs, 2)
		check := func(tf *testFile, off, n int64) {
			t.Helper()
			frames, err := p.Pin([]Span{{tf.id, off, n}}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer unpinAll(frames)
			got, err := p.Window(tf.id, off, n, frames)
			if err != nil {
				t.Fatalf("Window(%s, %d, %d): %v", tf.path, off, n, err)
			}
			if string(got) != string(tf.data[off:off+n]) {
				t.Fatalf("Window(%s, %d, %d): bytes differ from the file", tf.path, off, n)
			}
		}
		// Interleave the two files so that consecutive frames of one land in
		// slots far apart, and go round the pool several times.
		for round := range 6 {
			for k := int64(0); k < 5; k++ {
				check(a, (int64(round)*3+k)%18*fs+17, 2*fs+5)
				check(b, (int64(round)+k)%9*fs, fs+fs/2)
			}
		}
		check(a, 19*fs, fs+100) // the partial last frame
		check(a, 0, 4*fs)

		// Unregister while pinned: the window stays until the last Unpin.
		frames, err := p.Pin([]Span{{b.id, 2 * fs, 3 * fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Unregister(b.id); !errors.Is(err, ErrPinned) {
			t.Fatalf("Unregister while pinned: %v, want ErrPinned", err)
		}
		for range 3 {
			check(a, 5*fs, 5*fs) // reuses every unpinned slot
		}
		got, err := p.Window(b.id, 2*fs, 3*fs, frames)
		if err != nil || string(got) != string(b.data[2*fs:5*fs]) {
			t.Fatalf("window of an unregistered file's pinned frames: %v (bytes equal %v)", err, string(got) == string(b.data[2*fs:5*fs]))
		}
		unpinAll(frames)
		if _, err := p.Window(b.id, 2*fs, fs, nil); !errors.Is(err, ErrNotWindowed) {
			t.Fatalf("window of a released file: %v, want ErrNotWindowed", err)
		}
		check(a, 0, 8*fs)
		if st := p.Stats(); st.WindowMaps == 0 || st.WindowFailures != 0 {
			t.Fatalf("stats: %s", st)
		}
	})
}

func TestWindowErrors(t *testing.T) {
	dir := testdir.Direct(t)
	const fs = 8192
	eng := newEngine(t, ioengine.URing, nil)
	plain := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
	pf := register(t, plain, dir, "plain", 4*fs, 1)
	frames, err := plain.Pin([]Span{{pf.id, 0, 2 * fs}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = plain.Window(pf.id, 0, 2*fs, frames)
	unpinAll(frames)
	if !errors.Is(err, ErrNotWindowed) {
		t.Fatalf("Window on a pool without windows: %v, want ErrNotWindowed", err)
	}
	mustContain(t, err, "Options.Windows")

	p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs, Windows: true})
	a := register(t, p, dir, "a", 4*fs, 2)
	b := register(t, p, dir, "b", 4*fs, 3)
	frames, err = p.Pin([]Span{{a.id, 0, fs}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unpinAll(frames)
	if _, err := p.Window(a.id, 3*fs, 2*fs, frames); !errors.Is(err, ErrNotCovered) {
		t.Errorf("range past the window: %v, want ErrNotCovered", err)
	}
	if _, err := p.Window(a.id, -1, fs, frames); !errors.Is(err, ErrNotCovered) {
		t.Errorf("negative offset: %v, want ErrNotCovered", err)
	}
	_, err = p.Window(b.id, 0, fs, frames)
	if !errors.Is(err, ErrNotWindowed) {
		t.Errorf("another file's frame: %v, want ErrNotWindowed", err)
	}
	mustContain(t, err, "not mapped in its file's window")
	if _, err := New(Options{FrameSize: 4096, Budget: 4096 * (MaxWindowFrames + 1), Windows: true}); !errors.Is(err, ErrBadOptions) {
		t.Errorf("too many frames for windows: %v, want ErrBadOptions", err)
	}
}
