package bufpool

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

func TestOptionsBad(t *testing.T) {
	cases := []struct {
		name  string
		opts  Options
		field string
	}{
		{"frame size not a multiple of 4096", Options{FrameSize: 1000}, "FrameSize"},
		{"frame size 4097", Options{FrameSize: 4097}, "FrameSize"},
		{"negative frame size", Options{FrameSize: -4096}, "FrameSize"},
		{"frame size too large", Options{FrameSize: 2 << 30, Budget: 32 << 30}, "FrameSize"},
		{"budget too small", Options{FrameSize: 4096, Budget: 7 * 4096}, "Budget"},
		{"budget below one frame", Options{Budget: 100}, "Budget"},
		{"negative budget", Options{Budget: -1}, "Budget"},
		{"too many frames", Options{FrameSize: 4096, Budget: 4096 * (MaxFrames + 1)}, "Budget"},
		{"negative workers", Options{IOWorkers: -1}, "IOWorkers"},
		{"too many workers", Options{IOWorkers: MaxIOWorkers + 1}, "IOWorkers"},
		{"negative batch", Options{MaxBatch: -1}, "MaxBatch"},
		{"probation 95%", Options{ProbationPercent: 95}, "ProbationPercent"},
		{"bad mode", Options{IOMode: ioengine.IOMode(9)}, "IOMode"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := New(c.opts)
			if err == nil {
				p.Close()
				t.Fatalf("New(%s) succeeded", c.opts.String())
			}
			if !errors.Is(err, ErrBadOptions) {
				t.Errorf("error %v does not wrap ErrBadOptions", err)
			}
			mustContain(t, err, "bufpool: bad options", c.field)
		})
	}
}

func TestOptionsDefaults(t *testing.T) {
	p, err := New(Options{IOMode: ioengine.Syscall})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	o := p.Options()
	if p.FrameSize() != DefaultFrameSize || p.Frames() != DefaultBudget/DefaultFrameSize ||
		o.IOWorkers != DefaultIOWorkers || o.MaxBatch != DefaultMaxBatch || o.ProbationPercent != DefaultProbationPercent {
		t.Errorf("defaults: frame size %d, frames %d, options %s", p.FrameSize(), p.Frames(), o.String())
	}
	want := "bufpool.Options{FrameSize: 262144, Budget: 268435456 (1024 frames), IOWorkers: 2, Engine: own, mode syscall, MaxBatch: 64, ProbationPercent: 10, Windows: false, Prefault: false, FixedBuffers: false}"
	if got := (&Options{FrameSize: 262144, Budget: 268435456, IOWorkers: 2, IOMode: ioengine.Syscall, MaxBatch: 64, ProbationPercent: 10}).String(); got != want {
		t.Errorf("String:\n got %s\nwant %s", got, want)
	}
	if s := p.Stats(); s.Frames != 1024 || s.FrameSize != DefaultFrameSize || s.Resident != 0 || s.Pinned != 0 {
		t.Errorf("fresh pool stats: %s", s)
	}
	// A budget that is not a multiple of the frame size rounds down.
	q, err := New(Options{FrameSize: 8192, Budget: 8*8192 + 4096, IOMode: ioengine.Syscall})
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if q.Frames() != 8 {
		t.Errorf("Budget 8.5 frames: %d frames, want 8", q.Frames())
	}
}

// TestPinData pins random spans of a file whose size is not a multiple of
// the frame size through a pool smaller than the file, and compares every
// frame and every CopyOut with the file.
func TestPinData(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 8192
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 16 * fs, MaxBatch: 5})
		size := 40*fs + 1234
		tf := register(t, p, dir, "data", size, 1)
		r := rand.New(rand.NewPCG(7, 7))
		var frames []*Frame
		for i := range 300 {
			off := r.Int64N(int64(size))
			n := r.Int64N(min(int64(size)-off, 10*fs) + 1)
			if i%10 == 0 { // the file's tail, the partial last frame
				off, n = int64(size)-n/4-1, n/4+1
			}
			s := Span{tf.id, off, n}
			var err error
			frames, err = p.Pin([]Span{s}, frames[:0])
			if err != nil {
				t.Fatalf("Pin(%v): %v", s, err)
			}
			checkFrames(t, p, tf, s, frames)
			unpinAll(frames)
		}
		if err := p.checkQuiescent(); err != nil {
			t.Fatal(err)
		}
		st := p.Stats()
		t.Logf("%s", st)
		if st.Misses == 0 || st.Hits == 0 || st.Evictions == 0 || st.Loads != st.Misses || st.ReadErrors != 0 {
			t.Errorf("stats: %s", st)
		}
		if st.Resident > p.Frames() {
			t.Errorf("%d resident frames in a pool of %d", st.Resident, p.Frames())
		}
	})
}

