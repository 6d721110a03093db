package walbench

import (
	"encoding/binary"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/ioengine"
	"github.com/ringstore/ringstore/kv"
	"github.com/ringstore/ringstore/wal"
)

func TestMeasureCountsOnlyTheMeasuredPart(t *testing.T) {
	var calls atomic.Uint64
	seen := make([]atomic.Uint64, 4)
	c := ChildConfig{Writers: 4, EntrySize: 64, Duration: 50 * time.Millisecond, WarmupFrac: 0.2}
	tr, err := Measure(c, func(w int, p []byte) error {
		if len(p) != 64 {
			return errors.New("wrong payload size")
		}
		seen[w].Add(1)
		time.Sleep(100 * time.Microsecond)
		calls.Add(1)
		return nil
	}, PerCall(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Ops <= 0 || tr.Seconds < 0.05 || tr.P50us < 100 || tr.P99us < tr.P50us {
		t.Errorf("implausible trial %+v", tr)
	}
	if e := tr.Extra[ExtraEntries]; e < float64(tr.Ops) || e > float64(tr.Ops)+float64(c.Writers) {
		t.Errorf("counted %v entries for %d ops", e, tr.Ops)
	}
	var total uint64
	for w := range seen {
		if seen[w].Load() == 0 {
			t.Errorf("writer %d never ran", w)
		}
		total += seen[w].Load()
	}
	if total <= uint64(tr.Ops) {
		t.Errorf("the warm-up was counted: %d calls in all, %d measured", total, tr.Ops)
	}
	if MarkInferred(tr).Extra[ExtraFlushesInferred] != 1 {
		t.Error("MarkInferred did not mark")
	}
}

func TestMeasureStopsAtTheFirstError(t *testing.T) {
	boom := errors.New("boom")
	_, err := Measure(ChildConfig{Writers: 8, EntrySize: 16, Duration: time.Minute}, func(int, []byte) error { return boom }, nil)
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if _, err := Measure(ChildConfig{Writers: 0, EntrySize: 16, Duration: time.Second}, nil, nil); err == nil {
		t.Error("zero writers accepted")
	}
}

func TestFindPeersSource(t *testing.T) {
	src, err := FindPeersSource()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs(filepath.Join("..", "peers"))
	if src != want {
		t.Errorf("found %s, want %s", src, want)
	}
	t.Chdir(t.TempDir())
	// From elsewhere it falls back to the tree this package was built from.
	if src2, err := FindPeersSource(); err != nil || filepath.Clean(src2) != want {
		t.Errorf("from a temporary directory: %s, %v", src2, err)
	}
}

// TestMeasureFlushLatency: the flush p50/p99 of a trial come from the
// difference of the log's histograms at the start and the end of the
// measured part (not the warm-up's), and a log without one reports none.
func TestMeasureFlushLatency(t *testing.T) {
	var calls atomic.Uint64
	appendOne := func(int, []byte) error { calls.Add(1); time.Sleep(50 * time.Microsecond); return nil }
	c := ChildConfig{Writers: 2, EntrySize: 16, Duration: 50 * time.Millisecond, WarmupFrac: 0.2}
	// Reads 1 and 2 start and stop the warm-up, 3 and 4 the measured part.
	// Everything before read 4 sits in bucket 10; read 4 adds 90 flushes
	// in bucket 40 and 10 in bucket 60.
	reads := 0
	counters := func() Counts {
		reads++
		var h wal.LatencyHistogram
		h.Counts[10] = 1000
		if reads >= 4 {
			h.Counts[40], h.Counts[60] = 90, 10
		}
		n := calls.Load()
		return Counts{Entries: n, Flushes: n, FlushLatency: h}
	}
	tr, err := Measure(c, appendOne, counters)
	if err != nil {
		t.Fatal(err)
	}
	if reads != 4 {
		t.Fatalf("counters read %d times, want 4", reads)
	}
	var b40, b60 wal.LatencyHistogram
	b40.Counts[40], b60.Counts[60] = 1, 1
	p50, p99 := float64(b40.Quantile(0.5))/1e3, float64(b60.Quantile(0.5))/1e3
	if tr.Extra[ExtraFlushP50us] != p50 || tr.Extra[ExtraFlushP99us] != p99 {
		t.Errorf("flush p50 %v, p99 %v µs; want %v and %v", tr.Extra[ExtraFlushP50us], tr.Extra[ExtraFlushP99us], p50, p99)
	}
	tr, err = Measure(c, appendOne, PerCall(&calls))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := tr.Extra[ExtraFlushP50us]; ok {
		t.Errorf("a log without a flush histogram reported flush p50 %v", tr.Extra[ExtraFlushP50us])
	}
}

// results makes one mode and one result of one trial per rate (appends/s);
// a rate of 0 is a mode that did not run.
func results(ms []mode, rates []float64) []bench.ModeResult {
	out := make([]bench.ModeResult, len(ms))
	for i, m := range ms {
		out[i].Mode = m.Mode
		if rates[i] > 0 {
			out[i].Trials = []bench.Trial{{Ops: int64(rates[i]), Seconds: 1}}
		}
	}
	return out
}

func TestBestPeerIncludesBatchModes(t *testing.T) {
	var ms []mode
	for _, p := range Peers {
		for _, w := range []int{1, 64} {
			ms = append(ms, mode{Mode: bench.Mode{Name: PeerModeName(p, w, false)}, system: p.System, writers: w, peer: true})
		}
		ms = append(ms, mode{Mode: bench.Mode{Name: PeerModeName(p, PeerBatchWriters, true)}, system: p.System, writers: PeerBatchWriters, peer: true, batch: PeerBatchWriters})
	}
	ms = append(ms, mode{Mode: bench.Mode{Name: mode64}, system: "ringstore", writers: 64, backend: "uring"})
	// raft-wal w1, w64, batch; tidwall w1, w64, batch; etcd w1, w64, batch; ringstore.
	cases := []struct {
		name            string
		rates           []float64
		anyBest, w1Best string
		barValue        float64
	}{
		{"a batch mode is best", []float64{900, 800, 20000, 700, 600, 30000, 1000, 1100, 5000, 90000}, "tidwall-wal-batch-w64", "etcd-wal-w1", 3},
		{"a one-entry mode is best", []float64{900, 800, 500, 700, 600, 0, 1000, 1200, 0, 12000}, "etcd-wal-w64", "etcd-wal-w1", 10},
		{"a lone writer is best", []float64{2000, 800, 0, 700, 600, 0, 1000, 1100, 0, 4000}, "raft-wal-w1", "raft-wal-w1", 2},
		{"no peer ran", []float64{0, 0, 0, 0, 0, 0, 0, 0, 0, 4000}, "", "", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rs := results(ms, c.rates)
			if got := bestPeer(rs, ms, 0); got != c.anyBest {
				t.Errorf("best peer of all: %q, want %q", got, c.anyBest)
			}
			if got := bestPeer(rs, ms, 1); got != c.w1Best {
				t.Errorf("best peer with 1 writer: %q, want %q", got, c.w1Best)
			}
			var bar *bench.Bar
			for _, b := range walBars(rs, ms) {
				if strings.Contains(b.Name, "best peer") {
					bar = &b
				}
			}
			if bar == nil {
				t.Fatal("no best-peer bar")
			}
			if bar.Valid != (c.barValue > 0) || c.barValue > 0 && math.Abs(bar.Value-c.barValue) > 1e-9 {
				t.Errorf("best-peer bar %+v, want value %v", *bar, c.barValue)
			}
		})
	}
}

func TestBackendVerdicts(t *testing.T) {
	ms := []mode{
		{Mode: bench.Mode{Name: "ringstore-uring-w1"}, system: "ringstore", writers: 1, backend: "uring"},
		{Mode: bench.Mode{Name: mode64}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: "ringstore-syscall-w1"}, system: "ringstore", writers: 1, backend: "syscall"},
		{Mode: bench.Mode{Name: "ringstore-syscall-w64"}, system: "ringstore", writers: 64, backend: "syscall"},
		{Mode: bench.Mode{Name: "ringstore-syscall-w16"}, system: "ringstore", writers: 16, backend: "syscall"}, // no io_uring row to compare
		{Mode: bench.Mode{Name: mode64Recycled}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: mode64SyscallRecycled}, system: "ringstore", writers: 64, backend: "syscall"},
	}
	vs := backendVerdicts(results(ms, []float64{6000, 150000, 5000, 160000, 90000, 300000, 200000}), ms)
	if len(vs) != 3 {
		t.Fatalf("got %+v, want verdicts at 1 and 64 writers and 64 recycled", vs)
	}
	if v := vs[2]; v.URingMode != mode64Recycled || v.SyscallMode != mode64SyscallRecycled || !v.URingWins || !strings.Contains(v.Sentence(), "64 writers, segments recycled: io_uring wins, 1.50×") {
		t.Errorf("recycled: %+v, %q", v, v.Sentence())
	}
	if v := vs[0]; v.Writers != 1 || !v.URingWins || math.Abs(v.Ratio-1.2) > 1e-9 || !strings.Contains(v.Sentence(), "1 writer: io_uring wins, 1.20×") || !strings.Contains(v.Sentence(), "one trial each") {
		t.Errorf("1 writer: %+v, %q", v, v.Sentence())
	}
	if v := vs[1]; v.Writers != 64 || v.URingWins || !v.SyscallWins || v.SyscallMode != "ringstore-syscall-w64" || !strings.Contains(v.Sentence(), "64 writers: io_uring does not win: the syscall backend makes 1.07×") {
		t.Errorf("64 writers: %+v, %q", v, v.Sentence())
	}
	// Overlapping trials: neither wins, whatever the medians say.
	rs := results(ms, []float64{6000, 150000, 5000, 160000, 90000, 300000, 200000})
	rs[1].Trials = []bench.Trial{{Ops: 150000, Seconds: 1}, {Ops: 170000, Seconds: 1}, {Ops: 140000, Seconds: 1}}
	rs[3].Trials = []bench.Trial{{Ops: 145000, Seconds: 1}, {Ops: 160000, Seconds: 1}, {Ops: 148000, Seconds: 1}}
	if v := backendVerdicts(rs, ms)[1]; v.URingWins || v.SyscallWins || v.Trials != 3 || !strings.Contains(v.Sentence(), "no difference beyond the trials' spread: io_uring makes 1.01×") {
		t.Errorf("overlapping trials: %+v, %q", v, v.Sentence())
	}
	if vs := backendVerdicts(results(ms, []float64{0, 150000, 5000, 0, 0, 300000, 0}), ms); len(vs) != 0 {
		t.Errorf("verdicts for modes that did not run: %+v", vs)
	}
}

