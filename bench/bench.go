// Package bench runs ringstore's side-by-side benchmarks the way DESIGN.md
// asks: every mode in a fresh child process, modes interleaved within each
// trial (A B C, A B C, ...), at least three trials, and results given as
// median, best, min–max and ratios measured in the same run, with the
// machine recorded beside them.
//
// A workload registers a child function under a name (RegisterChild); the
// parent describes its modes with a config each, Run executes the trials,
// and Report renders Markdown and JSON.
//
// # Child protocol
//
// The parent re-executes its own binary as
//
//	<exe> __bench-child <workload> <config JSON>
//
// The child runs one trial and prints one line "RESULT <Trial JSON>" on
// stdout; anything else it prints is passed through to the parent's
// progress output. A program that uses bench must call MaybeChild first
// thing in main.
package bench

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sort"
	"strings"
	"time"
)

// Trial is what one child process measured.
type Trial struct {
	Ops        int64   `json:"ops"`         // operations completed
	Seconds    float64 `json:"seconds"`     // wall time of the measured part
	P50us      float64 `json:"p50_us"`      // median latency of one operation (or call)
	P90us      float64 `json:"p90_us"`      // 90th percentile latency
	P99us      float64 `json:"p99_us"`      // 99th percentile latency
	P999us     float64 `json:"p999_us"`     // 99.9th percentile latency
	MaxUs      float64 `json:"max_us"`      // the slowest operation
	CPUSeconds float64 `json:"cpu_seconds"` // user+system CPU of the child during the measured part
	// MachineCPUSeconds is the CPU time of the whole machine during the
	// measured part (MachineCPUTime): the child's, and the interrupts and
	// softirqs its I/O caused, which its own CPU time leaves out.
	MachineCPUSeconds float64            `json:"machine_cpu_seconds,omitempty"`
	Extra             map[string]float64 `json:"extra,omitempty"`
}

// Rate returns operations per second.
func (t Trial) Rate() float64 {
	if t.Seconds <= 0 {
		return 0
	}
	return float64(t.Ops) / t.Seconds
}

// ChildFunc runs one trial of a workload from its JSON config.
type ChildFunc func(config json.RawMessage) (Trial, error)

var children = map[string]ChildFunc{}

// RegisterChild makes a workload runnable in a child process.
func RegisterChild(name string, f ChildFunc) { children[name] = f }

const childArg = "__bench-child"

// MaybeChild runs a child trial and exits if the process was started as a
// bench child; otherwise it returns at once.
func MaybeChild() {
	if len(os.Args) < 4 || os.Args[1] != childArg {
		return
	}
	f, ok := children[os.Args[2]]
	if !ok {
		fmt.Fprintf(os.Stderr, "bench: unknown child workload %q\n", os.Args[2])
		os.Exit(2)
	}
	stop, err := startDiagnostics(os.Args[2])
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s: %v\n", os.Args[2], err)
		os.Exit(1)
	}
	t, err := f(json.RawMessage(os.Args[3]))
	stop()
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench: %s: %v\n", os.Args[2], err)
		os.Exit(1)
	}
	out, _ := json.Marshal(t)
	fmt.Printf("RESULT %s\n", out)
	os.Exit(0)
}

// ProfileEnv names a directory in which every bench child writes a CPU
// profile of its whole run, as WORKLOAD-PID.pprof (go tool pprof reads it).
const ProfileEnv = "RINGSTORE_BENCH_CPUPROFILE"

// TraceEnv names a directory in which every bench child writes an
// execution trace of its whole run, as WORKLOAD-PID.trace (go tool trace
// reads it: scheduling delays, blocking, syscalls).
const TraceEnv = "RINGSTORE_BENCH_TRACE"

// startDiagnostics starts the CPU profile and the execution trace that
// ProfileEnv and TraceEnv ask for; stop ends both.
func startDiagnostics(workload string) (stop func(), err error) {
	stopProfile, err := startOutput(ProfileEnv, workload, "pprof", pprof.StartCPUProfile, pprof.StopCPUProfile)
	if err != nil {
		return nil, err
	}
	stopTrace, err := startOutput(TraceEnv, workload, "trace", trace.Start, trace.Stop)
	if err != nil {
		stopProfile()
		return nil, err
	}
	return func() { stopTrace(); stopProfile() }, nil
}