// TestPinSpansOrder checks the order and duplicates of several spans in
// one call, across files.
func TestPinSpansOrder(t *testing.T) {
	dir := testdir.Direct(t)
	eng := newEngine(t, ioengine.URing, nil)
	const fs = 4096
	p := newPool(t, eng, Options{FrameSize: fs, Budget: 32 * fs})
	a := register(t, p, dir, "a", 10*fs, 1)
	b := register(t, p, dir, "b", 5*fs+10, 2)
	spans := []Span{{a.id, 0, 2 * fs}, {b.id, 4 * fs, fs + 10}, {a.id, fs, 1}, {a.id, 3 * fs, 0}, {a.id, fs + 5, fs}}
	frames, err := p.Pin(spans, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unpinAll(frames)
	want := []struct {
		tf  *testFile
		off int64
	}{{a, 0}, {a, fs}, {b, 4 * fs}, {b, 5 * fs}, {a, fs}, {a, fs}, {a, 2 * fs}}
	if len(frames) != len(want) {
		t.Fatalf("%d frames for %s, want %d", len(frames), fmtSpans(spans), len(want))
	}
	for i, w := range want {
		if frames[i].File() != w.tf.id || frames[i].Offset() != w.off {
			t.Errorf("frame %d: file %d offset %d, want file %d offset %d", i, frames[i].File(), frames[i].Offset(), w.tf.id, w.off)
		}
	}
	if frames[1] != frames[4] || frames[4] != frames[5] {
		t.Error("the frame three spans share is not the same *Frame")
	}
	if n := frames[1].pins.Load(); n != 3 {
		t.Errorf("shared frame has %d pins, want 3", n)
	}
	if len(frames[3].Bytes()) != 10 {
		t.Errorf("b's last frame holds %d bytes, want 10", len(frames[3].Bytes()))
	}
	st := p.Stats()
	if st.Misses != 5 || st.Hits != 0 || st.Loads != 5 || st.Pinned != 5 {
		t.Errorf("stats after one Pin of 5 distinct frames: %s", st)
	}
	// Appends to dst.
	more, err := p.Pin([]Span{{a.id, 0, 1}}, frames[:len(frames):len(frames)])
	if err != nil {
		t.Fatal(err)
	}
	if len(more) != len(frames)+1 || more[len(frames)] != frames[0] {
		t.Errorf("Pin did not append to dst")
	}
	more[len(frames)].Unpin()
}

func TestPinBadSpans(t *testing.T) {
	dir := testdir.Direct(t)
	eng := newEngine(t, ioengine.Syscall, nil)
	const fs = 4096
	p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
	tf := register(t, p, dir, "small.arrow", 3*fs+100, 1)
	cases := []struct {
		span  Span
		is    error
		parts []string
	}{
		{Span{tf.id, 3 * fs, 101}, ErrBadSpan, []string{"small.arrow", "offset 12288", "length 101", "size 12388"}},
		{Span{tf.id, 3*fs + 101, 0}, ErrBadSpan, []string{"small.arrow", "offset 12389"}},
		{Span{tf.id, -1, 10}, ErrBadSpan, []string{"small.arrow", "negative offset -1"}},
		{Span{tf.id, 0, -5}, ErrBadSpan, []string{"small.arrow", "negative length -5"}},
		{Span{tf.id, 1 << 62, 1 << 62}, ErrBadSpan, []string{"small.arrow"}},
		{Span{tf.id + 1, 0, 1}, ErrUnknownFile, []string{"file 2"}},
		{Span{0, 0, 1}, ErrUnknownFile, []string{"file 0"}},
		{Span{tf.id, 0, 9 * fs}, ErrBadSpan, []string{"ends beyond"}},
	}
	for _, c := range cases {
		dst := []*Frame{nil}
		got, err := p.Pin([]Span{{tf.id, 0, 1}, c.span}, dst)
		if !errors.Is(err, c.is) {
			t.Errorf("Pin(%v): error %v, want %v", c.span, err, c.is)
			continue
		}
		mustContain(t, err, append(c.parts, "span 1")...)
		if len(got) != 1 {
			t.Errorf("Pin(%v) failed but returned %d frames", c.span, len(got))
		}
	}
	// The last partial frame ends at the size.
	frames, err := p.Pin([]Span{{tf.id, 3 * fs, 100}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFrames(t, p, tf, Span{tf.id, 3 * fs, 100}, frames)
	unpinAll(frames)
	// Nothing to pin.
	if frames, err := p.Pin(nil, nil); err != nil || len(frames) != 0 {
		t.Errorf("Pin(nil): %d frames, %v", len(frames), err)
	}
	if frames, err := p.Pin([]Span{{tf.id, 5, 0}}, nil); err != nil || len(frames) != 0 {
		t.Errorf("Pin(empty span): %d frames, %v", len(frames), err)
	}
}

func TestTooManyFrames(t *testing.T) {
	dir := testdir.Direct(t)
	eng := newEngine(t, ioengine.Syscall, nil)
	const fs = 4096
	p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
	tf := register(t, p, dir, "f", 20*fs, 1)
	_, err := p.Pin([]Span{{tf.id, 0, 9 * fs}}, nil)
	if !errors.Is(err, ErrTooManyFrames) {
		t.Fatalf("Pin of 9 frames in a pool of 8: %v", err)
	}
	mustContain(t, err, "more than 8 frames")
	// Spans sharing frames: 16 occurrences of 8 distinct frames fit.
	frames, err := p.Pin([]Span{{tf.id, 0, 8 * fs}, {tf.id, 0, 8 * fs}}, nil)
	if err != nil {
		t.Fatalf("Pin of 8 distinct frames twice: %v", err)
	}
	if len(frames) != 16 {
		t.Errorf("%d frames, want 16", len(frames))
	}
	unpinAll(frames)
	if st := p.Stats(); st.Stalls != 0 {
		t.Errorf("stalls: %d", st.Stalls)
	}
}

// TestLoadOnce: many goroutines pin the same frames at once; each frame is
// loaded exactly once.
func TestLoadOnce(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 16384
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 64 * fs, IOWorkers: 3, MaxBatch: 4})
		tf := register(t, p, dir, "f", 32*fs, 3)
		// Hold the first load until every goroutine has pinned, so most of
		// them find frames loading.
		release := make(chan struct{})
		var once sync.Once
		p.setBeforeDo(func(int) { once.Do(func() { <-release }) })
		const goroutines = 16
		var wg sync.WaitGroup
		errs := make(chan error, goroutines)
		for g := range goroutines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 1))
				for range 20 {
					off := r.Int64N(32 * fs)
					s := Span{tf.id, off, min(32*fs-off, 1+r.Int64N(4*fs))}
					frames, err := p.Pin([]Span{s}, nil)
					if err != nil {
						errs <- err
						return
					}
					checkFrames(t, p, tf, s, frames)
					unpinAll(frames)
				}
			}()
		}
		time.Sleep(20 * time.Millisecond)
		close(release)
		within(t, 20*time.Second, "pinning goroutines", wg.Wait)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		st := p.Stats()
		t.Logf("%s", st)
		if st.Evictions != 0 {
			t.Fatalf("evictions in a pool larger than the file: %d", st.Evictions)
		}
		if st.Loads != uint64(st.Resident) || st.Misses != st.Loads || st.Loads > 32 {
			t.Errorf("loads %d, misses %d, resident %d: want one load per frame", st.Loads, st.Misses, st.Resident)
		}
		if st.LoadWaits == 0 {
			t.Errorf("no Pin waited for another's load")
		}
	})
}

