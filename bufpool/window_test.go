package bufpool

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"golang.org/x/sys/unix"
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
		checkWindowLayout(t, p, a.id)
		checkWindowLayout(t, p, b.id)

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
		// Going round an 8-frame pool reuses slots still mapped at their
		// earlier places: those loads move the mapping.
		if st := p.Stats(); st.WindowMaps == 0 || st.WindowMoves == 0 || st.WindowFailures != 0 {
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

// setWindowFault installs the test hook that fails mapping calls.
func (p *Pool) setWindowFault(fn func(op string, key frameKey) error) {
	p.win.mu.Lock()
	p.win.testFault = fn
	p.win.mu.Unlock()
}

// TestWindowMapFailure: a frame whose mapping the kernel refuses is not
// windowed (Window says so, the bytes are still there to copy), the
// others are, and the frame's next load maps it again.
func TestWindowMapFailure(t *testing.T) {
	dir := testdir.Direct(t)
	const fs = 8192
	p := newPool(t, newEngine(t, ioengine.URing, nil), Options{FrameSize: fs, Budget: 8 * fs, Windows: true})
	a := register(t, p, dir, "a", 16*fs, 1)
	refuse := makeKey(a.id, 2)
	p.setWindowFault(func(op string, key frameKey) error {
		if op == "map" && key == refuse {
			return unix.ENOMEM
		}
		return nil
	})
	frames, err := p.Pin([]Span{{a.id, fs, 3 * fs}}, nil) // frames 1, 2, 3
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Window(a.id, fs, 3*fs, frames); !errors.Is(err, ErrNotWindowed) || !strings.Contains(err.Error(), "offset 16384") {
		t.Errorf("Window over the refused frame: %v, want ErrNotWindowed naming offset 16384", err)
	}
	got := make([]byte, 3*fs)
	if err := CopyOut(got, frames, fs); err != nil || string(got) != string(a.data[fs:4*fs]) {
		t.Errorf("CopyOut of the same range: %v (bytes equal %v)", err, string(got) == string(a.data[fs:4*fs]))
	}
	if w, err := p.Window(a.id, 3*fs, fs, frames[2:]); err != nil || string(w) != string(a.data[3*fs:4*fs]) {
		t.Errorf("Window of a frame mapped beside it: %v", err)
	}
	unpinAll(frames)
	if st := p.Stats(); st.WindowFailures != 1 {
		t.Errorf("WindowFailures %d, want 1", st.WindowFailures)
	}
	// Push frame 2 out, clear the fault, load it again: mapped this time.
	p.setWindowFault(nil)
	for k := int64(8); k < 16; k++ {
		fr, err := p.Pin([]Span{{a.id, k * fs, fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		unpinAll(fr)
	}
	frames, err = p.Pin([]Span{{a.id, fs, 3 * fs}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unpinAll(frames)
	if w, err := p.Window(a.id, fs, 3*fs, frames); err != nil || string(w) != string(a.data[fs:4*fs]) {
		t.Errorf("Window after the frame was loaded again: %v", err)
	}
}

// TestWindowGapFailure: when a place cannot be turned back into a gap the
// pool stops using windows (Window fails for every frame) but goes on
// serving pins, and Close still succeeds.
func TestWindowGapFailure(t *testing.T) {
	dir := testdir.Direct(t)
	const fs = 8192
	p := newPool(t, newEngine(t, ioengine.URing, nil), Options{FrameSize: fs, Budget: 8 * fs, Windows: true})
	a := register(t, p, dir, "a", 32*fs, 1)
	p.setWindowFault(func(op string, key frameKey) error {
		if op == "gap" {
			return unix.ENOMEM
		}
		return nil
	})
	// Go round the pool twice: the first reuse of a slot needs a gap.
	for k := int64(0); k < 16; k++ {
		fr, err := p.Pin([]Span{{a.id, k * fs, fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		unpinAll(fr)
	}
	frames, err := p.Pin([]Span{{a.id, 20 * fs, 2 * fs}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unpinAll(frames)
	if _, err := p.Window(a.id, 20*fs, 2*fs, frames); !errors.Is(err, ErrNotWindowed) || !strings.Contains(err.Error(), "stopped using windows") {
		t.Errorf("Window after a failed gap: %v, want ErrNotWindowed (stopped)", err)
	}
	checkFrames(t, p, a, Span{a.id, 20 * fs, 2 * fs}, frames)
}

// TestWindowMoveRefused: a kernel that cannot move a shared mapping
// (EINVAL, before Linux 5.13) turns moves off and every load maps its slot
// afresh; a move refused for another reason (ENOMEM) falls back for that
// load only. The bytes are the file's either way.
func TestWindowMoveRefused(t *testing.T) {
	for _, refusal := range []unix.Errno{unix.EINVAL, unix.ENOMEM} {
		t.Run(refusal.Error(), func(t *testing.T) {
			dir := testdir.Direct(t)
			const fs = 8192
			p := newPool(t, newEngine(t, ioengine.URing, nil), Options{FrameSize: fs, Budget: 8 * fs, Windows: true})
			a := register(t, p, dir, "a", 40*fs, 1)
			var tries int
			p.setWindowFault(func(op string, key frameKey) error {
				if op == "move" {
					tries++
					if tries%2 == 1 {
						return refusal
					}
				}
				return nil
			})
			for round := range 3 {
				for k := int64(0); k < 24; k += 2 {
					off := (k + int64(round)) * fs
					frames, err := p.Pin([]Span{{a.id, off, 2 * fs}}, nil)
					if err != nil {
						t.Fatal(err)
					}
					got, err := p.Window(a.id, off, 2*fs, frames)
					if err != nil || string(got) != string(a.data[off:off+2*fs]) {
						t.Fatalf("Window(%d, %d): %v (bytes equal %v)", off, 2*fs, err, err == nil && string(got) == string(a.data[off:off+2*fs]))
					}
					unpinAll(frames)
				}
			}
			checkWindowLayout(t, p, a.id)
			st := p.Stats()
			if st.WindowFailures != 0 {
				t.Fatalf("stats: %s", st)
			}
			if refusal == unix.EINVAL && (tries != 1 || st.WindowMoves != 0) {
				t.Fatalf("after EINVAL: %d moves tried, %d made; want 1 tried, none made (%s)", tries, st.WindowMoves, st)
			}
			if refusal == unix.ENOMEM && (tries < 4 || st.WindowMoves != uint64(tries/2)) {
				t.Fatalf("after ENOMEM: %d moves tried, %d made; want every second one made (%s)", tries, st.WindowMoves, st)
			}
		})
	}
}

// TestWindowsRefusedAtNew: where the memfd is refused (a sandbox), New
// makes the pool without windows, says why, and Options reports it.
func TestWindowsRefusedAtNew(t *testing.T) {
	old := sharedArena
	sharedArena = func(int) (int, []byte, error) { return -1, nil, fmt.Errorf("memfd_create: %w", unix.EPERM) }
	defer func() { sharedArena = old }()
	var logged []string
	p := newPool(t, newEngine(t, ioengine.URing, nil), Options{FrameSize: 8192, Budget: 8 * 8192, Windows: true,
		Logf: func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }})
	if p.Options().Windows {
		t.Error("Options().Windows is true for a pool whose windows were refused")
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "windows off") || !strings.Contains(logged[0], "operation not permitted") {
		t.Errorf("logged %q, want one line saying windows are off and why", logged)
	}
	a := register(t, p, testdir.Direct(t), "a", 4*8192, 1)
	frames, err := p.Pin([]Span{{a.id, 0, 3 * 8192}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unpinAll(frames)
	checkFrames(t, p, a, Span{a.id, 0, 3 * 8192}, frames)
	if _, err := p.Window(a.id, 0, 3*8192, frames); !errors.Is(err, ErrNotWindowed) {
		t.Errorf("Window: %v, want ErrNotWindowed", err)
	}
}