// startOutput creates DIR/WORKLOAD-PID.EXT, DIR being env's value, and
// starts writing to it; without env it does nothing.
func startOutput(env, workload, ext string, start func(io.Writer) error, end func()) (stop func(), err error) {
	dir := os.Getenv(env)
	if dir == "" {
		return func() {}, nil
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%d.%s", workload, os.Getpid(), ext))
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", env, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %s: %w", env, path, err)
	}
	return func() {
		end()
		if err := f.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %s: %v\n", env, path, err)
		}
	}, nil
}

// Mode is one way of running a workload.
type Mode struct {
	Name  string // short, stable: "uring-b64"
	Label string // for people: "io_uring, batch 64"
	Batch int    // requests per call (0 when not meaningful)
	// Exec runs one trial. ChildExec builds the usual one.
	Exec func() (Trial, error)
	// Repeat is how many trials the mode runs in each round (0: one): a
	// mode whose trials are short, and so noisy, gets more of them.
	Repeat int
}

// repeat is the trials m runs in each round.
func (m Mode) repeat() int { return max(1, m.Repeat) }

// ChildExec returns an Exec that runs workload with config in a fresh child
// process of this binary, with extra environment entries.
func ChildExec(workload string, config any, env ...string) func() (Trial, error) {
	return func() (Trial, error) {
		exe, err := os.Executable()
		if err != nil {
			return Trial{}, fmt.Errorf("bench: cannot find own executable: %w", err)
		}
		return runChild(exe, workload, config, env)
	}
}

// BinaryExec is ChildExec for another program that speaks the same child
// protocol (it registers workload and calls MaybeChild): the peer
// comparisons, which are built from their own module so that ringstore's
// module never depends on them.
func BinaryExec(exe, workload string, config any, env ...string) func() (Trial, error) {
	return func() (Trial, error) { return runChild(exe, workload, config, env) }
}

func runChild(exe, workload string, config any, env []string) (Trial, error) {
	cfg, err := json.Marshal(config)
	if err != nil {
		return Trial{}, err
	}
	cmd := exec.Command(exe, childArg, workload, string(cfg))
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var t Trial
	found := false
	sc := bufio.NewScanner(&stdout)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), "RESULT "); ok {
			if err := json.Unmarshal([]byte(line), &t); err != nil {
				return Trial{}, fmt.Errorf("bench: child %s: bad result: %w", workload, err)
			}
			found = true
		}
	}
	if runErr != nil || !found {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no result"
		}
		return Trial{}, fmt.Errorf("bench: child %s failed (%v): %s", workload, runErr, msg)
	}
	return t, nil
}

// ModeResult gathers the trials of one mode.
type ModeResult struct {
	Mode   Mode
	Trials []Trial
}

// Rates returns the rate of each trial, in trial order.
func (m ModeResult) Rates() []float64 {
	r := make([]float64, len(m.Trials))
	for i, t := range m.Trials {
		r[i] = t.Rate()
	}
	return r
}

// Median returns the trial with the median rate (the lower middle one for
// an even count), whose latencies are reported with it.
func (m ModeResult) Median() Trial {
	if len(m.Trials) == 0 {
		return Trial{}
	}
	ts := slices.Clone(m.Trials)
	sort.Slice(ts, func(i, j int) bool { return ts[i].Rate() < ts[j].Rate() })
	return ts[(len(ts)-1)/2]
}

// BestTrial returns the trial with the highest rate (the first of equals).
func (m ModeResult) BestTrial() Trial {
	if len(m.Trials) == 0 {
		return Trial{}
	}
	return slices.MaxFunc(m.Trials, func(a, b Trial) int { return cmp.Compare(a.Rate(), b.Rate()) })
}

// Best, Min and Max of the trial rates.
func (m ModeResult) Best() float64 { return slices.Max(m.Rates()) }
func (m ModeResult) Min() float64  { return slices.Min(m.Rates()) }
func (m ModeResult) Max() float64  { return slices.Max(m.Rates()) }

