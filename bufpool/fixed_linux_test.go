package bufpool

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/internal/testchild"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// pinAndCheck pins the file in spans of two frames, front to back, checking
// every frame's bytes, and unpins them.
func pinAndCheck(t *testing.T, p *Pool, tf *testFile) {
	t.Helper()
	fs := int64(p.FrameSize())
	for off := int64(0); off < int64(len(tf.data)); off += 2 * fs {
		s := Span{File: tf.id, Off: off, Len: min(2*fs, int64(len(tf.data))-off)}
		frames, err := p.Pin([]Span{s}, nil)
		if err != nil {
			t.Fatalf("Pin(%v): %v", s, err)
		}
		checkFrames(t, p, tf, s, frames)
		unpinAll(frames)
	}
}

// TestFixedBuffers: with Options.FixedBuffers every load on io_uring reads
// into the registered arena with READ_FIXED (the engine's FixedTransfers
// counts as many as the pool's Loads) and returns the file's bytes, from
// Pins and from prefetches, with and without windows (the arena is then a
// memfd); on the syscall backend the pool says why it has none.
func TestFixedBuffers(t *testing.T) {
	for _, windows := range []bool{false, true} {
		t.Run(fmt.Sprintf("windows=%v", windows), func(t *testing.T) {
			forEachBackend(t, func(t *testing.T, mode ioengine.IOMode) {
				eng := newEngine(t, mode, nil)
				p := newPool(t, eng, Options{FrameSize: 64 << 10, Budget: 1 << 20, FixedBuffers: true, Windows: windows})
				tf := register(t, p, testdir.Direct(t), "fixed", 3<<20+5000, 7)
				e0 := eng.Stats()
				p.Prefetch([]Span{{File: tf.id, Off: 0, Len: 8 << 16}})
				eventually(t, 10*time.Second, "prefetches loaded", func() bool { return p.Stats().Loading == 0 })
				pinAndCheck(t, p, tf)
				st := p.Stats()
				fixed := eng.Stats().FixedTransfers - e0.FixedTransfers
				if mode == ioengine.Syscall {
					if st.FixedBuffers || st.FixedBuffersOff == "" || fixed != 0 {
						t.Fatalf("syscall backend: FixedBuffers %v, FixedBuffersOff %q, fixed transfers %d; want false, a reason, 0", st.FixedBuffers, st.FixedBuffersOff, fixed)
					}
					return
				}
				if !st.FixedBuffers || st.FixedBuffersOff != "" {
					t.Fatalf("FixedBuffers %v, FixedBuffersOff %q; want true and no reason", st.FixedBuffers, st.FixedBuffersOff)
				}
				if st.Loads < 48 || fixed != st.Loads {
					t.Fatalf("%d loads, %d fixed transfers; want every load fixed (at least 48)", st.Loads, fixed)
				}
				if !strings.Contains(st.String(), "fixed buffers true") {
					t.Errorf("Stats.String() does not say fixed buffers are on: %s", st)
				}
			})
		})
	}
}

