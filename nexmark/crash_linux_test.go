package nexmark

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/internal/testchild"
	"github.com/ringstore/ringstore/internal/testdir"
)

const (
	crashDirEnv     = "RINGSTORE_NEXMARK_CRASH_DIR"
	crashQueryEnv   = "RINGSTORE_NEXMARK_CRASH_QUERY"
	crashRescaleEnv = "RINGSTORE_NEXMARK_CRASH_RESCALE" // the child restores into this many workers
	crashEvents     = 60_000
)

// crashConfig is the run the child makes and the parent restores: a
// job checkpoint every 1,000 events, so a kill often lands in one.
func crashConfig(dir, query string) RunConfig {
	return RunConfig{Query: query, Events: crashEvents, Batch: 100, Checkpoint: 1000, Dir: dir, Cache: 256 << 10, Gen: GenConfig{Rate: 1000}}
}

// TestCrashChild is the child of TestKilledAtRandom: it runs a query with
// checkpoints until it is killed (after the run it waits to be).
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("the child of TestKilledAtRandom")
	}
	rep := &testchild.Reporter{}
	rep.Line("R")
	cfg := crashConfig(dir, os.Getenv(crashQueryEnv))
	if p, err := strconv.Atoi(os.Getenv(crashRescaleEnv)); err == nil {
		cfg.Restore, cfg.Parallelism = true, p
	}
	if _, err := Run(cfg); err != nil {
		os.Exit(rep.Fail("%v", err))
	}
	rep.Line("D")
	time.Sleep(time.Hour)
}

// crashEventList is the events crashConfig's runs make.
func crashEventList() []Event {
	evs := make([]Event, crashEvents)
	gen := crashConfig("", "").Gen
	for id := range evs {
		evs[id] = gen.Generate(int64(id))
	}
	return evs
}

type crashReport struct {
	ready, done bool
	failed      string
}

func (r *crashReport) Ready() bool    { return r.ready }
func (r *crashReport) Failed() string { return r.failed }
func (r *crashReport) Parse(line string) error {
	switch {
	case line == "R":
		r.ready = true
	case line == "D":
		r.done = true
	case strings.HasPrefix(line, "E "):
		r.failed = line
	default:
		return fmt.Errorf("a report line %q", line)
	}
	return nil
}

// TestKilledAtRandom: a process running a query with checkpoints is
// killed (SIGKILL) at a random moment — in a checkpoint, between them,
// before the first, after the end — and a restore from what it left ends
// with exactly the SQL's rows.
func TestKilledAtRandom(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	evs := crashEventList()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	queries := []string{"q3", "q4", "q5", "q11", "q17", "q18", "q20", "q7", "q9"}
	for cycle := range 2 * len(queries) {
		query := queries[cycle%len(queries)]
		dir := testdir.Direct(t)
		delay := time.Duration(rng.IntN(700)) * time.Millisecond
		r := &crashReport{}
		what := fmt.Sprintf("cycle %d (%s, killed after %s)", cycle, query, delay)
		testchild.RunKilled(t, what, "^TestCrashChild$", []string{crashDirEnv + "=" + dir, crashQueryEnv + "=" + query}, r, delay, time.Minute)
		cfg := crashConfig(dir, query)
		cfg.Restore = true
		res, err := Run(cfg)
		if err != nil {
			t.Fatalf("%s: restore: %v", what, err)
		}
		var want Sink
		evalSQL(query, evs, &want)
		if res.Sink != want {
			t.Errorf("%s: after the restore %s, SQL %s", what, res.Sink.Checksum(), want.Checksum())
		}
		t.Logf("%s: restored, run %s", what, map[bool]string{true: "had ended", false: "was cut"}[r.done])
	}
}

// TestKilledWhileRescaling: a run stopped with 4 workers is restored into
// 3 by a child process killed at a random moment — while it copies the
// key groups, writes the new generation's first checkpoint, or runs on —
// and a restore into 4 workers from what it left ends with exactly the
// SQL's rows.
func TestKilledWhileRescaling(t *testing.T) {
	if testing.Short() {
		t.Skip("kills child processes")
	}
	evs := crashEventList()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for cycle, query := range []string{"q4", "q11", "q17", "q20", "q5", "q3", "q9", "q18"} {
		dir := testdir.Direct(t)
		cfg := crashConfig(dir, query)
		cfg.StopAt = crashEvents / 2
		if _, err := Run(cfg); err != nil {
			t.Fatal(err)
		}
		// Half the kills in the first 40 ms, where the rescale itself is.
		delay := time.Duration(rng.IntN([]int{40, 250}[cycle%2])) * time.Millisecond
		r := &crashReport{}
		what := fmt.Sprintf("cycle %d (%s, rescaled 4→3, killed after %s)", cycle, query, delay)
		testchild.RunKilled(t, what, "^TestCrashChild$", []string{crashDirEnv + "=" + dir, crashQueryEnv + "=" + query, crashRescaleEnv + "=3"}, r, delay, time.Minute)
		j, err := findCheckpoint(dir)
		if err != nil || j == nil {
			t.Fatalf("%s: no checkpoint left: %v", what, err)
		}
		cfg.StopAt, cfg.Restore = 0, true
		res, err := Run(cfg)
		if err != nil {
			t.Fatalf("%s: restore: %v", what, err)
		}
		var want Sink
		evalSQL(query, evs, &want)
		if res.Sink != want {
			t.Errorf("%s: after the restore from generation %d (parallelism %d) %s, SQL %s", what, j.gen, j.parallelism, res.Sink.Checksum(), want.Checksum())
		}
		t.Logf("%s: restored from generation %d, parallelism %d, checkpoint %d", what, j.gen, j.parallelism, j.n)
	}
}