// Run executes trials rounds; each round runs every mode once (Repeat
// times for a mode that sets it), in an order rotated by one per round so
// that no mode always runs first. Modes next to one another in a round's
// order with the same Repeat (above one) take turns, one trial each, and
// the one that starts alternates from round to round (their order is
// reversed in odd rounds): the trials of two modes compared with each
// other are spread alike over the round, and neither always runs first
// after a mode that leaves the machine busy (a large directory removed,
// writeback). A mode whose trial fails is reported in the error and left
// out of later rounds.
func Run(modes []Mode, trials int, progress io.Writer) ([]ModeResult, error) {
	if trials < 1 {
		return nil, fmt.Errorf("bench: trials must be at least 1, got %d", trials)
	}
	results := make([]ModeResult, len(modes))
	for i, m := range modes {
		results[i].Mode = m
	}
	var errs []error
	failed := make([]bool, len(modes))
	total := 0
	for _, m := range modes {
		total += trials * m.repeat()
	}
	bar := newProgressBar(progress, total)
	trial := func(i, n, of int) {
		start := time.Now()
		tr, err := modes[i].Exec()
		if err != nil {
			failed[i] = true
			errs = append(errs, fmt.Errorf("mode %s: %w", modes[i].Name, err))
			bar.line("  trial %d/%d %-16s FAILED: %v\n", n, of, modes[i].Name, err)
			bar.total -= of - n // its later trials are not run
			bar.step(modes[i].Name)
			return
		}
		results[i].Trials = append(results[i].Trials, tr)
		if !bar.active {
			p99 := "" // a benchmark that times no single operation has none
			if tr.P99us > 0 {
				p99 = fmt.Sprintf("  p99 %8.0f µs", tr.P99us)
			}
			fmt.Fprintf(progress, "  trial %d/%d %-16s %12.0f ops/s%s  (%.1fs)\n", n, of, modes[i].Name, tr.Rate(), p99, time.Since(start).Seconds())
		}
		bar.step(modes[i].Name)
	}
	order := make([]int, len(modes))
	for t := 0; t < trials; t++ {
		for k := range modes {
			order[k] = (k + t) % len(modes)
		}
		for g := 0; g < len(order); {
			rep := modes[order[g]].repeat()
			e := g + 1
			for rep > 1 && e < len(order) && modes[order[e]].repeat() == rep {
				e++
			}
			group := slices.Clone(order[g:e])
			if t%2 == 1 {
				slices.Reverse(group)
			}
			for r := 0; r < rep; r++ {
				for _, i := range group {
					if !failed[i] {
						trial(i, t*rep+r+1, trials*rep)
					}
				}
			}
			g = e
		}
	}
	return results, errors.Join(errs...)
}

// Find returns the result of the named mode, or nil.
func Find(results []ModeResult, name string) *ModeResult {
	for i := range results {
		if results[i].Mode.Name == name {
			return &results[i]
		}
	}
	return nil
}

// Ratio compares mode a with mode b in the same run: the ratio of median
// rates, of best rates, and whether every trial of a beat every trial of b.
type Ratio struct {
	A              string  `json:"a"`
	B              string  `json:"b"`
	Median         float64 `json:"median"`
	Best           float64 `json:"best"`
	EveryTrialWins bool    `json:"every_trial_wins"`
	// Trials is the fewer of the two modes' trial counts: with fewer than
	// three, EveryTrialWins says little and the report says so.
	Trials int `json:"trials"`
}

// Compare returns a / b, or false when either has no trials.
func Compare(results []ModeResult, a, b string) (Ratio, bool) {
	ra, rb := Find(results, a), Find(results, b)
	if ra == nil || rb == nil || len(ra.Trials) == 0 || len(rb.Trials) == 0 || rb.Median().Rate() == 0 {
		return Ratio{}, false
	}
	return Ratio{
		A: a, B: b,
		Median:         ra.Median().Rate() / rb.Median().Rate(),
		Best:           ra.Best() / rb.Best(),
		EveryTrialWins: ra.Min() > rb.Max(),
		Trials:         min(len(ra.Trials), len(rb.Trials)),
	}, true
}

// RoundRatios returns, for each round both modes ran, f of a's trial ÷ f
// of b's trial of that round (a mode's trial i runs in round i, the modes
// interleaved, so the two are close in time and what the machine does from
// one round to the next cancels). Rounds where f of b is not positive are
// left out.
func RoundRatios(a, b *ModeResult, f func(Trial) float64) []float64 {
	var rs []float64
	for i := range min(len(a.Trials), len(b.Trials)) {
		if d := f(b.Trials[i]); d > 0 {
			rs = append(rs, f(a.Trials[i])/d)
		}
	}
	return rs
}

// Median returns the median of vs (the mean of the middle two for an even
// count), 0 for none; vs is not changed.
func Median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