// TestFixedArenaGrows: an arena made without Prefault is registered 4 MiB
// at New, then, as the pool first uses frames past the registered part, as
// much again each time; frames given back are used again before new ones;
// a prefaulted arena is registered whole at New. Every load returns the
// file's bytes, registered or not yet.
func TestFixedArenaGrows(t *testing.T) {
	const fs = 64 << 10
	eng := newEngine(t, ioengine.URing, nil)
	p := newPool(t, eng, Options{FrameSize: fs, Budget: 32 << 20, FixedBuffers: true})
	fixed := func() int64 { return p.Stats().FixedBytes }
	if n := fixed(); n != firstFixed {
		t.Fatalf("registered %d bytes at New, want %d", n, firstFixed)
	}
	a := register(t, p, testdir.Direct(t), "a", 6<<20, 3) // 96 frames
	e0 := eng.Stats()
	pinAndCheck(t, p, a)
	eventually(t, 10*time.Second, "8 MiB registered", func() bool { return fixed() == 8<<20 })
	if n := eng.Stats().FixedTransfers - e0.FixedTransfers; n == 0 {
		t.Fatal("no load went as READ_FIXED")
	}
	if err := p.Unregister(a.id); err != nil {
		t.Fatal(err)
	}
	b := register(t, p, testdir.Direct(t), "b", 6<<20, 4)
	pinAndCheck(t, p, b)
	time.Sleep(50 * time.Millisecond) // a growth would have been started by now
	if n := fixed(); n != 8<<20 {
		t.Fatalf("registered %d bytes after the second file used the first one's frames again, want %d", n, 8<<20)
	}
	c := register(t, p, testdir.Direct(t), "c", 20<<20, 5)
	pinAndCheck(t, p, c)
	eventually(t, 10*time.Second, "the whole arena registered", func() bool { return fixed() == 32<<20 })
	if st := p.Stats(); !st.FixedBuffers || st.FixedBuffersOff != "" {
		t.Fatalf("FixedBuffers %v, FixedBuffersOff %q", st.FixedBuffers, st.FixedBuffersOff)
	}

	q := newPool(t, eng, Options{FrameSize: fs, Budget: 16 << 20, FixedBuffers: true, Prefault: true})
	if n := q.Stats().FixedBytes; n != 16<<20 {
		t.Fatalf("prefaulted: registered %d bytes at New, want all %d", n, 16<<20)
	}
}

// Child process of TestFixedBuffersRefused.
const (
	fixedChildEnv = "RINGSTORE_BUFPOOL_FIXED_CHILD"
	fixedChildOK  = "fixed-refused-child-ok "
)

// TestFixedBuffersRefused runs a child process of this test binary without
// CAP_IPC_LOCK and with RLIMIT_MEMLOCK at 64 KiB: the real kernel refuses
// to register a 1 MiB arena with ENOMEM, and the pool reads without fixed
// buffers, the reason in its Stats, every byte still right.
func TestFixedBuffersRefused(t *testing.T) {
	if os.Getenv(fixedChildEnv) == "1" {
		fixedRefusedChild(t)
		return
	}
	testchild.RunWithoutIPCLock(t, "^TestFixedBuffersRefused$", []string{fixedChildEnv + "=1"}, fixedChildOK)
}

func fixedRefusedChild(t *testing.T) {
	testchild.RequireNoIPCLock(t)
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &unix.Rlimit{Cur: 64 << 10, Max: 64 << 10}); err != nil {
		t.Fatalf("setrlimit RLIMIT_MEMLOCK: %v", err)
	}
	eng := newEngine(t, ioengine.URing, nil)
	var logged []string
	p := newPool(t, eng, Options{FrameSize: 64 << 10, Budget: 1 << 20, FixedBuffers: true, Logf: func(f string, a ...any) {
		logged = append(logged, fmt.Sprintf(f, a...))
	}})
	st := p.Stats()
	if st.FixedBuffers || !strings.Contains(st.FixedBuffersOff, "RLIMIT_MEMLOCK") || !strings.Contains(st.FixedBuffersOff, unix.ENOMEM.Error()) {
		t.Fatalf("FixedBuffers %v, FixedBuffersOff %q; want false and the RLIMIT_MEMLOCK refusal (ENOMEM)", st.FixedBuffers, st.FixedBuffersOff)
	}
	if len(logged) != 1 || !strings.Contains(logged[0], st.FixedBuffersOff) {
		t.Fatalf("logged %q; want one line with the reason", logged)
	}
	tf := register(t, p, testdir.Direct(t), "refused", 2<<20, 9)
	e0 := eng.Stats()
	pinAndCheck(t, p, tf)
	if n := eng.Stats().FixedTransfers - e0.FixedTransfers; n != 0 {
		t.Fatalf("%d fixed transfers without registered memory", n)
	}
	fmt.Printf("%sreason: %s\n", fixedChildOK, st.FixedBuffersOff)
}
