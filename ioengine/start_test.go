package ioengine

import (
	"errors"
	"testing"
)

// TestStartWait: reads begun with Start are done, with the file's bytes,
// when Wait returns, whatever ran in between: another call's Do (which on
// an inline engine may reap them), and more Starts waited for in the
// reverse order. A bad request fails Start and takes nothing.
func TestStartWait(t *testing.T) {
	const n, size = 48, 4096
	data := make([]byte, n*size)
	for i := 0; i < n; i++ {
		fillBlock(data[i*size:(i+1)*size], uint64(i))
	}
	forEachBackend(t, Options{}, func(t *testing.T, e *Engine) {
		_, fd := openFile(t, t.TempDir(), "data", data)
		reads := func(first, count int) []Request {
			reqs := make([]Request, count)
			for i := range reqs {
				reqs[i] = Request{Op: OpRead, Fd: fd, Off: int64((first + i) * size), Buf: make([]byte, size)}
			}
			return reqs
		}
		check := func(what string, first int, reqs []Request) {
			t.Helper()
			for i := range reqs {
				if reqs[i].N != size || reqs[i].Err != nil {
					t.Fatalf("%s: request %d: n %d, err %v", what, i, reqs[i].N, reqs[i].Err)
				}
				if err := checkBlock(reqs[i].Buf, uint64(first+i)); err != nil {
					t.Fatalf("%s: request %d: %v", what, i, err)
				}
			}
		}
		for round := 0; round < 20; round++ {
			a, b := reads(0, 16), reads(16, 16)
			pa, err := e.Start(a)
			if err != nil {
				t.Fatal(err)
			}
			pb, err := e.Start(b)
			if err != nil {
				t.Fatal(err)
			}
			c := reads(32, 16)
			if err := e.Do(c); err != nil {
				t.Fatal(err)
			}
			check("Do between Start and Wait", 32, c)
			if err := pb.Wait(); err != nil {
				t.Fatal(err)
			}
			if err := pa.Wait(); err != nil {
				t.Fatal(err)
			}
			check("first Start", 0, a)
			check("second Start", 16, b)
		}
		if _, err := e.Start([]Request{{Op: OpRead, Fd: fd, Off: -1, Buf: make([]byte, 8)}}); err == nil {
			t.Error("Start of a read at offset -1 succeeded")
		}
		empty, err := e.Start(nil)
		if err != nil || empty.Wait() != nil {
			t.Errorf("Start of nothing: %v", err)
		}
		// Close with a call begun and not waited for: it finishes, and
		// its Wait finds it done.
		last := reads(0, 8)
		pl, err := e.Start(last)
		if err != nil {
			t.Fatal(err)
		}
		e.Close()
		if err := pl.Wait(); err != nil {
			t.Fatal(err)
		}
		check("Start before Close", 0, last)
		if _, err := e.Start(reads(0, 1)); !errors.Is(err, ErrClosed) {
			t.Errorf("Start after Close: %v, want ErrClosed", err)
		}
	})
}