// TestBarsOfTheBackendAndKV: io_uring against the syscall backend and kv's
// 64 writers against the log's are bars of the run, each computed from the
// two modes' medians and not tested when one of them did not run.
func TestBarsOfTheBackendAndKV(t *testing.T) {
	ms := []mode{
		{Mode: bench.Mode{Name: mode64}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: mode64Syscall}, system: "ringstore", writers: 64, backend: "syscall"},
		{Mode: bench.Mode{Name: modeKV64}, system: "kv", writers: 64, backend: "uring"},
	}
	bars := walBars(results(ms, []float64{220000, 200000, 88000}), ms)
	if b := barNamed(t, bars, "io_uring 64 writers vs the syscall backend"); !b.Valid || b.Met || math.Abs(b.Value-1.1) > 1e-9 {
		t.Errorf("backend bar %+v, want 1.1 (220000 ÷ 200000), not met", b)
	}
	if b := barNamed(t, bars, "kv Put 64 writers vs the log's"); !b.Valid || b.Met || math.Abs(b.Value-0.4) > 1e-9 {
		t.Errorf("kv bar %+v, want 0.4 (88000 ÷ 220000), not met", b)
	}
	bars = walBars(results(ms, []float64{230000, 0, 92000}), ms)
	if b := barNamed(t, bars, "io_uring 64 writers vs the syscall backend"); b.Valid {
		t.Errorf("backend bar %+v tested without a syscall run", b)
	}
}

