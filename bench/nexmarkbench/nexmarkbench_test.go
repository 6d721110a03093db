package nexmarkbench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/internal/testdir"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/nexmark"
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
	err := Run(Options{Queries: []string{"q1", "q11", "q4"}, Events: 30_000, Trials: 1, Regime: "default", Dir: dir, Out: out, Progress: progress, JSON: js})
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
		if !q.ChecksumEqual || len(q.OnEPS) != referenceRepeat || len(q.OffEPS) != referenceRepeat || q.RatioBest != q.OnBest/q.OffBest || q.Tested != (q.Why == "") {
			t.Errorf("%s: %+v", q.Query, q)
		}
		if q.Stateful != (q.Query != "q1") || q.Stateful && q.StateBytes <= 0 {
			t.Errorf("%s: stateful %v, state %.0f bytes", q.Query, q.Stateful, q.StateBytes)
		}
		if q.AllOnFaster || q.AllOnSlower {
			t.Errorf("%s: every-trial verdicts from %d trials", q.Query, referenceRepeat)
		}
	}
	if len(rep.Bars) != 4 || rep.Bars[2].Valid {
		t.Errorf("bars %+v: want 4, the every-trial one not tested with one round", rep.Bars)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("%d trials, too few to say", referenceRepeat)) || !strings.Contains(out.String(), "bars:") {
		t.Errorf("text report:\n%s", out)
	}
}

