package bench

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Timed is a closed-loop trial: Workers goroutines, each calling Step
// again as soon as its last call returned, for a set time.
type Timed struct {
	Workers int
	// Step makes worker g's next call and returns the operations it
	// completed and its latency (the part of it worth timing). An error
	// ends the trial.
	Step func(g int) (ops int64, lat time.Duration, err error)
	// Start, if set, runs just before the clock starts and Stop just after
	// it stopped, before the calls still running return: read counters
	// there, so that their difference covers the measured time.
	Start, Stop func()
}

// Run runs the trial for d and returns its operations, wall and CPU time
// and the percentiles of the calls' latencies (every call counted). A call that returns after
// the time is up is not counted. The first error stops every worker; Run
// returns the errors joined.
func (t Timed) Run(d time.Duration) (Trial, error) {
	var stop atomic.Bool
	var wg sync.WaitGroup
	var failOnce sync.Once
	failed := make(chan struct{})
	ops := make([]int64, t.Workers)
	lats := make([]*Latencies, t.Workers)
	errs := make([]error, t.Workers)
	if t.Start != nil {
		t.Start()
	}
	cpu0, mcpu0, t0 := CPUTime(), MachineCPUTime(), time.Now()
	for g := range t.Workers {
		lats[g] = NewLatencies()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				n, lat, err := t.Step(g)
				if err != nil {
					errs[g] = err
					failOnce.Do(func() { close(failed) })
					return
				}
				if stop.Load() {
					return // finished after the end: not counted
				}
				lats[g].Add(lat)
				ops[g] += n
			}
		}()
	}
	timer := time.NewTimer(d)
	select {
	case <-timer.C:
	case <-failed:
		timer.Stop()
	}
	stop.Store(true)
	tr := Trial{Seconds: time.Since(t0).Seconds(), CPUSeconds: CPUTime() - cpu0, MachineCPUSeconds: MachineCPUTime() - mcpu0}
	if t.Stop != nil {
		t.Stop()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return tr, err
	}
	all := NewLatencies()
	for g := range t.Workers {
		tr.Ops += ops[g]
		all.Merge(lats[g])
	}
	all.Fill(&tr)
	return tr, nil
}

// RunWarm runs the trial for warmFrac of d, not counted, then for d.
func (t Timed) RunWarm(d time.Duration, warmFrac float64) (Trial, error) {
	if warm := time.Duration(float64(d) * warmFrac); warm > 0 {
		if _, err := t.Run(warm); err != nil {
			return Trial{}, err
		}
	}
	return t.Run(d)
}
