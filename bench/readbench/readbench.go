// Package readbench is `ringstore bench read`: 4 KiB O_DIRECT random reads
// of one file, side by side in one run: serial pread (QD1),
// goroutine-parallel pread, io_uring batches of 1, 8, 64 and 256, batches
// of 64 on an inline engine (the caller submits and waits on its own
// thread, no ring goroutine), SQPOLL, and fio's io_uring engine at iodepth 64 when fio is installed (the
// device's own limit measured by a tool that is not ours).
package readbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ringstore/ringstore/bench"
	"github.com/ringstore/ringstore/directio"
	"github.com/ringstore/ringstore/ioengine"
)

const blockSize = 4096

// Workload is the child workload name.
const Workload = "read"

func init() { bench.RegisterChild(Workload, child) }

// Options configure a run.
type Options struct {
	File     string        // existing file to read; empty: create one in Dir
	Dir      string        // where to create the file
	Size     int64         // size of a created file
	Duration time.Duration // measured time per trial
	Trials   int
	Fio      bool // run fio as a mode when it is installed
	JSON     string
	// JSONTo, when set, receives the JSON report instead of the file JSON.
	JSONTo   io.Writer
	Out      io.Writer // report
	Progress io.Writer
	// Modes selects the modes to run (all when empty).
	Modes bench.Selection
}

// childConfig is one trial's instructions.
type childConfig struct {
	File       string        `json:"file"`
	Mode       string        `json:"mode"` // serial-pread, parallel-pread, uring, uring-inline, sqpoll
	Batch      int           `json:"batch"`
	Callers    int           `json:"callers"` // concurrent callers of ReadBatch (uring modes)
	Duration   time.Duration `json:"duration"`
	WarmupFrac float64       `json:"warmup_frac"`
}

// Result is one row of the JSON report.
type Result struct {
	Mode     string  `json:"mode"`
	Label    string  `json:"label"`
	Batch    int     `json:"batch"`
	IOPS     float64 `json:"iops"` // median of trials
	IOPSBest float64 `json:"iops_best"`
	IOPSMin  float64 `json:"iops_min"`
	IOPSMax  float64 `json:"iops_max"`
	// PerRead is the latency of one read, PerBatch that of one batch (its
	// submission to its last completion), in the median trial; nil where
	// the mode does not measure it (latencyKinds).
	PerRead  *Latency  `json:"per_read"`
	PerBatch *Latency  `json:"per_batch"`
	CPUPerM  float64   `json:"cpu_s_per_million"`
	Trials   []float64 `json:"trial_iops"`
}

// Latency is a distribution of latencies, in µs.
type Latency struct {
	P50us  float64 `json:"p50_us"`
	P90us  float64 `json:"p90_us"` // 0 where fio gave none
	P99us  float64 `json:"p99_us"`
	P999us float64 `json:"p999_us"`
	MaxUs  float64 `json:"max_us"`
}

// latencyKinds says what one timed call of a mode is: one read (the pread
// modes, each pread; fio, its completion latency of each read), one batch
// (the io_uring modes, one ReadBatch), or both (an io_uring batch of one
// read). An io_uring batch of more reads gives no per-read latency (the
// engine returns the batch whole), fio none per batch.
func latencyKinds(mode string, batch int) (perRead, perBatch bool) {
	switch {
	case strings.HasPrefix(mode, "uring") || strings.HasPrefix(mode, "sqpoll"):
		return batch == 1, true
	default:
		return true, false
	}
}

// latencyColumns puts the call latency of the median trial t of mode into
// the columns it belongs to.
func latencyColumns(mode string, batch int, t bench.Trial) (perRead, perBatch *Latency) {
	l := Latency{P50us: t.P50us, P90us: t.P90us, P99us: t.P99us, P999us: t.P999us, MaxUs: t.MaxUs}
	r, b := latencyKinds(mode, batch)
	if r {
		perRead = &l
	}
	if b {
		l2 := l
		perBatch = &l2
	}
	return perRead, perBatch
}

