package scanbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"github.com/ringstore/ringstore/bufpool"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ringstore/ringstore/arrowscan/events"
	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/internal/testdir"
)

// TestMain lets the test binary serve as the benchmark's child process.
func TestMain(m *testing.M) {
	bench.MaybeChild()
	os.Exit(m.Run())
}

// writeFile writes size bytes of a pattern to a new file in dir, flushed so
// that its pages are clean (droppable).
func writeFile(t *testing.T, dir string, size int) string {
	t.Helper()
	p := filepath.Join(dir, "data.bin")
	b := make([]byte, size)
	for i := range b {
		b[i] = byte(i * 7)
	}
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// tinyOptions is a whole run on a data set of a few MiB: seconds.
func tinyOptions(t *testing.T, dir string) (Options, *bytes.Buffer, string) {
	t.Helper()
	var out bytes.Buffer
	js := filepath.Join(t.TempDir(), "scan.json")
	return Options{
		Dir: dir, DataBytes: 6 << 20, MemLimit: 160 << 20, PoolBytes: 16 << 20, FrameSize: 64 << 10,
		Trials: 2, Queries: 4, Rounds: 1, DeviceTime: 100 * time.Millisecond,
		JSON: js, Out: &out, Progress: testWriter{t},
	}, &out, js
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// jsonReport is the part of the JSON report the tests read.
type jsonReport struct {
	Benchmark   string         `json:"benchmark"`
	Config      map[string]any `json:"config"`
	MemoryLimit MemoryLimit    `json:"memory_limit"`
	CacheDrop   string         `json:"cache_drop"`
	Results     []map[string]any
	Device      map[string]any `json:"device"`
	DeviceFio   map[string]any `json:"device_fio"`
	Bars        []Bar          `json:"bars"`
	Floors      *Floors        `json:"floors"`
	Ratios      []LatencyRatio `json:"latency_ratios"`
	Notes       []string       `json:"notes"`
}

func readReport(t *testing.T, path string) jsonReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r jsonReport
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if err := bench.ValidateReport(data); err != nil {
		t.Error(err)
	}
	return r
}

// checkReport checks the fields the issue asks for.
func checkReport(t *testing.T, r jsonReport, trials int) {
	t.Helper()
	if r.Benchmark != "scan" {
		t.Errorf("benchmark %q", r.Benchmark)
	}
	modes := map[string]bool{}
	for _, row := range r.Results {
		m, _ := row["mode"].(string)
		modes[m] = true
		for _, k := range []string{"mean_ms", "p95_ms", "gbps", "major_faults", "minor_faults", "max_rss_bytes", "device_bytes", "trial_mean_ms", "query_mean_ms"} {
			if _, ok := row[k]; !ok {
				t.Errorf("mode %s: no %q in %v", m, k, row)
			}
		}
		mean, _ := row["mean_ms"].(float64)
		p95, _ := row["p95_ms"].(float64)
		gb, _ := row["gbps"].(float64)
		if m == modeMemory {
			// Every frame resident: the measured part reads nothing.
			rb, _ := row["device_bytes"].(float64)
			extra, _ := row["extra"].(map[string]any)
			if need, _ := extra[xNeedBytes].(float64); !(mean > 0 && p95 >= mean*0.5) || rb != 0 || need <= 0 {
				t.Errorf("mode %s: mean %v p95 %v, %v bytes read in the measured part, %v needed", m, mean, p95, rb, need)
			}
		} else if !(mean > 0 && p95 >= mean*0.5 && gb > 0) {
			t.Errorf("mode %s: implausible mean %v p95 %v GB/s %v", m, mean, p95, gb)
		}
		if tm, _ := row["trial_mean_ms"].([]any); len(tm) != trials {
			t.Errorf("mode %s: %d trials, want %d", m, len(tm), trials)
		}
		qm, _ := row["query_mean_ms"].(map[string]any)
		if len(qm) == 0 {
			t.Errorf("mode %s: no per-query latencies", m)
		}
		tq, _ := row["trial_query_mean_ms"].(map[string]any)
		for q := range qm {
			if v, _ := tq[q].([]any); len(v) != trials {
				t.Errorf("mode %s, query %s: %d per-trial latencies, want %d", m, q, len(v), trials)
			}
		}
	}
	if modes["pool"] && bufpool.WindowsSupported {
		inPlace := false
		for _, n := range r.Notes {
			inPlace = inPlace || strings.Contains(n, "decoded in place through the pool's windows") && strings.Contains(n, "none failed")
		}
		if !inPlace {
			t.Errorf("no note that the pool decoded batches in place: %q", r.Notes)
		}
	}
	for _, m := range []string{"mmap", "pread", "direct", "pool", modeMemory} {
		if !modes[m] {
			t.Errorf("no result for mode %s: %v", m, modes)
		}
	}
	if g, _ := r.Device["gbps"].(float64); g <= 0 {
		t.Errorf("no device bandwidth: %v", r.Device)
	}
	// O_DIRECT: what the reads returned is what read_bytes counted.
	if b, rb := r.Device["bytes"].(float64), r.Device["read_bytes"].(float64); !within(int64(rb), int64(b), 0.05) {
		t.Errorf("device: %v bytes read, read_bytes %v", b, rb)
	}
	if _, err := exec.LookPath("fio"); err == nil {
		if g, _ := r.DeviceFio["gbps"].(float64); g <= 0 || r.Config["fio"] != true {
			t.Errorf("fio is installed but measured nothing: %v", r.DeviceFio)
		}
	} else if r.DeviceFio != nil {
		t.Errorf("fio measured without fio: %v", r.DeviceFio)
	}
	if len(r.Bars) != 6 {
		t.Errorf("bars: %+v", r.Bars)
	} else if cpu := r.Bars[5]; !strings.HasPrefix(cpu.Name, "pool CPU per trial") || cpu.Value <= 0 || cpu.Limit != barCPU || !cpu.AtMost {
		t.Errorf("the CPU bar: %+v", cpu)
	}
	if fl := r.Floors; fl == nil || fl.MemoryMeanMS <= 0 || fl.DeviceMS <= 0 || fl.FloorMS != max(fl.MemoryMeanMS, fl.DeviceMS) ||
		math.Abs(fl.PoolVsFloor-fl.PoolMeanMS/fl.FloorMS) > 1e-9 || len(r.Bars) == 6 && r.Bars[3].Value != fl.PoolVsFloor {
		t.Errorf("floors %+v do not follow from the run (bars %+v)", fl, r.Bars)
	}
	// The pool's CPU floor: the memory mode's CPU plus the device mode's CPU
	// per byte for the bytes the pool read.
	if fl := r.Floors; fl != nil {
		devCPU, _ := r.Device["cpu_seconds"].(float64)
		devBytes, _ := r.Device["bytes"].(float64)
		if devCPU <= 0 || fl.ReadCPUSeconds <= 0 || fl.PoolCPUSeconds <= 0 ||
			math.Abs(fl.ReadCPUSeconds-devCPU/devBytes*poolDeviceBytes(r)) > 1e-9*fl.ReadCPUSeconds ||
			math.Abs(fl.PoolCPUFloorRatio*(fl.PoolCPUFloor-fl.ReadCPUSeconds)-fl.PoolCPUFloor) > 1e-9*fl.PoolCPUFloor {
			t.Errorf("CPU floor %+v does not follow from the run (device %v)", fl, r.Device)
		}
	}
	found := false
	for _, lr := range r.Ratios {
		if lr.A == "pool" && lr.B == "mmap" && lr.Metric == "mean_ms" {
			found = lr.Median > 0 && lr.Min <= lr.Max
		}
	}
	if !found {
		t.Errorf("no pool vs mmap mean ratio: %+v", r.Ratios)
	}
	if !strings.Contains(r.CacheDrop, "fadvise") {
		t.Errorf("cache drop method %q", r.CacheDrop)
	}
}

// leftovers returns what a run left in dir besides the data set.
func leftovers(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestRunTinyUnderACgroup(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole benchmark")
	}
	dir := testdir.Direct(t)
	o, out, js := tinyOptions(t, dir)
	cg, cgErr := bench.DetectMemCgroups()
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	r := readReport(t, js)
	checkReport(t, r, o.Trials)
	md := out.String()
	t.Log(md)
	if cgErr != nil {
		t.Logf("no memory cgroup here (%v): checking the fallback", cgErr)
		if r.MemoryLimit.Applied || !strings.Contains(r.MemoryLimit.Reason, "cgroup") || !strings.Contains(md, "NO LIMIT") {
			t.Errorf("memory limit %+v", r.MemoryLimit)
		}
	} else {
		if !r.MemoryLimit.Applied || r.MemoryLimit.LimitBytes != o.MemLimit || r.MemoryLimit.Parent != cg.Parent {
			t.Errorf("memory limit %+v, want applied under %s", r.MemoryLimit, cg.Parent)
		}
		for _, row := range r.Results {
			if row["mode"] == modeMemory {
				if _, ok := row["cgroup_peak_bytes"]; ok {
					t.Errorf("the memory mode ran in a cgroup: %v", row)
				}
				continue
			}
			if p, _ := row["cgroup_peak_bytes"].(float64); p <= 0 || p > float64(o.MemLimit+int64(os.Getpagesize())) {
				t.Errorf("mode %v: cgroup peak %v", row["mode"], p)
			}
		}
		// Every cgroup was removed.
		ents, _ := os.ReadDir(cg.Parent)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), bench.CgroupPrefix+strconv.Itoa(os.Getpid())+"-") {
				t.Errorf("cgroup %s left behind", e.Name())
			}
		}
	}
	for _, want := range []string{"## bench scan", "| mode", "pool (O_DIRECT + bufpool)", "device: sequential O_DIRECT reads", "bars:", "note: ", "query (mean ms)"} {
		if !strings.Contains(md, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if l := leftovers(t, dir); len(l) != 0 {
		t.Errorf("the run left %v in %s", l, dir)
	}
}

func TestRunTinyWithoutACgroupKeepsItsData(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole benchmark")
	}
	dir := testdir.Direct(t)
	o, out, js := tinyOptions(t, dir)
	o.Trials, o.Keep = 1, true
	o.detectCgroups = func() (*bench.MemCgroups, error) {
		return nil, errors.New("bench: no memory cgroup can be made: forced by the test")
	}
	if err := Run(o); err != nil {
		t.Fatal(err)
	}
	r := readReport(t, js)
	checkReport(t, r, 1)
	if r.MemoryLimit.Applied || !strings.Contains(r.MemoryLimit.Reason, "forced by the test") {
		t.Errorf("memory limit %+v", r.MemoryLimit)
	}
	if !strings.Contains(out.String(), "memory:  NO LIMIT — bench: no memory cgroup can be made: forced by the test") {
		t.Errorf("the report does not say there was no limit:\n%s", out)
	}
	for _, b := range r.Bars {
		if b.Valid || !strings.Contains(b.Why, "no memory limit") {
			t.Errorf("bar %+v counted without a memory limit", b)
		}
	}
	for _, row := range r.Results {
		if _, ok := row["cgroup_peak_bytes"]; ok {
			t.Errorf("mode %v has a cgroup peak without a cgroup", row["mode"])
		}
	}
	if r.Config["data_reused"] != false {
		t.Errorf("first run reused data: %v", r.Config)
	}
	kept := leftovers(t, dir)
	if len(kept) != 1 || !strings.HasPrefix(kept[0], "ringstore-scan-data-") {
		t.Fatalf("with Keep the run left %v, want the data set alone", kept)
	}

	// The next run finds the data set.
	var progress bytes.Buffer
	d, err := prepareData(dir, o.DataBytes, "none", &progress)
	if err != nil {
		t.Fatal(err)
	}
	if !d.Reused || !strings.Contains(progress.String(), "reusing the data set") || len(d.Paths()) != len(d.Files) {
		t.Errorf("second preparation: reused %v, %q", d.Reused, progress.String())
	}
	if l := leftovers(t, dir); len(l) != 1 || l[0] != kept[0] {
		t.Errorf("a reused data set was not left alone: %v", l)
	}

	// A damaged data set is not reused: it is generated again.
	data := filepath.Join(dir, kept[0])
	m, err := readManifest(filepath.Join(data, manifestName))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(data, m.Files[0]), m.Sizes[0]-1); err != nil {
		t.Fatal(err)
	}
	progress.Reset()
	d, err = prepareData(dir, o.DataBytes, "none", &progress)
	if err != nil {
		t.Fatal(err)
	}
	if d.Reused || !strings.Contains(progress.String(), "not reused") || d.check() != nil {
		t.Errorf("damaged data set: reused %v, %q, check %v", d.Reused, progress.String(), d.check())
	}
}