// TestStall: with every frame pinned a Pin waits, counted, and goes on
// once one frame is unpinned.
func TestStall(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
		tf := register(t, p, dir, "f", 20*fs, 1)
		held, err := p.Pin([]Span{{tf.id, 0, 8 * fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		var got []*Frame
		go func() {
			var err error
			got, err = p.Pin([]Span{{tf.id, 10 * fs, 2 * fs}}, nil)
			done <- err
		}()
		eventually(t, 5*time.Second, "stall counted", func() bool { return p.Stats().Stalls == 1 })
		select {
		case err := <-done:
			t.Fatalf("Pin returned while every frame was pinned: %v", err)
		case <-time.After(30 * time.Millisecond):
		}
		// Prefetch never blocks: with nothing evictable it drops.
		p.Prefetch([]Span{{tf.id, 15 * fs, 2 * fs}})
		if st := p.Stats(); st.PrefetchDropped != 2 || st.PrefetchIssued != 0 {
			t.Errorf("prefetch with every frame pinned: %s", st)
		}
		held[3].Unpin() // one frame free: still not enough for two
		select {
		case err := <-done:
			t.Fatalf("Pin of 2 frames returned with 1 evictable: %v", err)
		case <-time.After(30 * time.Millisecond):
		}
		held[5].Unpin()
		within(t, 5*time.Second, "stalled Pin", func() {
			if err := <-done; err != nil {
				t.Errorf("stalled Pin: %v", err)
			}
		})
		checkFrames(t, p, tf, Span{tf.id, 10 * fs, 2 * fs}, got)
		unpinAll(got)
		for i, f := range held {
			if i != 3 && i != 5 {
				f.Unpin()
			}
		}
		if st := p.Stats(); st.Stalls != 1 {
			t.Errorf("stalls %d, want 1", st.Stalls)
		}
	})
}

// TestStallManyGoroutines: goroutines whose Pins together need far more
// frames than the pool has all finish; nothing deadlocks.
func TestStallManyGoroutines(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 12 * fs, MaxBatch: 3})
		files := []*testFile{
			register(t, p, dir, "a", 30*fs, 1),
			register(t, p, dir, "b", 17*fs+5, 2),
			register(t, p, dir, "c", 9*fs, 3),
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 2))
				for range 60 {
					var spans []Span
					var tfs []*testFile
					for range 1 + r.IntN(3) {
						tf := files[r.IntN(len(files))]
						off := r.Int64N(int64(len(tf.data)))
						spans = append(spans, Span{tf.id, off, min(int64(len(tf.data))-off, 1+r.Int64N(2*fs))})
						tfs = append(tfs, tf)
					}
					frames, err := p.Pin(spans, nil)
					if err != nil {
						t.Errorf("Pin(%s): %v", fmtSpans(spans), err)
						return
					}
					rest := frames
					for i, s := range spans {
						n := int((s.Off+s.Len-1)/fs - s.Off/fs + 1)
						checkFrames(t, p, tfs[i], s, rest[:n])
						rest = rest[n:]
					}
					if r.IntN(4) == 0 {
						time.Sleep(time.Duration(r.IntN(300)) * time.Microsecond)
					}
					unpinAll(frames)
				}
			}()
		}
		within(t, 60*time.Second, "goroutines", wg.Wait)
		st := p.Stats()
		t.Logf("%s", st)
		if err := p.checkQuiescent(); err != nil {
			t.Fatal(err)
		}
	})
}

