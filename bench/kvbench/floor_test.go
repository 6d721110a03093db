package kvbench

import (
	"math"
	"strings"
	"testing"

	"github.com/ringstore/ringstore/bench"
)

// TestMaxInFlight: the depth each mode keeps in flight, and the device's
// depth equal to MultiGet on io_uring's for every batch and caller count,
// the engine's limit included.
func TestMaxInFlight(t *testing.T) {
	for _, c := range []struct {
		system, access, backend string
		batch, callers, want    int
	}{
		{SystemRingstore, ModeMultiGet, "uring", 64, 4, 256},
		{SystemRingstore, ModeMultiGet, "uring", 16, 2, 32},
		{SystemRingstore, ModeMultiGet, "uring", 256, 4, engineMaxInFlight},
		{SystemRingstore, ModeMultiGet, "syscall", 64, 4, 1},
		{SystemRingstore, ModeGetParallel, "uring", 64, 4, 256},
		{SystemRingstore, ModeMultiGetHot, "uring", 64, 4, 0},
		{SystemDevice, ModeDevice, "uring", 64, 4, 256},
		{SystemPebble, ModeGetSerial, "", 64, 4, 4},
		{SystemPebble, ModeGetParallel, "", 64, 4, 256},
	} {
		if got := maxInFlight(c.system, c.access, c.backend, c.batch, c.callers); got != c.want {
			t.Errorf("%s %s %s, batch %d × %d callers: %d in flight, want %d", c.system, c.access, c.backend, c.batch, c.callers, got, c.want)
		}
	}
	for _, batch := range []int{1, 7, 64, 100, 511, 4096} {
		for _, callers := range []int{1, 3, 4, 64} {
			mg := maxInFlight(SystemRingstore, ModeMultiGet, "uring", batch, callers)
			if dev := maxInFlight(SystemDevice, ModeDevice, "uring", batch, callers); dev != mg {
				t.Errorf("batch %d × %d callers: the device at %d in flight, MultiGet at %d", batch, callers, dev, mg)
			}
		}
	}
	if s := deviceMeasurement(64, 4); !strings.Contains(s, "at most 256 in flight") || !strings.Contains(s, "4 callers, each submitting 64") {
		t.Errorf("measurement %q does not give the depth", s)
	}
}

// floorRun is a run's modes and results: MultiGet on io_uring reading 0.8
// blocks per key at 1000 keys/s, the device at 80000 IOPS measured at
// devDepth, and the hot mode at 500000 keys/s.
func floorRun(devDepth int) ([]*mode, []bench.ModeResult) {
	mk := func(name, system, access string, depth int) *mode {
		return &mode{Mode: bench.Mode{Name: name, Batch: 64}, system: system, access: access, backend: "uring", depth: depth}
	}
	modes := []*mode{
		mk(nameMultiGetURing, SystemRingstore, ModeMultiGet, 256),
		mk(nameDevice, SystemDevice, ModeDevice, devDepth),
		mk(nameMultiGetHot, SystemRingstore, ModeMultiGetHot, 0),
	}
	tr := func(ops int64, extra map[string]float64) []bench.Trial {
		return []bench.Trial{{Ops: ops, Seconds: 1, CPUSeconds: 0.5, Extra: extra}}
	}
	results := []bench.ModeResult{
		{Mode: modes[0].Mode, Trials: tr(1000, map[string]float64{XBlockReads: 800})},
		{Mode: modes[1].Mode, Trials: tr(80000, nil)},
		{Mode: modes[2].Mode, Trials: tr(500000, map[string]float64{XCacheHits: 100})},
	}
	return modes, results
}

// TestDeviceFloorInKeys: the device's row and floor are in keys/s (its
// IOPS ÷ the MultiGet's blocks per key), its IOPS and depth recorded beside
// them, and the bars read against it.
func TestDeviceFloorInKeys(t *testing.T) {
	o, err := Options{Dir: "x"}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	modes, results := floorRun(256)
	rep := buildReport(o, modes, results, 1, nil, Cold{Achieved: true}, nil)
	d := rep.Device
	if d == nil || d.IOPS != 80000 || d.MaxInFlight != 256 || d.Callers != o.Callers || d.Batch != 64 || d.BlocksPerKey != 0.8 || d.KeysPerS != 100000 {
		t.Fatalf("device %+v: want 80000 IOPS at 256 in flight, 100000 keys/s at 0.8 blocks/key", d)
	}
	rows := rep.Results.([]Result)
	dr := rows[1]
	if dr.KeysPerS != 100000 || dr.KeysPerSBest != 100000 || dr.TrialKeysPerS[0] != 100000 || dr.BlockReadsPerS != 80000 || dr.MaxInFlight != 256 {
		t.Errorf("device row %+v: want 100000 keys/s, 80000 block reads/s, 256 in flight", dr)
	}
	if math.Abs(dr.CPUusPerKey-0.5/80000*1e6*0.8) > 1e-9 {
		t.Errorf("device CPU per key %v, want per read × 0.8", dr.CPUusPerKey)
	}
	if l := rep.Limits; l == nil || l.DeviceBoundKeysPerS != d.KeysPerS {
		t.Errorf("limits %+v: device-bound not the device's keys/s", l)
	}
	bars := rep.Bars
	if b := bars[2]; !b.Valid || b.Value != 0.01 || !strings.Contains(b.Why, "256 reads in flight") {
		t.Errorf("device bar %+v: want 800 ÷ 80000, at 256 in flight", b)
	}
	if b := bars[3]; !b.Valid || b.Value != 0.01 {
		t.Errorf("limit bar %+v: want 1000 ÷ 100000", b)
	}

	// A floor measured at another depth than the MultiGet's tests no bar.
	modes, results = floorRun(64)
	rep = buildReport(o, modes, results, 1, nil, Cold{Achieved: true}, nil)
	for _, b := range rep.Bars[2:] {
		if b.Valid || b.Met || !strings.Contains(b.Why, "NOT the MultiGet's depth") {
			t.Errorf("bar %+v against a floor at another depth", b)
		}
	}

	// Without the MultiGet the device's keys/s are unknown: 0, not IOPS.
	modes, results = floorRun(256)
	rep = buildReport(o, modes[1:], results[1:], 1, nil, Cold{Achieved: true}, nil)
	if d := rep.Device; d == nil || d.IOPS != 80000 || d.KeysPerS != 0 {
		t.Errorf("device without MultiGet %+v", d)
	}
	if r := rep.Results.([]Result)[0]; r.KeysPerS != 0 || r.BlockReadsPerS != 80000 {
		t.Errorf("device row without MultiGet %+v: IOPS on the keys/s axis", r)
	}
}