func TestOptionsAreChecked(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		o    Options
		want string
	}{
		{"no dir", Options{}, "no directory"},
		{"tiny data", Options{Dir: dir, DataBytes: 1000}, "too small"},
		{"pool over the limit", Options{Dir: dir, MemLimit: 64 << 20, PoolBytes: 64 << 20}, "does not fit in the memory limit"},
		{"unaligned frames", Options{Dir: dir, FrameSize: 5000}, "not a multiple of 4096"},
		{"few frames", Options{Dir: dir, PoolBytes: 1 << 20, FrameSize: 256 << 10}, "fewer than 8 frames"},
		{"negative trials", Options{Dir: dir, Trials: -1}, "must be at least 1"},
		{"bad compression", Options{Dir: dir, Compression: "brotli"}, `unknown compression "brotli"`},
		{"negative device time", Options{Dir: dir, DeviceTime: -time.Second}, "negative"},
	} {
		_, err := c.o.withDefaults()
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "bench scan: ") {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	o, err := Options{Dir: dir, NoMemLimit: true, PoolBytes: 1 << 30}.withDefaults()
	if err != nil {
		t.Fatalf("a pool larger than the default limit without a limit: %v", err)
	}
	if o.DataBytes != DefaultDataBytes || o.Trials != DefaultTrials || o.Queries != DefaultQueries || o.Compression != "none" {
		t.Errorf("defaults not filled in: %s", o.String())
	}
	if err := Run(Options{Dir: filepath.Join(dir, "missing")}); err == nil || !os.IsNotExist(errors.Unwrap(err)) && !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing dir: %v", err)
	}
}

