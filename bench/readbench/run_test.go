package readbench

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
)

// TestMain lets the test binary serve as the benchmark's child process.
func TestMain(m *testing.M) {
	bench.MaybeChild()
	os.Exit(m.Run())
}

// TestLatencyKinds: a pread or fio row's latency is per read, an io_uring
// row's per batch, and a batch of one read is both.
func TestLatencyKinds(t *testing.T) {
	for _, c := range []struct {
		mode            string
		size            int
		read, wantBatch bool
	}{
		{"serial-pread", 1, true, false}, {"parallel-pread", 64, true, false},
		{"fio-qd64", 64, true, false}, {"fio-qd64-batch", 64, true, false},
		{"uring-b1", 1, true, true}, {"uring-b64", 64, false, true}, {"uring-4x16", 16, false, true},
		{"uring-inline-b64", 64, false, true}, {"sqpoll-b64", 64, false, true},
	} {
		r, b := latencyColumns(c.mode, c.size, bench.Trial{P50us: 10, P99us: 20})
		if (r != nil) != c.read || (b != nil) != c.wantBatch || (r != nil && r.P99us != 20) || (b != nil && b.P50us != 10) {
			t.Errorf("%s: per read %+v, per batch %+v; want %v, %v", c.mode, r, b, c.read, c.wantBatch)
		}
	}
}

// TestRunTiny runs pread, io_uring batches of 1 and 64, and fio where it is
// installed, for a moment each, and checks that the report gives per-read
// and per-batch latency in their own columns with sane values.
func TestRunTiny(t *testing.T) {
	modes := "serial-pread,parallel-pread"
	uring := false
	if ok, _ := ioengine.ProbeKernel().Usable(); ok {
		modes += ",uring-b1,uring-b64"
		uring = true
	}
	_, ferr := exec.LookPath("fio")
	if ferr == nil {
		modes += ",fio-qd64-batch"
	}
	var out, progress bytes.Buffer
	jsonPath := filepath.Join(t.TempDir(), "read.json")
	err := Run(Options{Dir: t.TempDir(), Size: 16 << 20, Duration: 200 * time.Millisecond, Trials: 1, Fio: true,
		JSON: jsonPath, Out: &out, Progress: &progress, Modes: bench.Selection(modes)})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("\n%s", out.String())
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.ValidateReport(data); err != nil {
		t.Error(err)
	}
	var rep struct {
		Results []Result `json:"results"`
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	sane := func(l *Latency) bool { return l.P50us > 0 && l.P50us <= l.P99us && l.P99us <= l.MaxUs }
	by := map[string]Result{}
	for _, r := range rep.Results {
		by[r.Mode] = r
		wantRead, wantBatch := latencyKinds(r.Mode, r.Batch)
		if (r.PerRead != nil) != wantRead || (r.PerBatch != nil) != wantBatch {
			t.Errorf("%s: per read %+v, per batch %+v", r.Mode, r.PerRead, r.PerBatch)
			continue
		}
		if (r.PerRead != nil && !sane(r.PerRead)) || (r.PerBatch != nil && !sane(r.PerBatch)) {
			t.Errorf("%s: implausible latency: per read %+v, per batch %+v", r.Mode, r.PerRead, r.PerBatch)
		}
	}
	if len(by) != strings.Count(modes, ",")+1 {
		t.Fatalf("rows %v for modes %s", rep.Results, modes)
	}
	if uring {
		// A batch of one read: its read's latency is its batch's.
		if r := by["uring-b1"]; *r.PerRead != *r.PerBatch {
			t.Errorf("io_uring batch 1: per read %+v, per batch %+v", r.PerRead, r.PerBatch)
		}
	}
	for _, h := range []string{"p50 µs/read", "p99 µs/batch"} {
		if !strings.Contains(out.String(), h) {
			t.Errorf("the table has no %q column", h)
		}
	}
	if ferr == nil && by["fio-qd64-batch"].IOPS <= 0 {
		t.Errorf("fio row %+v", by["fio-qd64-batch"])
	}
}