// Run runs the benchmark and writes the report.
func Run(o Options) error {
	if o.Duration <= 0 || o.Trials < 1 {
		return fmt.Errorf("bench read: duration and trials must be positive (got %s, %d)", o.Duration, o.Trials)
	}
	file := o.File
	if file == "" {
		if o.Size < 64*blockSize {
			return fmt.Errorf("bench read: --size %d is too small: need at least %d bytes", o.Size, 64*blockSize)
		}
		if _, err := directio.Check(o.Dir); err != nil {
			return fmt.Errorf("bench read: %w", err)
		}
		file = filepath.Join(o.Dir, fmt.Sprintf("ringstore-bench-read-%d.dat", os.Getpid()))
		fmt.Fprintf(o.Progress, "creating %s (%d MiB)...\n", file, o.Size>>20)
		if err := createFile(file, o.Size); err != nil {
			return err
		}
		defer os.Remove(file)
	} else {
		st, err := os.Stat(file)
		if err != nil {
			return fmt.Errorf("bench read: %w", err)
		}
		if st.Size() < 64*blockSize {
			return fmt.Errorf("bench read: %s has %d bytes: need at least %d", file, st.Size(), 64*blockSize)
		}
	}

	cfg := func(mode string, batch int) childConfig {
		return childConfig{File: file, Mode: mode, Batch: batch, Callers: 1, Duration: o.Duration, WarmupFrac: warmupFrac}
	}
	pipelined := cfg("uring", 16)
	pipelined.Callers = 4
	modes := []bench.Mode{
		{Name: "serial-pread", Label: "pread, serial (QD1)", Batch: 1, Exec: bench.ChildExec(Workload, cfg("serial-pread", 1))},
		{Name: "parallel-pread", Label: "pread, 64 goroutines", Batch: 64, Exec: bench.ChildExec(Workload, cfg("parallel-pread", 64))},
	}
	// io_uring modes run only where io_uring works; otherwise the report
	// says why they are missing rather than failing the whole run.
	var notes []string
	kp := ioengine.ProbeKernel()
	uringOK, sqpollOK := kp.Available && kp.SelfTestError == nil, kp.Available && kp.SQPollError == nil
	switch {
	case !kp.Compiled:
		notes = append(notes, "io_uring modes skipped: "+kp.NotCompiled)
	case !kp.Available:
		notes = append(notes, fmt.Sprintf("io_uring modes skipped: %v", kp.SetupError))
	case kp.SelfTestError != nil:
		notes = append(notes, fmt.Sprintf("io_uring modes skipped: self-test failed: %v", kp.SelfTestError))
	case kp.SQPollError != nil:
		notes = append(notes, fmt.Sprintf("SQPOLL mode skipped: %v", kp.SQPollError))
	}
	for _, b := range []int{1, 8, 64, 256} {
		if !uringOK {
			break
		}
		modes = append(modes, bench.Mode{Name: fmt.Sprintf("uring-b%d", b), Label: fmt.Sprintf("io_uring, batch %d", b), Batch: b, Exec: bench.ChildExec(Workload, cfg("uring", b))})
	}
	if uringOK {
		modes = append(modes, bench.Mode{Name: "uring-4x16", Label: "io_uring, 4 callers × batch 16", Batch: 16, Exec: bench.ChildExec(Workload, pipelined)})
		modes = append(modes, bench.Mode{Name: "uring-inline-b64", Label: "io_uring inline, batch 64", Batch: 64, Exec: bench.ChildExec(Workload, cfg("uring-inline", 64))})
	}
	if sqpollOK {
		modes = append(modes, bench.Mode{Name: "sqpoll-b64", Label: "io_uring SQPOLL, batch 64", Batch: 64, Exec: bench.ChildExec(Workload, cfg("sqpoll", 64))})
	}
	if o.Fio {
		if path, err := exec.LookPath("fio"); err == nil {
			modes = append(modes,
				bench.Mode{Name: "fio-qd64", Label: "fio io_uring, iodepth 64", Batch: 64, Exec: fioExec(path, fioArgs(file, o.Duration))},
				bench.Mode{Name: "fio-qd64-batch", Label: "fio io_uring, batches of 64", Batch: 64, Exec: fioExec(path, fioArgs(file, o.Duration, "--iodepth_batch_submit=64", "--iodepth_batch_complete_min=64"))})
		} else {
			notes = append(notes, "fio is not installed: the fio comparison was skipped")
		}
	}

	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = m.Name
	}
	if err := bench.CheckListed("read", names, ModeNames(o)); err != nil {
		return err
	}
	modes, err := o.Modes.Select("read", modes)
	if err != nil {
		return err
	}
	w := bench.Workload{Name: "read", Dir: filepath.Dir(file), Trials: o.Trials, Modes: modes, Plan: " × " + o.Duration.String(),
		Progress: o.Progress, Out: o.Out, JSON: o.JSON, JSONTo: o.JSONTo}
	w.Summarize = func(results []bench.ModeResult, machine bench.Machine) (bench.Summary, error) {
		rows := make([]Result, 0, len(results))
		labels := map[string]string{}
		t := bench.Table{Header: []string{"mode", "batch", "IOPS (median)", "best", "min–max", "p50 µs/read", "p99 µs/read", "p50 µs/batch", "p99 µs/batch", "CPU s / M reads", "× serial"}}
		serial := bench.Find(results, "serial-pread")
		for _, r := range results {
			labels[r.Mode.Name] = r.Mode.Label
			if len(r.Trials) == 0 {
				continue
			}
			med := r.Median()
			row := Result{Mode: r.Mode.Name, Label: r.Mode.Label, Batch: r.Mode.Batch, IOPS: med.Rate(), IOPSBest: r.Best(), IOPSMin: r.Min(), IOPSMax: r.Max(), Trials: r.Rates()}
			row.PerRead, row.PerBatch = latencyColumns(r.Mode.Name, r.Mode.Batch, med)
			if med.Ops > 0 {
				row.CPUPerM = med.CPUSeconds / float64(med.Ops) * 1e6
			}
			rows = append(rows, row)
			x := "-"
			if serial != nil && len(serial.Trials) > 0 {
				x = fmt.Sprintf("%.2f×", row.IOPS/serial.Median().Rate())
			}
			rp50, rp99, bp50, bp99 := "-", "-", "-", "-"
			if l := row.PerRead; l != nil {
				rp50, rp99 = fmt.Sprintf("%.0f", l.P50us), fmt.Sprintf("%.0f", l.P99us)
			}
			if l := row.PerBatch; l != nil {
				bp50, bp99 = fmt.Sprintf("%.0f", l.P50us), fmt.Sprintf("%.0f", l.P99us)
			}
			t.Add(r.Mode.Label, strconv.Itoa(r.Mode.Batch), fmt.Sprintf("%.0f", row.IOPS), fmt.Sprintf("%.0f", row.IOPSBest),
				fmt.Sprintf("%.0f–%.0f", row.IOPSMin, row.IOPSMax), rp50, rp99, bp50, bp99, fmt.Sprintf("%.1f", row.CPUPerM), x)
		}
		var ratios []bench.Ratio
		for _, pair := range [][2]string{{"uring-b64", "serial-pread"}, {"uring-b64", "parallel-pread"}, {"uring-b64", "fio-qd64"}, {"uring-b64", "fio-qd64-batch"}, {"uring-4x16", "fio-qd64"}, {"sqpoll-b64", "uring-b64"}, {"uring-inline-b64", "uring-b64"}, {"uring-inline-b64", "fio-qd64-batch"}, {"uring-b256", "serial-pread"}} {
			if r, ok := bench.Compare(results, pair[0], pair[1]); ok {
				ratios = append(ratios, r)
			}
		}
		bars := fioBars(rows)
		notes = append(notes,
			"4 KiB random reads with O_DIRECT (cold: no page cache), uniformly over the file.",
			"Latency per read: one pread (pread modes), fio's completion latency of each read (fio), an io_uring batch of one read; per batch: one ReadBatch from submission to its last completion (io_uring modes). io_uring batches of more than one read have no per-read figure (the engine returns a batch whole), fio none per batch: '-' in the table, null in the JSON.",
			fmt.Sprintf("fio runs as long as every other mode: a warm-up of %s not counted (--ramp_time), then %s measured (--runtime).", warmup(o.Duration), o.Duration),
			"io_uring modes hand each batch to the engine's ring goroutine and wait to be woken, as every engine shared by many goroutines does; io_uring inline is an engine with Options.Inline, whose caller submits its batch and waits for it on its own thread (no hand-off), as the wal's committer does.",
			"CPU is user+system time of the benchmark process, kernel SQPOLL thread included.")
		rep := &struct {
			bench.Report
			Bars []bench.Bar `json:"bars"`
		}{bench.Report{Benchmark: "read", Machine: machine, Config: map[string]any{"file": file, "duration_s": o.Duration.Seconds(), "trials": o.Trials, "block_size": blockSize}, Results: rows, Ratios: ratios, Notes: notes}, bars}
		return bench.Summary{Heading: "read — " + filepath.Base(file), Report: rep, Bars: bars, Notes: notes,
			BarsTitle: "bars (against fio in batches of 64, the like-for-like case)",
			Body: func(out io.Writer) {
				fmt.Fprintln(out)
				t.Write(out)
				fmt.Fprintln(out, "\nratios measured in this run:")
				bench.WriteRatios(out, ratios, labels)
			}}, nil
	}
	return w.Run()
}