func TestChildFailsLoudlyOnADifferentResult(t *testing.T) {
	dir := testdir.Direct(t)
	var progress bytes.Buffer
	d, err := prepareData(dir, 2<<20, "none", &progress)
	if err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(t.TempDir(), "reference.json")
	cfg := childConfig{Mode: "pread", Files: d.Paths(), Queries: []string{"bytes_total", "bytes_total", "country_window"}, Rounds: 2, IOMode: "syscall", RefPath: ref}
	raw, _ := json.Marshal(cfg)
	tr, err := child(raw)
	if err != nil {
		t.Fatal(err)
	}
	if tr.Ops != 6 || tr.Extra[xMeanMS] <= 0 || tr.Extra[xRowsScanned] != float64(6*d.Rows) {
		t.Errorf("trial %+v, want 6 queries over %d rows each", tr, d.Rows)
	}
	rs, err := loadReference(ref)
	if err != nil || len(rs) != 2 {
		t.Fatalf("reference %v, %v", rs, err)
	}
	// Another mode agrees with it.
	cfg.Mode, cfg.IOMode = "direct", "syscall" // io_uring may be compiled out

	raw, _ = json.Marshal(cfg)
	if _, err := child(raw); err != nil {
		t.Fatalf("direct mode against pread's reference: %v", err)
	}
	// A reference that differs in one cell fails the trial, naming it.
	r := rs["bytes_total"]
	if r.mode != "pread" {
		t.Errorf("reference written by %q, want pread", r.mode)
	}
	r.Rows[0][1] = r.Rows[0][1].(int64) + 1
	data, err := encodeResults(rs)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ref, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Mode, cfg.IOMode = "pread", "syscall"
	raw, _ = json.Marshal(cfg)
	_, err = child(raw)
	if !errors.Is(err, events.ErrMismatch) || !strings.Contains(err.Error(), "bytes_total") || !strings.Contains(err.Error(), "differs from the reference (mode pread's)") {
		t.Errorf("tampered reference: %v", err)
	}
	for _, bad := range []string{`{`, `{"mode":"nope","files":["x"],"queries":["bytes_total"],"rounds":1,"io_mode":"syscall"}`, `{"mode":"pread","io_mode":"syscall"}`, `{"mode":"pread","io_mode":"fast"}`} {
		if _, err := child(json.RawMessage(bad)); err == nil {
			t.Errorf("child accepted %s", bad)
		}
	}
}