// TestReadError: an EIO on a load reaches every Pin waiting for it, names
// file and offset, caches nothing, and a later Pin loads it again.
func TestReadError(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		const fs = 8192
		tf := writeFile(t, dir, "bad.arrow", 10*fs, 4)
		plan := ioengine.NewFaultPlan(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead, Fd: tf.fd()})
		eng := newEngine(t, mode, plan)
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 16 * fs})
		id, err := p.Register(tf.ef, int64(len(tf.data)), "bad.arrow")
		if err != nil {
			t.Fatal(err)
		}
		tf.id = id
		release := make(chan struct{})
		var once sync.Once
		p.setBeforeDo(func(int) { once.Do(func() { <-release }) })
		const waiters = 5
		errs := make(chan error, waiters)
		for range waiters {
			go func() {
				frames, err := p.Pin([]Span{{id, 3*fs + 10, 20}}, nil)
				if err == nil {
					unpinAll(frames)
				}
				errs <- err
			}()
		}
		eventually(t, 5*time.Second, "waiters queued", func() bool {
			st := p.Stats()
			return st.Misses == 1 && st.LoadWaits == waiters-1
		})
		close(release)
		for range waiters {
			err := <-errs
			var re *ReadError
			if !errors.As(err, &re) || !errors.Is(err, unix.EIO) {
				t.Fatalf("Pin: %v; want a *ReadError wrapping EIO", err)
			}
			mustContain(t, err, "bad.arrow", "offset 24576", "input/output error")
			if re.Off != 3*fs || re.File != id {
				t.Errorf("ReadError %+v", re)
			}
		}
		st := p.Stats()
		if st.ReadErrors != 1 || st.Resident != 0 || st.Pinned != 0 || plan.Injected() != 1 {
			t.Errorf("after the failed load: %s; faults injected %d", st, plan.Injected())
		}
		if err := p.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		// The fault fired once: the retry loads it.
		s := Span{id, 3*fs + 10, 20}
		frames, err := p.Pin([]Span{s}, nil)
		if err != nil {
			t.Fatalf("retry: %v", err)
		}
		checkFrames(t, p, tf, s, frames)
		unpinAll(frames)
		if st := p.Stats(); st.Loads != 2 || st.Misses != 2 {
			t.Errorf("after the retry: %s", st)
		}
	})
}

// TestReadErrorReleasesPins: a Pin of several frames where one load fails
// releases all of its pins, including frames that loaded fine.
func TestReadErrorReleasesPins(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		const fs = 4096
		good := writeFile(t, dir, "good", 10*fs, 5)
		bad := writeFile(t, dir, "bad", 10*fs, 6)
		plan := ioengine.NewFaultPlan(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead, Fd: bad.fd(), After: 2})
		eng := newEngine(t, mode, plan)
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 32 * fs})
		for _, tf := range []*testFile{good, bad} {
			id, err := p.Register(tf.ef, int64(len(tf.data)), tf.path)
			if err != nil {
				t.Fatal(err)
			}
			tf.id = id
		}
		resident, err := p.Pin([]Span{{good.id, 0, fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]*Frame, 0, 16)
		dst, err = p.Pin([]Span{{good.id, 0, 4 * fs}, {bad.id, 0, 5 * fs}}, dst)
		if !errors.Is(err, unix.EIO) || len(dst) != 0 {
			t.Fatalf("Pin with a failing load: %d frames, %v", len(dst), err)
		}
		// The third read of the bad file fails; which frame that is depends
		// on how the I/O goroutines split the loads (on the syscall
		// backend they read in parallel).
		mustContain(t, err, bad.path)
		var re *ReadError
		if !errors.As(err, &re) || re.Name != bad.path || re.Off%fs != 0 || re.Off >= 5*fs {
			t.Errorf("error %v: want a *ReadError for a frame of the bad span", err)
		}
		if n := resident[0].pins.Load(); n != 1 {
			t.Errorf("the frame pinned before holds %d pins, want 1", n)
		}
		unpinAll(resident)
		st := p.Stats()
		if st.Pinned != 0 || st.Resident != 8 || st.ReadErrors != 1 {
			t.Errorf("after the failed Pin: %s", st)
		}
	})
}