// TestRunLargeTiny: the large-state regime on a tiny scale: a stateless
// and a stateful query in their modes, the device at its depths; the report
// has every mode's rate, the working set, the device floor and the limit,
// its seven bars, and says "not tested" for runs too small to mean
// anything.
func TestRunLargeTiny(t *testing.T) {
	if ok, why := ioengine.ProbeKernel().Usable(); !ok {
		t.Skip("io_uring is not usable here (" + why + "): the large regime does not run")
	}
	dir := testdir.Direct(t)
	out, progress := &bytes.Buffer{}, &bytes.Buffer{}
	js := filepath.Join(t.TempDir(), "nexmark.json")
	// Memtables of 64 KiB (the least kv takes): the tiny run's state then
	// lies in tables, so ON reads blocks and the device floor is measured.
	// Mini-batches of 100 events give each worker dozens of them. A
	// stateful query whose all-cached run of 20,000 events (the sizing
	// run) takes less than 0.3 s runs more events.
	err := Run(Options{Queries: []string{"q1", "q9"}, Regime: "large", LargeEvents: 20_000, LargeMinSeconds: 0.3, InFlightAuctions: 5_000, ActivePeople: 5_000, Trials: 1, LargeMemtable: 64 << 10, LargeBatch: 100,
		DeviceTime: 200 * time.Millisecond, DeviceFileSize: 16 << 20, Dir: dir, Out: out, Progress: progress, JSON: js})
	if err != nil {
		t.Fatalf("Run: %v\n%s\n%s", err, progress, out)
	}
	data, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	if err := bench.ValidateReport(data); err != nil {
		t.Error(err)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	lr := rep.Large
	if lr == nil || len(lr.Queries) != 2 || len(lr.DeviceIOPS) != len(deviceBatches) || len(lr.Bars) != 7 || len(rep.Bars) != 7 {
		t.Fatalf("large report %+v, bars %d", lr, len(rep.Bars))
	}
	for _, q := range lr.Queries {
		modes := 2
		if q.Stateful {
			modes = len(largeModes)
		}
		if len(q.EPS) != modes || !q.ChecksumEqual {
			t.Errorf("%s: %d modes with rates, want %d; outputs equal %v", q.Query, len(q.EPS), modes, q.ChecksumEqual)
		}
		if q.Stateful && (q.WorkingSet <= 0 || q.DeviceFloor <= 0 || q.Limit <= 0 || q.OnVsLimit <= 0 || q.BestPool == "" || q.Depth <= 0 || q.DepthNominal < 1) {
			t.Errorf("%s: %+v", q.Query, q)
		}
		if !q.Tested && q.Why == "" {
			t.Errorf("%s: not tested, without a reason", q.Query)
		}
		want := int64(20_000)
		if !q.Stateful {
			want *= statelessEventsFactor
		}
		var took float64
		var raised int64
		if i := strings.Index(progress.String(), "large state, "+q.Query+": its all-cached run took"); i >= 0 {
			if _, err := fmt.Sscanf(progress.String()[i:], "large state, "+q.Query+": its all-cached run took %g s, so %d events", &took, &raised); err != nil {
				t.Fatalf("%s: %v in %q", q.Query, err, progress.String()[i:])
			}
			// The progress line rounds the sizing run's time to 0.01 s;
			// largeEvents falls as the time grows, so the events lie
			// between its values at the rounding's two ends.
			fewest, most := largeEvents(20_000, took+0.005, 0.3), largeEvents(20_000, max(took-0.005, 0.001), 0.3)
			if want = raised; raised < fewest || raised > most {
				t.Errorf("%s: its sizing run took %.2f s and it ran %d events, want %d to %d", q.Query, took, raised, fewest, most)
			}
		}
		if q.Events != want {
			t.Errorf("%s: %d events a trial, want %d", q.Query, q.Events, want)
		}
	}
	if !strings.Contains(out.String(), "### large state") || !strings.Contains(out.String(), "device (random 4 KiB") {
		t.Errorf("text report:\n%s", out)
	}
	if !strings.Contains(progress.String(), "working set") {
		t.Errorf("the caches were not sized:\n%s", progress)
	}
	if !strings.Contains(progress.String(), "large state, q9: ON made") {
		t.Errorf("the reads beside q9's all-cached mode were not sized:\n%s", progress)
	}
	for _, q := range lr.Queries {
		if q.Stateful && q.ReadsCeiling <= 0 {
			t.Errorf("%s: no reads ceiling: %+v", q.Query, q)
		}
	}
	// Without the mode of the reads beside, and with fixed caches and
	// events, nothing is sized before the trials.
	progress.Reset()
	err = Run(Options{Queries: []string{"q9"}, Regime: "large", LargeEvents: 5_000, LargeMinSeconds: -1, LargeCache: 64 << 10, InFlightAuctions: 5_000, ActivePeople: 5_000, Trials: 1,
		LargeMemtable: 64 << 10, LargeBatch: 100, Modes: bench.Selection("large-q9-on,large-q9-cached"), Dir: dir, Out: io.Discard, Progress: progress})
	if err != nil {
		t.Fatalf("Run of two modes: %v\n%s", err, progress)
	}
	if p := progress.String(); strings.Contains(p, "large state, q9:") {
		t.Errorf("a run with fixed caches and events, without the reads beside, sized q9:\n%s", p)
	}
}

// TestTested: a run too short, or a stateful one with too little state, is
// not tested, and says why; others are.
func TestTested(t *testing.T) {
	for _, c := range []struct {
		seconds, state float64
		want           bool
		why            string
	}{
		{0.1, 0, false, "its run took 0.10 s"},
		{1, 100 << 10, false, "its state is 100 KiB"},
		{1, 0, true, ""},
		{1, 2 << 20, true, ""},
	} {
		ok, why := tested(c.seconds, c.state)
		if ok != c.want || !strings.Contains(why, c.why) || ok != (why == "") {
			t.Errorf("%.2f s, %.0f bytes of state: tested %v (%q), want %v (%q)", c.seconds, c.state, ok, why, c.want, c.why)
		}
	}
}

// TestLargeEvents: a stateful query whose fastest run is too short for
// its checkpoints runs more events, in steps of 100,000, up to the bound.
func TestLargeEvents(t *testing.T) {
	for _, c := range []struct {
		base       int64
		seconds    float64
		minSeconds float64
		want       int64
	}{
		{500_000, 0.5, 2, 2_000_000},
		{500_000, 0.72, 2, 1_400_000},  // 1,388,889 rounded up
		{500_000, 1.28, 2, 800_000},    // 781,250 rounded up
		{500_000, 2.5, 2, 500_000},     // long enough
		{500_000, 0.1, 2, 4_000_000},   // at most 8×
		{500_000, 0.5, -1, 500_000},    // not asked
		{200_000, 0.23, 1, 900_000},    // 869,565 rounded up
		{20_000, 0.001, 0.01, 160_000}, // at most 8×
		{500_000, 0, 2, 500_000},       // no time measured
		{150_000, 1.9, 2, 200_000},     // 157,895 rounded up
	} {
		if got := largeEvents(c.base, c.seconds, c.minSeconds); got != c.want {
			t.Errorf("largeEvents(%d, %.3f s, at least %.2f s) = %d, want %d", c.base, c.seconds, c.minSeconds, got, c.want)
		}
	}
}

// TestFloorReads: the device floor is taken for the fewer block reads per
// event of ON and OFF, so reads ON wastes (blocks read ahead and evicted
// before their Load) never lower the floor ON is judged against.
func TestFloorReads(t *testing.T) {
	for _, c := range []struct{ on, off, want float64 }{
		{0.36, 0.30, 0.30}, // ON read ahead blocks its cache evicted
		{0.29, 0.30, 0.29},
		{0.2, 0, 0.2}, // OFF did not run
		{0, 0.3, 0.3},
		{0, 0, 0},
	} {
		if got := floorReads(c.on, c.off); got != c.want {
			t.Errorf("floorReads(%v, %v) = %v, want %v", c.on, c.off, got, c.want)
		}
	}
}

// TestLargeSlowerCountsTestedQueries: in the large regime, as in the
// reference's, a query slower in every trial counts against the bar only
// when its runs are long enough to be tested.
func TestLargeSlowerCountsTestedQueries(t *testing.T) {
	trials := func(ops int64, seconds ...float64) []bench.Trial {
		var ts []bench.Trial
		for _, s := range seconds {
			ts = append(ts, bench.Trial{Ops: ops, Seconds: s, Extra: map[string]float64{xRows: 1}})
		}
		return ts
	}
	for _, c := range []struct {
		offSeconds float64
		want       float64
	}{
		{0.1, 0}, // not tested: under minSeconds
		{1.0, 1}, // tested, and ON slower in every trial
	} {
		results := []bench.ModeResult{
			{Mode: bench.Mode{Name: largePrefix + "q1-" + modeOn}, Trials: trials(1000, 1.2*c.offSeconds, 1.3*c.offSeconds, 1.25*c.offSeconds)},
			{Mode: bench.Mode{Name: largePrefix + "q1-" + modeOff}, Trials: trials(1000, c.offSeconds, 1.01*c.offSeconds, 1.02*c.offSeconds)},
		}
		lr, err := summarizeLarge(Options{LargeQueries: []string{"q1"}, Trials: 3, Parallelism: 4}, results)
		if err != nil {
			t.Fatal(err)
		}
		if !lr.Queries[0].AllOnSlower {
			t.Fatalf("OFF %.1f s: ON not slower in every trial: %+v", c.offSeconds, lr.Queries[0])
		}
		for _, b := range lr.Bars {
			if strings.Contains(b.Name, "every ON trial is slower") && b.Value != c.want {
				t.Errorf("OFF %.1f s: %s = %v, want %v", c.offSeconds, b.Name, b.Value, c.want)
			}
		}
	}
}

// cpuMode is a mode of one trial of ops in seconds with cpu seconds of
// CPU and extra (its rows set, so that its output checks).
func cpuMode(name string, ops int64, seconds, cpu float64, extra map[string]float64) bench.ModeResult {
	extra[xRows] = 1
	return bench.ModeResult{Mode: bench.Mode{Name: name}, Trials: []bench.Trial{{Ops: ops, Seconds: seconds, CPUSeconds: cpu, Extra: extra}}}
}

// q9Modes are q9's ON, OFF and all-cached modes in the large regime: ON
// at 222,222 events/s reading 0.33 blocks an event, the all-cached mode
// at 333,333 (the limit) reading 0.03.
func q9Modes() []bench.ModeResult {
	return []bench.ModeResult{
		cpuMode(largePrefix+"q9-"+modeOn, 1e6, 4.5, 6.5, map[string]float64{xBlockReads: 0.33e6, xMultiGets: 1e4, xReading: 4}),
		cpuMode(largePrefix+"q9-"+modeOff, 1e6, 10, 9, map[string]float64{xBlockReads: 0.34e6, xCacheBytes: 1 << 20, xLoadSeconds: 30}),
		cpuMode(largePrefix+"q9-"+modeCached, 1e6, 3, 5.4, map[string]float64{xBlockReads: 0.03e6, xCacheMisses: 1e4}),
	}
}

// TestLargeCPUCeiling: a stateful query's CPU ceiling is the all-cached
// mode's CPUs busy ÷ (its CPU per event + the device's least CPU per read ×
// the block reads the query needs beyond the all-cached mode's), and a
// ceiling under the bar × the limit is reported as making the bar
// unreachable.
func TestLargeCPUCeiling(t *testing.T) {
	results := append(q9Modes(),
		cpuMode(deviceMode(1), 1e5, 1, 0.5, map[string]float64{}), // 5 µs per read
		cpuMode(deviceMode(64), 1e6, 1, 3, map[string]float64{}),  // 3 µs per read: the least
	)
	lr, err := summarizeLarge(Options{LargeQueries: []string{"q9"}, Trials: 1, Parallelism: 4}, results)
	if err != nil {
		t.Fatal(err)
	}
	q := lr.Queries[0]
	if want := 1e6 * 1.8 / (5.4 + (0.33-0.03)*3); math.Abs(q.CPUCeiling-want) > 1 {
		t.Errorf("CPU ceiling %.0f events/s, want %.0f", q.CPUCeiling, want)
	}
	if want := q.CPUCeiling / (1e6 / 3.0); math.Abs(q.CPUCeilingVsLimit-want) > 1e-9 || q.Limit != 1e6/3.0 {
		t.Errorf("ceiling ÷ limit %.3f (limit %.0f), want %.3f of the all-cached rate", q.CPUCeilingVsLimit, q.Limit, want)
	}
	if got := lr.CeilingUnderBar(); len(got) != 1 || !strings.HasPrefix(got[0], "q9 (0.86") {
		t.Errorf("queries whose ceiling is under the bar: %v, want q9 (0.86)", got)
	}
	// ON's own 6.5 µs per event at all-cached's 1.8 CPUs busy.
	if want := 1e6 * 1.8 / 6.5; math.Abs(q.OnCPUBound-want) > 1 || math.Abs(q.OnCPUBoundVsLimit-want/(1e6/3.0)) > 1e-9 {
		t.Errorf("ON's own CPU bound %.0f events/s (%.3f of the limit), want %.0f", q.OnCPUBound, q.OnCPUBoundVsLimit, want)
	}
	if got := lr.OwnCPUUnderBar(); len(got) != 1 || got[0] != "q9 (0.83)" {
		t.Errorf("queries ON's own CPU bounds under the bar: %v, want q9 (0.83)", got)
	}
	if c := lr.DeviceCPUus[256]; math.Abs(c-3) > 1e-9 {
		t.Errorf("device CPU per read at depth 256: %v µs, want 3", c)
	}
}

// TestLargeMachineCPUAndDeviceDepth: where the machine's CPU and the
// device's reads in flight were measured, the CPU ceiling is drawn from the
// machine's CPU (a read's softirq is in no process's time) and the device
// floor is the device's IOPS at the depth it counted during ON's run,
// interpolated between the device modes' counted depths.
func TestLargeMachineCPUAndDeviceDepth(t *testing.T) {
	mode := func(name string, ops int64, seconds, cpu, machine float64, extra map[string]float64) bench.ModeResult {
		extra[xRows] = 1
		return bench.ModeResult{Mode: bench.Mode{Name: name}, Trials: []bench.Trial{{Ops: ops, Seconds: seconds, CPUSeconds: cpu, MachineCPUSeconds: machine, Extra: extra}}}
	}
	dev := func(batch int, iops, depth, cpu, machine float64) bench.ModeResult {
		return mode(deviceMode(batch), int64(iops), 1, cpu*iops/1e6, machine*iops/1e6, map[string]float64{bench.ExtraDeviceReadsInFlight: depth})
	}
	results := []bench.ModeResult{
		// ON: 0.2 block reads per event, 20 reads in flight at the device
		// (it submitted up to 4 workers × 20 per Load × readAheadBatches).
		mode(largePrefix+"q15-"+modeOn, 1e6, 4, 6, 6.4, map[string]float64{xBlockReads: 0.2e6, xMultiGets: 1e4, xReading: 4, bench.ExtraDeviceReadsInFlight: 20}),
		mode(largePrefix+"q15-"+modeOff, 1e6, 10, 9, 9.2, map[string]float64{xBlockReads: 0.22e6, xCacheBytes: 1 << 20, xLoadSeconds: 30}),
		mode(largePrefix+"q15-"+modeCached, 1e6, 2, 3.6, 3.8, map[string]float64{xCacheMisses: 1e4}),
		dev(1, 28000, 3.5, 26, 28),
		dev(4, 58000, 10, 7, 8),
		dev(16, 75000, 40, 4, 5),
		dev(64, 83000, 160, 3, 4), // the least: 3 µs of the process's, 4 of the machine's
	}
	lr, err := summarizeLarge(Options{LargeQueries: []string{"q15"}, Trials: 1, Parallelism: 4}, results)
	if err != nil {
		t.Fatal(err)
	}
	q := lr.Queries[0]
	if nominal := min(256, 0.2e6/1e4*4*float64(readAheadBatches)); q.Depth != 20 || q.DepthNominal != nominal {
		t.Errorf("depth %v (nominal %v), want the device's count 20 (nominal 0.2e6/1e4 × 4 × %d, at most 256: %v)", q.Depth, q.DepthNominal, readAheadBatches, nominal)
	}
	// 20 lies between the counted depths 10 (58,000 IOPS) and 40 (75,000).
	f := (math.Log(20) - math.Log(10)) / (math.Log(40) - math.Log(10))
	if want := 58000 + f*(75000-58000); math.Abs(q.DeviceIOPS-want) > 1e-6 || math.Abs(q.DeviceFloor-want/0.2) > 1e-6 {
		t.Errorf("device IOPS %.0f and floor %.0f, want %.0f and %.0f", q.DeviceIOPS, q.DeviceFloor, want, want/0.2)
	}
	if q.Limit != q.DeviceFloor || math.Abs(q.OnVsLimit-250000/q.DeviceFloor) > 1e-9 {
		t.Errorf("limit %.0f, ON ÷ limit %.3f: want the device floor, and ON's 250,000 events/s against it", q.Limit, q.OnVsLimit)
	}
	// The ceiling: the all-cached mode's machine CPUs busy (3.8 ÷ 2) ÷ (its
	// 3.8 µs of the machine's CPU per event + 0.2 reads × 4 µs).
	if want := 1e6 * 1.9 / (3.8 + 0.2*4); math.Abs(q.CPUCeiling-want) > 1e-6 {
		t.Errorf("CPU ceiling %.0f events/s, want %.0f (on the machine's CPU)", q.CPUCeiling, want)
	}
	if c, m := q.MachineCPUus[modeOn], q.MachineCPUUse[modeOn]; math.Abs(c-6.4) > 1e-9 || math.Abs(m-1.6) > 1e-9 {
		t.Errorf("ON's machine CPU %.2f µs per event, %.2f CPUs busy; want 6.4 and 1.6", c, m)
	}
	if d := lr.DeviceDepth[64*4]; d != 160 {
		t.Errorf("device depth counted at 256 submitted: %v, want 160", d)
	}
}

// TestInterpolateLog: a curve's value between its points is interpolated
// on log(x), in whatever order the points come; outside them it takes the
// nearest end; points at x ≤ 0 (not measured) are left out.
func TestInterpolateLog(t *testing.T) {
	curve := []curvePoint{{64, 80000}, {4, 30000}, {0, 1}, {16, 60000}}
	for _, c := range []struct{ x, want float64 }{
		{1, 30000}, {4, 30000}, {8, 45000}, {16, 60000}, {32, 70000}, {500, 80000},
	} {
		if got := interpolateLog(curve, c.x); math.Abs(got-c.want) > 1e-6 {
			t.Errorf("at %v: %.1f, want %.1f", c.x, got, c.want)
		}
	}
	if got := interpolateLog(nil, 10); got != 0 {
		t.Errorf("no curve: %v, want 0", got)
	}
	if curve[0].x != 64 || curve[2].x != 0 {
		t.Errorf("the caller's points were reordered: %v", curve)
	}
}

// q20Fixture is a q20 run of the large regime: ON (onMachine µs of CPU
// per event, 8 reads per call, 20 reads in flight at a device busy for
// onBusy of its run, writing 40 MB), OFF, all cached and the device's
// modes (busy for 0.8 of theirs).
func q20Fixture(onMachine, onBusy float64) []bench.ModeResult {
	mode := func(name string, ops int64, seconds, cpu, machine float64, extra map[string]float64) bench.ModeResult {
		extra[xRows] = 1
		return bench.ModeResult{Mode: bench.Mode{Name: name}, Trials: []bench.Trial{{Ops: ops, Seconds: seconds, CPUSeconds: cpu, MachineCPUSeconds: machine, Extra: extra}}}
	}
	dev := func(batch int, iops, machine float64) bench.ModeResult {
		return mode(deviceMode(batch), int64(iops), 1, machine*iops/1e6, machine*iops/1e6, map[string]float64{bench.ExtraDeviceReadsInFlight: float64(batch * 3), bench.ExtraDeviceBusy: 0.8})
	}
	return []bench.ModeResult{
		mode(largePrefix+"q20-"+modeOn, 1e6, 4, onMachine, onMachine, map[string]float64{xBlockReads: 0.2e6, xMultiGets: 1e4, xReadCalls: 0.2e6 / 8, xReading: 4,
			bench.ExtraDeviceReadsInFlight: 20, bench.ExtraDeviceBusy: onBusy, bench.ExtraDeviceWrittenBytes: 40e6}),
		mode(largePrefix+"q20-"+modeOff, 1e6, 10, 9, 9, map[string]float64{xBlockReads: 0.2e6, xCacheBytes: 1 << 20, xLoadSeconds: 30}),
		mode(largePrefix+"q20-"+modeCached, 1e6, 2, 3.8, 3.8, map[string]float64{xCacheMisses: 1e4}),
		dev(1, 28000, 20), dev(4, 58000, 8), dev(16, 75000, 5), dev(64, 83000, 3),
	}
}

// TestLargeCeilingAtONsBatch: the CPU ceiling prices each read at the
// device modes' CPU per read for as many reads per call as ON made,
// interpolated between their batches; where ON itself spent less CPU per
// event than that model, ON's figure bounds instead.
func TestLargeCeilingAtONsBatch(t *testing.T) {
	for _, c := range []struct {
		onMachine, want float64
	}{
		{6.4, 1e6 * 1.9 / (3.8 + 0.2*6.5)}, // 8 reads per call: half way from batch 4 (8 µs) to 16 (5 µs) on log(batch)
		{4.0, 1e6 * 1.9 / 4.0},             // ON spent less than the model: its own CPU per event
	} {
		lr, err := summarizeLarge(Options{LargeQueries: []string{"q20"}, Trials: 1, Parallelism: 4}, q20Fixture(c.onMachine, 0.6))
		if err != nil {
			t.Fatal(err)
		}
		q := lr.Queries[0]
		if q.ReadsPerCall != 8 || math.Abs(q.ReadCPUus-6.5) > 1e-9 {
			t.Errorf("%.1f reads per call at %.2f µs each, want 8 at 6.5", q.ReadsPerCall, q.ReadCPUus)
		}
		if math.Abs(q.CPUCeiling-c.want) > 1e-6 {
			t.Errorf("ON at %.1f µs per event: ceiling %.0f, want %.0f", c.onMachine, q.CPUCeiling, c.want)
		}
	}
}

// TestLargeDeviceUse: where a query's limit is its device floor, the
// report sets what the device did under ON (its reads a second, the share
// of the run it was busy, the reads a second of busy time, what it wrote)
// beside the random reads at ON's depth (their busy share interpolated
// between the device modes'). A query limited by its all-cached rate gets
// no such line.
func TestLargeDeviceUse(t *testing.T) {
	lr, err := summarizeLarge(Options{LargeQueries: []string{"q20"}, Trials: 1, Parallelism: 4}, q20Fixture(6.4, 0.6))
	if err != nil {
		t.Fatal(err)
	}
	q := lr.Queries[0]
	if q.Limit != q.DeviceFloor || q.DeviceReadRate != 50000 || q.DeviceBusy != 0.6 || q.WrittenMBps != 10 || q.DeviceBusyAtDepth != 0.8 {
		t.Fatalf("limit %.0f (floor %.0f), %.0f reads/s, busy %.2f, %.1f MB/s written, the random reads busy %.2f; want the floor, 50000, 0.60, 10.0, 0.80",
			q.Limit, q.DeviceFloor, q.DeviceReadRate, q.DeviceBusy, q.WrittenMBps, q.DeviceBusyAtDepth)
	}
	if len(lr.DeviceBusy) != 4 || lr.DeviceBusy[64] != 0.8 {
		t.Errorf("device modes' busy shares %v, want 0.8 at each of 4 depths", lr.DeviceBusy)
	}
	want := fmt.Sprintf("q20: ON 50000 reads/s, the device busy 60%% of the run (83333 per busy second), the store writing 10.0 MB/s beside them; the random reads at its depth %.0f/s, busy 80%% (%.0f per busy second)", q.DeviceIOPS, q.DeviceIOPS/0.8)
	if got := lr.DeviceUse(); len(got) != 1 || got[0] != want {
		t.Errorf("device use %q, want %q", got, want)
	}
	var out strings.Builder
	writeLarge(&out, lr)
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "busy 80% of the run") {
		t.Errorf("the report lacks the device's use:\n%s", out.String())
	}
	lr.Queries[0].Limit = lr.Queries[0].DeviceFloor * 2 // the all-cached rate's, say
	if got := lr.DeviceUse(); len(got) != 0 {
		t.Errorf("a query its all-cached rate limits: device use %q, want none", got)
	}
}

