package nexmarkbench

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
)

// TestMain lets the test binary serve as the benchmark's child process.
func TestMain(m *testing.M) {
	bench.MaybeChild()
	os.Exit(m.Run())
}

// TestRunTiny: a stateless, a windowed and a two-stage query, ON and OFF in
// child processes: the JSON report has every query with equal outputs
// across modes and trials, the ratios computed from the trials, state
// bigger than nothing for the stateful ones, and the bars; the text report
// says when trials are too few to compare every trial.
func TestRunTiny(t *testing.T) {
	dir := testdir.Direct(t)
	out, progress := &bytes.Buffer{}, &bytes.Buffer{}
	js := filepath.Join(t.TempDir(), "nexmark.json")
	err := Run(Options{Queries: []string{"q1", "q11", "q4"}, Events: 30_000, Trials: 1, Dir: dir, Out: out, Progress: progress, JSON: js})
	if err != nil {
		t.Fatalf("Run: %v\n%s\n%s", err, progress, out)
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	uringOK, _ := ioengine.ProbeKernel().Usable()
	if !uringOK {
		t.Skip("io_uring is not usable here: no ON/OFF report to check")
	}
	if len(rep.Queries) != 3 {
		t.Fatalf("%d queries in the report, want 3: %+v", len(rep.Queries), rep.Queries)
	}
	for _, q := range rep.Queries {
		if !q.ChecksumEqual || len(q.OnEPS) != 1 || len(q.OffEPS) != 1 || q.RatioBest != q.OnBest/q.OffBest {
			t.Errorf("%s: %+v", q.Query, q)
		}
		if q.Stateful != (q.Query != "q1") || q.Stateful && q.StateBytes <= 0 {
			t.Errorf("%s: stateful %v, state %.0f bytes", q.Query, q.Stateful, q.StateBytes)
		}
		if q.AllOnFaster || q.AllOnSlower {
			t.Errorf("%s: every-trial verdicts from one trial", q.Query)
		}
	}
	if len(rep.Bars) != 4 || rep.Bars[2].Valid {
		t.Errorf("bars %+v: want 4, the every-trial one not tested with one trial", rep.Bars)
	}
	if !strings.Contains(out.String(), "1 trial, too few to say") || !strings.Contains(out.String(), "bars:") {
		t.Errorf("text report:\n%s", out)
	}
}