// TestShortRead: a file that shrank below its registered size gives an
// error naming file, offset and ErrShortRead.
func TestShortRead(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 8192
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
		tf := register(t, p, dir, "shrinks", 4*fs, 1)
		if err := os.Truncate(tf.path, 2*fs+100); err != nil {
			t.Fatal(err)
		}
		_, err := p.Pin([]Span{{tf.id, 2 * fs, 10}}, nil)
		if !errors.Is(err, ErrShortRead) {
			t.Fatalf("Pin past the new end: %v", err)
		}
		mustContain(t, err, "shrinks", "offset 16384", "100 bytes into the frame")
		_, err = p.Pin([]Span{{tf.id, 3 * fs, 10}}, nil)
		if !errors.Is(err, ErrShortRead) {
			t.Fatalf("Pin of a frame wholly past the new end: %v", err)
		}
		frames, err := p.Pin([]Span{{tf.id, 0, fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkFrames(t, p, tf, Span{tf.id, 0, fs}, frames)
		unpinAll(frames)
	})
}

func TestRegisterErrors(t *testing.T) {
	dir := testdir.Direct(t)
	eng := newEngine(t, ioengine.Syscall, nil)
	p := newPool(t, eng, Options{FrameSize: 4096, Budget: 8 * 4096})
	tf := writeFile(t, dir, "f", 10000, 1)
	buffered, err := os.Open(tf.path)
	if err != nil {
		t.Fatal(err)
	}
	defer buffered.Close()
	writeOnly, err := directio.OpenFile(tf.path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer writeOnly.Close()
	closed, err := directio.OpenFile(tf.path, os.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	closedFile := ioengine.NewFile(closed)
	closedFile.Close()
	cases := []struct {
		name  string
		f     *ioengine.File
		size  int64
		parts []string
	}{
		{"no file", nil, 10, []string{"no file"}},
		{"negative size", tf.ef, -1, []string{"size -1 is negative"}},
		{"not O_DIRECT", ioengine.NewFile(buffered), 10000, []string{"not open with O_DIRECT"}},
		{"write only", ioengine.NewFile(writeOnly), 10000, []string{"writing only"}},
		{"closed file", closedFile, 10000, []string{"no descriptor (closed)"}},
		{"size beyond the file", tf.ef, 10001, []string{"size 10001 exceeds the file's 10000 bytes"}},
	}
	for _, c := range cases {
		_, err := p.Register(c.f, c.size, "f.arrow")
		if !errors.Is(err, ErrBadFile) {
			t.Errorf("%s: %v, want ErrBadFile", c.name, err)
			continue
		}
		mustContain(t, err, append(c.parts, "f.arrow")...)
	}
	if _, err := p.Register(tf.ef, 5000, "prefix"); err != nil {
		t.Errorf("Register of a prefix: %v", err)
	}
}

func TestUnregister(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 16 * fs})
		a := register(t, p, dir, "a.arrow", 8*fs, 1)
		b := register(t, p, dir, "b.arrow", 8*fs, 2)
		held, err := p.Pin([]Span{{a.id, 0, 3 * fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		other, err := p.Pin([]Span{{a.id, 4 * fs, 2 * fs}, {b.id, 0, 4 * fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		unpinAll(other)
		err = p.Unregister(a.id)
		if !errors.Is(err, ErrPinned) {
			t.Fatalf("Unregister with pins: %v", err)
		}
		mustContain(t, err, "a.arrow", "3 frames still pinned")
		if _, err := p.Pin([]Span{{a.id, 0, 1}}, nil); !errors.Is(err, ErrUnknownFile) {
			t.Errorf("Pin after Unregister: %v", err)
		}
		p.Prefetch([]Span{{a.id, 0, 1}})
		if st := p.Stats(); st.PrefetchRejected != 1 || st.Resident != 4 || st.Pinned != 3 {
			t.Errorf("after Unregister: %s (want b's 4 frames resident, a's 3 pinned and detached)", st)
		}
		// Pinned frames of a gone file stay readable until unpinned.
		checkFrames(t, p, a, Span{a.id, 0, 3 * fs}, held)
		if err := p.checkInvariants(); err != nil {
			t.Fatal(err)
		}
		unpinAll(held)
		if err := p.checkQuiescent(); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.Resident != 4 {
			t.Errorf("after the last Unpin: %s", st)
		}
		if err := p.Unregister(a.id); !errors.Is(err, ErrUnknownFile) {
			t.Errorf("second Unregister: %v", err)
		}
		if err := p.Unregister(b.id); err != nil {
			t.Errorf("Unregister without pins: %v", err)
		}
		if st := p.Stats(); st.Resident != 0 {
			t.Errorf("after unregistering everything: %s", st)
		}
	})
}

// TestUnregisterWaitsForLoads: Unregister while prefetches of the file are
// queued and in flight returns only after they finished, and leaves none
// of the file's frames behind.
func TestUnregisterWaitsForLoads(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 64 * fs, MaxBatch: 4, IOWorkers: 1})
		tf := register(t, p, dir, "a", 64*fs, 1)
		entered, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		p.setBeforeDo(func(int) {
			once.Do(func() {
				close(entered)
				<-release
			})
		})
		p.Prefetch([]Span{{tf.id, 0, 64 * fs}})
		<-entered // the worker holds its first batch of 4
		done := make(chan error, 1)
		go func() { done <- p.Unregister(tf.id) }()
		select {
		case err := <-done:
			t.Fatalf("Unregister returned with a load held in flight: %v", err)
		case <-time.After(30 * time.Millisecond):
		}
		close(release)
		within(t, 10*time.Second, "Unregister", func() {
			if err := <-done; err != nil {
				t.Errorf("Unregister: %v", err)
			}
		})
		st := p.Stats()
		// The batch held in flight (4 loads) finished; the 60 prefetches
		// still queued were dropped, not read.
		if st.Resident != 0 || st.Loading != 0 || st.Loads != 4 || st.PrefetchDropped != 60 {
			t.Errorf("after Unregister: %s", st)
		}
	})
}

func TestClose(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		const fs = 4096
		p, err := New(Options{FrameSize: fs, Budget: 8 * fs, IOMode: mode, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		tf := register(t, p, dir, "f", 4*fs, 1)
		frames, err := p.Pin([]Span{{tf.id, 0, 2 * fs}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = p.Close()
		if !errors.Is(err, ErrPinned) {
			t.Fatalf("Close with pins: %v", err)
		}
		mustContain(t, err, "2 frames pinned", "first: f offset 0")
		// Still usable.
		checkFrames(t, p, tf, Span{tf.id, 0, 2 * fs}, frames)
		more, err := p.Pin([]Span{{tf.id, 2 * fs, fs}}, nil)
		if err != nil {
			t.Fatalf("Pin after a refused Close: %v", err)
		}
		unpinAll(more)
		unpinAll(frames)
		p.Prefetch([]Span{{tf.id, 3 * fs, fs}}) // may be in flight at Close
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if _, err := p.Pin([]Span{{tf.id, 0, 1}}, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("Pin after Close: %v", err)
		}
		if _, err := p.Register(tf.ef, 10, "g"); !errors.Is(err, ErrClosed) {
			t.Errorf("Register after Close: %v", err)
		}
		p.Prefetch([]Span{{tf.id, 0, 1}})
		if err := p.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
		if _, err := p.Engine().ReadAt(tf.fd(), nil, 0); !errors.Is(err, ioengine.ErrClosed) {
			t.Errorf("the pool's own engine is still open: %v", err)
		}
	})
}

// TestCloseLeavesCallersEngine: a caller's engine stays open.
func TestCloseLeavesCallersEngine(t *testing.T) {
	eng := newEngine(t, ioengine.Syscall, nil)
	p, err := New(Options{FrameSize: 4096, Budget: 8 * 4096, Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.ReadAt(0, nil, 0); errors.Is(err, ioengine.ErrClosed) {
		t.Errorf("the caller's engine was closed")
	}
}

func TestPrefetch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 8192
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 32 * fs})
		tf := register(t, p, dir, "f", 20*fs+3, 1)
		p.Prefetch([]Span{{tf.id, 0, 10 * fs}, {tf.id, 5 * fs, 10 * fs}, {tf.id, 0, 1 << 40}, {99, 0, 1}})
		st := p.Stats()
		if st.PrefetchIssued != 15 || st.PrefetchRejected != 2 || st.Misses != 0 {
			t.Fatalf("after Prefetch: %s", st)
		}
		eventually(t, 10*time.Second, "prefetch loaded", func() bool { return p.Stats().Loading == 0 })
		s := Span{tf.id, 2 * fs, 5 * fs}
		frames, err := p.Pin([]Span{s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkFrames(t, p, tf, s, frames)
		unpinAll(frames)
		st = p.Stats()
		if st.Hits != 5 || st.PrefetchHits != 5 || st.Misses != 0 || st.Loads != 15 {
			t.Errorf("Pin of prefetched frames: %s", st)
		}
		// A second Pin is a plain hit.
		frames, _ = p.Pin([]Span{s}, frames[:0])
		unpinAll(frames)
		if st := p.Stats(); st.PrefetchHits != 5 || st.Hits != 10 {
			t.Errorf("second Pin: %s", st)
		}
		// Prefetching resident frames does nothing; the tail is partial.
		p.Prefetch([]Span{{tf.id, 0, 20*fs + 3}})
		eventually(t, 10*time.Second, "prefetch loaded", func() bool { return p.Stats().Loading == 0 })
		if st := p.Stats(); st.PrefetchIssued != 21 {
			t.Errorf("prefetch of the whole file: %s", st)
		}
		frames, _ = p.Pin([]Span{{tf.id, 20 * fs, 3}}, frames[:0])
		checkFrames(t, p, tf, Span{tf.id, 20 * fs, 3}, frames)
		unpinAll(frames)
	})
}

// TestPinWaitsForPrefetch: a Pin of a frame whose prefetch is still queued
// waits for it (a load wait, a prefetch hit), and the load goes ahead of
// the other prefetches.
func TestPinWaitsForPrefetch(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 4096
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 64 * fs, MaxBatch: 2, IOWorkers: 1})
		tf := register(t, p, dir, "f", 64*fs, 1)
		release := make(chan struct{})
		pinned := make(chan struct{}) // closed when the Pin has returned
		var once sync.Once
		var mu sync.Mutex
		var batches []int
		heldBack := false // the third engine call came before the Pin returned
		p.setBeforeDo(func(n int) {
			once.Do(func() { <-release })
			mu.Lock()
			batches = append(batches, n)
			third := len(batches) == 3
			mu.Unlock()
			// The Pin's load must be in the first two calls: the third waits
			// for the Pin to return, so a Pin queued behind the prefetch
			// would time out here, whatever the scheduler does.
			if third {
				select {
				case <-pinned:
				case <-time.After(5 * time.Second):
					mu.Lock()
					heldBack = true
					mu.Unlock()
				}
			}
		})
		p.Prefetch([]Span{{tf.id, 0, 60 * fs}})
		done := make(chan error, 1)
		go func() {
			frames, err := p.Pin([]Span{{tf.id, 50 * fs, fs}}, nil)
			close(pinned)
			if err == nil {
				checkFrames(t, p, tf, Span{tf.id, 50 * fs, fs}, frames)
				unpinAll(frames)
			}
			done <- err
		}()
		eventually(t, 5*time.Second, "Pin waiting", func() bool { return p.Stats().LoadWaits == 1 })
		close(release)
		within(t, 10*time.Second, "Pin", func() {
			if err := <-done; err != nil {
				t.Error(err)
			}
		})
		st := p.Stats()
		// The first batch was taken before the Pin; the Pin's load went in
		// the second, long before the 30 batches of prefetch were done.
		mu.Lock()
		if heldBack || st.PrefetchHits != 1 {
			t.Errorf("the Pin returned only after the third engine call (%v), or its frame was not a prefetch hit: %s", heldBack, st)
		}
		mu.Unlock()
		eventually(t, 10*time.Second, "prefetch loaded", func() bool { return p.Stats().Loading == 0 })
	})
}

