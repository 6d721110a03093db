package bench

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

func TestTimedCountsCallsWithinTheTime(t *testing.T) {
	var started, stopped atomic.Int32
	var calls atomic.Int64
	tm := Timed{
		Workers: 3,
		Step: func(g int) (int64, time.Duration, error) {
			calls.Add(1)
			time.Sleep(time.Millisecond)
			return 2, time.Millisecond, nil
		},
		Start: func() { started.Add(1) },
		Stop:  func() { stopped.Add(1) },
	}
	tr, err := tm.RunWarm(100*time.Millisecond, 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if started.Load() != 2 || stopped.Load() != 2 {
		t.Errorf("Start ran %d times, Stop %d: want 2 each (warm-up and measured)", started.Load(), stopped.Load())
	}
	if tr.Ops <= 0 || tr.Ops%2 != 0 {
		t.Errorf("Ops %d: want a positive multiple of 2", tr.Ops)
	}
	// The measured run's calls, less the last of each worker (returned
	// after the end), are at most all the calls after the warm-up.
	if tr.Ops/2 >= calls.Load() {
		t.Errorf("Ops %d count %d calls, but only %d were made in warm-up and run together", tr.Ops, tr.Ops/2, calls.Load())
	}
	if tr.Seconds < 0.1 || tr.Seconds > 5 {
		t.Errorf("Seconds %.3f: want about 0.1", tr.Seconds)
	}
	if tr.P50us < 1000 || tr.P50us > 1010 || tr.MaxUs < tr.P999us || tr.P999us < tr.P99us || tr.P99us < tr.P90us || tr.P90us < tr.P50us {
		t.Errorf("P50 %.0f µs: want the 1000 µs Step reported (within the histogram's 1%%), percentiles in order: %+v", tr.P50us, tr)
	}
}

func TestTimedStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	var n atomic.Int64
	tm := Timed{
		Workers: 4,
		Step: func(g int) (int64, time.Duration, error) {
			if n.Add(1) == 10 {
				return 0, 0, boom
			}
			time.Sleep(100 * time.Microsecond)
			return 1, 0, nil
		},
	}
	t0 := time.Now()
	_, err := tm.Run(time.Minute)
	if !errors.Is(err, boom) {
		t.Fatalf("err %v, want boom", err)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("Run took %s after an error: it should stop the trial at once", d)
	}
}