func TestResultsRoundTrip(t *testing.T) {
	rs := map[string]refResult{
		"q": {"mmap", &events.Result{Query: "q", Columns: []string{"k", "n", "x"}, RowsScanned: 42, Rows: [][]any{
			{"DE", int64(-7), 0.1 + 0.2}, {"", int64(math.MaxInt64), math.Copysign(0, -1)}, {"é", int64(0), math.NaN()}, {"x", int64(1), math.Inf(-1)},
		}}},
		"empty": {"pool", &events.Result{Query: "empty", Columns: []string{"a"}}},
	}
	data, err := encodeResults(rs)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeResults(data)
	if err != nil {
		t.Fatal(err)
	}
	for n, r := range rs {
		if err := r.Equal(back[n].Result); err != nil || back[n].mode != r.mode {
			t.Errorf("%s: %v, mode %q", n, err, back[n].mode)
		}
	}
	if z := back["q"].Rows[1][2].(float64); !math.Signbit(z) {
		t.Error("-0 lost its sign")
	}
	if _, err := encodeResults(map[string]refResult{"b": {"mmap", &events.Result{Query: "b", Rows: [][]any{{true}}}}}); err == nil {
		t.Error("a bool cell was encoded")
	}
	for _, bad := range []string{`[]`, `{"a":{"query":"b"}}`, `{"a":{"query":"a","rows":[[{}]]}}`, `{"a":{"query":"a","rows":[[{"i":1,"s":"x"}]]}}`, `{"a":{"query":"a","rows":[[{"f":"12"}]]}}`, `{"a":{"query":"a","rows":[[{"f":"0x1g"}]]}}`} {
		if _, err := decodeResults([]byte(bad)); err == nil || !strings.HasPrefix(err.Error(), "reference results: ") {
			t.Errorf("decodeResults(%s): %v", bad, err)
		}
	}
}

