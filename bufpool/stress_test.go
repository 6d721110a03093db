package bufpool

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestConcurrentMixed runs goroutines that pin (one to four spans across
// files, holding some pins across calls), prefetch, and re-register files,
// all at once on a pool much smaller than the data; every frame's bytes
// are compared with the file (and, with windows, every span's window), and
// the pool's invariants are checked at the end (and after every Pin and
// engine call under -race).
func TestConcurrentMixed(t *testing.T) {
	forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
		for _, windows := range []bool{false, true} {
			t.Run(fmt.Sprintf("windows=%v", windows), func(t *testing.T) { concurrentMixed(t, mode, windows) })
		}
	})
}

func concurrentMixed(t *testing.T, mode ioengine.IOMode, windows bool) {
	{
		dir := testdir.Direct(t)
		eng := newEngine(t, mode, nil)
		const fs = 8192
		p := newPool(t, eng, Options{FrameSize: fs, Budget: 32 * fs, MaxBatch: 6, IOWorkers: 3, Windows: windows})
		sizes := []int{40 * fs, 13*fs + 77, 3 * fs, 25*fs - 1}
		var files []*testFile
		for i, size := range sizes {
			files = append(files, writeFile(t, dir, fmt.Sprintf("f%d", i), size, uint64(i)))
		}
		// ids[i] is the current registration of files[i]; a churn goroutine
		// unregisters and registers file 3 again and again.
		var idMu sync.Mutex
		ids := make([]FileID, len(files))
		for i, tf := range files {
			id, err := p.Register(tf.ef, int64(len(tf.data)), tf.path)
			if err != nil {
				t.Fatal(err)
			}
			ids[i] = id
		}
		current := func(i int) FileID {
			idMu.Lock()
			defer idMu.Unlock()
			return ids[i]
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		errc := make(chan error, 64)
		report := func(err error) {
			select {
			case errc <- err:
			default:
			}
		}
		const pinners = 6
		for g := range pinners {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(g), 9))
				var held []*Frame
				for n := 0; n < 150; n++ {
					var spans []Span
					var which []int
					for range 1 + r.IntN(4) {
						i := r.IntN(len(files))
						size := int64(len(files[i].data))
						off := r.Int64N(size)
						spans = append(spans, Span{current(i), off, min(size-off, r.Int64N(3*fs))})
						which = append(which, i)
					}
					frames, err := p.Pin(spans, nil)
					if errors.Is(err, ErrUnknownFile) {
						continue // file 3 was being re-registered
					}
					if err != nil {
						report(fmt.Errorf("Pin(%s): %w", fmtSpans(spans), err))
						return
					}
					rest := frames
					for k, s := range spans {
						cnt := 0
						if s.Len > 0 {
							cnt = int((s.Off+s.Len-1)/fs - s.Off/fs + 1)
						}
						for _, f := range rest[:cnt] {
							want := files[which[k]].data[f.Offset():min(f.Offset()+fs, int64(len(files[which[k]].data)))]
							if f.File() != s.File || string(f.Bytes()) != string(want) {
								report(fmt.Errorf("span %v: frame at %d of file %d holds the wrong bytes", s, f.Offset(), f.File()))
								return
							}
						}
						if windows && cnt > 0 {
							got, err := p.Window(s.File, s.Off, s.Len, rest[:cnt])
							if err != nil {
								report(fmt.Errorf("Window(%v): %w", s, err))
								return
							}
							if string(got) != string(files[which[k]].data[s.Off:s.Off+s.Len]) {
								report(fmt.Errorf("Window(%v): bytes differ from the file", s))
								return
							}
						}
						rest = rest[cnt:]
					}
					// Keep up to two pins across calls: 6 × 2 held + 16 for
					// the largest call fit in 32 frames, so someone can
					// always go on (see the package doc on deadlock).
					if r.IntN(3) == 0 && len(held) < 2 && len(frames) > 0 {
						held = append(held, frames[0])
						frames = frames[1:]
					} else if len(held) > 0 {
						held[0].Unpin()
						held = held[1:]
					}
					unpinAll(frames)
					if r.IntN(5) == 0 {
						i := r.IntN(len(files))
						p.Prefetch([]Span{{current(i), 0, int64(len(files[i].data))}})
					}
				}
				unpinAll(held)
			}()
		}
		var churn sync.WaitGroup
		churn.Add(1)
		go func() {
			defer churn.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(2 * time.Millisecond):
				}
				idMu.Lock()
				old := ids[3]
				idMu.Unlock()
				if err := p.Unregister(old); err != nil && !errors.Is(err, ErrPinned) {
					report(fmt.Errorf("Unregister: %w", err))
					return
				}
				id, err := p.Register(files[3].ef, int64(len(files[3].data)), files[3].path)
				if err != nil {
					report(fmt.Errorf("Register: %w", err))
					return
				}
				idMu.Lock()
				ids[3] = id
				idMu.Unlock()
			}
		}()
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				st := p.Stats()
				if st.Resident+st.Loading > p.Frames() || st.Pinned > p.Frames() {
					report(fmt.Errorf("over budget: %s", st))
				}
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		within(t, 120*time.Second, "pinners", wg.Wait)
		close(stop)
		within(t, 10*time.Second, "churn", churn.Wait)
		<-done
		close(errc)
		for err := range errc {
			t.Error(err)
		}
		eventually(t, 10*time.Second, "prefetches finished", func() bool { return p.Stats().Loading == 0 })
		if err := p.checkQuiescent(); err != nil {
			t.Fatal(err)
		}
		st := p.Stats()
		if windows && (st.WindowMaps == 0 || st.WindowFailures > 0) {
			t.Errorf("windows: %d maps, %d failures", st.WindowMaps, st.WindowFailures)
		}
		t.Logf("%s", st)
	}
}
