package nexmark

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// The gate decides on the rate over its whole window: it pauses once the
// rate has been under below for pauseTicks ticks in a row, and resumes at
// the first tick the rate is over resumeFactor × below.
func TestAheadGateDecides(t *testing.T) {
	g := &aheadGate{below: 5000}
	var reads uint64
	var cpu float64
	// 0.125 CPU-s a tick keeps the sums exact in binary: r reads a tick
	// is 8r reads per CPU-second once the window holds only such ticks.
	tick := func(perTick uint64, cpuPerTick float64) {
		reads += perTick
		cpu += cpuPerTick
		g.observe(reads, cpu)
	}
	for i := 0; i < gateWindow+pauseTicks-1; i++ {
		tick(125, 0.125) // 1,000 block reads per CPU-second
		if g.paused.Load() {
			t.Fatalf("paused after %d samples: the window holds %d ticks, and a pause needs %d under the line", i+1, gateWindow, pauseTicks)
		}
	}
	tick(125, 0.125)
	if !g.paused.Load() {
		t.Fatalf("not paused after %d ticks at 1,000 block reads per CPU-second, below 5,000", pauseTicks)
	}
	for i := 0; i < 3*gateWindow; i++ {
		tick(875, 0.125) // 7,000: over below, under resumeFactor × below
	}
	if !g.paused.Load() {
		t.Fatal("resumed at 7,000 block reads per CPU-second, under 1.5 × 5,000")
	}
	for i := 0; i < 3*gateWindow; i++ {
		tick(0, 0) // no CPU spent: nothing to decide on
	}
	if !g.paused.Load() {
		t.Fatal("resumed without CPU time having passed")
	}
	for i := 0; i < gateWindow; i++ {
		tick(1000, 0.125) // 8,000 once the window holds only these
	}
	if g.paused.Load() {
		t.Fatal("still paused at 8,000 block reads per CPU-second")
	}
	// A stretch under the line one tick shorter than pauseTicks (the
	// window's rate falls under 5,000 at the fourth tick of 3,000), then a
	// tick that lifts it over: no pause, and the count starts again.
	for i := 0; i < 3+pauseTicks-1; i++ {
		tick(375, 0.125)
	}
	tick(2500, 0.125) // the window: 4 × 375 + 2,500 reads, 6,400 a CPU-second
	if g.paused.Load() {
		t.Fatal("paused after fewer ticks in a row under the line than pauseTicks")
	}
	for i := 0; i < gateWindow-1+pauseTicks-1; i++ {
		tick(375, 0.125) // under the line once the 2,500 has left the window
	}
	if g.paused.Load() {
		t.Fatal("paused: the count did not start again after a tick over the line")
	}
	tick(375, 0.125)
	if !g.paused.Load() {
		t.Fatal("not paused after the window's rate stayed at 3,000")
	}
}

// A gate that pauses and resumes read-ahead in the middle of runs changes
// no output: the batches read ahead before a pause keep their reads, and
// those loaded during it read the state as every Load does.
func TestAheadGatePausesMidRun(t *testing.T) {
	if ok, _ := ioengine.ProbeKernel().Usable(); !ok {
		t.Skip("io_uring refused: read aheads do nothing")
	}
	rg := sqlRegimes[0]
	want := sqlWant(t, rg.gen, rg.events)
	for _, name := range []string{"q4", "q9", "q18", "q20"} {
		t.Run(name, func(t *testing.T) {
			var flips atomic.Int64
			flip := func(g *aheadGate) func() {
				quit, done := make(chan struct{}), make(chan struct{})
				go func() {
					defer close(done)
					for {
						select {
						case <-quit:
							return
						case <-time.After(300 * time.Microsecond):
							g.paused.Store(!g.paused.Load())
							flips.Add(1)
						}
					}
				}()
				return func() { close(quit); <-done }
			}
			res, err := Run(RunConfig{Query: name, Events: rg.events, Batch: 100, Dir: testdir.Direct(t), Cache: 256 << 10, Memtable: 64 << 10,
				IOMode: ioengine.URing, ReadAhead: true, Gen: rg.gen, gateTest: flip})
			if err != nil {
				t.Fatal(err)
			}
			if res.Sink != want[name] {
				t.Errorf("runner %s, SQL %s", res.Sink.Checksum(), want[name].Checksum())
			}
			if res.ReadAheadPaused == 0 || res.ReadAheadPaused >= res.MultiGets || res.ReadAheadBlocks == 0 {
				t.Errorf("%d of %d mini-batches loaded paused, %d blocks read ahead (%d flips): want some of each", res.ReadAheadPaused, res.MultiGets, res.ReadAheadBlocks, flips.Load())
			}
		})
	}
}
