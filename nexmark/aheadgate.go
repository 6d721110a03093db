package nexmark

import (
	"sync/atomic"
	"time"

	"github.com/ringstore/ringstore/internal/proccpu"
)

// DefaultReadAheadPauseBelow is RunConfig.ReadAheadPauseBelow's default:
// the job's state reads pause their read-ahead while they make fewer than
// this many 4 KiB block reads from the device per second of the process's
// CPU — one block per 200 µs of CPU, about a read's latency on the devices
// it was measured on (docs/DECISIONS.md).
const DefaultReadAheadPauseBelow = 5000

// aheadGate pauses the workers' read-ahead while it does not pay. A read
// ahead costs CPU for every key it looks up (its tables, their filters, its
// first block's search), work its Load then mostly skips; it gains only
// where the Load would otherwise wait for the device, so where the reads
// come rarely for the CPU the job spends, it costs more than it saves.
//
// Every gateTick the run samples the workers' block reads (cache misses
// and reads past the cache, Stats.KV.BlockReads) and the process's CPU
// time, and takes the rate over the last gateWindow ticks. Read-ahead
// pauses once that rate has been under below at pauseTicks ticks in a row,
// and resumes at the first tick it is over resumeFactor × below: a pause
// gains a little CPU, a pause where the reads are needed loses much more,
// so a pause waits until a job's reads have stayed rare (not only while
// its state still fits the cache, early in a run, as q4's does for its
// first second), and a resume does not wait. The gap between the two
// lines keeps it from turning where the rate sits near one; a paused job
// reads through the cache, which for a job that needs its reads ahead
// makes more reads than reading ahead, so it resumes at once.
//
// The gate changes when reads are made, never what they return: a
// worker's batches read ahead before a pause keep their reads, and a batch
// loaded without them reads the state as of its Load as every batch does.
// Workers read paused; only the sampling goroutine writes it.
type aheadGate struct {
	below   float64
	paused  atomic.Bool
	samples [gateWindow + 1]gateSample // a ring of the last samples
	n       int                        // samples taken
	low     int                        // ticks in a row with the rate under below, not paused
}

type gateSample struct {
	reads uint64
	cpu   float64
}

const (
	gateTick     = 100 * time.Millisecond
	gateWindow   = 5  // ticks: the rate is over the last half second
	pauseTicks   = 10 // ticks in a row under below before a pause: a second
	resumeFactor = 1.5
)

// observe takes one sample and, once the window is full, decides.
func (g *aheadGate) observe(reads uint64, cpu float64) {
	g.samples[g.n%len(g.samples)] = gateSample{reads, cpu}
	g.n++
	if g.n < len(g.samples) {
		return
	}
	old := g.samples[g.n%len(g.samples)] // gateWindow ticks before the newest
	dcpu := cpu - old.cpu
	if dcpu <= 0 || reads < old.reads {
		return
	}
	rate := float64(reads-old.reads) / dcpu
	switch {
	case g.paused.Load():
		if rate > resumeFactor*g.below {
			g.paused.Store(false)
		}
	case rate < g.below:
		if g.low++; g.low >= pauseTicks {
			g.paused.Store(true)
			g.low = 0
		}
	default:
		g.low = 0
	}
}

// run samples every gateTick until stop is closed. reads sums the
// workers' block reads; cpu is the process's CPU time in seconds.
func (g *aheadGate) run(stop <-chan struct{}, reads func() uint64, cpu func() float64) {
	t := time.NewTicker(gateTick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			g.observe(reads(), cpu())
		}
	}
}

// startAheadGate gives the workers a gate sampled until the function it
// returns is called (which waits for the sampling to stop). The workers'
// read-ahead has none, and never pauses, without ReadAhead, with a
// negative RunConfig.ReadAheadPauseBelow, for a stateless query, or where
// the process's CPU time cannot be read.
func startAheadGate(cfg RunConfig, workers []*worker) (stop func()) {
	if _, ok := proccpu.Seconds(); !ok || !cfg.ReadAhead || cfg.ReadAheadPauseBelow < 0 || workers[0].backend == nil {
		return func() {}
	}
	g := &aheadGate{below: cfg.ReadAheadPauseBelow}
	for _, w := range workers {
		w.gate = g
	}
	if cfg.gateTest != nil {
		return cfg.gateTest(g) // the test pauses and resumes it
	}
	reads := func() uint64 {
		var n uint64
		for _, w := range workers {
			n += w.backend.Stats().KV.BlockReads
		}
		return n
	}
	cpu := func() float64 { s, _ := proccpu.Seconds(); return s }
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		g.run(quit, reads, cpu)
	}()
	return func() {
		close(quit)
		<-done
	}
}