// TestLargeDeviceFloorBestTrial: each device depth's point is its best
// trial, not its median: a trial in which the device stalled (500 reads a
// second) lowers neither the IOPS nor, through them, the floor.
func TestLargeDeviceFloorBestTrial(t *testing.T) {
	trial := func(ops int64, cpu float64, extra map[string]float64) bench.Trial {
		extra[xRows] = 1
		return bench.Trial{Ops: ops, Seconds: 1, CPUSeconds: cpu, Extra: extra}
	}
	one := func(name string, t bench.Trial) bench.ModeResult {
		return bench.ModeResult{Mode: bench.Mode{Name: name}, Trials: []bench.Trial{t}}
	}
	dev := func(batch int, iops ...int64) bench.ModeResult {
		r := bench.ModeResult{Mode: bench.Mode{Name: deviceMode(batch)}}
		for _, n := range iops {
			r.Trials = append(r.Trials, trial(n, float64(n)*4e-6, map[string]float64{}))
		}
		return r
	}
	results := []bench.ModeResult{
		one(largePrefix+"q20-"+modeOn, trial(1e6, 3, map[string]float64{xBlockReads: 0.1e6, xMultiGets: 1e4, xReading: 4})),
		one(largePrefix+"q20-"+modeOff, trial(1e5, 1, map[string]float64{xBlockReads: 0.1e5, xCacheBytes: 1 << 20, xLoadSeconds: 3})),
		one(largePrefix+"q20-"+modeCached, trial(2e6, 2, map[string]float64{xCacheMisses: 1e4})),
		dev(1, 500, 20000, 30000),
		dev(4, 50000, 520, 60000),
		dev(16, 80000, 384, 56000),
		dev(64, 512, 90000, 87000),
	}
	lr, err := summarizeLarge(Options{LargeQueries: []string{"q20"}, Trials: 3, Parallelism: 4}, results)
	if err != nil {
		t.Fatal(err)
	}
	for d, want := range map[int]float64{4: 30000, 16: 60000, 64: 80000, 256: 90000} {
		if got := lr.DeviceIOPS[d]; got != want {
			t.Errorf("device IOPS at depth %d: %.0f, want its best trial's %.0f", d, got, want)
		}
	}
	// ON's nominal depth: 10 reads per Load × 4 workers × the batches read
	// ahead, on the curve of the best trials.
	q := lr.Queries[0]
	if want := interpolateLog([]curvePoint{{4, 30000}, {16, 60000}, {64, 80000}, {256, 90000}}, q.Depth); math.Abs(q.DeviceIOPS-want) > 1e-6 || math.Abs(q.DeviceFloor-want/0.1) > 1e-3 {
		t.Errorf("device IOPS %.0f and floor %.0f at depth %.1f, want %.0f and %.0f", q.DeviceIOPS, q.DeviceFloor, q.Depth, want, want/0.1)
	}
}