// TestBatchAcrossFiles: the misses of one Pin across files go to the
// engine in one call from the Pin's goroutine, or, through the I/O
// goroutines (demandViaWorkers), in ceil(misses / MaxBatch) calls.
func TestBatchAcrossFiles(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		for _, c := range []struct {
			maxBatch   int
			viaWorkers bool
		}{{64, false}, {16, false}, {64, true}, {16, true}} {
			maxBatch := c.maxBatch
			dir := testdir.Direct(t)
			eng := newEngine(t, mode, nil)
			const fs = 4096
			p := newPool(t, eng, Options{FrameSize: fs, Budget: 128 * fs, MaxBatch: maxBatch, IOWorkers: 2, demandViaWorkers: c.viaWorkers})
			var files []*testFile
			for i := range 4 {
				files = append(files, register(t, p, dir, "f"+string(rune('a'+i)), 20*fs, uint64(i)))
			}
			// 40 point lookups, 10 per file, interleaved across files.
			var spans []Span
			for k := range 10 {
				for _, tf := range files {
					spans = append(spans, Span{tf.id, int64(k*2)*fs + 100, 50})
				}
			}
			before := eng.Stats().Calls
			frames, err := p.Pin(spans, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range spans {
				checkFrames(t, p, files[i%4], s, frames[i:i+1])
			}
			unpinAll(frames)
			want, wantCaller := uint64((40+maxBatch-1)/maxBatch), uint64(0)
			if !c.viaWorkers {
				want, wantCaller = 1, 1
			}
			st := p.Stats()
			if mode == ioengine.Syscall {
				// The syscall backend shares the loads out among the two
				// workers instead (an engine call there is serial).
				if st.EngineCalls < 2 || st.EngineCalls > 8 || eng.Stats().Calls-before != st.EngineCalls || st.Misses != 40 {
					t.Errorf("MaxBatch %d, syscall backend: %d engine calls for 40 misses, want 2 to 8; %s", maxBatch, st.EngineCalls, st)
				}
				continue
			}
			if st.EngineCalls != want || st.CallerEngineCalls != wantCaller || eng.Stats().Calls-before != want || st.Misses != 40 {
				t.Errorf("MaxBatch %d, via workers %v: %d engine calls (%d by the Pin; engine counts %d) for 40 misses, want %d (%d); %s",
					maxBatch, c.viaWorkers, st.EngineCalls, st.CallerEngineCalls, eng.Stats().Calls-before, want, wantCaller, st)
			}
		}
	})
}

