package kvbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/bench"
)

// TestMain lets the test binary serve as the benchmark's child process.
func TestMain(m *testing.M) {
	bench.MaybeChild()
	os.Exit(m.Run())
}

// TestRunTiny runs the whole benchmark, ringstore's modes and the device,
// on a small data set, and checks the report.
func TestRunTiny(t *testing.T) {
	dir := t.TempDir()
	var out, progress bytes.Buffer
	jsonPath := filepath.Join(t.TempDir(), "kv.json")
	err := Run(Options{Dir: dir, Keys: 20_000, CacheSize: 1 << 20, Batch: 16, Callers: 2, Trials: 2, Duration: 150 * time.Millisecond,
		MemLimit: 256 << 20, JSON: jsonPath, Out: &out, Progress: &progress,
		dropSystem: func() error {
			t.Error("the default run wrote /proc/sys/vm/drop_caches")
			return errors.New("not in tests")
		}})
	if err != nil {
		t.Fatalf("%v\n%s", err, progress.String())
	}
	t.Logf("\n%s", out.String())
	var rep struct {
		Results []Result `json:"results"`
		Bars    []Bar    `json:"bars"`
		Device  *Device  `json:"device"`
		Limits  *Limits  `json:"limits"`
		Cold    Cold     `json:"cold"`
		Loads   []Load   `json:"loads"`
	}
	data, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.ValidateReport(data); err != nil {
		t.Error(err)
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	byMode := map[string]Result{}
	for _, r := range rep.Results {
		byMode[r.Mode] = r
		if r.KeysPerS <= 0 || r.P99us < r.P50us || len(r.TrialKeysPerS) != 2 {
			t.Errorf("implausible row %+v", r)
		}
	}
	if _, ok := byMode[nameMultiGetSyscall]; !ok {
		t.Fatalf("no syscall MultiGet row in %v", rep.Results)
	}
	if r, ok := byMode[nameMultiGetURing]; ok {
		if r.BlockReadsPerS <= 0 {
			t.Errorf("MultiGet on io_uring read no blocks: %+v", r)
		}
		if rep.Device == nil || rep.Device.IOPS <= 0 {
			t.Fatalf("no device figure beside io_uring modes")
		}
		// The floor at the MultiGet's depth (2 callers × 16), in keys/s.
		dr := byMode[nameDevice]
		if d := rep.Device; d.MaxInFlight != 32 || r.MaxInFlight != 32 || dr.MaxInFlight != 32 || d.KeysPerS != d.IOPS/r.BlocksPerKey || dr.KeysPerS != d.KeysPerS || dr.BlockReadsPerS != d.IOPS {
			t.Errorf("device %+v, its row %+v, MultiGet's %+v: want the floor at 32 in flight, in keys/s", d, dr, r)
		}
	}
	if len(rep.Bars) != 4 {
		t.Fatalf("%d bars, want 4", len(rep.Bars))
	}
	if _, ok := byMode[nameMultiGetURing]; ok {
		// The hot mode: every block cached, so no block read in the measured
		// part, and the limits derived from this run's rows.
		hot, ok := byMode[nameMultiGetHot]
		if !ok || hot.CacheHitRate < 0.99 || hot.BlockReadsPerS != 0 {
			t.Errorf("hot mode %+v: want every lookup served by the cache", hot)
		}
		l := rep.Limits
		if l == nil || l.CPUBoundKeysPerS != hot.KeysPerS || l.DeviceBoundKeysPerS <= 0 ||
			math.Abs(l.DeviceBoundKeysPerS-rep.Device.IOPS/byMode[nameMultiGetURing].BlocksPerKey) > 1e-6*l.DeviceBoundKeysPerS {
			t.Errorf("limits %+v do not follow from the rows", l)
		} else if b := rep.Bars[3]; b.Value != l.ColdVsLimit || !b.Valid {
			t.Errorf("limit bar %+v, limits %+v", b, l)
		}
	}
	for _, b := range rep.Bars {
		if b.Valid && b.Met != (b.Value >= b.Limit) {
			t.Errorf("bar %q: met=%v for %.2f against %.2f", b.Name, b.Met, b.Value, b.Limit)
		}
	}
	if rep.Bars[1].Valid {
		t.Errorf("the Pebble bar is valid without Pebble: %+v", rep.Bars[1])
	}
	if rep.Cold.CacheDropNote != "" || !strings.Contains(rep.Cold.CacheDrop, "fadvise") || !strings.Contains(rep.Cold.CacheDrop, "left alone") {
		t.Errorf("the default cache drop is not reported as the files' own: %+v", rep.Cold)
	}
	if len(rep.Loads) != 1 || rep.Loads[0].Keys != 20_000 || rep.Loads[0].DiskBytes <= 0 {
		t.Errorf("load not reported: %+v", rep.Loads)
	}
	if !strings.Contains(out.String(), "bars:") || !strings.Contains(out.String(), "(bar ≥ 0.80)") {
		t.Error("no bar section in the text report")
	}
}

// TestCacheDrop: by default the machine's page cache is never dropped
// (the writer of /proc/sys/vm/drop_caches is not called) and the report
// says only the benchmark's files are; with DropCaches it is, before the
// run and then every trial, and a failure is noted.
func TestCacheDrop(t *testing.T) {
	calls := 0
	o := Options{dropSystem: func() error { calls++; return nil }}
	var cold Cold
	if o.setUpCacheDrop(&cold) || calls != 0 || !strings.Contains(cold.CacheDrop, "fadvise") || strings.Contains(cold.CacheDrop, "drop_caches (") {
		t.Errorf("default: system drop, %d calls, %+v", calls, cold)
	}
	o.DropCaches = true
	cold = Cold{}
	if !o.setUpCacheDrop(&cold) || calls != 1 || !strings.Contains(cold.CacheDrop, "/proc/sys/vm/drop_caches") || cold.CacheDropNote != "" {
		t.Errorf("DropCaches: %d calls, %+v", calls, cold)
	}
	o.dropSystem = func() error { return errors.New("permission denied") }
	cold = Cold{}
	if o.setUpCacheDrop(&cold) || !strings.Contains(cold.CacheDropNote, "permission denied") || !strings.Contains(cold.CacheDrop, "fadvise") {
		t.Errorf("DropCaches without root: %+v", cold)
	}
}