// TestLargeReadsCeiling: the all-cached mode with ON's further reads beside
// it gives the measured reads ceiling (its rate ÷ the limit) and ON's ratio
// to it, the reads it made an event, and where the ceiling is under the
// bar × the limit the limit bar says so.
func TestLargeReadsCeiling(t *testing.T) {
	results := append(q9Modes(),
		cpuMode(largePrefix+"q9-"+modeCachedReads, 1e6, 3.6, 6, map[string]float64{xBlockReads: 0.03e6, xBesideReads: 0.3e6, xWorkerEvents: 1e6}))
	lr, err := summarizeLarge(Options{LargeQueries: []string{"q9"}, Trials: 1, Parallelism: 4}, results)
	if err != nil {
		t.Fatal(err)
	}
	q := lr.Queries[0]
	if want := 1e6 / 3.6; math.Abs(q.ReadsCeiling-want) > 1e-6 || math.Abs(q.ReadsCeilingVsLimit-3/3.6) > 1e-9 {
		t.Errorf("reads ceiling %.0f events/s, %.3f of the limit; want %.0f, %.3f", q.ReadsCeiling, q.ReadsCeilingVsLimit, want, 3/3.6)
	}
	if math.Abs(q.OnVsReadsCeiling-3.6/4.5) > 1e-9 || math.Abs(q.BesidePerEvent-0.3) > 1e-9 {
		t.Errorf("ON ÷ reads ceiling %.3f, reads beside an event %.3f; want %.3f, 0.3", q.OnVsReadsCeiling, q.BesidePerEvent, 3.6/4.5)
	}
	if got := lr.ReadsCeilingUnderBar(); len(got) != 1 || got[0] != "q9 (0.83)" {
		t.Errorf("queries whose reads ceiling is under the bar: %v, want q9 (0.83)", got)
	}
	if b := lr.Bars[0]; b.Met || !strings.Contains(b.Why, "q9 (0.83)") {
		t.Errorf("limit bar %+v: want not met, naming q9's reads ceiling", b)
	}
	// Without the mode, no ceiling and nothing said.
	lr, err = summarizeLarge(Options{LargeQueries: []string{"q9"}, Trials: 1, Parallelism: 4}, results[:3])
	if err != nil {
		t.Fatal(err)
	}
	if q := lr.Queries[0]; q.ReadsCeiling != 0 || lr.Bars[0].Why != "" {
		t.Errorf("without the mode: ceiling %v, bar note %q", q.ReadsCeiling, lr.Bars[0].Why)
	}
}