func FuzzDecodeResults(f *testing.F) {
	f.Add([]byte(`{"q":{"query":"q","columns":["a"],"rows_scanned":3,"rows":[[{"i":1}],[{"f":"0x3ff0000000000000"}],[{"s":"x"}]]}}`))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"a":{"query":"a","rows":[[{"f":"0x"}]]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := decodeResults(data)
		if err != nil {
			return
		}
		// What decodes encodes again to an equal result.
		again, err := encodeResults(rs)
		if err != nil {
			t.Fatalf("decoded %v but cannot encode it: %v", rs, err)
		}
		back, err := decodeResults(again)
		if err != nil {
			t.Fatal(err)
		}
		for n, r := range rs {
			if err := r.Equal(back[n].Result); err != nil || r.mode != back[n].mode {
				t.Fatalf("%s: %v", n, err)
			}
		}
	})
}

// within reports whether got is within frac of want.
func within(got, want int64, frac float64) bool {
	return math.Abs(float64(got-want)) <= frac*float64(want)
}

func TestStatistics(t *testing.T) {
	vs := []float64{5, 1, 4, 2, 3, 10, 6, 7, 9, 8}
	for _, c := range []struct{ p, want float64 }{{50, 5}, {95, 10}, {90, 9}, {10, 1}, {100, 10}} {
		if got := percentile(vs, c.p); got != c.want {
			t.Errorf("p%v = %v, want %v", c.p, got, c.want)
		}
	}
	if percentile(nil, 50) != 0 {
		t.Error("percentile of nothing")
	}
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median %v", m)
	}
	st := latencyStats([]float64{1, 2, 3, 10})
	if st.mean != 4 || st.max != 10 || st.p50 != 2 || st.p95 != 10 {
		t.Errorf("stats %+v", st)
	}
	if got := queryMix(9); len(got) != 9 || got[len(events.Queries())%9] != events.Queries()[0].Name {
		t.Errorf("mix %v", got)
	}
}

func TestAHungChildIsEndedWithItsStacks(t *testing.T) {
	dir := testdir.Direct(t)
	d, err := prepareData(dir, 2<<20, "none", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	cfg := childConfig{Mode: "pread", Files: d.Paths(), Queries: []string{"event_summary"}, Rounds: 1 << 20, IOMode: "syscall",
		RefPath: filepath.Join(t.TempDir(), "ref.json"), TimeoutSeconds: 0.2}
	t0 := time.Now()
	_, err = bench.ChildExec(Workload, cfg)()
	if err == nil || !strings.Contains(err.Error(), "mode pread: timed out after 200ms") || !strings.Contains(err.Error(), "goroutine ") {
		t.Fatalf("got %v", err)
	}
	if el := time.Since(t0); el > 30*time.Second {
		t.Errorf("the child ran %s", el)
	}
}

// poolDeviceBytes returns the pool row's device bytes per trial.
func poolDeviceBytes(r jsonReport) float64 {
	for _, row := range r.Results {
		if row["mode"] == "pool" {
			b, _ := row["device_bytes"].(float64)
			return b
		}
	}
	return 0
}
