//go:build linux && !ringstore_nouring

package ioengine

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestParkWaits: on an inline engine with ParkWaits, a call whose read
// cannot complete at submission (a pipe with nothing in it yet) parks on
// Go's poller and resumes with the bytes once they are written, through
// Start/Wait and Do alike; Stats counts the parks. Without ParkWaits the
// same calls block in io_uring_enter and count none. The completion wakes
// the parked call: with a park timeout far longer than the calls, each
// returns long before it.
func TestParkWaits(t *testing.T) {
	defer func(d time.Duration) { parkTimeout = d }(parkTimeout)
	parkTimeout = 10 * time.Second
	for _, park := range []bool{true, false} {
		t.Run(map[bool]string{true: "park", false: "enter"}[park], func(t *testing.T) {
			e := newEngine(t, URing, Options{Inline: true, ParkWaits: park})
			var p [2]int
			if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
			writeLater := func(msg string) {
				go func() {
					time.Sleep(20 * time.Millisecond)
					if _, err := unix.Write(p[1], []byte(msg)); err != nil {
						t.Error(err)
					}
				}()
			}
			// A pipe has no offset: io_uring ignores it for a stream.
			r := []Request{{Op: OpRead, Fd: p[0], Buf: make([]byte, 8)}}
			pending, err := e.Start(r)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			writeLater("started!")
			if err := pending.Wait(); err != nil || r[0].Err != nil || !bytes.Equal(r[0].Buf[:r[0].N], []byte("started!")) {
				t.Fatalf("Start/Wait: %v, %v, %q", err, r[0].Err, r[0].Buf[:r[0].N])
			}
			r = []Request{{Op: OpRead, Fd: p[0], Buf: make([]byte, 8)}}
			writeLater("done it!")
			if err := e.Do(r); err != nil || r[0].Err != nil || !bytes.Equal(r[0].Buf[:r[0].N], []byte("done it!")) {
				t.Fatalf("Do: %v, %v, %q", err, r[0].Err, r[0].Buf[:r[0].N])
			}
			if d := time.Since(start); d > parkTimeout/2 {
				t.Errorf("the two calls took %v: a completion did not wake the parked call", d)
			}
			parks := e.Stats().Parks
			switch {
			case park && parks < 2:
				t.Errorf("%d parks, want at least one per call (2)", parks)
			case !park && parks != 0:
				t.Errorf("%d parks without ParkWaits", parks)
			}
		})
	}
}

// TestParkTimeout: a wait longer than parkTimeout comes back from the
// poller, finds nothing, and parks again until the completion comes.
func TestParkTimeout(t *testing.T) {
	e := newEngine(t, URing, Options{Inline: true, ParkWaits: true})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(p[0]); unix.Close(p[1]) })
	go func() {
		time.Sleep(3 * parkTimeout)
		unix.Write(p[1], []byte("x"))
	}()
	r := []Request{{Op: OpRead, Fd: p[0], Buf: make([]byte, 1)}}
	if err := e.Do(r); err != nil || r[0].N != 1 {
		t.Fatalf("Do: %v, n %d", err, r[0].N)
	}
	if parks := e.Stats().Parks; parks < 2 {
		t.Errorf("%d parks over a wait of 3 park timeouts, want at least 2", parks)
	}
}