// TestURingDevicePart: the io_uring-vs-syscall bar carries the device's part
// of it: io_uring's group flush against pwrite + fdatasync's, one group at
// a time or two half groups in flight on one ring, whichever is better,
// each the median of the rounds' ratios; it says when that is under the
// bar, and how close each log came to its own flush's pace. Without a
// device mode it needs it says nothing.
func TestURingDevicePart(t *testing.T) {
	ms := []mode{
		{Mode: bench.Mode{Name: mode64}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: mode64Syscall}, system: "ringstore", writers: 64, backend: "syscall"},
		{Mode: bench.Mode{Name: modeDeviceAdvanceURing}, system: "device", writers: 1},
		{Mode: bench.Mode{Name: modeDeviceAdvance}, system: "device", writers: 1},
	}
	// The ring's flush 4,800 groups/s against 5,000: 0.96×.
	rs := results(ms, []float64{250000, 300000, 4800, 5000})
	rs[0].Trials[0].Extra = map[string]float64{ExtraEntries: 640, ExtraFlushes: 10}
	rs[1].Trials[0].Extra = map[string]float64{ExtraEntries: 640, ExtraFlushes: 10}
	rs[2].Trials[0].P50us, rs[3].Trials[0].P50us = 200, 190
	got := uringDevicePart(rs)
	for _, want := range []string{"the device's part 0.96×", "0.96× the groups/s of pwrite + fdatasync (medians of trials: 0.96×, p50 200 against 190 µs)", "under the bar",
		"io_uring 78%", "syscall 89%"} { // 250,000 of 64 per 200 µs; 300,000 of 64 per 190 µs
		if !strings.Contains(got, want) {
			t.Errorf("device part %q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "two half groups") {
		t.Errorf("device part %q names a mode that did not run", got)
	}
	// Two half groups in flight: 12,000 writes/s of 32 entries, 1.20× the
	// entries of 5,000 groups of 64; the bar is below it.
	ms2 := append(ms, mode{Mode: bench.Mode{Name: modeDeviceAdvanceURing2}, system: "device", writers: 2})
	rs2 := results(ms2, []float64{250000, 300000, 4800, 5000, 12000})
	rs2[0].Trials[0].Extra = rs[0].Trials[0].Extra
	if got := uringDevicePart(rs2); !strings.Contains(got, "the device's part 1.20×") || !strings.Contains(got, "two half groups in flight on one ring 1.20×") || strings.Contains(got, "under the bar") {
		t.Errorf("device part with two in flight %q", got)
	}
	if got := uringDevicePart(rs[:3]); got != "" {
		t.Errorf("a device part without the syscall device mode: %q", got)
	}
	// Three rounds in which the device drifts: pwrite + fdatasync 3,100,
	// 4,200 and 3,000 groups/s, the ring 4,150, 4,150 and 2,850. Medians
	// of trials: 4,150 against 3,100, 1.34×; round by round 1.34, 0.99 and
	// 0.95×, whose median is the device's part.
	rs3 := results(ms, []float64{250000, 300000, 1, 1})
	rs3[2].Trials = []bench.Trial{{Ops: 4150, Seconds: 1}, {Ops: 4150, Seconds: 1}, {Ops: 2850, Seconds: 1}}
	rs3[3].Trials = []bench.Trial{{Ops: 3100, Seconds: 1}, {Ops: 4200, Seconds: 1}, {Ops: 3000, Seconds: 1}}
	if got := uringDevicePart(rs3); !strings.Contains(got, "the device's part 0.99×") || !strings.Contains(got, "medians of trials: 1.34×") || !strings.Contains(got, "under the bar") {
		t.Errorf("device part over drifting rounds %q", got)
	}
}

// TestKVCeiling: the bar of kv Put against the log carries the ceiling that
// the log with an LSM beside it sets (its rate against the log alone's),
// says how near kv Put came to it, and says when the bar is above it;
// without the LSM mode it says nothing.
func TestKVCeiling(t *testing.T) {
	ms := []mode{
		{Mode: bench.Mode{Name: mode64}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: mode64LSM}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: modeKV64}, system: "kv", writers: 64, backend: "uring"},
	}
	rs := results(ms, []float64{300000, 150000, 135000})
	got := kvCeiling(rs)
	if !strings.Contains(got, "ceiling 0.50×") || !strings.Contains(got, "150000 appends/s") || !strings.Contains(got, "0.90× that") || !strings.Contains(got, "the bar is above it") {
		t.Errorf("ceiling %q", got)
	}
	rs = results(ms, []float64{300000, 270000, 250000}) // 0.90×: the bar below it
	if got := kvCeiling(rs); !strings.Contains(got, "ceiling 0.90×") || strings.Contains(got, "above") {
		t.Errorf("ceiling %q", got)
	}
	if got := kvCeiling(rs[:1]); got != "" {
		t.Errorf("a ceiling without the LSM mode: %q", got)
	}
	if got := barNamed(t, walBars(results(ms, []float64{300000, 150000, 135000}), ms), "kv Put 64 writers vs the log's"); !strings.Contains(got.Why, "ceiling 0.50×") {
		t.Errorf("the bar's reason %q does not carry the ceiling", got.Why)
	}
}