func TestUnpinTooMany(t *testing.T) {
	dir := testdir.Direct(t)
	eng := newEngine(t, ioengine.Syscall, nil)
	p := newPool(t, eng, Options{FrameSize: 4096, Budget: 8 * 4096})
	tf := register(t, p, dir, "f", 4096, 1)
	frames, err := p.Pin([]Span{{tf.id, 0, 10}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	frames[0].Unpin()
	func() {
		defer func() {
			r := recover()
			if r == nil || !strings.Contains(r.(string), "more Unpins than pins") {
				t.Errorf("second Unpin: recovered %v, want a panic about more Unpins than pins", r)
			}
		}()
		frames[0].Unpin()
	}()
	if n := frames[0].pins.Load(); n != 0 {
		t.Errorf("pin count %d after the detected extra Unpin", n)
	}
}

func TestCopyOutErrors(t *testing.T) {
	dir := testdir.Direct(t)
	eng := newEngine(t, ioengine.Syscall, nil)
	const fs = 4096
	p := newPool(t, eng, Options{FrameSize: fs, Budget: 8 * fs})
	a := register(t, p, dir, "a", 4*fs, 1)
	b := register(t, p, dir, "b", 4*fs, 2)
	fa, err := p.Pin([]Span{{a.id, 0, fs}, {a.id, 2 * fs, fs}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unpinAll(fa)
	fb, err := p.Pin([]Span{{b.id, 0, fs}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer unpinAll(fb)
	buf := make([]byte, 3*fs)
	err = CopyOut(buf, fa, 0)
	if !errors.Is(err, ErrNotCovered) {
		t.Fatalf("CopyOut over a gap: %v", err)
	}
	mustContain(t, err, "offset 4096 of [0, 12288)")
	err = CopyOut(buf[:10], append([]*Frame{fa[0]}, fb...), 0)
	mustContain(t, err, "belongs to file 2")
	err = CopyOut(buf[:10], []*Frame{nil}, 0)
	mustContain(t, err, "nil")
	err = CopyOut(buf[:10], fa, -1)
	mustContain(t, err, "negative offset")
	// Out of order frames are fine.
	if err := CopyOut(buf[:fs+10], []*Frame{fa[1], fa[0]}, fs-10); !errors.Is(err, ErrNotCovered) {
		t.Errorf("CopyOut across the gap: %v", err)
	}
	if err := CopyOut(buf[:20], []*Frame{fa[1], fa[0]}, 2*fs-10); !errors.Is(err, ErrNotCovered) {
		t.Errorf("CopyOut across the gap: %v", err)
	}
	if err := CopyOut(buf[:fs], []*Frame{fa[1], fa[0]}, 0); err != nil || string(buf[:fs]) != string(a.data[:fs]) {
		t.Errorf("CopyOut of frame 0 from reversed frames: %v", err)
	}
	if err := CopyOut(nil, nil, 5); err != nil {
		t.Errorf("CopyOut of nothing: %v", err)
	}
}

// TestTransientFaults: short reads and -EAGAIN on loads are finished by
// the engine; the pool sees whole frames with the file's bytes.
func TestTransientFaults(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		const fs = 16384
		tf := writeFile(t, dir, "f", 10*fs+5000, 8)
		plan := ioengine.NewFaultPlan(
			ioengine.Fault{Kind: ioengine.FaultShort, Op: ioengine.OpRead, Fd: tf.fd(), Bytes: 4096, Times: 6},
			ioengine.Fault{Kind: ioengine.FaultEAGAIN, Op: ioengine.OpRead, Fd: tf.fd(), Times: 6},
		)
		eng := newEngine(t, mode, plan)
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 16 * fs})
		id, err := p.Register(tf.ef, int64(len(tf.data)), "f")
		if err != nil {
			t.Fatal(err)
		}
		tf.id = id
		s := Span{id, 100, int64(len(tf.data)) - 100}
		frames, err := p.Pin([]Span{s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkFrames(t, p, tf, s, frames)
		unpinAll(frames)
		if plan.Injected() != 12 {
			t.Errorf("%d faults injected, want 12", plan.Injected())
		}
		if st := p.Stats(); st.ReadErrors != 0 || st.Loads != 11 {
			t.Errorf("%s", st)
		}
	})
}

// TestPrefetchReadError: a failed prefetch is counted and logged once,
// caches nothing, and a later Pin loads the frame.
func TestPrefetchReadError(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		dir := testdir.Direct(t)
		const fs = 4096
		tf := writeFile(t, dir, "p.arrow", 8*fs, 9)
		plan := ioengine.NewFaultPlan(ioengine.Fault{Kind: ioengine.FaultEIO, Op: ioengine.OpRead, Fd: tf.fd(), Times: 2})
		eng := newEngine(t, mode, plan)
		var logMu sync.Mutex
		var logs []string
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 16 * fs, Logf: func(format string, args ...any) {
			logMu.Lock()
			logs = append(logs, fmt.Sprintf(format, args...))
			logMu.Unlock()
		}})
		id, err := p.Register(tf.ef, int64(len(tf.data)), "p.arrow")
		if err != nil {
			t.Fatal(err)
		}
		tf.id = id
		p.Prefetch([]Span{{id, 0, 4 * fs}})
		eventually(t, 10*time.Second, "prefetch done", func() bool { return p.Stats().Loading == 0 })
		st := p.Stats()
		if st.ReadErrors != 2 || st.Resident != 2 || st.PrefetchIssued != 4 {
			t.Errorf("after a prefetch with two failed loads: %s", st)
		}
		logMu.Lock()
		if len(logs) != 1 || !strings.Contains(logs[0], "p.arrow") || !strings.Contains(logs[0], "input/output error") {
			t.Errorf("logged %q; want one line naming the file and the errno", logs)
		}
		logMu.Unlock()
		s := Span{id, 0, 4 * fs}
		frames, err := p.Pin([]Span{s}, nil)
		if err != nil {
			t.Fatal(err)
		}
		checkFrames(t, p, tf, s, frames)
		unpinAll(frames)
		if st := p.Stats(); st.Misses != 2 || st.PrefetchHits != 2 {
			t.Errorf("Pin after the failed prefetch: %s", st)
		}
	})
}