// TestBesideReads: the reads beside the all-cached mode are the read
// requests an event its workers processed that ON made beyond it, of their
// mean size in whole blocks, within nexmark.BesideReads' bounds.
func TestBesideReads(t *testing.T) {
	trial := func(events, requests, bytes float64) bench.Trial {
		return bench.Trial{Extra: map[string]float64{xWorkerEvents: events, xReadRequests: requests, xReadBytes: bytes}}
	}
	for _, c := range []struct {
		on, cached bench.Trial
		perEvent   float64
		size       int
	}{
		// 0.05 more requests an event, 3 blocks each on average.
		{trial(1e6, 0.06e6, 0.06e6*3*4096), trial(1e6, 0.01e6, 0.01e6*3*4096), 0.05, 3 * 4096},
		// Reads a little larger than a block round to one.
		{trial(2e6, 0.2e6, 0.2e6*4500), trial(1e6, 0, 0), 0.1, 4096},
		// Reads larger than the bound are cut to it.
		{trial(1e6, 0.01e6, 0.01e6*(1<<20)), trial(1e6, 0, 0), 0.01, nexmark.MaxBesideSize},
		// ON made no more than all-cached, or no events.
		{trial(1e6, 0.01e6, 0.01e6*4096), trial(1e6, 0.02e6, 0.02e6*4096), 0, 0},
		{trial(0, 0, 0), trial(1e6, 0, 0), 0, 0},
	} {
		perEvent, size := besideReads(c.on, c.cached)
		if math.Abs(perEvent-c.perEvent) > 1e-9 || size != c.size {
			t.Errorf("on %v, cached %v: %v reads of %d bytes an event, want %v of %d", c.on.Extra, c.cached.Extra, perEvent, size, c.perEvent, c.size)
		}
	}
}
