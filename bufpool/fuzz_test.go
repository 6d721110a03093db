package bufpool

import (
	"errors"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// FuzzPoolOps runs a sequence of Pin, Unpin, Prefetch, Announce, Retract,
// Unregister and Register decoded from the input on a pool of 8 frames over three files,
// and checks after every step that the invariants hold, that every held
// frame still holds its file's bytes, and that errors are the documented
// ones. The pool has no decoder of its own; this is its fuzz test.
func FuzzPoolOps(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 0, 0, 9, 1, 2, 0, 0, 0, 255, 3})
	f.Add([]byte{5, 0, 0, 0, 1, 9, 9, 2, 2, 2, 2, 1, 1, 1, 4})
	f.Add([]byte{2, 0, 0, 200, 2, 1, 0, 200, 4, 0, 0, 1, 10, 3, 1, 0, 2, 1, 7, 1})
	f.Add([]byte{0, 0, 0, 255, 0, 0, 40, 255, 0, 1, 3, 255, 3, 0, 1, 1, 1, 1})
	f.Add([]byte{2, 1, 0, 0, 255, 1, 2, 1, 0, 0, 255, 1, 0, 0, 0, 128, 1, 1, 0, 0, 0, 200, 1, 2, 2, 0, 0, 255, 1})
	dir := testdir.Direct(f)
	eng := newEngine(f, ioengine.Syscall, nil)
	const fs = 4096
	files := []*testFile{
		writeFile(f, dir, "a", 12*fs+300, 1),
		writeFile(f, dir, "b", 3*fs, 2),
		writeFile(f, dir, "c", 700, 3),
	}
	f.Fuzz(func(t *testing.T, ops []byte) {
		p, err := New(Options{FrameSize: fs, Budget: 8 * fs, Engine: eng, MaxBatch: 3, Logf: t.Logf})
		if err != nil {
			t.Fatal(err)
		}
		// Both ways a Pin's misses are loaded: by the Pin's goroutine (the
		// default on io_uring) and by the I/O goroutines (syscalls).
		p.callerLoads = len(ops)%2 == 0
		ids := make([]FileID, len(files))
		for i, tf := range files {
			if ids[i], err = p.Register(tf.ef, int64(len(tf.data)), tf.path); err != nil {
				t.Fatal(err)
			}
		}
		type pinned struct {
			frames []*Frame
			file   int
		}
		var held []pinned
		heldFrames := func() int {
			seen := map[*Frame]bool{}
			for _, h := range held {
				for _, f := range h.frames {
					seen[f] = true
				}
			}
			return len(seen)
		}
		next := func() int {
			if len(ops) == 0 {
				return 0
			}
			b := ops[0]
			ops = ops[1:]
			return int(b)
		}
		span := func() (Span, int) {
			i := next() % len(files)
			size := int64(len(files[i].data))
			off := int64(next()) * size / 256
			n := int64(next()) * 3 * fs / 256
			if next()%8 == 0 {
				n = size // sometimes out of range
			}
			return Span{ids[i], off, n}, i
		}
		for len(ops) > 0 {
			switch next() % 6 {
			case 0, 5: // Pin one or two spans
				s1, i1 := span()
				spans, which := []Span{s1}, []int{i1}
				if len(ops)%2 == 0 {
					s2, i2 := span()
					spans, which = append(spans, s2), append(which, i2)
				}
				need := 0
				for _, s := range spans {
					if s.Off >= 0 && s.Len > 0 {
						need += int((s.Off+s.Len-1)/fs - s.Off/fs + 1)
					}
				}
				if heldFrames()+need > 8 { // one goroutine: never wait on itself
					for _, h := range held {
						unpinAll(h.frames)
					}
					held = held[:0]
				}
				frames, err := p.Pin(spans, nil)
				if err != nil {
					if !errors.Is(err, ErrBadSpan) && !errors.Is(err, ErrUnknownFile) && !errors.Is(err, ErrTooManyFrames) {
						t.Fatalf("Pin(%s): %v", fmtSpans(spans), err)
					}
					continue
				}
				rest := frames
				for k, s := range spans {
					cnt := 0
					if s.Len > 0 {
						cnt = int((s.Off+s.Len-1)/fs - s.Off/fs + 1)
					}
					checkFrames(t, p, &testFile{data: files[which[k]].data, id: s.File}, s, rest[:cnt])
					held = append(held, pinned{rest[:cnt], which[k]})
					rest = rest[cnt:]
				}
			case 1: // Unpin the oldest
				if len(held) > 0 {
					unpinAll(held[0].frames)
					held = held[1:]
				}
			case 2: // Prefetch, Announce or Retract
				op := next() % 3
				s, _ := span()
				switch op {
				case 0:
					p.Prefetch([]Span{s})
				case 1:
					p.Announce([]Span{s})
				case 2:
					p.Retract([]Span{s})
				}
			case 3: // Unregister and register again
				i := next() % len(files)
				err := p.Unregister(ids[i])
				if err != nil && !errors.Is(err, ErrPinned) && !errors.Is(err, ErrUnknownFile) {
					t.Fatalf("Unregister: %v", err)
				}
				if ids[i], err = p.Register(files[i].ef, int64(len(files[i].data)), files[i].path); err != nil {
					t.Fatal(err)
				}
			case 4:
				eventually(t, 10*time.Second, "loads done", func() bool { return p.Stats().Loading == 0 })
			}
			if err := p.checkInvariants(); err != nil {
				t.Fatal(err)
			}
			for _, h := range held {
				for _, f := range h.frames {
					data := files[h.file].data
					if string(f.Bytes()) != string(data[f.Offset():min(f.Offset()+fs, int64(len(data)))]) {
						t.Fatalf("held %s no longer holds its bytes", f)
					}
				}
			}
		}
		for _, h := range held {
			unpinAll(h.frames)
		}
		eventually(t, 10*time.Second, "loads done", func() bool { return p.Stats().Loading == 0 })
		if err := p.checkQuiescent(); err != nil {
			t.Fatal(err)
		}
		if err := p.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