// createFile writes size bytes of incompressible data and syncs them.
// The bars against fio in batches of 64 (submit 64, wait for all 64: how
// ringstore's batch call works): io_uring batch 64 at least BarVsFio of
// fio's IOPS, at most BarCPUVsFio of its CPU per read.
const (
	BarVsFio    = 0.85
	BarCPUVsFio = 1.5
)

// fioBars checks io_uring batch 64 against fio's batches of 64 in the rows
// of one run; without fio the bars are there, not tested.
func fioBars(rows []Result) []bench.Bar {
	const iops, cpu = "io_uring batch 64 IOPS vs fio's batches of 64 (median of trials)", "io_uring batch 64 CPU per read vs fio's batches of 64"
	var ours, fio *Result
	for i := range rows {
		switch rows[i].Mode {
		case "uring-b64":
			ours = &rows[i]
		case "fio-qd64-batch":
			fio = &rows[i]
		}
	}
	if ours == nil || fio == nil || fio.IOPS <= 0 || fio.CPUPerM <= 0 {
		why := "fio or io_uring batch 64 did not run"
		return []bench.Bar{bench.NewBar(iops, 0, BarVsFio, false, false, why), bench.NewBar(cpu, 0, BarCPUVsFio, true, false, why)}
	}
	return []bench.Bar{
		bench.NewBar(iops, ours.IOPS/fio.IOPS, BarVsFio, false, true, fmt.Sprintf("%.0f against %.0f IOPS", ours.IOPS, fio.IOPS)),
		bench.NewBar(cpu, ours.CPUPerM/fio.CPUPerM, BarCPUVsFio, true, true, fmt.Sprintf("%.1f against %.1f CPU-seconds per million reads", ours.CPUPerM, fio.CPUPerM)),
	}
}

func createFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("bench read: create data file: %w", err)
	}
	buf := make([]byte, 1<<20)
	rng := rand.New(rand.NewPCG(uint64(size), 1))
	for off := int64(0); off < size; off += int64(len(buf)) {
		for i := 0; i+8 <= len(buf); i += 8 {
			v := rng.Uint64()
			buf[i], buf[i+1], buf[i+2], buf[i+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
			buf[i+4], buf[i+5], buf[i+6], buf[i+7] = byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
		}
		n := min(int64(len(buf)), size-off)
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			os.Remove(path)
			return fmt.Errorf("bench read: write data file: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return fmt.Errorf("bench read: sync data file: %w", err)
	}
	return f.Close()
}

// child runs one trial in this process.
func child(raw json.RawMessage) (bench.Trial, error) {
	var c childConfig
	if err := json.Unmarshal(raw, &c); err != nil {
		return bench.Trial{}, err
	}
	f, err := directio.OpenFile(c.File, os.O_RDONLY, 0)
	if err != nil {
		return bench.Trial{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return bench.Trial{}, err
	}
	blocks := uint64(st.Size() / blockSize)
	fd := int(f.Fd())
	if c.Batch < 1 {
		return bench.Trial{}, fmt.Errorf("batch must be at least 1")
	}
	if c.Callers < 1 {
		c.Callers = 1
	}
	mem, err := directio.Alloc(c.Batch * c.Callers * blockSize)
	if err != nil {
		return bench.Trial{}, err
	}
	defer directio.Free(mem)

	warm := time.Duration(float64(c.Duration) * c.WarmupFrac)
	switch c.Mode {
	case "serial-pread":
		return measure(warm, c.Duration, 1, func(_ int, rng *rand.Rand, lat *bench.Latencies, stop *atomic.Bool) (int64, error) {
			return preadLoop(fd, mem[:blockSize], blocks, rng, lat, stop)
		})
	case "parallel-pread":
		return measure(warm, c.Duration, c.Batch, func(g int, rng *rand.Rand, lat *bench.Latencies, stop *atomic.Bool) (int64, error) {
			return preadLoop(fd, mem[g*blockSize:(g+1)*blockSize], blocks, rng, lat, stop)
		})
	case "uring", "uring-inline", "sqpoll":
		mode, want := ioengine.URing, ioengine.BackendURing
		if c.Mode == "sqpoll" {
			mode, want = ioengine.SQPoll, ioengine.BackendSQPoll
		}
		e, err := ioengine.New(ioengine.Options{Mode: mode, Entries: uint32(max(256, c.Batch)), Inline: c.Mode == "uring-inline"})
		if err != nil {
			return bench.Trial{}, err
		}
		defer e.Close()
		if e.Backend() != want {
			return bench.Trial{}, fmt.Errorf("wanted %s, got %s: %s", want, e.Backend(), e.FallbackReason())
		}
		return measure(warm, c.Duration, c.Callers, func(g int, rng *rand.Rand, lat *bench.Latencies, stop *atomic.Bool) (int64, error) {
			reqs := make([]ioengine.Request, c.Batch)
			for i := range reqs {
				at := (g*c.Batch + i) * blockSize
				reqs[i] = ioengine.Request{Op: ioengine.OpRead, Fd: fd, Buf: mem[at : at+blockSize]}
			}
			var ops int64
			for !stop.Load() {
				for i := range reqs {
					reqs[i].Off = int64(rng.Uint64N(blocks)) * blockSize
				}
				t0 := time.Now()
				if err := e.ReadBatch(reqs); err != nil {
					return ops, err
				}
				lat.Add(time.Since(t0))
				ops += int64(len(reqs))
			}
			return ops, nil
		})
	}
	return bench.Trial{}, fmt.Errorf("unknown mode %q", c.Mode)
}

func preadLoop(fd int, buf []byte, blocks uint64, rng *rand.Rand, lat *bench.Latencies, stop *atomic.Bool) (int64, error) {
	var ops int64
	for !stop.Load() {
		off := int64(rng.Uint64N(blocks)) * blockSize
		t0 := time.Now()
		n, err := unix.Pread(fd, buf, off)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return ops, fmt.Errorf("pread at %d: %w", off, err)
		}
		if n != len(buf) {
			return ops, fmt.Errorf("pread at %d: short read of %d bytes", off, n)
		}
		lat.Add(time.Since(t0))
		ops++
	}
	return ops, nil
}

// measure runs workers goroutines of work: first for warm (not counted),
// then for d, and returns the measured trial.
func measure(warm, d time.Duration, workers int, work func(g int, rng *rand.Rand, lat *bench.Latencies, stop *atomic.Bool) (int64, error)) (bench.Trial, error) {
	run := func(d time.Duration) (bench.Trial, error) {
		var stop atomic.Bool
		var wg sync.WaitGroup
		ops := make([]int64, workers)
		lats := make([]*bench.Latencies, workers)
		errs := make([]error, workers)
		cpu0, t0 := bench.CPUTime(), time.Now()
		for g := range workers {
			lats[g] = bench.NewLatencies()
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(g)))
				ops[g], errs[g] = work(g, rng, lats[g], &stop)
			}()
		}
		time.Sleep(d)
		stop.Store(true)
		wg.Wait()
		tr := bench.Trial{Seconds: time.Since(t0).Seconds(), CPUSeconds: bench.CPUTime() - cpu0}
		if err := errors.Join(errs...); err != nil {
			return tr, err
		}
		all := bench.NewLatencies()
		for g := range workers {
			tr.Ops += ops[g]
			all.Merge(lats[g])
		}
		all.Fill(&tr)
		return tr, nil
	}
	if warm > 0 {
		if _, err := run(warm); err != nil {
			return bench.Trial{}, err
		}
	}
	return run(d)
}