// TestP99Floors: each log mode's p99 bar is read against the device writing
// a group into the same kind of space at advancing offsets (fallocated
// space for the log's new segments, written space for recycled ones), the
// lower p99 of the device's two ways, with the in-place write beside it;
// without those modes the bars are not tested.
func TestP99Floors(t *testing.T) {
	ms := []mode{
		{Mode: bench.Mode{Name: mode64}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: mode64Steady}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: mode64Recycled}, system: "ringstore", writers: 64, backend: "uring"},
		{Mode: bench.Mode{Name: modeDeviceGroup}, system: "device", writers: 1},
		{Mode: bench.Mode{Name: modeDeviceGroupURing}, system: "device", writers: 1},
		{Mode: bench.Mode{Name: modeDeviceAdvance}, system: "device", writers: 1},
		{Mode: bench.Mode{Name: modeDeviceAdvanceURing}, system: "device", writers: 1},
		{Mode: bench.Mode{Name: modeDeviceWritten}, system: "device", writers: 1},
		{Mode: bench.Mode{Name: modeDeviceWrittenURing}, system: "device", writers: 1},
	}
	rs := results(ms, []float64{300000, 280000, 380000, 10000, 10000, 5000, 5000, 8000, 8000})
	for i, p := range []float64{320, 380, 330, 140, 150, 240, 230, 160, 170} {
		rs[i].Trials[0].P99us = p
	}
	bars := walBars(rs, ms)
	for _, c := range []struct {
		prefix, why string
		want        float64
		met         bool
	}{
		{"io_uring 64 writers' append p99", "advancing through fallocated space, an RWF_DSYNC write on io_uring; against the in-place write's 140 µs 2.29×", 320.0 / 230, true},
		{"the same, the log truncated as it goes (steady state)", "380 against 230 µs", 380.0 / 230, true},
		{"the same, the log truncated as it goes, segments recycled", "advancing through written space, pwrite + fdatasync; against the in-place write's 140 µs 2.36×", 330.0 / 160, false},
	} {
		b := barNamed(t, bars, c.prefix)
		if !b.Valid || b.Met != c.met || math.Abs(b.Value-c.want) > 1e-9 || !strings.Contains(b.Why, c.why) {
			t.Errorf("%s: %+v, want %.3f (met %v) and a why with %q", c.prefix, b, c.want, c.met, c.why)
		}
	}
	for _, b := range walBars(results(ms[:3], []float64{300000, 280000, 380000}), ms[:3]) {
		if (strings.Contains(b.Name, "p99") || strings.HasPrefix(b.Name, "the same")) && b.Valid {
			t.Errorf("%s tested without the device modes: %+v", b.Name, b)
		}
	}
}

