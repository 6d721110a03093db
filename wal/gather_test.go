package wal

import (
	"sync"
	"testing"
	"time"
)

// gatherLog is the part of a Log that gatherLocked and enqueue use. Its
// wait is bounded by a quarter of flush alone, not by maxGather too, so that
// a test's goroutines, slowed by a loaded machine, are not outrun by the
// 1 ms bound: only the event a test is about can end the wait.
func gatherLog(flush time.Duration, opts Options) *Log {
	l := &Log{opts: opts, gatherMax: time.Hour}
	l.cond = sync.NewCond(&l.mu)
	l.flushNanos.Store(int64(flush))
	return l
}

// waitStarted returns once a gathering wait after generation gen began.
func waitStarted(l *Log, gen uint64) {
	for {
		l.mu.Lock()
		started := l.gatherGen > gen
		l.mu.Unlock()
		if started {
			return
		}
		time.Sleep(10 * time.Microsecond)
	}
}

func TestGatherWaitsForReturningWriters(t *testing.T) {
	// A long last flush: the bound (a quarter of it, at most maxGather) is
	// far longer than the writers take to come back.
	l := gatherLog(time.Hour, Options{})
	l.pending = []*request{{kind: reqAppend}}
	l.gatherWant = 3
	done := make(chan int)
	var timedOut bool
	go func() {
		l.mu.Lock()
		l.gatherLocked()
		n := len(l.pending)
		timedOut = l.gatherOver
		l.mu.Unlock()
		done <- n
	}()
	// Once it has begun to wait, two writers come back well inside the
	// bound.
	waitStarted(l, 0)
	for range 2 {
		if err := l.enqueue(&request{kind: reqAppend}); err != nil {
			t.Fatal(err)
		}
	}
	if n := <-done; n != 3 {
		t.Fatalf("gathering ended with %d requests queued, want 3", n)
	}
	if timedOut {
		t.Fatal("the wait ran to its bound instead of ending when the writers were back")
	}
	if l.gatherWant != 0 {
		t.Fatalf("gatherWant %d after the wait, want 0", l.gatherWant)
	}
}

func TestGatherGivesUpAfterItsBound(t *testing.T) {
	l := gatherLog(400*time.Microsecond, Options{})
	l.pending = []*request{{kind: reqAppend}}
	l.gatherWant = 64 // writers who never come back
	start := time.Now()
	l.mu.Lock()
	l.gatherLocked()
	l.mu.Unlock()
	if waited := time.Since(start); waited < 100*time.Microsecond {
		t.Fatalf("gave up after %v, before its bound of a quarter of the last flush (100µs)", waited)
	}
	if !l.gatherOver {
		t.Fatal("the wait ended without its timer")
	}
	// A second wait, with a long bound, ends when its writer is back.
	l.gatherWant = 2
	l.gatherOver = false
	l.flushNanos.Store(int64(time.Hour))
	prior := l.gatherGen
	second := make(chan int)
	go func() {
		l.mu.Lock()
		l.gatherLocked()
		n := len(l.pending)
		l.mu.Unlock()
		second <- n
	}()
	waitStarted(l, prior)
	l.enqueue(&request{kind: reqAppend})
	n := <-second
	if n != 2 {
		t.Fatalf("second wait ended with %d queued, want 2", n)
	}
}

func TestGatherSkipped(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		want    int
		closing bool
	}{
		{"noGather", Options{noGather: true}, 64, false},
		{"already there", Options{}, 1, false},
		{"nothing asked", Options{}, 0, false},
		{"closing", Options{}, 64, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := gatherLog(time.Hour, tc.opts)
			l.pending = []*request{{kind: reqAppend}}
			l.gatherWant = tc.want
			l.closing = tc.closing
			done := make(chan struct{})
			go func() {
				l.mu.Lock()
				l.gatherLocked()
				l.mu.Unlock()
				close(done)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("gatherLocked waited though it had nothing to wait for")
			}
		})
	}
}

func TestCloseEndsGathering(t *testing.T) {
	l := gatherLog(time.Hour, Options{})
	l.pending = []*request{{kind: reqAppend}}
	l.gatherWant = 64
	done := make(chan struct{})
	go func() {
		l.mu.Lock()
		l.gatherLocked()
		l.mu.Unlock()
		close(done)
	}()
	time.Sleep(time.Millisecond)
	l.mu.Lock()
	l.closing = true
	l.cond.Broadcast()
	l.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not end the gathering wait")
	}
}

// TestGatherExtendsWhileWritersReturn: writers still coming back at the
// first bound extend the wait a step at a time; a step in which none came
// back ends it.
func TestGatherExtendsWhileWritersReturn(t *testing.T) {
	// Bound 200 ms, steps of 100 ms, at most 800 ms.
	l := gatherLog(800*time.Millisecond, Options{})
	l.pending = []*request{{kind: reqAppend}}
	l.gatherWant = 64
	type result struct {
		n       int
		waited  time.Duration
		timeout bool
	}
	done := make(chan result)
	start := time.Now()
	go func() {
		l.mu.Lock()
		l.gatherLocked()
		r := result{len(l.pending), time.Since(start), l.gatherOver}
		l.mu.Unlock()
		done <- r
	}()
	waitStarted(l, 0)
	time.Sleep(40 * time.Millisecond) // inside the first bound
	l.enqueue(&request{kind: reqAppend})
	time.Sleep(200 * time.Millisecond) // inside the first step after it
	l.enqueue(&request{kind: reqAppend})
	r := <-done
	if r.n != 3 {
		t.Fatalf("the wait ended with %d requests queued, want 3 (it ended before the second writer came back)", r.n)
	}
	if !r.timeout {
		t.Fatal("the wait ended without its timer")
	}
	if r.waited < 300*time.Millisecond {
		t.Fatalf("the wait ended after %v: the writers that came back did not extend it past the first bound and step (300 ms)", r.waited)
	}
	if r.waited > 2*time.Second {
		t.Fatalf("the wait went on for %v after the writers stopped coming back", r.waited)
	}
}

// TestGatherExtensionIsBounded: writers that trickle back without end do
// not hold the group past the last flush's duration.
func TestGatherExtensionIsBounded(t *testing.T) {
	// Bound 100 ms, steps of 50 ms, at most 400 ms.
	l := gatherLog(400*time.Millisecond, Options{})
	l.pending = []*request{{kind: reqAppend}}
	l.gatherWant = 1 << 20
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
				l.enqueue(&request{kind: reqAppend})
			}
		}
	}()
	start := time.Now()
	l.mu.Lock()
	l.gatherLocked()
	waited := time.Since(start)
	l.mu.Unlock()
	close(stop)
	wg.Wait()
	if waited < 200*time.Millisecond {
		t.Fatalf("the wait ended after %v though writers kept coming back", waited)
	}
	if waited > 400*time.Millisecond+5*time.Second {
		t.Fatalf("the wait went on for %v, past the last flush's 400 ms", waited)
	}
}