// warmupFrac is the share of the measured time every mode first runs
// without counting.
const warmupFrac = 0.1

// warmup is the warm-up of a mode measured for d.
func warmup(d time.Duration) time.Duration { return time.Duration(float64(d) * warmupFrac) }

// fioArgs are the arguments of fio's io_uring engine at iodepth 64 on file,
// for as long as the other modes run: the warm-up (not counted), then d.
// Extra arguments change how fio submits and reaps.
func fioArgs(file string, d time.Duration, extra ...string) []string {
	us := func(d time.Duration) string { return strconv.FormatInt(d.Microseconds(), 10) + "us" }
	return append([]string{"--name=ringstore-randread", "--filename=" + file, "--ioengine=io_uring", "--iodepth=64",
		"--direct=1", "--rw=randread", "--bs=4k", "--time_based", "--runtime=" + us(d), "--ramp_time=" + us(warmup(d)),
		"--readonly", "--output-format=json"}, extra...)
}

// fioExec runs fio at path with args.
func fioExec(path string, args []string) func() (bench.Trial, error) {
	return func() (bench.Trial, error) {
		out, err := bench.RunFio(path, args)
		if err != nil {
			return bench.Trial{}, err
		}
		return parseFio(out)
	}
}

func parseFio(data []byte) (bench.Trial, error) {
	r, err := bench.ParseFioRead(data)
	if err != nil {
		return bench.Trial{}, err
	}
	return bench.Trial{Ops: r.IOs, Seconds: r.Seconds, P50us: r.P50us, P90us: r.P90us, P99us: r.P99us, P999us: r.P999us, MaxUs: r.MaxUs, CPUSeconds: r.CPUSeconds}, nil
}