// barNamed returns the bar whose name starts with prefix, failing t if
// there is none.
func barNamed(t *testing.T, bars []bench.Bar, prefix string) bench.Bar {
	t.Helper()
	for _, b := range bars {
		if strings.HasPrefix(b.Name, prefix) {
			return b
		}
	}
	t.Fatalf("no bar %q in %+v", prefix, bars)
	return bench.Bar{}
}

// TestLSMBeside: the store beside the log puts one value of the entry's
// size for every entry counted, under kvWrite's layout of 64 writers'
// keys, and closes cleanly.
func TestLSMBeside(t *testing.T) {
	b, err := openLSMBeside(t.TempDir(), ioengine.Auto, 100)
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	for range n {
		b.appended()
	}
	key := func(i uint64) []byte {
		var k [16]byte
		binary.BigEndian.PutUint64(k[:8], i%64)
		binary.BigEndian.PutUint64(k[8:], i/64)
		return k[:]
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, err := b.db.Get(key(n - 1))
		if err == nil {
			if len(v) != 100 {
				t.Fatalf("value of %d bytes, want 100", len(v))
			}
			break
		}
		if !errors.Is(err, kv.ErrNotFound) || time.Now().After(deadline) {
			t.Fatalf("the last entry's key: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	for i := range uint64(n) {
		if _, err := b.db.Get(key(i)); err != nil {
			t.Fatalf("key of entry %d: %v", i, err)
		}
	}
	if _, err := b.db.Get(key(n)); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("a key past the entries counted: %v", err)
	}
	if err := b.close(); err != nil {
		t.Fatal(err)
	}
}

// TestDeviceGroupInFlight: the advancing device modes keep their writes in
// flight at once, each at its own offset, through files they make afresh
// (fallocated space) or wrap around in (written space) as they reach their
// end, on both ways of writing; in place the mode refuses more than one
// writer (they would overwrite each other's blocks).
func TestDeviceGroupInFlight(t *testing.T) {
	defer func(n int64) { deviceAdvanceBytes = n }(deviceAdvanceBytes)
	deviceAdvanceBytes = 256 << 10 // 16 writes of 16 KiB per file
	ios := []string{""}
	if kp := ioengine.ProbeKernel(); kp.Available && kp.SelfTestError == nil {
		ios = append(ios, "uring")
	}
	for _, io := range ios {
		for _, written := range []bool{false, true} {
			c := ChildConfig{Dir: t.TempDir(), Mode: "device-group", IOMode: io, Writers: 2, WriteSize: 16 << 10, Advance: true, Written: written, Duration: 200 * time.Millisecond, WarmupFrac: 0.1}
			tr, err := deviceGroup(c, c.Dir)
			if err != nil {
				t.Fatalf("io %q, written %v: %v", io, written, err)
			}
			// More writes than a file holds: the file was made afresh, or
			// (written space) wrapped around.
			if tr.Ops <= 16 || tr.P50us <= 0 {
				t.Errorf("io %q, written %v: %d writes, p50 %.0f µs", io, written, tr.Ops, tr.P50us)
			}
			t.Logf("io %q, written %v: %d writes of 16 KiB, two in flight", io, written, tr.Ops)
		}
	}
	c := ChildConfig{Dir: t.TempDir(), Mode: "device-group", Writers: 2, WriteSize: 16 << 10, Duration: 50 * time.Millisecond}
	if _, err := deviceGroup(c, c.Dir); err == nil || !strings.Contains(err.Error(), "2 writes in flight need advancing writes") {
		t.Errorf("two writers in place: %v", err)
	}
}
